/**
 * The chunk pre-check: pure functions that decide, before anything moves, whether the dense
 * trajectory built by `seam/interpolate.ts` is safe to execute from the measured
 * state. Sim and real call exactly these functions with the same inputs (robot, resolved
 * limits, measured start, samples, tool offset); nothing backend-specific enters.
 *
 * Derivatives (per sample, every sample): backward finite differences at the control period T,
 * starting from the measured state (q0, dq0) and the start acceleration (0 unless the caller
 * passes the previous chunk's final acceleration):
 *   v_i = (q_i − q_{i−1})/T,  a_i = (v_i − v_{i−1})/T,  j_i = (a_i − a_{i−1})/T,
 * with q_{−1} = q0, v_{−1} = dq0, a_{−1} = a0. Tool speed is |p_i − p_{i−1}|/T for the tool
 * point p (FK with the flange→tool offset); gripper speed is |w_i − w_{i−1}|/T.
 *
 * Geometry (workspace box, keep-outs, for the tool point and every moving link capsule) is
 * exact per sample but evaluated lazily: the samples are cut into windows of `stride`
 * samples; FK runs at each window's first sample, and a window is accepted without further FK
 * when every pair's clearance exceeds its floor by δ = Σ_j maxdev_j · reach_j, where maxdev_j
 * is the largest |q_j − q_j(anchor)| inside the window (exact, from the samples) and reach_j
 * bounds the distance from joint j's axis to any body point (sum of link lengths). A joint
 * change Δ moves a point at distance ≤ r from its axis by ≤ |Δ|·r, so no sample of an accepted
 * window can be closer than the bound. Otherwise each sample of the window gets its own FK.
 * Tool speed is screened per sample with the tool Jacobian J taken at the window's anchor:
 * |p_i − p_{i−1}| ≤ |J·Δq_i| + Σ_j |Δq_{i,j}|·E_j, where E_j bounds how far column j can drift
 * inside the window (its axis turns by at most the summed upstream deviations; the lever
 * moves by at most 2·Σ_k maxdev_k·toolReach_k). Exact FK runs only where the bound exceeds
 * the limit. The verdict therefore equals a brute-force per-sample check; the stride only
 * changes the cost.
 *
 * Order: the chunk duration is checked first (a whole-chunk rule). Otherwise the earliest
 * sample with a violation is reported; at one sample the order is position, velocity,
 * acceleration, jerk, gripper_speed, tool_speed, then geometry (bodies in order: tool, then
 * capsules; per body the workspace, then the keep-outs in profile order).
 */
import { type Mat4, mat4Identity } from "../../robots/math.ts";
import { JACOBIAN_COLS, jacobianFromFrames } from "../../robots/franka/jacobian.ts";
import { type FkWorkspace, fkWorkspace, forwardKinematicsInto } from "../../robots/franka/kinematics.ts";
import type { RobotModel } from "../../robots/types.ts";
import { runSteps, type Steps } from "../../seam/steps.ts";
import type { JointTrajectory } from "../../seam/types.ts";
import {
  allowedFloor,
  type CompiledGeometry,
  compileGeometry,
  evalClearances,
  type GeometryScratch,
  geometryScratch,
} from "./geometry.ts";
import type { EffectiveLimits } from "./profile.ts";

export type ViolationKind =
  | "velocity"
  | "acceleration"
  | "jerk"
  | "position"
  | "tool_speed"
  | "workspace"
  | "keep_out"
  | "chunk_duration"
  | "gripper_speed";

/** The first thing in a chunk that breaks a limit. */
export interface Violation {
  kind: ViolationKind;
  /** 0-based chunk row the sample belongs to */
  row: number;
  /** 0-based dense sample index (sample 0 is one control period after the measured start) */
  sampleIndex: number;
  /** seconds after the measured start at which the sample is commanded */
  tS: number;
  /** joint name (position / velocity / acceleration / jerk) */
  joint?: string;
  /** body name: "tool" or a capsule's link name (workspace / keep_out) */
  link?: string;
  /** keep-out volume name (keep_out) or "workspace" */
  volume?: string;
  /** the limit that was crossed, in `unit` (for geometry: the clearance floor) */
  limit: number;
  /** the offending value, in `unit` (for geometry: the clearance) */
  value: number;
  unit: "rad" | "rad/s" | "rad/s^2" | "rad/s^3" | "m/s" | "m" | "s";
}

