/**
 * Inverse kinematics of the Franka arm: the tool pose in the base frame → joint angles within limits.
 *
 * Method (per attempt): Levenberg–Marquardt with error-dependent damping (Sugihara 2011:
 * damping = ½·|e|² + w̄), a secondary task projected into the Jacobian's null space (pull toward
 * the seed, push away from joint limits), steps capped per joint, joints clamped into their limits
 * after every step. An attempt ends when it converges, stalls or runs out of iterations; then the
 * solver restarts from home and from deterministic pseudo-random configurations inside the limits.
 *
 * A failure is reported, never hidden:
 * - `unreachable`: the flange target lies beyond the arm's reach, or no attempt got close even
 *   when joint limits were ignored;
 * - `joint_limits`: the pose is reachable by the bare kinematics, but only outside the limits;
 * - `not_converged`: attempts got close but not within the tolerances.
 *
 * `solveIkInto` with a reused `IkWorkspace` allocates only the returned `q` arrays.
 */
import {
  type Mat4,
  mat4Mul,
  mat4RigidInverse,
  type Pose,
  poseToMat4,
  quatFromRotationInto,
} from "../math.ts";
import type { RobotModel } from "../types.ts";
import { type JacobianWorkspace, jacobianFromFrames, jacobianWorkspace } from "./jacobian.ts";
import { forwardKinematics, forwardKinematicsInto } from "./kinematics.ts";

const N = 7;

/**
 * Upper bound on the distance from the shoulder (frame 2's origin, where the axes of joints 1 and 2
 * meet, 0.333 m above the base) to the flange origin, m. The chain shoulder → elbow (frame 4) →
 * wrist (frame 5) → flange has segments whose lengths do not depend on q (each is two perpendicular
 * offsets: hypot(0.316, 0.0825), hypot(0.0825, 0.384), hypot(0.088, 0.107)), so their sum
 * (≈ 0.858 m) bounds the reach. Targets whose flange lies farther away are reported unreachable
 * without iterating.
 */
export function shoulderToFlangeReachM(model: RobotModel): number {
  const cached = reachCache.get(model);
  if (cached !== undefined) return cached;
  const f = forwardKinematics(model, [0, 0, 0, 0, 0, 0, 0]).frames;
  const d = (i: number, j: number): number =>
    Math.hypot(f[i]![3]! - f[j]![3]!, f[i]![7]! - f[j]![7]!, f[i]![11]! - f[j]![11]!);
  const reach = d(2, 4) + d(4, 5) + d(5, 8);
  reachCache.set(model, reach);
  return reach;
}
const reachCache = new WeakMap<RobotModel, number>();

/** Height of the shoulder point above the base origin, m (d of the first DH row). */
function shoulderHeightM(model: RobotModel): number {
  return model.dh[0]!.d;
}

export interface IkOptions {
  /** flange→tool transform; the target is the tool pose. Identity (flange) when omitted */
  tcp?: Mat4;
  /** start configuration, rad (7 entries); the model's home when omitted. Clamped into limits. */
  seedQ?: ArrayLike<number>;
  /** accepted position error, m (default 1e-4) */
  positionToleranceM?: number;
  /** accepted orientation error, rad (default 1e-3) */
  orientationToleranceRad?: number;
  /** iteration budget of one attempt (default 100) */
  maxIterations?: number;
  /** extra attempts after the one from the seed: home, then random configurations (default 30) */
  restarts?: number;
  /** seed of the deterministic pseudo-random restart generator (default 1) */
  rngSeed?: number;
  /** gain of the null-space pull toward the seed, 1/iteration (default 0.05; 0 disables) */
  nullSpaceGain?: number;
}

export type IkFailureReason = "unreachable" | "joint_limits" | "not_converged";

