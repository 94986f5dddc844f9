/**
 * Poses that place render shapes (scene.ts) in the world: capsules and cylinders run along their
 * object z axis, so a segment a → b becomes a pose whose z axis points from a to b. Shared by
 * the bench scenes, the arm rig and the demo scene. Lengths in m.
 */
import { type Mat4, mat4Identity, type Vec3 } from "../../robots/math.ts";
import type { Rgb, SceneObject } from "./scene.ts";

/** Pose whose z axis runs from a to b, centred between them. */
export function segmentPose(a: readonly number[], b: readonly number[]): Mat4 {
  const d: Vec3 = [b[0]! - a[0]!, b[1]! - a[1]!, b[2]! - a[2]!];
  const n = Math.hypot(...d) || 1;
  const z: Vec3 = [d[0] / n, d[1] / n, d[2] / n];
  const h: Vec3 = Math.abs(z[2]) < 0.9 ? [0, 0, 1] : [1, 0, 0];
  let x: Vec3 = [h[1] * z[2] - h[2] * z[1], h[2] * z[0] - h[0] * z[2], h[0] * z[1] - h[1] * z[0]];
  const xn = Math.hypot(...x);
  x = [x[0] / xn, x[1] / xn, x[2] / xn];
  const y: Vec3 = [z[1] * x[2] - z[2] * x[1], z[2] * x[0] - z[0] * x[2], z[0] * x[1] - z[1] * x[0]];
  const m = mat4Identity();
  m[0] = x[0];
  m[1] = y[0];
  m[2] = z[0];
  m[3] = (a[0]! + b[0]!) / 2;
  m[4] = x[1];
  m[5] = y[1];
  m[6] = z[1];
  m[7] = (a[1]! + b[1]!) / 2;
  m[8] = x[2];
  m[9] = y[2];
  m[10] = z[2];
  m[11] = (a[2]! + b[2]!) / 2;
  return m;
}

/** A pure translation to point p, m, written into `out` (a fresh matrix when not given). */
export function translationPose(p: readonly number[], out: Mat4 = new Float64Array(16)): Mat4 {
  mat4Identity(out);
  out[3] = p[0]!;
  out[7] = p[1]!;
  out[11] = p[2]!;
  return out;
}

/** Distance between two points, m. */
export function segmentLengthM(a: readonly number[], b: readonly number[]): number {
  return Math.hypot(b[0]! - a[0]!, b[1]! - a[1]!, b[2]! - a[2]!);
}

/** A static cylinder from a to b. */
export function cylinderBetween(id: string, a: Vec3, b: Vec3, radiusM: number, color: Rgb): SceneObject {
  return {
    id,
    shape: { kind: "cylinder", halfLengthM: segmentLengthM(a, b) / 2, radiusM },
    pose: segmentPose(a, b),
    color,
  };
}