/** Figures of an accepted chunk. */
export interface PrecheckStats {
  samples: number;
  /** trajectory duration, s */
  durationS: number;
  /** largest |value| / limit over all joints and samples */
  maxVelocityRatio: number;
  maxAccelerationRatio: number;
  maxJerkRatio: number;
  /** largest gripper speed, m/s */
  maxGripperSpeedMps: number;
  /** upper bound on the tool speed (exact where FK ran), m/s */
  maxToolSpeedBoundMps: number;
  /** smallest clearance margin seen at evaluated samples, m */
  minClearanceM: number;
  /** FK evaluations spent */
  fkEvaluations: number;
}

export type PrecheckResult = { ok: true; stats: PrecheckStats } | { ok: false; violation: Violation };

export interface PrecheckInput {
  robot: RobotModel;
  limits: EffectiveLimits;
  /** measured state the trajectory starts from */
  start: { q: readonly number[]; dq: readonly number[]; gripperWidthM: number };
  trajectory: JointTrajectory;
  /** flange→tool transform (row-major Mat4); identity when omitted */
  tcp?: Mat4;
  /** joint accelerations at the start, rad/s² (default 0: the interpolation starts at rest in acceleration) */
  previousAcceleration?: readonly number[];
  /**
   * geometry window in samples (speed only; the verdict does not depend on it). Default 32:
   * on a slow 5000-sample sweep 16 → 2.7 ms, 32 → 1.7 ms, 64 → 1.3 ms; from 64 up fast sweeps
   * get slower, since their windows fail the screen and fall back to per-sample FK.
   */
  geometryStride?: number;
}

/** One clipped entry of a chunk. */
export interface ClipEntry {
  row: number;
  /** 0…6 joints, 7 gripper opening */
  column: number;
  requested: number;
  applied: number;
}

/**
 * Clip joint targets into the commanded position band and the gripper opening into its range.
 * Pure: returns new rows and one entry per changed value.
 */
export function clipRows(
  rows: readonly (readonly number[])[],
  limits: EffectiveLimits,
): { rows: number[][]; clipped: ClipEntry[] } {
  const dof = limits.jointNames.length;
  const clipped: ClipEntry[] = [];
  const out = rows.map((row, r) =>
    row.map((v, c) => {
      const lo = c < dof ? limits.lowerRad[c]! : limits.gripper.minWidthM;
      const hi = c < dof ? limits.upperRad[c]! : limits.gripper.maxWidthM;
      const applied = v < lo ? lo : Math.min(v, hi);
      if (applied !== v) clipped.push({ row: r, column: c, requested: v, applied });
      return applied;
    }),
  );
  return { rows: out, clipped };
}

/** The chunk row a dense sample belongs to. */
export function rowOfSample(traj: JointTrajectory, sampleIndex: number): number {
  const ends = traj.rowEndIndex;
  let lo = 0;
  let hi = ends.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ends[mid]! >= sampleIndex) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

// Compiled geometry is cached per (limits, robot, tcp) — limits are frozen, so identity is a safe key.
const geometryCache = new WeakMap<
  EffectiveLimits,
  { robot: RobotModel; tcp: Mat4 | undefined; g: CompiledGeometry }[]
>();

function geometryFor(robot: RobotModel, limits: EffectiveLimits, tcp: Mat4 | undefined): CompiledGeometry {
  let list = geometryCache.get(limits);
  if (!list) geometryCache.set(limits, (list = []));
  for (const e of list) if (e.robot === robot && e.tcp === tcp) return e.g;
  const g = compileGeometry(robot, limits, tcp);
  if (list.length > 8) list.shift();
  list.push({ robot, tcp, g });
  return g;
}

