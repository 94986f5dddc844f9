/**
 * Geometric Jacobian of the Franka arm in the robot base frame.
 *
 * Layout: a 6×7 matrix stored row-major in a Float64Array(42), entry (row r, joint c) at
 * `r * 7 + c`. Rows 0–2 are the linear velocity of the chosen point (m/s per rad/s), rows 3–5 the
 * angular velocity of the end frame (rad/s per rad/s), both expressed in the base frame.
 *
 * Hot path (IK iterations, Cartesian safety checks): `jacobianInto` allocates nothing when the caller
 * keeps one `JacobianWorkspace` per thread of work.
 */
import type { Mat4 } from "../math.ts";
import type { RobotModel } from "../types.ts";
import { type FkWorkspace, fkWorkspace, forwardKinematicsInto } from "./kinematics.ts";

/** Number of arm joints (columns of the Jacobian). */
export const JACOBIAN_COLS = 7;

/** Reusable buffers for `jacobianInto`. */
export interface JacobianWorkspace {
  /** FK frames of the last evaluation (0 base, 1…7 joints, 8 flange, 9 tool) */
  fk: FkWorkspace;
  /** the 6×7 Jacobian, row-major, linear rows first */
  J: Float64Array;
}

export function jacobianWorkspace(): JacobianWorkspace {
  return { fk: fkWorkspace(), J: new Float64Array(6 * JACOBIAN_COLS) };
}

/**
 * Fill `out` with the geometric Jacobian of frame `endFrame` given the chain frames that
 * `forwardKinematicsInto` produced. Joint i (1…7) turns about the z axis of frame i (modified DH).
 * @param frames base-frame transforms (0 base, 1…7 joints, 8 flange, 9 tool)
 * @param endFrame index of the frame whose origin velocity the linear rows describe (8 flange, 9 tool)
 * @param out 6×7 row-major output
 */
export function jacobianFromFrames(
  frames: readonly Mat4[],
  endFrame: number,
  out: Float64Array,
): Float64Array {
  const e = frames[endFrame]!;
  const ex = e[3]!;
  const ey = e[7]!;
  const ez = e[11]!;
  for (let i = 0; i < JACOBIAN_COLS; i++) {
    const f = frames[i + 1]!;
    // joint axis: z column of frame i+1
    const zx = f[2]!;
    const zy = f[6]!;
    const zz = f[10]!;
    const rx = ex - f[3]!;
    const ry = ey - f[7]!;
    const rz = ez - f[11]!;
    out[i] = zy * rz - zz * ry;
    out[7 + i] = zz * rx - zx * rz;
    out[14 + i] = zx * ry - zy * rx;
    out[21 + i] = zx;
    out[28 + i] = zy;
    out[35 + i] = zz;
  }
  return out;
}

/**
 * Geometric Jacobian at `q` of the flange (no `tcp`) or of the tool frame (`tcp` = flange→tool).
 * Also leaves the FK frames of `q` in `ws.fk.frames`.
 * @param q joint angles, rad (7 entries)
 * @returns ws.J (6×7, row-major, linear rows first, base frame)
 */
export function jacobianInto(
  model: RobotModel,
  q: ArrayLike<number>,
  ws: JacobianWorkspace,
  tcp?: Mat4,
): Float64Array {
  const frames = forwardKinematicsInto(model, q, ws.fk, tcp);
  return jacobianFromFrames(frames, tcp ? 9 : 8, ws.J);
}

/** Allocating convenience wrapper around `jacobianInto`; returns a fresh 6×7 row-major array. */
export function jacobian(model: RobotModel, q: ArrayLike<number>, tcp?: Mat4): Float64Array {
  const ws = jacobianWorkspace();
  return jacobianInto(model, q, ws, tcp).slice();
}
