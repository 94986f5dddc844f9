/**
 * Homing strategy (STYLE.md §1: a strategy moves a bench between named states): drive the arm
 * from wherever it stands to a named joint configuration (the episode's start pose) slowly and
 * smoothly, under the same safety supervisor as every agent chunk.
 *
 * - `planHome` (pure) plans a straight joint-space move with a minimum-jerk time profile. Its
 *   duration comes from the limits: the profile's analytic peaks (1.875·D/T velocity,
 *   5.7735·D/T² acceleration, 60·D/T³ jerk for a joint travelling D in T seconds) are held at a
 *   fraction of the commanded limits. The dense trajectory of every chunk must pass
 *   `precheckChunk`; a speed-type violation (velocity, acceleration, jerk, tool or gripper speed)
 *   stretches the duration and plans again, a geometric one (position band, workspace, keep-out)
 *   cannot be fixed by going slower and is reported at once. Moves longer than the profile's
 *   `maxChunkDurationS` are cut into rest-to-rest chunks along the same straight line.
 * - `homeBench` executes the plan through `backend.execute`, chunk by chunk, re-planning each
 *   chunk's dense trajectory from the measured state and pre-checking it again, with the runtime
 *   monitor (`SafetyMonitor`) fed every reading and every sensor event. Any refusal, monitor stop
 *   or fault throws a `HomeError` naming its cause; the backend is stopped first.
 *
 * Sim benches teleport on `reset()`; a real bench has no `reset` and is driven home with this
 * strategy between episodes.
 */
import type { Mat4 } from "../../robots/math.ts";
import type { RobotModel } from "../../robots/types.ts";
import { interpolateChunk } from "../../seam/interpolate.ts";
import { SafetyMonitor, type StopCause } from "../safety/monitor.ts";
import { type PrecheckStats, precheckChunk, type Violation, violationDetails } from "../safety/precheck.ts";
import type { EffectiveLimits } from "../safety/profile.ts";
import type { Backend, JointReading } from "../../seam/types.ts";

/** Why homing could not be planned or did not complete. */
export type HomeErrorKind =
  /** the target itself is outside the commanded position band or gripper range */
  | "target"
  /** the pre-check refuses every homing chunk the strategy may try */
  | "refused"
  /** the runtime monitor stopped the motion (limit breach, contact, device fault) */
  | "monitor"
  /** the backend ended the motion early (aborted, stopped, fault) */
  | "execute"
  /** the motion completed but the arm did not settle within tolerance */
  | "tolerance";

export class HomeError extends Error {
  constructor(
    readonly kind: HomeErrorKind,
    message: string,
    /** the pre-check's violation (kind "refused") */
    readonly violation?: Violation,
    /** the monitor's stop cause (kind "monitor") */
    readonly stopCause?: StopCause,
  ) {
    super(`homing: ${message}`);
    this.name = "HomeError";
  }
}

/** One rest-to-rest chunk of a homing move. */
export interface HomeChunk {
  /** rows: 7 joint targets (rad) then the gripper opening (m), one every `dtS` */
  rows: number[][];
  /** seconds between rows (a whole number of control periods) */
  dtS: number;
  /** chunk duration, s */
  durationS: number;
  /**
   * the pre-check's figures for the chunk's dense trajectory from its planned start (the dense
   * samples themselves are not kept: `homeBench` interpolates again from the measured state)
   */
  stats: PrecheckStats;
}

export interface HomePlan {
  /** chunks in order; empty when the arm already stands at the target */
  chunks: HomeChunk[];
  /** total duration, s */
  durationS: number;
  /** largest joint travel, rad */
  maxTravelRad: number;
  /** how many durations were tried before the pre-check accepted one */
  attempts: number;
}

export interface PlanHomeOptions {
  /** peak share of the commanded velocity/acceleration/jerk limits (0, 1]; default 0.25 */
  limitFraction?: number;
  /** seconds between rows; default 0.1 (rounded up to whole control periods) */
  rowDtS?: number;
  /** the slowest homing the strategy will try, s; default 120 */
  maxDurationS?: number;
  /** shortest homing move, s; default 0.5 */
  minDurationS?: number;
}

/** Speed-type violations: going slower can fix them. */
const SLOWER_HELPS: ReadonlySet<Violation["kind"]> = new Set([
  "velocity",
  "acceleration",
  "jerk",
  "tool_speed",
  "gripper_speed",
]);