interface Scratch {
  fk: FkWorkspace;
  geo: GeometryScratch;
  clear: Float64Array;
  floor: Float64Array;
  qs: Float64Array;
  prevTool: Float64Array;
  /** the derivative pass's previous sample, velocity and acceleration, and the position band, per joint */
  qPrev: Float64Array;
  vPrev: Float64Array;
  aPrev: Float64Array;
  bandLo: Float64Array;
  bandHi: Float64Array;
  /** per geometry window and joint: the largest deviation from the window's anchor (grown as needed) */
  dev: Float64Array;
  /** the tool Jacobian at a window's anchor (6 × JACOBIAN_COLS) and its columns' drift bounds */
  jac: Float64Array;
  colErr: Float64Array;
}

function makeScratch(g: CompiledGeometry, dof: number): Scratch {
  const n = g.bodies.length * g.stride;
  return {
    fk: fkWorkspace(),
    geo: geometryScratch(),
    clear: new Float64Array(n),
    floor: new Float64Array(n),
    qs: new Float64Array(dof),
    prevTool: new Float64Array(3),
    qPrev: new Float64Array(dof),
    vPrev: new Float64Array(dof),
    aPrev: new Float64Array(dof),
    bandLo: new Float64Array(dof),
    bandHi: new Float64Array(dof),
    dev: new Float64Array(8 * dof),
    jac: new Float64Array(6 * JACOBIAN_COLS),
    colErr: new Float64Array(dof),
  };
}

/**
 * The limits as the derivative pass reads them (typed copies, reciprocals of the rate limits),
 * made once per limits object (frozen: identity is a safe key).
 */
interface LimitTables {
  lo: Float64Array;
  hi: Float64Array;
  invV: Float64Array;
  invA: Float64Array;
  invJ: Float64Array;
}
const limitTables = new WeakMap<EffectiveLimits, LimitTables>();

function tablesFor(limits: EffectiveLimits): LimitTables {
  let t = limitTables.get(limits);
  if (!t) {
    t = {
      lo: Float64Array.from(limits.lowerRad),
      hi: Float64Array.from(limits.upperRad),
      invV: Float64Array.from(limits.maxVelocityRadps, (x) => 1 / x),
      invA: Float64Array.from(limits.maxAccelerationRadps2, (x) => 1 / x),
      invJ: Float64Array.from(limits.maxJerkRadps3, (x) => 1 / x),
    };
    limitTables.set(limits, t);
  }
  return t;
}

/** The violation of `kind` at dense sample `i` of `traj`. */
function violationAt(
  traj: JointTrajectory,
  kind: ViolationKind,
  i: number,
  limit: number,
  value: number,
  unit: Violation["unit"],
  extra: { joint?: string; link?: string; volume?: string } = {},
): PrecheckResult {
  const T = traj.periodS;
  return {
    ok: false,
    violation: {
      kind,
      row: rowOfSample(traj, i),
      sampleIndex: i,
      tS: (i + 1) * T,
      ...extra,
      limit,
      value,
      unit,
    },
  };
}

/** One run's FK: the frames at dense sample `i` (−1: the start), counted. */
interface FkRun {
  robot: RobotModel;
  startQ: readonly number[];
  q: Float64Array;
  dof: number;
  tcp: Mat4;
  s: Scratch;
  evaluations: number;
}

function fkAt(r: FkRun, i: number): Mat4[] {
  r.evaluations++;
  const s = r.s;
  if (i < 0) return forwardKinematicsInto(r.robot, r.startQ, s.fk, r.tcp);
  const base = i * r.dof;
  for (let j = 0; j < r.dof; j++) s.qs[j] = r.q[base + j]!;
  return forwardKinematicsInto(r.robot, s.qs, s.fk, r.tcp);
}

