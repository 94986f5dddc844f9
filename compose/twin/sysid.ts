/**
 * System identification of the twin's joint servo from a bench's records: per-joint gain
 * (bandwidth of the sim's velocity tracker, sim/servo.ts) and the command transport delay.
 *
 * 1. Reconstruct what the bench was commanded: each record is replayed on a shadow bench built
 *    from the twin's bench file (the gateway plans the same accepted commands: IK, interpolation),
 *    which keeps every executed trajectory and its start time.
 * 2. Align each trajectory with the record's measured readings (episode time; readings carry their
 *    measurement time, so reading latency does not pose as delay).
 * 3. Fit: for each delay 0…maxDelay, a golden-section search per joint on log(kp) (the joints of the
 *    servo model are decoupled, so one simulation scores all seven); keep the delay with the least
 *    squared error. The servo is simulated with sim/servo.ts itself, from each segment's measured
 *    start state.
 * Residuals: RMS of (model − measured) joint angle per joint, before (the bench file's servo) and
 * after (the fit), on the fitting records and on the held-out ones.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, extname, join } from "node:path";
import { parseDocument } from "yaml";
import { ROBOTS } from "../../robots/franka/models.ts";
import { type ServoParams, servoAtRest, servoParams, servoStep } from "../../sim/servo.ts";
import { CodedError } from "../../seam/errors.ts";
import type { BenchConfig } from "../bench-config.ts";
import { type RecordedEpisode, replayOnBench } from "./replay.ts";
import { ShadowBackend } from "./shadow-backend.ts";

/** One executed trajectory with the bench's measured response. */
export interface Segment {
  /** count × 7 reference samples */
  ref: Float64Array;
  count: number;
  startQ: number[];
  startDq: number[];
  gripper: number;
  /** measured q per sample (count × 7), NaN where the record has no reading at that time */
  measured: Float64Array;
}

export interface ServoModel {
  kpPerJoint: number[];
  delayTicks: number;
}