// peaks of the minimum-jerk profile s(u) = 10u³ − 15u⁴ + 6u⁵ per unit travel and unit time
const MJ_PEAK_VELOCITY = 1.875;
const MJ_PEAK_ACCELERATION = 5.7735;
const MJ_PEAK_JERK = 60;

/** A readable sentence for a pre-check violation. */
export function describeViolation(v: Violation): string {
  const d = violationDetails(v);
  return `${v.kind} limit at t=${v.tS.toFixed(3)} s (${d.what}: ${fmt(v.value)} vs limit ${fmt(v.limit)} ${v.unit})`;
}

function fmt(x: number): string {
  return Number.isInteger(x) ? String(x) : x.toPrecision(4);
}

/** Minimum-jerk rows from `from` to `to` (joints and gripper), `n` rows. */
function minJerkRows(
  from: readonly number[],
  to: readonly number[],
  gFrom: number,
  gTo: number,
  n: number,
): number[][] {
  const rows: number[][] = [];
  for (let k = 1; k <= n; k++) {
    const u = k / n;
    const h = k === n ? 1 : 10 * u ** 3 - 15 * u ** 4 + 6 * u ** 5;
    rows.push([...from.map((v, j) => v + (to[j]! - v) * h), gFrom + (gTo - gFrom) * h]);
  }
  return rows;
}

/** The shortest duration whose minimum-jerk peaks stay within `f` of the limits. */
function profileDurationS(
  travel: readonly number[],
  gripperTravelM: number,
  limits: EffectiveLimits,
  f: number,
): number {
  let t = 0;
  travel.forEach((d, j) => {
    if (d === 0) return;
    t = Math.max(
      t,
      (MJ_PEAK_VELOCITY * d) / (f * limits.maxVelocityRadps[j]!),
      Math.sqrt((MJ_PEAK_ACCELERATION * d) / (f * limits.maxAccelerationRadps2[j]!)),
      Math.cbrt((MJ_PEAK_JERK * d) / (f * limits.maxJerkRadps3[j]!)),
    );
  });
  if (gripperTravelM > 0)
    t = Math.max(t, (MJ_PEAK_VELOCITY * gripperTravelM) / (f * limits.gripper.maxSpeedMps));
  return t;
}

/**
 * Plan a slow, smooth joint-space move from the measured `start` to `targetQ` (pure).
 * Throws `HomeError` ("target" or "refused") when no allowed duration passes the pre-check.
 * @param gripperWidthM gripper opening at the end, m (default: keep the measured opening, so a
 *   held tool is never dropped)
 * @param tcp flange→tool transform for tool-speed and tool geometry checks
 */