/**
 * Judge a dense trajectory from the measured start. Pure (apart from caches keyed by the frozen
 * limits — compiled geometry, the limit tables — and the pooled scratch). Returns the FIRST
 * violation, or stats.
 */
export function precheckChunk(input: PrecheckInput): PrecheckResult {
  return runSteps(precheckChunkSteps(input));
}

/** Samples of the derivative pass between two pause points of `precheckChunkSteps`. */
const DERIVATIVE_SAMPLES_PER_STEP = 1024;

/**
 * `precheckChunk` as steps (seam/steps.ts): it may pause every DERIVATIVE_SAMPLES_PER_STEP
 * samples of the derivative pass and after each geometry window. Same verdict, same stats.
 */
export function* precheckChunkSteps(input: PrecheckInput): Steps<PrecheckResult> {
  const lease: ScratchLease = {};
  try {
    return yield* precheckBody(input, lease);
  } finally {
    if (lease.g && lease.s) releaseScratch(lease.g, lease.s);
  }
}

/**
 * Scratch buffers are pooled per compiled geometry: a pre-check takes one for its run and gives
 * it back when it ends (returns, throws or is abandoned between slices), so two runs never share
 * one and the realtime setting's act (one pre-check per chunk, 50 Hz and more) allocates none.
 */
const scratchPool = new WeakMap<CompiledGeometry, Scratch[]>();
interface ScratchLease {
  g?: CompiledGeometry;
  s?: Scratch;
}

function takeScratch(g: CompiledGeometry, dof: number, lease: ScratchLease): Scratch {
  const free = scratchPool.get(g);
  let s = free?.pop();
  if (!s || s.qs.length !== dof) s = makeScratch(g, dof);
  lease.g = g;
  lease.s = s;
  return s;
}

function releaseScratch(g: CompiledGeometry, s: Scratch): void {
  let free = scratchPool.get(g);
  if (!free) scratchPool.set(g, (free = []));
  if (free.length < 4) free.push(s);
}

/** the identity flange→tool transform (read only: forwardKinematicsInto never writes its tcp) */
const IDENTITY_TCP: Mat4 = mat4Identity();

