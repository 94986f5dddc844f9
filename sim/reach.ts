/**
 * Tool-pose inverse kinematics for bench construction (wire reachability, reference paths).
 * Damped least squares on the geometric Jacobian, joint limits enforced by clamping.
 * Not a hot path; used when a bench is built and by test helpers.
 */
import { forwardKinematicsInto, fkWorkspace } from "../robots/franka/kinematics.ts";
import type { Mat4 } from "../robots/math.ts";
import type { RobotModel } from "../robots/types.ts";

export interface ToolIkResult {
  q: number[];
  /** position residual, m */
  positionErrorM: number;
  /** orientation residual, rad */
  orientationErrorRad: number;
}

/**
 * Solve for joint angles that put the tool frame (flange · tool) at `target` (base frame).
 * @param seed starting joint angles, rad
 */
export function solveToolPose(
  robot: RobotModel,
  target: Mat4,
  tool: Mat4,
  seed: readonly number[],
  opts: { iterations?: number; dampingM?: number; toleranceM?: number } = {},
): ToolIkResult {
  const iterations = opts.iterations ?? 200;
  const lambda = opts.dampingM ?? 0.01;
  const tol = opts.toleranceM ?? 1e-6;
  const ws = fkWorkspace();
  const q = [...seed];
  const e = new Float64Array(6);
  const J = new Float64Array(42);
  let posErr = Infinity;
  let oriErr = Infinity;
  for (let it = 0; it <= iterations; it++) {
    const f = forwardKinematicsInto(robot, q, ws, tool);
    const T = f[9]!;
    e[0] = target[3]! - T[3]!;
    e[1] = target[7]! - T[7]!;
    e[2] = target[11]! - T[11]!;
    // orientation error: 0.5 Σ (x_i × x_i^d) over the rotation columns
    let ex = 0;
    let ey = 0;
    let ez = 0;
    for (let c = 0; c < 3; c++) {
      const ax = T[c]!;
      const ay = T[4 + c]!;
      const az = T[8 + c]!;
      const bx = target[c]!;
      const by = target[4 + c]!;
      const bz = target[8 + c]!;
      ex += ay * bz - az * by;
      ey += az * bx - ax * bz;
      ez += ax * by - ay * bx;
    }
    e[3] = 0.5 * ex;
    e[4] = 0.5 * ey;
    e[5] = 0.5 * ez;
    posErr = Math.hypot(e[0]!, e[1]!, e[2]!);
    oriErr = Math.asin(Math.min(1, Math.hypot(e[3]!, e[4]!, e[5]!)));
    if (posErr < tol && oriErr < tol) break;
    if (it === iterations) break;
    for (let i = 0; i < 7; i++) {
      const F = f[i + 1]!;
      const zx = F[2]!;
      const zy = F[6]!;
      const zz = F[10]!;
      const rx = T[3]! - F[3]!;
      const ry = T[7]! - F[7]!;
      const rz = T[11]! - F[11]!;
      J[i] = zy * rz - zz * ry;
      J[7 + i] = zz * rx - zx * rz;
      J[14 + i] = zx * ry - zy * rx;
      J[21 + i] = zx;
      J[28 + i] = zy;
      J[35 + i] = zz;
    }
    // dq = Jᵀ (J Jᵀ + λ² I)⁻¹ e
    const A = new Float64Array(36);
    for (let r = 0; r < 6; r++)
      for (let c = 0; c < 6; c++) {
        let s = r === c ? lambda * lambda : 0;
        for (let k = 0; k < 7; k++) s += J[r * 7 + k]! * J[c * 7 + k]!;
        A[r * 6 + c] = s;
      }
    const y = solve6(A, e);
    for (let k = 0; k < 7; k++) {
      let d = 0;
      for (let r = 0; r < 6; r++) d += J[r * 7 + k]! * y[r]!;
      const jt = robot.joints[k]!;
      q[k] = Math.min(jt.upper, Math.max(jt.lower, q[k]! + d));
    }
  }
  return { q, positionErrorM: posErr, orientationErrorRad: oriErr };
}

/** Solve A x = b for a 6×6 system (Gaussian elimination with partial pivoting). */
function solve6(A: Float64Array, b: Float64Array): Float64Array {
  const n = 6;
  const M = Float64Array.from(A);
  const x = Float64Array.from(b);
  for (let c = 0; c < n; c++) {
    let p = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(M[r * n + c]!) > Math.abs(M[p * n + c]!)) p = r;
    if (p !== c) {
      for (let k = 0; k < n; k++) {
        const t = M[c * n + k]!;
        M[c * n + k] = M[p * n + k]!;
        M[p * n + k] = t;
      }
      const t = x[c]!;
      x[c] = x[p]!;
      x[p] = t;
    }
    const d = M[c * n + c]!;
    for (let r = c + 1; r < n; r++) {
      const f = M[r * n + c]! / d;
      if (f === 0) continue;
      for (let k = c; k < n; k++) M[r * n + k] = M[r * n + k]! - f * M[c * n + k]!;
      x[r] = x[r]! - f * x[c]!;
    }
  }
  for (let r = n - 1; r >= 0; r--) {
    let s = x[r]!;
    for (let k = r + 1; k < n; k++) s -= M[r * n + k]! * x[k]!;
    x[r] = s / M[r * n + r]!;
  }
  return x;
}