export function planHome(
  robot: RobotModel,
  limits: EffectiveLimits,
  start: Pick<JointReading, "q" | "dq" | "gripperWidthM">,
  targetQ: readonly number[],
  gripperWidthM: number = start.gripperWidthM,
  tcp?: Mat4,
  opts: PlanHomeOptions = {},
): HomePlan {
  const dof = limits.jointNames.length;
  if (targetQ.length !== dof || !targetQ.every(Number.isFinite)) {
    throw new HomeError("target", `target needs ${dof} finite joint angles, got ${JSON.stringify(targetQ)}`);
  }
  for (let j = 0; j < dof; j++) {
    const v = targetQ[j]!;
    if (v < limits.lowerRad[j]! || v > limits.upperRad[j]!) {
      throw new HomeError(
        "target",
        `target ${limits.jointNames[j]} = ${fmt(v)} rad is outside the commanded band [${fmt(limits.lowerRad[j]!)}, ${fmt(limits.upperRad[j]!)}] rad`,
      );
    }
  }
  const g = limits.gripper;
  if (!(gripperWidthM >= g.minWidthM && gripperWidthM <= g.maxWidthM)) {
    throw new HomeError(
      "target",
      `gripper opening ${fmt(gripperWidthM)} m is outside [${fmt(g.minWidthM)}, ${fmt(g.maxWidthM)}] m`,
    );
  }
  const f = opts.limitFraction ?? 0.25;
  if (!(f > 0 && f <= 1)) throw new RangeError(`limitFraction must be in (0, 1], got ${f}`);
  const period = robot.controlPeriodS;
  const dtS = Math.max(1, Math.ceil((opts.rowDtS ?? 0.1) / period - 1e-9)) * period;
  const maxDurationS = opts.maxDurationS ?? 120;
  const travel = targetQ.map((v, j) => Math.abs(v - start.q[j]!));
  const gripTravel = Math.abs(gripperWidthM - start.gripperWidthM);
  const maxTravelRad = Math.max(...travel);
  const moving = start.dq.some((v) => Math.abs(v) > 1e-6);
  if (maxTravelRad < 1e-9 && gripTravel < 1e-9 && !moving) {
    return { chunks: [], durationS: 0, maxTravelRad, attempts: 0 };
  }
  // the longest chunk the pre-check accepts, in whole rows
  const maxRowsPerChunk = Math.max(1, Math.floor(limits.maxChunkDurationS / dtS + 1e-9));
  let durationS = Math.max(opts.minDurationS ?? 0.5, profileDurationS(travel, gripTravel, limits, f));
  let last: Violation | undefined;
  for (let attempt = 1; durationS <= maxDurationS * (1 + 1e-9); attempt++) {
    const totalRows = Math.max(1, Math.ceil(durationS / dtS - 1e-9));
    const n = Math.ceil(totalRows / maxRowsPerChunk);
    const rowsPerChunk = Math.ceil(totalRows / n);
    const chunks: HomeChunk[] = [];
    let from: Pick<JointReading, "q" | "dq" | "gripperWidthM"> = start;
    let refused: Violation | undefined;
    for (let c = 0; c < n; c++) {
      // waypoints along the straight joint-space line; every chunk is rest-to-rest
      const s = (c + 1) / n;
      const to = c === n - 1 ? [...targetQ] : targetQ.map((v, j) => start.q[j]! + (v - start.q[j]!) * s);
      const gTo =
        c === n - 1 ? gripperWidthM : start.gripperWidthM + (gripperWidthM - start.gripperWidthM) * s;
      const rows = minJerkRows(from.q, to, from.gripperWidthM, gTo, rowsPerChunk);
      const trajectory = interpolateChunk(from, rows, dtS, period);
      const verdict = precheckChunk({ robot, limits, start: from, trajectory, ...(tcp ? { tcp } : {}) });
      if (!verdict.ok) {
        refused = { ...verdict.violation, tS: verdict.violation.tS + c * rowsPerChunk * dtS };
        break;
      }
      chunks.push({ rows, dtS, durationS: rowsPerChunk * dtS, stats: verdict.stats });
      from = { q: to, dq: new Array(dof).fill(0), gripperWidthM: gTo };
    }
    if (!refused) {
      return { chunks, durationS: chunks.length * rowsPerChunk * dtS, maxTravelRad, attempts: attempt };
    }
    last = refused;
    if (!SLOWER_HELPS.has(refused.kind)) {
      throw new HomeError(
        "refused",
        `the straight joint-space path to the target is refused by the pre-check: ${describeViolation(refused)}; going slower cannot fix it`,
        refused,
      );
    }
    // stretch by the overshoot (at least 25 %), then try again
    const ratio = refused.limit > 0 ? Math.abs(refused.value) / refused.limit : 2;
    durationS *= Math.max(1.25, Math.min(4, ratio * 1.1));
  }
  throw new HomeError(
    "refused",
    `even the slowest allowed homing (${maxDurationS} s) is refused by the pre-check${last ? `: ${describeViolation(last)}` : ""}`,
    last,
  );
}

export interface HomeBenchOptions extends PlanHomeOptions {
  /** the limits the move runs under (the bench's, for the coming episode's seed) */
  limits: EffectiveLimits;
  /** target joint configuration, rad */
  targetQ: readonly number[];
  /** gripper opening at the end, m (default: keep the measured opening) */
  gripperWidthM?: number;
  /** flange→tool transform */
  tcp?: Mat4;
  /** aborts the move (e-stop); the backend then holds */
  signal?: AbortSignal;
  /** largest |q − target| accepted at the end, rad; default 0.01 */
  toleranceRad?: number;
  /** hold at most this long after the last chunk for the arm to settle, s; default 2 */
  settleS?: number;
}

export interface HomeResult {
  plan: HomePlan;
  /** the reading after the move */
  final: JointReading;
  /** largest |q − target| at the end, rad */
  errorRad: number;
}

function maxError(q: readonly number[], target: readonly number[]): number {
  let e = 0;
  for (let j = 0; j < target.length; j++) e = Math.max(e, Math.abs(q[j]! - target[j]!));
  return e;
}

/**
 * Drive `backend` home: plan from the measured state, then execute chunk by chunk under the
 * pre-check (again, from each chunk's measured start) and the runtime monitor. Throws
 * `HomeError` with the cause when the move is refused, stopped or does not settle; the backend
 * has been told to stop by then.
 */