function* precheckBody(input: PrecheckInput, lease: ScratchLease): Steps<PrecheckResult> {
  const { robot, limits, start, trajectory: traj } = input;
  const tcp = input.tcp;
  const dof = limits.jointNames.length;
  const T = traj.periodS;
  const count = traj.count;
  const invT = 1 / T;
  const q = traj.q;
  const grip = traj.gripperWidthM;

  // 1. whole-chunk rule
  const durationS = count * T;
  if (durationS > limits.maxChunkDurationS + 1e-9) {
    const i = Math.min(count - 1, Math.floor(limits.maxChunkDurationS / T + 1e-9));
    return violationAt(traj, "chunk_duration", i, limits.maxChunkDurationS, durationS, "s");
  }

  const g = geometryFor(robot, limits, tcp);
  const s = takeScratch(g, dof, lease);
  const fk: FkRun = { robot, startQ: start.q, q, dof, tcp: tcp ?? IDENTITY_TCP, s, evaluations: 0 };

  // 2. derivative pass, per sample; also per-window max joint deviation from the anchor,
  //    over the window's samples and the sample just before it (for the geometry/tool pass)
  const stride = Math.max(1, Math.floor(input.geometryStride ?? 32));
  const nWin = Math.ceil(count / stride);
  if (s.dev.length < nWin * dof) s.dev = new Float64Array(2 * nWin * dof);
  const dev = s.dev;
  dev.fill(0, 0, nWin * dof);
  // typed copies: the hot loop reads them 3 × count × dof times
  const { lo, hi, invV, invA, invJ } = tablesFor(limits);
  // ratios trigger an exact re-check (firstKindAtSample) slightly early, so rounding of
  // the ratio can never hide a violation that the exact comparison would report
  const TRIGGER = 1 - 1e-9;
  const toolMax = limits.maxToolSpeedMps;
  const gripMax = limits.gripper.maxSpeedMps;

  const { qPrev, vPrev, aPrev, bandLo, bandHi } = s;
  for (let j = 0; j < dof; j++) {
    qPrev[j] = start.q[j]!;
    vPrev[j] = start.dq[j]!;
    aPrev[j] = input.previousAcceleration?.[j] ?? 0;
    // a start outside the band may move back in, but not further out
    bandLo[j] = Math.min(lo[j]!, start.q[j]!);
    bandHi[j] = Math.max(hi[j]!, start.q[j]!);
  }
  let gPrev = start.gripperWidthM;
  let maxV = 0;
  let maxA = 0;
  let maxJ = 0;
  let maxGrip = 0;
  let derivFail: PrecheckResult | undefined;
  let failIndex = count;

  for (let i = 0; i < count; i++) {
    if (i > 0 && i % DERIVATIVE_SAMPLES_PER_STEP === 0) yield;
    const base = i * dof;
    const w = (i / stride) | 0;
    const anchorBase = w * stride * dof;
    const devBase = w * dof;
    const isAnchor = i % stride === 0;
    let bad = false;
    for (let j = 0; j < dof; j++) {
      const qi = q[base + j]!;
      const v = (qi - qPrev[j]!) * invT;
      const a = (v - vPrev[j]!) * invT;
      const jk = (a - aPrev[j]!) * invT;
      const rv = Math.abs(v) * invV[j]!;
      const ra = Math.abs(a) * invA[j]!;
      const rj = Math.abs(jk) * invJ[j]!;
      if (rv > maxV) maxV = rv;
      if (ra > maxA) maxA = ra;
      if (rj > maxJ) maxJ = rj;
      if (qi < bandLo[j]! || qi > bandHi[j]! || rv > TRIGGER || ra > TRIGGER || rj > TRIGGER) bad = true;
      // window deviation: |q − q(anchor)| over the window and the sample before its anchor
      const d = isAnchor ? Math.abs(qPrev[j]! - qi) : Math.abs(qi - q[anchorBase + j]!);
      if (d > dev[devBase + j]!) dev[devBase + j] = d;
      qPrev[j] = qi;
      vPrev[j] = v;
      aPrev[j] = a;
    }
    if (bad) {
      derivFail = firstKindAtSample(
        i,
        q,
        dof,
        start,
        input.previousAcceleration,
        traj,
        limits,
        bandLo,
        bandHi,
      );
      failIndex = i;
      break;
    }
    const gv = (grip[i]! - gPrev) * invT;
    gPrev = grip[i]!;
    const ag = Math.abs(gv);
    if (ag > maxGrip) maxGrip = ag;
    if (ag > gripMax) {
      derivFail = violationAt(traj, "gripper_speed", i, gripMax, gv, "m/s");
      failIndex = i;
      break;
    }
  }

  // 3. tool speed and geometry, window by window, only before the first derivative failure
  evalClearances(g, fkAt(fk, -1), s.geo, s.clear);
  allowedFloor(s.clear, s.floor);
  const nPairs = s.clear.length;
  const reach = g.reachM;
  const toolReach = g.toolReachM;
  // 6×7 row-major (jacobian.ts layout); the tool-speed screen reads the linear rows 0…2
  const { jac, colErr } = s;
  let minMargin = Number.POSITIVE_INFINITY;
  let maxTool = 0;
  let prevToolIndex = -2; // sample whose exact tool point is in s.prevTool
  for (let w = 0; w < nWin; w++) {
    const i0 = w * stride;
    if (i0 >= failIndex) break;
    yield;
    const i1 = Math.min(count, i0 + stride, failIndex);
    const devBase = w * dof;
    const frames = fkAt(fk, i0);
    // geometry screen: clearance at the anchor minus how far any body point can move in the window
    let delta = 0;
    let deltaTool = 0;
    for (let j = 0; j < dof; j++) {
      delta += dev[devBase + j]! * reach[j]!;
      deltaTool += dev[devBase + j]! * toolReach[j]!;
    }
    evalClearances(g, frames, s.geo, s.clear, s.floor, delta);
    let windowSafe = true;
    for (let p = 0; p < nPairs; p++) {
      const m = s.clear[p]! - s.floor[p]! - delta;
      if (m < minMargin) minMargin = m;
      if (m <= 0) windowSafe = false;
    }
    // tool Jacobian at the anchor, J_j = z_j × (p − o_j), and a bound E_j on how far column j
    // can drift inside the window: |Δz_j|·|p − o_j| + |Δ(p − o_j)| ≤ φ_j·toolReach_j + 2·δ_tool
    jacobianFromFrames(frames, 9, jac);
    let phi = 0;
    for (let j = 0; j < dof; j++) {
      colErr[j] = phi * toolReach[j]! + 2 * deltaTool;
      phi += dev[devBase + j]!;
    }
    for (let i = i0; i < i1; i++) {
      // tool speed screen: |p_i − p_{i−1}| ≤ |J(anchor)·Δq| + Σ_j |Δq_j|·E_j
      const base = i * dof;
      let lx = 0;
      let ly = 0;
      let lz = 0;
      let err = 0;
      for (let j = 0; j < dof; j++) {
        const dq = q[base + j]! - (i === 0 ? start.q[j]! : q[base - dof + j]!);
        lx += jac[j]! * dq;
        ly += jac[JACOBIAN_COLS + j]! * dq;
        lz += jac[2 * JACOBIAN_COLS + j]! * dq;
        err += Math.abs(dq) * colErr[j]!;
      }
      const bound = (Math.sqrt(lx * lx + ly * ly + lz * lz) + err) * invT;
      if (bound > toolMax) {
        if (prevToolIndex !== i - 1) {
          const m = fkAt(fk, i - 1)[9]!;
          s.prevTool[0] = m[3]!;
          s.prevTool[1] = m[7]!;
          s.prevTool[2] = m[11]!;
        }
        const m = fkAt(fk, i)[9]!;
        const speed =
          Math.hypot(m[3]! - s.prevTool[0]!, m[7]! - s.prevTool[1]!, m[11]! - s.prevTool[2]!) * invT;
        s.prevTool[0] = m[3]!;
        s.prevTool[1] = m[7]!;
        s.prevTool[2] = m[11]!;
        prevToolIndex = i;
        if (speed > maxTool) maxTool = speed;
        if (speed > toolMax)
          return violationAt(traj, "tool_speed", i, toolMax, speed, "m/s", { link: "tool" });
      } else if (bound > maxTool) maxTool = bound;
      if (!windowSafe) {
        evalClearances(g, fkAt(fk, i), s.geo, s.clear);
        for (let p = 0; p < nPairs; p++) {
          const c = s.clear[p]!;
          const fl = s.floor[p]!;
          if (c < fl) return geometryViolation(g, traj, p, i, c, fl);
        }
      }
    }
  }
  if (derivFail) return derivFail;
  return okResult(count, durationS, maxV, maxA, maxJ, maxGrip, maxTool, minMargin, fk.evaluations);
}

