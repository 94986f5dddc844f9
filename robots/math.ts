/**
 * Small rigid-body math used by kinematics, safety and the simulator.
 * Conventions: right-handed frames, quaternions in xyzw order, 4×4 homogeneous
 * matrices stored row-major in a Float64Array(16).
 */

export type Vec3 = [number, number, number];
export type Quat = [number, number, number, number];

/** A pose in SI units: position in metres, orientation as a unit quaternion (x, y, z, w). */
export interface Pose {
  xyz: Vec3;
  quat_xyzw: Quat;
}

export type Mat4 = Float64Array;

export function mat4Identity(out: Mat4 = new Float64Array(16)): Mat4 {
  out.fill(0);
  out[0] = out[5] = out[10] = out[15] = 1;
  return out;
}

/** out = a · b (out may alias neither a nor b). */
export function mat4Mul(a: Mat4, b: Mat4, out: Mat4 = new Float64Array(16)): Mat4 {
  for (let r = 0; r < 4; r++) {
    const r4 = r * 4;
    const a0 = a[r4]!;
    const a1 = a[r4 + 1]!;
    const a2 = a[r4 + 2]!;
    const a3 = a[r4 + 3]!;
    for (let c = 0; c < 4; c++) {
      out[r4 + c] = a0 * b[c]! + a1 * b[4 + c]! + a2 * b[8 + c]! + a3 * b[12 + c]!;
    }
  }
  return out;
}

/** Transform a point by a homogeneous matrix. */
export function mat4Point(m: Mat4, p: readonly number[], out: Vec3 = [0, 0, 0]): Vec3 {
  const x = p[0]!;
  const y = p[1]!;
  const z = p[2]!;
  out[0] = m[0]! * x + m[1]! * y + m[2]! * z + m[3]!;
  out[1] = m[4]! * x + m[5]! * y + m[6]! * z + m[7]!;
  out[2] = m[8]! * x + m[9]! * y + m[10]! * z + m[11]!;
  return out;
}

export function mat4Translation(m: Mat4): Vec3 {
  return [m[3]!, m[7]!, m[11]!];
}

/** Rigid inverse of a homogeneous transform. */
export function mat4RigidInverse(m: Mat4, out: Mat4 = new Float64Array(16)): Mat4 {
  // R^T
  out[0] = m[0]!;
  out[1] = m[4]!;
  out[2] = m[8]!;
  out[4] = m[1]!;
  out[5] = m[5]!;
  out[6] = m[9]!;
  out[8] = m[2]!;
  out[9] = m[6]!;
  out[10] = m[10]!;
  const tx = m[3]!;
  const ty = m[7]!;
  const tz = m[11]!;
  out[3] = -(out[0]! * tx + out[1]! * ty + out[2]! * tz);
  out[7] = -(out[4]! * tx + out[5]! * ty + out[6]! * tz);
  out[11] = -(out[8]! * tx + out[9]! * ty + out[10]! * tz);
  out[12] = out[13] = out[14] = 0;
  out[15] = 1;
  return out;
}

/**
 * Quaternion (x, y, z, w) of a rotation matrix given by its entries, with w ≥ 0 (robust branch
 * choice by the largest diagonal term). Allocation-free: writes into `out`.
 */
export function quatFromRotationInto(
  m00: number,
  m01: number,
  m02: number,
  m10: number,
  m11: number,
  m12: number,
  m20: number,
  m21: number,
  m22: number,
  out: { 0: number; 1: number; 2: number; 3: number },
): void {
  let x: number;
  let y: number;
  let z: number;
  let w: number;
  const tr = m00 + m11 + m22;
  if (tr > 0) {
    const s = Math.sqrt(tr + 1) * 2;
    w = 0.25 * s;
    x = (m21 - m12) / s;
    y = (m02 - m20) / s;
    z = (m10 - m01) / s;
  } else if (m00 > m11 && m00 > m22) {
    const s = Math.sqrt(1 + m00 - m11 - m22) * 2;
    w = (m21 - m12) / s;
    x = 0.25 * s;
    y = (m01 + m10) / s;
    z = (m02 + m20) / s;
  } else if (m11 > m22) {
    const s = Math.sqrt(1 + m11 - m00 - m22) * 2;
    w = (m02 - m20) / s;
    x = (m01 + m10) / s;
    y = 0.25 * s;
    z = (m12 + m21) / s;
  } else {
    const s = Math.sqrt(1 + m22 - m00 - m11) * 2;
    w = (m10 - m01) / s;
    x = (m02 + m20) / s;
    y = (m12 + m21) / s;
    z = 0.25 * s;
  }
  const sign = w < 0 ? -1 : 1;
  out[0] = x * sign;
  out[1] = y * sign;
  out[2] = z * sign;
  out[3] = w * sign;
}