export type IkResult =
  | {
      ok: true;
      /** joint angles within the model's limits, rad */
      q: number[];
      /** distance between reached and target tool positions, m */
      positionResidualM: number;
      /** rotation angle between reached and target tool orientations, rad */
      orientationResidualRad: number;
      /** iterations spent over all attempts */
      iterations: number;
    }
  | {
      ok: false;
      reason: IkFailureReason;
      /** the best configuration found (within limits), rad */
      bestQ: number[];
      /** position error of bestQ, m */
      positionResidualM: number;
      /** orientation error of bestQ, rad */
      orientationResidualRad: number;
      /** iterations spent over all attempts */
      iterations: number;
    };

/** Reusable buffers for `solveIkInto`. */
export interface IkWorkspace {
  jac: JacobianWorkspace;
  target: Mat4;
  tcpInv: Mat4;
  flangeTarget: Mat4;
  q: Float64Array;
  pull: Float64Array;
  attemptBestQ: Float64Array;
  bestQ: Float64Array;
  e: Float64Array;
  dq: Float64Array;
  z: Float64Array;
  A: Float64Array;
  M: Float64Array;
  y: Float64Array;
  lo: Float64Array;
  hi: Float64Array;
}

export function ikWorkspace(): IkWorkspace {
  return {
    jac: jacobianWorkspace(),
    target: new Float64Array(16),
    tcpInv: new Float64Array(16),
    flangeTarget: new Float64Array(16),
    q: new Float64Array(N),
    pull: new Float64Array(N),
    attemptBestQ: new Float64Array(N),
    bestQ: new Float64Array(N),
    e: new Float64Array(6),
    dq: new Float64Array(N),
    z: new Float64Array(N),
    A: new Float64Array(N * N),
    M: new Float64Array(36),
    y: new Float64Array(6),
    lo: new Float64Array(N),
    hi: new Float64Array(N),
  };
}

/** Deterministic 32-bit PRNG (mulberry32), uniform in [0, 1). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** scratch of poseErrorInto */
const QUAT: [number, number, number, number] = [0, 0, 0, 1];

/**
 * Pose error of `cur` relative to `tgt`, both base-frame transforms: e[0..2] = position difference
 * (target − current), m; e[3..5] = rotation vector of R_tgt·R_curᵀ, rad. Returns the rotation angle.
 */
export function poseErrorInto(tgt: Mat4, cur: Mat4, e: Float64Array): number {
  e[0] = tgt[3]! - cur[3]!;
  e[1] = tgt[7]! - cur[7]!;
  e[2] = tgt[11]! - cur[11]!;
  // R = Rt · Rcᵀ: R[i][j] = Σk Rt[i][k] · Rc[j][k]
  const r = (i: number, j: number): number =>
    tgt[i * 4]! * cur[j * 4]! + tgt[i * 4 + 1]! * cur[j * 4 + 1]! + tgt[i * 4 + 2]! * cur[j * 4 + 2]!;
  const m00 = r(0, 0);
  const m11 = r(1, 1);
  const m22 = r(2, 2);
  const m01 = r(0, 1);
  const m10 = r(1, 0);
  const m02 = r(0, 2);
  const m20 = r(2, 0);
  const m12 = r(1, 2);
  const m21 = r(2, 1);
  // quaternion (x, y, z, w) of R with w ≥ 0
  quatFromRotationInto(m00, m01, m02, m10, m11, m12, m20, m21, m22, QUAT);
  const [x, y, z, w] = QUAT;
  const vn = Math.hypot(x, y, z);
  const angle = 2 * Math.atan2(vn, w);
  const k = vn > 1e-12 ? angle / vn : 2;
  e[3] = x * k;
  e[4] = y * k;
  e[5] = z * k;
  return angle;
}