export async function homeBench(backend: Backend, opts: HomeBenchOptions): Promise<HomeResult> {
  const desc = backend.describe();
  const robot = desc.robot;
  const period = desc.controlPeriodS;
  const start = backend.read();
  const grip = opts.gripperWidthM ?? start.gripperWidthM;
  const plan = planHome(robot, opts.limits, start, opts.targetQ, grip, opts.tcp, opts);
  const monitor = new SafetyMonitor(robot, opts.limits, opts.tcp);
  const local = new AbortController();
  const signal = opts.signal ? AbortSignal.any([opts.signal, local.signal]) : local.signal;
  let eventStop: StopCause | undefined;
  const unsubscribe = backend.onEvent((e) => {
    const v = monitor.onEvent(e);
    if (v !== "ok" && !eventStop) {
      eventStop = v.cause;
      local.abort(`homing stopped: ${v.cause.kind}`);
    }
  });
  const fail = async (err: HomeError): Promise<never> => {
    await backend.stop(err.message);
    throw err;
  };
  const tick = (r: JointReading, i: number) => (monitor.tick(r, i) === "ok" ? "ok" : "stop");
  try {
    for (const [c, chunk] of plan.chunks.entries()) {
      if (signal.aborted) break;
      const measured = backend.read();
      const traj = interpolateChunk(measured, chunk.rows, chunk.dtS, period);
      const verdict = precheckChunk({
        robot,
        limits: opts.limits,
        start: measured,
        trajectory: traj,
        ...(opts.tcp ? { tcp: opts.tcp } : {}),
      });
      if (!verdict.ok) {
        return await fail(
          new HomeError(
            "refused",
            `chunk ${c + 1}/${plan.chunks.length} is refused from the measured state: ${describeViolation(verdict.violation)}`,
            verdict.violation,
          ),
        );
      }
      monitor.begin(measured, traj);
      const res = await backend.execute(traj, { signal, onTick: tick });
      const stopped = monitor.stopped?.cause ?? eventStop;
      if (stopped) return await fail(monitorError(stopped));
      if (res.outcome !== "completed") {
        const why = res.fault
          ? `${res.fault.device}: ${res.fault.message}`
          : res.outcome === "aborted" && signal.aborted
            ? `aborted: ${String(signal.reason)}`
            : res.outcome;
        return await fail(
          new HomeError("execute", `chunk ${c + 1}/${plan.chunks.length} ended early (${why})`),
        );
      }
    }
    if (signal.aborted && !eventStop) {
      return await fail(new HomeError("execute", `aborted (${String(opts.signal?.reason ?? "signal")})`));
    }
    // let a lagging servo settle on the last target, still monitored
    const tol = opts.toleranceRad ?? 0.01;
    const settleS = opts.settleS ?? 2;
    const sliceS = Math.max(1, Math.round(0.05 / period)) * period;
    let waited = 0;
    let final = backend.read();
    while (maxError(final.q, opts.targetQ) > tol && waited < settleS - 1e-9) {
      monitor.begin(final, null);
      const res = await backend.hold(sliceS, { signal, onTick: (r) => tick(r, -1) });
      const stopped = monitor.stopped?.cause ?? eventStop;
      if (stopped) return await fail(monitorError(stopped));
      if (res.outcome !== "completed") {
        return await fail(new HomeError("execute", `settling ended early (${res.outcome})`));
      }
      waited += sliceS;
      final = backend.read();
    }
    const errorRad = maxError(final.q, opts.targetQ);
    if (errorRad > tol) {
      return await fail(
        new HomeError(
          "tolerance",
          `the arm stopped ${fmt(errorRad)} rad from the target (tolerance ${fmt(tol)} rad) after settling ${fmt(waited)} s`,
        ),
      );
    }
    return { plan, final, errorRad };
  } finally {
    unsubscribe();
  }
}

function monitorError(cause: StopCause): HomeError {
  const what =
    "joint" in cause
      ? `${cause.joint}: ${fmt(cause.value)} vs ${fmt(cause.limit)}`
      : "link" in cause
        ? `${cause.link} in ${cause.volume}: clearance ${fmt(cause.value)} m`
        : "event" in cause
          ? `${cause.event} (${cause.source}: ${cause.detail})`
          : "device" in cause
            ? `${cause.device}: ${cause.message}`
            : `gap ${fmt(cause.gapMs)} ms > ${fmt(cause.limitMs)} ms`;
  return new HomeError(
    "monitor",
    `the safety monitor stopped the move: ${cause.kind} (${what})`,
    undefined,
    cause,
  );
}