/** Unit quaternion (xyzw) of the rotation part of a homogeneous matrix. */
export function mat4ToQuat(m: Mat4): Quat {
  const q: Quat = [0, 0, 0, 1];
  quatFromRotationInto(m[0]!, m[1]!, m[2]!, m[4]!, m[5]!, m[6]!, m[8]!, m[9]!, m[10]!, q);
  return quatNormalize(q);
}

export function quatNormalize(q: Quat): Quat {
  const n = Math.hypot(q[0], q[1], q[2], q[3]);
  if (n === 0) return [0, 0, 0, 1];
  // canonical sign: w ≥ 0
  const s = q[3] < 0 ? -1 / n : 1 / n;
  return [q[0] * s, q[1] * s, q[2] * s, q[3] * s];
}

/** Homogeneous matrix from a pose. */
export function poseToMat4(p: Pose, out: Mat4 = new Float64Array(16)): Mat4 {
  const [x, y, z, w] = quatNormalize(p.quat_xyzw);
  out[0] = 1 - 2 * (y * y + z * z);
  out[1] = 2 * (x * y - z * w);
  out[2] = 2 * (x * z + y * w);
  out[3] = p.xyz[0];
  out[4] = 2 * (x * y + z * w);
  out[5] = 1 - 2 * (x * x + z * z);
  out[6] = 2 * (y * z - x * w);
  out[7] = p.xyz[1];
  out[8] = 2 * (x * z - y * w);
  out[9] = 2 * (y * z + x * w);
  out[10] = 1 - 2 * (x * x + y * y);
  out[11] = p.xyz[2];
  out[12] = out[13] = out[14] = 0;
  out[15] = 1;
  return out;
}

export function mat4ToPose(m: Mat4): Pose {
  return { xyz: mat4Translation(m), quat_xyzw: mat4ToQuat(m) };
}

/** Rotation angle (rad, 0…π) between two unit quaternions. */
export function quatAngle(a: Quat, b: Quat): number {
  const d = Math.abs(a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]);
  return 2 * Math.acos(Math.min(1, d));
}

export function vsub(a: readonly number[], b: readonly number[]): Vec3 {
  return [a[0]! - b[0]!, a[1]! - b[1]!, a[2]! - b[2]!];
}
export function vadd(a: readonly number[], b: readonly number[]): Vec3 {
  return [a[0]! + b[0]!, a[1]! + b[1]!, a[2]! + b[2]!];
}
export function vscale(a: readonly number[], s: number): Vec3 {
  return [a[0]! * s, a[1]! * s, a[2]! * s];
}
export function vdot(a: readonly number[], b: readonly number[]): number {
  return a[0]! * b[0]! + a[1]! * b[1]! + a[2]! * b[2]!;
}
export function vcross(a: readonly number[], b: readonly number[]): Vec3 {
  return [a[1]! * b[2]! - a[2]! * b[1]!, a[2]! * b[0]! - a[0]! * b[2]!, a[0]! * b[1]! - a[1]! * b[0]!];
}
export function vnorm(a: readonly number[]): number {
  return Math.hypot(a[0]!, a[1]!, a[2]!);
}
/** `a` scaled to unit length */
export function vunit(a: readonly number[]): Vec3 {
  return vscale(a, 1 / vnorm(a));
}
/** column `c` (0 x, 1 y, 2 z axis; 3 translation) of a 4×4 row-major transform */
export function mat4Column(m: Mat4, c: number): Vec3 {
  return [m[c]!, m[4 + c]!, m[8 + c]!];
}