/** In-place Cholesky solve of the n×n SPD system A·x = b (A row-major, overwritten); x → b. */
function choleskySolve(A: Float64Array, b: Float64Array, n: number): boolean {
  for (let j = 0; j < n; j++) {
    let d = A[j * n + j]!;
    for (let k = 0; k < j; k++) d -= A[j * n + k]! * A[j * n + k]!;
    if (!(d > 0)) return false;
    const ljj = Math.sqrt(d);
    A[j * n + j] = ljj;
    for (let i = j + 1; i < n; i++) {
      let s = A[i * n + j]!;
      for (let k = 0; k < j; k++) s -= A[i * n + k]! * A[j * n + k]!;
      A[i * n + j] = s / ljj;
    }
  }
  for (let i = 0; i < n; i++) {
    let s = b[i]!;
    for (let k = 0; k < i; k++) s -= A[i * n + k]! * b[k]!;
    b[i] = s / A[i * n + i]!;
  }
  for (let i = n - 1; i >= 0; i--) {
    let s = b[i]!;
    for (let k = i + 1; k < n; k++) s -= A[k * n + i]! * b[k]!;
    b[i] = s / A[i * n + i]!;
  }
  return true;
}

/** Damping floor w̄ of the Levenberg–Marquardt step. */
const DAMPING_FLOOR = 1e-4;
/** Damping of the null-space projector J⁺J. */
const NULLSPACE_DAMPING = 1e-6;
/** Extra iterations after the tolerances are met, to drive residuals well below them. */
const POLISH_ITERATIONS = 2;
/** Task cost (m) below which the null-space pull fades out linearly. */
const NULLSPACE_FADE_M = 0.01;
/** Largest change of one joint in one iteration, rad. */
const MAX_STEP_RAD = 0.4;
/** Distance kept from each joint limit by the solver, rad. */
const LIMIT_INSET_RAD = 1e-9;
/** Iterations without a 0.1 % improvement after which an attempt counts as stalled. */
const STALL_ITERATIONS = 12;
/** Length that converts orientation error (rad) into the scalar cost (m) used to rank attempts. */
const ORIENTATION_COST_M_PER_RAD = 0.1;

interface AttemptOutcome {
  converged: boolean;
  iterations: number;
  positionM: number;
  orientationRad: number;
}

/**
 * One solver attempt from ws.q. Leaves the best configuration of the attempt in ws.attemptBestQ.
 * With `limited` false the joints are not clamped (used only to classify failures).
 */
