/**
 * `robot-gateway sysid RECORD.mcap… --bench BENCH`: fit the twin's joint servo (per-joint gain,
 * command delay) from a bench's records (compose/twin/sysid.ts), print residuals before/after on
 * the fitting and the held-out records (the last --holdout records; model residual and replay
 * divergence), and write the fit into a NEW version of the bench file (BENCH.sysid-N.yaml, or
 * --out, never overwritten).
 */
import { Command, InvalidArgumentError } from "commander";
import { type BenchConfig, loadBenchFile } from "../compose/bench-config.ts";
import { startGateway } from "../compose/start.ts";
import { fitTimeline, type GatewayHandle, runExcitation, timelineSegment } from "../compose/twin/excite.ts";
import { loadRecordedEpisode, replayOnBench } from "../compose/twin/replay.ts";
import {
  benchServo,
  fitServo,
  rmsPerJoint,
  type Segment,
  segmentsOf,
  servoError,
  writeFittedBench,
} from "../compose/twin/sysid.ts";
import { ROBOTS } from "../robots/franka/models.ts";
import { CodedError } from "../seam/errors.ts";
import { servoParams } from "../sim/servo.ts";

const mrad = (v: readonly number[]) => v.map((x) => (x * 1000).toFixed(3)).join(" ");

const positiveInt = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`${name} must be a whole number ≥ 1`);
  return n;
};

export function sysidCommand(): Command {
  return new Command("sysid")
    .description(
      "fit the twin's joint servo model (per-joint gain, delay) from a bench's records, or (--excite) from excitation it plays",
    )
    .argument("[records...]", "record.mcap files of the bench to identify (not with --excite)")
    .requiredOption("--bench <file>", "the twin's (sim) bench file: the fit goes into a new version of it")
    .option("--excite", "play designed servo excitation on a bench (--real or --url) and fit to its records")
    .option(
      "--real <file>",
      "--excite: bench file of the bench to excite (a gateway is started on a loopback port)",
    )
    .option(
      "--url <url>",
      "--excite: a running gateway to excite instead (with --agent-token and --operator-token)",
    )
    .option("--agent-token <t>", "--excite --url: the gateway's agent token")
    .option("--operator-token <t>", "--excite --url: the gateway's operator token")
    .option("--allow-motion", "--excite --real: let a real bench move")
    .option(
      "--episodes <n>",
      "--excite: excitation episodes (the last is held out)",
      positiveInt("--episodes"),
      3,
    )
    .option("--doublets <n>", "--excite: doublets per episode", positiveInt("--doublets"), 100)
    .option(
      "--holdout <n>",
      "records (from the end) kept out of the fit to check it",
      (v) => {
        const n = Number(v);
        if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError("--holdout must be a whole number");
        return n;
      },
      1,
    )
    .option("--max-delay <ticks>", "largest delay tried, control periods", (v) => Number(v), 12)
    .option("--out <file>", "where to write the new bench version (default BENCH.sysid-N.yaml)")
    .action(
      async (records: string[], o: ExciteOptions & { holdout: number; maxDelay: number }, cmd: Command) => {
        if (o.excite) {
          if (records.length > 0) cmd.error("error: --excite records its own episodes: name no records");
          return exciteAndFit(o);
        }
        if (records.length === 0) cmd.error("error: name the records to fit, or pass --excite");
        try {
          const { config, baseDir } = loadBenchFile(o.bench);
          const robot = ROBOTS[config.robot];
          const dt = robot.controlPeriodS;
          const base = servoParams(robot);
          const hold = Math.min(o.holdout, Math.max(0, records.length - 1));
          const fitPaths = records.slice(0, records.length - hold);
          const heldPaths = records.slice(records.length - hold);
          const segs = async (paths: string[]) => {
            const out: Segment[] = [];
            for (const p of paths)
              out.push(...(await segmentsOf(await loadRecordedEpisode(p), config, baseDir)));
            return out;
          };
          const fitSegs = await segs(fitPaths);
          if (fitSegs.length === 0)
            throw new CodedError("RB_ERR_TWIN_INPUT", {
              tool: "sysid",
              path: fitPaths.join(" "),
              reason: "no executed trajectories",
            });
          const prior = benchServo(config);
          const fit = fitServo(fitSegs, base, dt, { maxDelayTicks: o.maxDelay, priorKp: prior.kpPerJoint });
          const fitBefore = rmsPerJoint(servoError(fitSegs, base, prior, dt));
          const fitAfter = rmsPerJoint(servoError(fitSegs, base, fit, dt));
          console.log(
            `sysid: ${fitSegs.length} trajectories from ${fitPaths.length} record(s); ${heldPaths.length} held out`,
          );
          console.log(`  delay ${prior.delayTicks} → ${fit.delayTicks} periods`);
          console.log(
            `  kp 1/s  ${prior.kpPerJoint.map((k) => k.toFixed(0)).join(" ")} → ${fit.kpPerJoint.map((k) => k.toFixed(0)).join(" ")}` +
              ` (identified: ${fit.identified.map((b) => (b ? "y" : "-")).join("")}; '-' = records cannot tell it from the prior)`,
          );
          console.log(
            `  fit residual RMS mrad      before ${mrad(fitBefore)}\n                            after  ${mrad(fitAfter)}`,
          );
          let note = `delay ${fit.delayTicks}; fit residual max ${(Math.max(...fitBefore) * 1000).toFixed(3)} → ${(Math.max(...fitAfter) * 1000).toFixed(3)} mrad`;
          if (heldPaths.length > 0) {
            const heldSegs = await segs(heldPaths);
            const hb = rmsPerJoint(servoError(heldSegs, base, prior, dt));
            const ha = rmsPerJoint(servoError(heldSegs, base, fit, dt));
            console.log(
              `  held-out residual RMS mrad before ${mrad(hb)}\n                            after  ${mrad(ha)}`,
            );
            note += `; held-out ${(Math.max(...hb) * 1000).toFixed(3)} → ${(Math.max(...ha) * 1000).toFixed(3)} mrad`;
          }
          const out = writeFittedBench(o.bench, fit, `${note} (${new Date().toISOString()})`, o.out);
          console.log(`  new bench version: ${out}`);
          for (const p of heldPaths) {
            const rec = await loadRecordedEpisode(p);
            const before = await replayOnBench(rec, config, { baseDir });
            const after = await replayOnBench(rec, loadBenchFile(out).config, { baseDir });
            console.log(
              `  held-out replay ${p}: joint RMS mrad before ${mrad(before.divergence.joint.rmsRad)}\n` +
                `                                         after  ${mrad(after.divergence.joint.rmsRad)}; tool RMS mm ${before.divergence.toolMm.rms.toFixed(3)} → ${after.divergence.toolMm.rms.toFixed(3)}`,
            );
          }
        } catch (e) {
          if (!(e instanceof CodedError)) throw e;
          console.error(`robot-gateway sysid: ${e.code}: ${e.message}\n  ${e.hint}`);
          process.exitCode = 2;
        }
      },
    );
}

