/**
 * Forward kinematics of the Franka arm from its modified-DH table.
 * Hot path (safety pre-check runs it per control tick): allocation-light when the
 * caller passes a reusable `FkWorkspace`.
 */
import { type Mat4, mat4Identity, mat4Mul, mat4ToPose, type Pose } from "../math.ts";
import type { DhRow, RobotModel } from "../types.ts";

/** Reusable buffers for FK: frames[0] base, frames[1..7] joints, frames[8] flange, frames[9] tool. */
export interface FkWorkspace {
  frames: Mat4[];
  tmp: Mat4;
  local: Mat4;
}

export function fkWorkspace(): FkWorkspace {
  return {
    frames: Array.from({ length: 10 }, () => mat4Identity()),
    tmp: new Float64Array(16),
    local: new Float64Array(16),
  };
}

/** Modified-DH transform: RotX(alpha)·TransX(a)·RotZ(theta)·TransZ(d). */
export function dhTransform(row: DhRow, theta: number, out: Mat4): Mat4 {
  const ct = Math.cos(theta + row.thetaOffset);
  const st = Math.sin(theta + row.thetaOffset);
  const ca = Math.cos(row.alpha);
  const sa = Math.sin(row.alpha);
  out[0] = ct;
  out[1] = -st;
  out[2] = 0;
  out[3] = row.a;
  out[4] = st * ca;
  out[5] = ct * ca;
  out[6] = -sa;
  out[7] = -sa * row.d;
  out[8] = st * sa;
  out[9] = ct * sa;
  out[10] = ca;
  out[11] = ca * row.d;
  out[12] = out[13] = out[14] = 0;
  out[15] = 1;
  return out;
}

/**
 * Compute every frame of the chain in the robot base frame.
 * @param q joint angles, rad (at least 7 entries; extra entries are ignored)
 * @param tcp flange→tool transform; identity when omitted
 * @returns ws.frames (0 base, 1…7 joints, 8 flange, 9 tool)
 */
export function forwardKinematicsInto(
  model: RobotModel,
  q: ArrayLike<number>,
  ws: FkWorkspace,
  tcp?: Mat4,
): Mat4[] {
  const f = ws.frames;
  mat4Identity(f[0]);
  for (let i = 0; i < 7; i++) {
    dhTransform(model.dh[i]!, q[i]!, ws.local);
    mat4Mul(f[i]!, ws.local, f[i + 1]);
  }
  mat4Identity(ws.local);
  ws.local[11] = model.flangeOffsetM;
  mat4Mul(f[7]!, ws.local, f[8]);
  if (tcp) mat4Mul(f[8]!, tcp, f[9]);
  else f[9]!.set(f[8]!);
  return f;
}

/** Flange and tool poses in the base frame. */
export interface FkResult {
  flange: Pose;
  tool: Pose;
  /** all frames (0 base, 1…7 joints, 8 flange, 9 tool), base frame */
  frames: Mat4[];
}

/** Allocating convenience wrapper around forwardKinematicsInto. */
export function forwardKinematics(model: RobotModel, q: ArrayLike<number>, tcp?: Mat4): FkResult {
  const ws = fkWorkspace();
  const frames = forwardKinematicsInto(model, q, ws, tcp);
  return { flange: mat4ToPose(frames[8]!), tool: mat4ToPose(frames[9]!), frames };
}