function attempt(
  model: RobotModel,
  ws: IkWorkspace,
  tcp: Mat4 | undefined,
  maxIterations: number,
  tolP: number,
  tolO: number,
  gain: number,
  limited: boolean,
): AttemptOutcome {
  const { q, e, dq, z, A, M, y, lo, hi, pull } = ws;
  const J = ws.jac.J;
  const endFrame = tcp ? 9 : 8;
  let bestCost = Number.POSITIVE_INFINITY;
  let bestP = Number.POSITIVE_INFINITY;
  let bestO = Number.POSITIVE_INFINITY;
  let lastImprovement = 0;
  let polishUntil = -1;
  let it = 0;
  for (; ; it++) {
    const frames = forwardKinematicsInto(model, q, ws.jac.fk, tcp);
    const angle = poseErrorInto(ws.target, frames[endFrame]!, e);
    const posErr = Math.hypot(e[0]!, e[1]!, e[2]!);
    const cost = posErr + ORIENTATION_COST_M_PER_RAD * angle;
    if (cost < bestCost) {
      if (cost < bestCost * (1 - 1e-3)) lastImprovement = it;
      bestCost = cost;
      bestP = posErr;
      bestO = angle;
      ws.attemptBestQ.set(q);
    }
    if (posErr <= tolP && angle <= tolO) {
      // within tolerance: polish a few more iterations (cheap, and smoother ee_pose trajectories)
      if (polishUntil < 0) polishUntil = it + POLISH_ITERATIONS;
      if (it >= polishUntil || (posErr <= 1e-3 * tolP && angle <= 1e-3 * tolO)) {
        q.set(ws.attemptBestQ);
        return { converged: true, iterations: it, positionM: bestP, orientationRad: bestO };
      }
    } else if (polishUntil >= 0 && it >= polishUntil) {
      q.set(ws.attemptBestQ);
      return { converged: true, iterations: it, positionM: bestP, orientationRad: bestO };
    }
    if (it >= maxIterations || it - lastImprovement > STALL_ITERATIONS) break;

    jacobianFromFrames(frames, endFrame, J);
    // Levenberg–Marquardt: (JᵀJ + λI) dq = Jᵀe, λ = ½|e|² + w̄
    let E = 0;
    for (let r = 0; r < 6; r++) E += e[r]! * e[r]!;
    const lambda = 0.5 * E + DAMPING_FLOOR;
    for (let i = 0; i < N; i++) {
      let gi = 0;
      for (let r = 0; r < 6; r++) gi += J[r * N + i]! * e[r]!;
      dq[i] = gi;
      for (let j = i; j < N; j++) {
        let s = 0;
        for (let r = 0; r < 6; r++) s += J[r * N + i]! * J[r * N + j]!;
        A[i * N + j] = s;
        A[j * N + i] = s;
      }
      A[i * N + i]! += lambda;
    }
    if (!choleskySolve(A, dq, N)) break;

    // secondary task: pull toward the seed and away from the limits, projected into the null space;
    // faded out near convergence so that the projector's damping cannot leak into the task
    const k = gain * Math.min(1, cost / NULLSPACE_FADE_M);
    if (k > 0) {
      let zn = 0;
      for (let i = 0; i < N; i++) {
        const span = hi[i]! - lo[i]!;
        const mid = 0.5 * (hi[i]! + lo[i]!);
        const u = (q[i]! - mid) / (0.5 * span); // −1 … 1 inside the limits
        const push = Math.abs(u) > 0.8 ? -(u - Math.sign(u) * 0.8) * span : 0;
        z[i] = k * (pull[i]! - q[i]! + push);
        zn += z[i]! * z[i]!;
      }
      if (zn > 0) {
        // M = J Jᵀ + μI, y = M⁻¹ J z, dq += z − Jᵀ y
        for (let r = 0; r < 6; r++) {
          let s = 0;
          for (let i = 0; i < N; i++) s += J[r * N + i]! * z[i]!;
          y[r] = s;
          for (let c = r; c < 6; c++) {
            let m = 0;
            for (let i = 0; i < N; i++) m += J[r * N + i]! * J[c * N + i]!;
            M[r * 6 + c] = m;
            M[c * 6 + r] = m;
          }
          M[r * 6 + r]! += NULLSPACE_DAMPING;
        }
        if (choleskySolve(M, y, 6)) {
          for (let i = 0; i < N; i++) {
            let s = 0;
            for (let r = 0; r < 6; r++) s += J[r * N + i]! * y[r]!;
            dq[i]! += z[i]! - s;
          }
        }
      }
    }

    let maxStep = 0;
    for (let i = 0; i < N; i++) maxStep = Math.max(maxStep, Math.abs(dq[i]!));
    const scale = maxStep > MAX_STEP_RAD ? MAX_STEP_RAD / maxStep : 1;
    for (let i = 0; i < N; i++) {
      let v = q[i]! + dq[i]! * scale;
      if (limited) v = Math.min(hi[i]!, Math.max(lo[i]!, v));
      q[i] = v;
    }
  }
  return { converged: false, iterations: it, positionM: bestP, orientationRad: bestO };
}

/** Bring each joint into its limits by whole turns where possible; false if some joint cannot be. */
function wrapIntoLimits(q: Float64Array, lo: Float64Array, hi: Float64Array): boolean {
  const TWO_PI = 2 * Math.PI;
  for (let i = 0; i < N; i++) {
    let v = q[i]!;
    while (v > hi[i]!) v -= TWO_PI;
    while (v < lo[i]!) v += TWO_PI;
    if (v > hi[i]!) return false;
    q[i] = v;
  }
  return true;
}

/**
 * Solve IK for the tool pose `target` (base frame) with a reusable workspace.
 * Deterministic: the same inputs and options give the same result.
 */
