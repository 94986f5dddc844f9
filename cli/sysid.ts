/**
 * `robot-gateway sysid RECORD.mcap… --bench BENCH`: fit the twin's joint servo (per-joint gain,
 * command delay) from a bench's records (compose/twin/sysid.ts), print residuals before/after on
 * the fitting and the held-out records (the last --holdout records; model residual and replay
 * divergence), and write the fit into a NEW version of the bench file (BENCH.sysid-N.yaml, or
 * --out, never overwritten).
 */
import { Command, InvalidArgumentError } from "commander";
import { loadBenchFile } from "../compose/bench-config.ts";
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

export function sysidCommand(): Command {
  return new Command("sysid")
    .description("fit the twin's joint servo model (per-joint gain, delay) from a bench's records")
    .argument("<records...>", "record.mcap files of the bench to identify")
    .requiredOption("--bench <file>", "the twin's (sim) bench file: the fit goes into a new version of it")
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
      async (records: string[], o: { bench: string; holdout: number; maxDelay: number; out?: string }) => {
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