/** Replay a record on a shadow bench of `twinBench` to recover its executed trajectories; align them. */
export async function segmentsOf(
  rec: RecordedEpisode,
  twinBench: BenchConfig,
  baseDir?: string,
): Promise<Segment[]> {
  if (twinBench.backend.type !== "sim")
    throw new CodedError("RB_ERR_TWIN_INPUT", {
      tool: "sysid",
      path: "--bench",
      reason: "the twin's bench must be a sim bench",
    });
  const tmp = mkdtempSync(join(tmpdir(), "rg-sysid-"));
  try {
    const cfg = { ...twinBench, shadow: twinBench.backend, recordsDir: tmp } as BenchConfig;
    let shadow: ShadowBackend | null = null;
    const out = await replayOnBench(rec, cfg, {
      ...(baseDir ? { baseDir } : {}),
      record: false,
      onStarted: (g) => {
        if (g.bench.backend instanceof ShadowBackend) shadow = g.bench.backend;
      },
    });
    const sh = shadow as ShadowBackend | null;
    if (!sh) throw new Error("sysid: the replay bench has no shadow");
    const dt = ROBOTS[twinBench.robot].controlPeriodS;
    return sh.executed.map((e) => {
      const t0 = e.startS - out.t0S;
      const measured = new Float64Array(e.samples * 7).fill(Number.NaN);
      // recorded readings by sample index: t = t0 + (i + 1)·dt
      for (let k = 0; k < rec.t.length; k++) {
        const i = Math.round((rec.t[k]! - t0) / dt) - 1;
        if (i < 0 || i >= e.samples || Math.abs(rec.t[k]! - (t0 + (i + 1) * dt)) > dt / 4) continue;
        measured.set(rec.q[k]!.slice(0, 7), i * 7);
      }
      // the start state as the record measured it (nearest reading to t0)
      let best = 0;
      for (let k = 1; k < rec.t.length; k++)
        if (Math.abs(rec.t[k]! - t0) < Math.abs(rec.t[best]! - t0)) best = k;
      return {
        ref: e.traj.q.slice(0, e.samples * 7),
        count: e.samples,
        startQ: rec.q[best] ? [...rec.q[best]!] : [...e.start.q],
        startDq: new Array(7).fill(0),
        gripper: e.start.gripperWidthM,
        measured,
      };
    });
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** Squared error and count per joint of the servo model over the segments. */
export function servoError(
  segs: readonly Segment[],
  base: ServoParams,
  model: ServoModel,
  dtS: number,
): { sse: Float64Array; n: Float64Array } {
  const p: ServoParams = { ...base, kpPerJoint: Float64Array.from(model.kpPerJoint) };
  const sse = new Float64Array(7);
  const n = new Float64Array(7);
  const d = model.delayTicks;
  for (const s of segs) {
    const st = servoAtRest(s.startQ, s.gripper);
    st.dq.set(s.startDq);
    const startQ = Float64Array.from(s.startQ);
    for (let i = 0; i < s.count; i++) {
      const k = i - d;
      if (k >= 0) servoStep(st, p, s.ref, k * 7, s.gripper, dtS);
      else servoStep(st, p, startQ, 0, s.gripper, dtS);
      for (let j = 0; j < 7; j++) {
        const m = s.measured[i * 7 + j]!;
        if (Number.isNaN(m)) continue;
        const e = st.q[j]! - m;
        sse[j] = sse[j]! + e * e;
        n[j] = n[j]! + 1;
      }
    }
  }
  return { sse, n };
}

export function rmsPerJoint(e: { sse: Float64Array; n: Float64Array }): number[] {
  return Array.from(e.sse, (s, j) => Math.sqrt(s / Math.max(1, e.n[j]!)));
}

/** Fit per-joint gains and one delay (see the module note). */
export function fitServo(
  segs: readonly Segment[],
  base: ServoParams,
  dtS: number,
  opts: {
    maxDelayTicks?: number;
    kpRange?: [number, number];
    iterations?: number;
    priorKp?: readonly number[];
    /** false: choose the delay with the raw gains (the caller gates them: excite.ts fitTimeline) */
    gate?: boolean;
  } = {},
): ServoModel & { sse: number; identified: boolean[]; rawKp: number[]; interior: boolean[] } {
  const [lo, hi] = opts.kpRange ?? [10, 0.95 / dtS];
  const iters = opts.iterations ?? 28;
  const phi = (Math.sqrt(5) - 1) / 2;
  let best:
    | (ServoModel & { sse: number; identified: boolean[]; rawKp: number[]; interior: boolean[] })
    | null = null;
  for (let d = 0; d <= (opts.maxDelayTicks ?? 12); d++) {
    // golden section on log kp, all joints at once
    const a = new Array(7).fill(Math.log(lo));
    const b = new Array(7).fill(Math.log(hi));
    let c = a.map((x, j) => b[j] - phi * (b[j] - x));
    let e = a.map((x, j) => x + phi * (b[j] - x));
    const score = (logs: number[]) =>
      servoError(segs, base, { kpPerJoint: logs.map(Math.exp), delayTicks: d }, dtS).sse;
    let fc = score(c);
    let fe = score(e);
    for (let it = 0; it < iters; it++) {
      const nc = [...c];
      const ne = [...e];
      for (let j = 0; j < 7; j++) {
        if (fc[j]! < fe[j]!) {
          b[j] = e[j];
          ne[j] = c[j];
          nc[j] = b[j] - phi * (b[j] - a[j]);
        } else {
          a[j] = c[j];
          nc[j] = e[j];
          ne[j] = a[j] + phi * (b[j] - a[j]);
        }
      }
      // one simulation probes the new point of every joint (the other point is known)
      const probe = nc.map((x, j) => (fc[j]! < fe[j]! ? x : ne[j]!));
      const fp = score(probe);
      const nfc = new Float64Array(7);
      const nfe = new Float64Array(7);
      for (let j = 0; j < 7; j++) {
        if (fc[j]! < fe[j]!) {
          nfe[j] = fc[j]!;
          nfc[j] = fp[j]!;
        } else {
          nfc[j] = fe[j]!;
          nfe[j] = fp[j]!;
        }
      }
      c = nc;
      e = ne;
      fc = nfc;
      fe = nfe;
    }
    const kp = a.map((x, j) => Math.exp((x + b[j]) / 2));
    // a gain the records cannot tell apart from the prior (< 2 % less error) keeps the prior
    const prior = opts.priorKp ?? new Array<number>(7).fill(base.kpPerS);
    const fitE = servoError(segs, base, { kpPerJoint: kp, delayTicks: d }, dtS).sse;
    const priorE = servoError(segs, base, { kpPerJoint: [...prior], delayTicks: d }, dtS).sse;
    // …and so does one at the edge of the search range (no interior minimum: the model cannot
    // explain the error with a gain, e.g. it is below the noise or comes from elsewhere)
    const atEdge = (k: number) =>
      Math.log(k / lo) < 0.05 * Math.log(hi / lo) || Math.log(hi / k) < 0.05 * Math.log(hi / lo);
    const identified = kp.map(
      (k, j) => !atEdge(k) && priorE[j]! > 0 && (priorE[j]! - fitE[j]!) / priorE[j]! >= 0.02,
    );
    const chosen = kp.map((k, j) => (identified[j] ? k : prior[j]!));
    const sse = servoError(
      segs,
      base,
      { kpPerJoint: opts.gate === false ? kp : chosen, delayTicks: d },
      dtS,
    ).sse.reduce((s, v) => s + v, 0);
    const interior = kp.map((k) => !atEdge(k));
    if (!best || sse < best.sse)
      best = { kpPerJoint: chosen, delayTicks: d, sse, identified, rawKp: kp, interior };
  }
  return best!;
}

/** The servo a sim bench file states (its fitted model, else the nominal one). */
export function benchServo(bench: BenchConfig): ServoModel {
  const robot = ROBOTS[bench.robot];
  const nominal = servoParams(robot).kpPerS;
  const s = bench.backend.type === "sim" ? bench.backend.servo : undefined;
  return {
    kpPerJoint: s?.kpPerJoint ? [...s.kpPerJoint] : new Array(7).fill(nominal),
    delayTicks: s?.delayTicks ?? 0,
  };
}

/**
 * Write the fitted servo into a NEW version of the bench file beside it (`NAME.sysid-N.yaml`, the
 * first N free; or `out`, refused when it exists), with the residuals as a comment. Returns its path.
 */
export function writeFittedBench(benchPath: string, model: ServoModel, note: string, out?: string): string {
  const doc = parseDocument(readFileSync(benchPath, "utf8"));
  doc.setIn(["backend", "servo"], {
    kpPerJoint: model.kpPerJoint.map((k) => Number(k.toFixed(2))),
    delayTicks: model.delayTicks,
    note,
  });
  const name = doc.get("name");
  if (typeof name === "string") doc.set("name", `${name.replace(/-sysid-\d+$/, "")}-sysid`);
  let path = out;
  if (path) {
    if (existsSync(path))
      throw new CodedError("RB_ERR_TWIN_INPUT", {
        tool: "sysid",
        path,
        reason: "the output file exists (never overwritten)",
      });
  } else {
    const stem = basename(benchPath, extname(benchPath)).replace(/\.sysid-\d+$/, "");
    for (let n = 1; ; n++) {
      path = join(dirname(benchPath), `${stem}.sysid-${n}.yaml`);
      if (!existsSync(path)) break;
    }
  }
  doc.commentBefore = ` fitted by robot-gateway sysid from ${benchPath}: ${note}`;
  writeFileSync(path!, doc.toString());
  return path!;
}