/**
 * The passing result, built outside precheckBody. V8 optimizes precheckBody (a large generator:
 * its TurboFan compile takes 40–115 ms on a background thread) assuming that the boilerplate of
 * each object literal it creates keeps its map until the compile ends. The result's literal, in
 * the body, changed map in almost every such window (its number fields change representation
 * between chunks), so 147 of 150 compiles were thrown away ("ObjectSlotValueDependency", node
 * --trace-opt --trace-compilation-dependencies over bench/act-turns.ts) and the pre-check ran in
 * baseline code: the act's planning turns p50 2.6–3.6 ms instead of about the 0.5 ms slice.
 */
function okResult(
  samples: number,
  durationS: number,
  maxV: number,
  maxA: number,
  maxJ: number,
  maxGrip: number,
  maxTool: number,
  minMargin: number,
  fkEvaluations: number,
): PrecheckResult {
  return {
    ok: true,
    stats: {
      samples,
      durationS,
      maxVelocityRatio: maxV,
      maxAccelerationRatio: maxA,
      maxJerkRatio: maxJ,
      maxGripperSpeedMps: maxGrip,
      maxToolSpeedBoundMps: maxTool,
      minClearanceM: minMargin,
      fkEvaluations,
    },
  };
}

function geometryViolation(
  g: CompiledGeometry,
  traj: JointTrajectory,
  pair: number,
  i: number,
  c: number,
  floor: number,
): PrecheckResult {
  const bi = Math.floor(pair / g.stride);
  const slot = pair % g.stride;
  const link = g.bodies[bi]!.link;
  if (slot === 0) return violationAt(traj, "workspace", i, floor, c, "m", { link, volume: "workspace" });
  return violationAt(traj, "keep_out", i, floor, c, "m", { link, volume: g.volumes[slot - 1]!.name });
}