interface ExciteOptions {
  bench: string;
  excite?: boolean;
  real?: string;
  url?: string;
  agentToken?: string;
  operatorToken?: string;
  allowMotion?: boolean;
  episodes: number;
  doublets: number;
  out?: string;
}

/**
 * `robot-gateway sysid --excite --bench TWIN (--real BENCH | --url URL --agent-token T --operator-token T)`:
 * play the designed excitation (compose/twin/excite.ts) through a gateway's operator and Standard
 * API — one started here from --real on a loopback port, or a running one at --url — then fit the
 * twin's servo (per-joint gain, delay) and the reading latency on the records, the last episode
 * held out, print residuals before/after and the held-out replay divergence before/after, and write
 * the fit into a NEW version of the twin's bench file.
 */
async function exciteAndFit(o: ExciteOptions): Promise<void> {
  try {
    const { config, baseDir } = loadBenchFile(o.bench);
    if (config.backend.type !== "sim")
      throw new CodedError("RB_ERR_TWIN_INPUT", {
        tool: "sysid excite",
        path: o.bench,
        reason: "the twin's bench must be a sim bench",
      });
    if (!o.real === !o.url)
      throw new CodedError("RB_ERR_TWIN_INPUT", {
        tool: "sysid excite",
        path: "--real/--url",
        reason: "name exactly one bench to excite: --real FILE or --url URL",
      });
    const records = await excite(o);
    const robot = ROBOTS[config.robot];
    const dt = robot.controlPeriodS;
    const base = servoParams(robot);
    const recs: Awaited<ReturnType<typeof loadRecordedEpisode>>[] = [];
    for (const p of records) recs.push(await loadRecordedEpisode(p));
    const held = recs.length > 1 ? recs.slice(-1) : [];
    const fitRecs = recs.length > 1 ? recs.slice(0, -1) : recs;
    const prior = benchServo(config);
    const fit = fitTimeline(fitRecs, base, dt, { priorKp: prior.kpPerJoint });
    console.log(
      `sysid excite: ${fitRecs.length} excitation record(s) fitted, ${held.length} held out; ${fit.samples} samples per joint`,
    );
    console.log(
      `  delay ${prior.delayTicks} → ${fit.delayTicks} periods; reading latency ${fit.readingLagTicks} periods`,
    );
    for (let j = 0; j < 7; j++)
      console.log(
        `  joint ${j + 1}: kp ${prior.kpPerJoint[j]!.toFixed(0)} → ${fit.kpPerJoint[j]!.toFixed(1)} 1/s` +
          ` (99.9 % interval ${fit.kpInterval[j]![0].toFixed(0)}–${fit.kpInterval[j]![1].toFixed(0)}; ${fit.identified[j] ? "identified" : "not identified: prior kept"})`,
      );
    const resid = (rs: typeof recs, m: { kpPerJoint: number[]; delayTicks: number }) =>
      rmsPerJoint(
        servoError(
          rs.map((r) => timelineSegment(r, fit.readingLagTicks)),
          base,
          m,
          dt,
        ),
      );
    const fb = resid(fitRecs, prior);
    const fa = resid(fitRecs, fit);
    console.log(
      `  fit residual RMS mrad      before ${mrad(fb)}\n                            after  ${mrad(fa)}`,
    );
    let note = `excitation episodes ${recs.map((r) => r.meta.episode_id).join(" ")} (last held out: ${held.length > 0}); delay ${fit.delayTicks}, reading latency ${fit.readingLagTicks} periods; kp 99.9 % intervals ${fit.kpInterval.map(([a, b]) => `${a.toFixed(0)}-${b.toFixed(0)}`).join(" ")}; fit residual max ${(Math.max(...fb) * 1000).toFixed(4)} → ${(Math.max(...fa) * 1000).toFixed(4)} mrad`;
    if (held.length > 0) {
      const hb = resid(held, prior);
      const ha = resid(held, fit);
      console.log(
        `  held-out residual RMS mrad before ${mrad(hb)}\n                            after  ${mrad(ha)}`,
      );
      note += `; held-out ${(Math.max(...hb) * 1000).toFixed(4)} → ${(Math.max(...ha) * 1000).toFixed(4)} mrad`;
    }
    const out = writeFittedBench(o.bench, fit, `${note} (${new Date().toISOString()})`, o.out);
    console.log(`  new bench version: ${out}`);
    for (const rec of held) {
      const before = await replayOnBench(rec, config, { baseDir, record: false });
      const after = await replayOnBench(rec, loadBenchFile(out).config, { baseDir, record: false });
      console.log(
        `  held-out replay ${rec.path}: joint RMS mrad before ${mrad(before.divergence.joint.rmsRad)}\n` +
          `                                         after  ${mrad(after.divergence.joint.rmsRad)}`,
      );
    }
  } catch (e) {
    if (!(e instanceof CodedError)) throw e;
    console.error(`robot-gateway sysid --excite: ${e.code}: ${e.message}\n  ${e.hint}`);
    process.exitCode = 2;
  }
}