export function solveIkInto(model: RobotModel, target: Pose, options: IkOptions, ws: IkWorkspace): IkResult {
  const tolP = options.positionToleranceM ?? 1e-4;
  const tolO = options.orientationToleranceRad ?? 1e-3;
  const maxIterations = options.maxIterations ?? 100;
  const restarts = options.restarts ?? 30;
  const gain = options.nullSpaceGain ?? 0.05;
  const random = rng(options.rngSeed ?? 1);
  const tcp = options.tcp;
  const { lo, hi, q } = ws;
  for (let i = 0; i < N; i++) {
    const jnt = model.joints[i]!;
    lo[i] = jnt.lower + LIMIT_INSET_RAD;
    hi[i] = jnt.upper - LIMIT_INSET_RAD;
  }
  const clampInto = (src: ArrayLike<number>, dst: Float64Array): void => {
    for (let i = 0; i < N; i++) dst[i] = Math.min(hi[i]!, Math.max(lo[i]!, src[i]!));
  };
  const seed = options.seedQ ?? model.homeQ;
  clampInto(seed, ws.pull);
  poseToMat4(target, ws.target);

  let totalIterations = 0;
  const fail = (reason: IkFailureReason, p: number, o: number): IkResult => ({
    ok: false,
    reason,
    bestQ: Array.from(ws.bestQ),
    positionResidualM: p,
    orientationResidualRad: o,
    iterations: totalIterations,
  });

  // Reach pre-check on the flange position implied by the target and the tool offset.
  if (tcp) {
    mat4RigidInverse(tcp, ws.tcpInv);
    mat4Mul(ws.target, ws.tcpInv, ws.flangeTarget);
  } else {
    ws.flangeTarget.set(ws.target);
  }
  const dz = ws.flangeTarget[11]! - shoulderHeightM(model);
  const reach = Math.hypot(ws.flangeTarget[3]!, ws.flangeTarget[7]!, dz);
  if (!Number.isFinite(reach) || reach > shoulderToFlangeReachM(model)) {
    ws.bestQ.set(ws.pull);
    const frames = forwardKinematicsInto(model, ws.bestQ, ws.jac.fk, tcp);
    const o = poseErrorInto(ws.target, frames[tcp ? 9 : 8]!, ws.e);
    return fail("unreachable", Math.hypot(ws.e[0]!, ws.e[1]!, ws.e[2]!), o);
  }

  let bestCost = Number.POSITIVE_INFINITY;
  let bestP = Number.POSITIVE_INFINITY;
  let bestO = Number.POSITIVE_INFINITY;
  const home = model.homeQ;
  for (let a = 0; a <= restarts; a++) {
    if (a === 0) q.set(ws.pull);
    else if (a === 1 && options.seedQ) clampInto(home, q);
    else for (let i = 0; i < N; i++) q[i] = lo[i]! + random() * (hi[i]! - lo[i]!);
    const out = attempt(model, ws, tcp, maxIterations, tolP, tolO, gain, true);
    totalIterations += out.iterations;
    if (out.converged) {
      return {
        ok: true,
        q: Array.from(q),
        positionResidualM: out.positionM,
        orientationResidualRad: out.orientationRad,
        iterations: totalIterations,
      };
    }
    const cost = out.positionM + ORIENTATION_COST_M_PER_RAD * out.orientationRad;
    if (cost < bestCost) {
      bestCost = cost;
      bestP = out.positionM;
      bestO = out.orientationRad;
      ws.bestQ.set(ws.attemptBestQ);
    }
  }

  // Classify the failure: try once more from the best configuration without joint limits.
  q.set(ws.bestQ);
  const free = attempt(model, ws, tcp, maxIterations, tolP, tolO, gain, false);
  totalIterations += free.iterations;
  if (free.converged) {
    if (wrapIntoLimits(q, lo, hi)) {
      return {
        ok: true,
        q: Array.from(q),
        positionResidualM: free.positionM,
        orientationResidualRad: free.orientationRad,
        iterations: totalIterations,
      };
    }
    return fail("joint_limits", bestP, bestO);
  }
  const far = bestP > 100 * tolP || bestO > 100 * tolO;
  return fail(far ? "unreachable" : "not_converged", bestP, bestO);
}

/** Allocating convenience wrapper around `solveIkInto`. */
export function solveIk(model: RobotModel, target: Pose, options: IkOptions = {}): IkResult {
  return solveIkInto(model, target, options, ikWorkspace());
}