/**
 * Exact re-check of one sample: the first violation in the documented kind order (position,
 * velocity, acceleration, jerk) over all joints, or undefined.
 */
function firstKindAtSample(
  i: number,
  q: Float64Array,
  dof: number,
  start: PrecheckInput["start"],
  a0: readonly number[] | undefined,
  traj: JointTrajectory,
  limits: EffectiveLimits,
  bandLo: Float64Array,
  bandHi: Float64Array,
): PrecheckResult | undefined {
  const invT = 1 / traj.periodS;
  const at = (k: number, j: number): number => (k < 0 ? start.q[j]! : q[k * dof + j]!);
  const vel = (k: number, j: number): number => (k < 0 ? start.dq[j]! : (at(k, j) - at(k - 1, j)) * invT);
  const acc = (k: number, j: number): number => (k < 0 ? (a0?.[j] ?? 0) : (vel(k, j) - vel(k - 1, j)) * invT);
  const names = limits.jointNames;
  for (let j = 0; j < dof; j++) {
    const qi = at(i, j);
    if (qi < bandLo[j]! || qi > bandHi[j]!)
      return violationAt(traj, "position", i, qi < bandLo[j]! ? bandLo[j]! : bandHi[j]!, qi, "rad", {
        joint: names[j]!,
      });
  }
  for (let j = 0; j < dof; j++) {
    const v = vel(i, j);
    if (Math.abs(v) > limits.maxVelocityRadps[j]!)
      return violationAt(traj, "velocity", i, limits.maxVelocityRadps[j]!, v, "rad/s", { joint: names[j]! });
  }
  for (let j = 0; j < dof; j++) {
    const a = acc(i, j);
    if (Math.abs(a) > limits.maxAccelerationRadps2[j]!)
      return violationAt(traj, "acceleration", i, limits.maxAccelerationRadps2[j]!, a, "rad/s^2", {
        joint: names[j]!,
      });
  }
  for (let j = 0; j < dof; j++) {
    const jk = (acc(i, j) - acc(i - 1, j)) * invT;
    if (Math.abs(jk) > limits.maxJerkRadps3[j]!)
      return violationAt(traj, "jerk", i, limits.maxJerkRadps3[j]!, jk, "rad/s^3", { joint: names[j]! });
  }
  return undefined;
}

/**
 * Fields for RB_ERR_UNSAFE_CHUNK's details (and its message template
 * "{kind} limit at row {row} ({what}: {value} > {limit} {unit})").
 */
export function violationDetails(v: Violation): Record<string, string | number> {
  const what = v.joint ?? (v.volume && v.link ? `${v.link} in ${v.volume}` : (v.link ?? v.kind));
  const d: Record<string, string | number> = {
    kind: v.kind,
    row: v.row,
    sample_index: v.sampleIndex,
    t_s: v.tS,
    what,
    value: v.value,
    limit: v.limit,
    unit: v.unit,
  };
  if (v.joint !== undefined) d.joint = v.joint;
  if (v.link !== undefined) d.link = v.link;
  if (v.volume !== undefined) d.volume = v.volume;
  return d;
}