async function excite(o: {
  real?: string;
  url?: string;
  agentToken?: string;
  operatorToken?: string;
  allowMotion?: boolean;
  episodes: number;
  doublets: number;
}): Promise<string[]> {
  const log = (l: string) => console.log(l);
  const opts = { episodes: o.episodes, doublets: o.doublets };
  if (o.url) {
    if (!o.agentToken || !o.operatorToken)
      throw new CodedError("RB_ERR_TWIN_INPUT", {
        tool: "sysid excite",
        path: o.url,
        reason: "--url needs --agent-token and --operator-token",
      });
    return runExcitation({ url: o.url, agentToken: o.agentToken, operatorToken: o.operatorToken }, opts, log);
  }
  const { config, baseDir } = loadBenchFile(o.real!);
  if (config.backend.type === "real" && !o.allowMotion && !config.backend.allowMotion)
    throw new CodedError("RB_ERR_MOTION_DISABLED", { operation: "an excitation (pass --allow-motion)" });
  const bench: BenchConfig =
    config.backend.type === "real" && o.allowMotion
      ? ({ ...config, backend: { ...config.backend, allowMotion: true } } as BenchConfig)
      : config;
  const g = await startGateway({ config: bench, baseDir, listen: { host: "127.0.0.1", port: 0 } });
  try {
    const h: GatewayHandle = { url: g.url!, agentToken: g.agentToken, operatorToken: g.operatorToken };
    return await runExcitation(h, opts, log);
  } finally {
    await g.close({ source: "operator", detail: "excitation finished" });
  }
}
