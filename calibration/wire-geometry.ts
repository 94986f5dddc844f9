/**
 * Wire centreline geometry: arc-length parameterisation, tangents, curvature and the loop
 * frame that threads the wire. Pure; lengths in m, frames as row-major Mat4 (robots/math.ts).
 */
import { type Mat4, type Vec3, vcross, vdot, vnorm, vscale, vsub } from "../robots/math.ts";

/** A polyline with cumulative arc lengths. */
export interface Centreline {
  points: readonly Vec3[];
  /** cumulative arc length at each point, m (first 0) */
  arcM: readonly number[];
  /** total length, m */
  lengthM: number;
}

export function centreline(points: readonly (readonly number[])[]): Centreline {
  const pts = points.map((p) => [p[0]!, p[1]!, p[2]!] as Vec3);
  const arc = [0];
  for (let i = 1; i < pts.length; i++) arc.push(arc[i - 1]! + vnorm(vsub(pts[i]!, pts[i - 1]!)));
  return { points: pts, arcM: arc, lengthM: arc[arc.length - 1]! };
}

function segmentAt(c: Centreline, sM: number): number {
  const s = Math.min(Math.max(sM, 0), c.lengthM);
  let lo = 0;
  let hi = c.points.length - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (c.arcM[mid]! <= s) lo = mid;
    else hi = mid;
  }
  return lo;
}

/** Point at arc length s (clamped to the wire). */
export function pointAt(c: Centreline, sM: number): Vec3 {
  const i = segmentAt(c, sM);
  const s = Math.min(Math.max(sM, 0), c.lengthM);
  const a = c.points[i]!;
  const b = c.points[i + 1]!;
  const len = c.arcM[i + 1]! - c.arcM[i]!;
  const u = len > 0 ? (s - c.arcM[i]!) / len : 0;
  return [a[0] + (b[0] - a[0]) * u, a[1] + (b[1] - a[1]) * u, a[2] + (b[2] - a[2]) * u];
}

/** Unit tangent at arc length s (central difference over ±hM). */
export function tangentAt(c: Centreline, sM: number, hM = 0.005): Vec3 {
  const d = vsub(pointAt(c, sM + hM), pointAt(c, sM - hM));
  return vscale(d, 1 / vnorm(d));
}

/** Smallest radius of curvature along the wire, m (estimated from tangent turning over `stepM`). */
export function minCurvatureRadiusM(c: Centreline, stepM = 0.02): number {
  let minR = Infinity;
  for (let s = stepM; s < c.lengthM - stepM; s += stepM / 4) {
    const t0 = tangentAt(c, s - stepM / 2, stepM / 4);
    const t1 = tangentAt(c, s + stepM / 2, stepM / 4);
    const ang = Math.acos(Math.min(1, Math.max(-1, vdot(t0, t1))));
    if (ang > 1e-9) minR = Math.min(minR, stepM / ang);
  }
  return minR;
}

/**
 * The loop frame that threads the wire at arc length s: origin on the centreline, z along the
 * tangent, x pointing away from the handle (down, so the handle and the hand stay above the wire).
 * @param downBase the "down" direction in the frame of the centreline points
 */
export function loopFrameAt(
  c: Centreline,
  sM: number,
  downBase: Vec3 = [0, 0, -1],
  out: Mat4 = new Float64Array(16),
): Mat4 {
  const p = pointAt(c, sM);
  const z = tangentAt(c, sM);
  let x = vsub(downBase, vscale(z, vdot(downBase, z)));
  x = vscale(x, 1 / vnorm(x));
  const y = vcross(z, x);
  out[0] = x[0];
  out[1] = y[0];
  out[2] = z[0];
  out[3] = p[0];
  out[4] = x[1];
  out[5] = y[1];
  out[6] = z[1];
  out[7] = p[1];
  out[8] = x[2];
  out[9] = y[2];
  out[10] = z[2];
  out[11] = p[2];
  out[12] = out[13] = out[14] = 0;
  out[15] = 1;
  return out;
}

/** Centripetal-free uniform Catmull-Rom spline through control points, resampled every `spacingM`. */
export function catmullRom(ctrl: readonly Vec3[], spacingM: number): Vec3[] {
  const dense: Vec3[] = [];
  const n = ctrl.length;
  const P = (i: number): Vec3 => {
    if (i < 0) return vsub(vscale(ctrl[0]!, 2), ctrl[1]!) as Vec3;
    if (i >= n) return vsub(vscale(ctrl[n - 1]!, 2), ctrl[n - 2]!) as Vec3;
    return ctrl[i]!;
  };
  const sub = 200;
  for (let i = 0; i < n - 1; i++) {
    const p0 = P(i - 1);
    const p1 = P(i);
    const p2 = P(i + 1);
    const p3 = P(i + 2);
    for (let k = 0; k < sub; k++) {
      const t = k / sub;
      const t2 = t * t;
      const t3 = t2 * t;
      const v: Vec3 = [0, 0, 0];
      for (let d = 0; d < 3; d++)
        v[d] =
          0.5 *
          (2 * p1[d]! +
            (-p0[d]! + p2[d]!) * t +
            (2 * p0[d]! - 5 * p1[d]! + 4 * p2[d]! - p3[d]!) * t2 +
            (-p0[d]! + 3 * p1[d]! - 3 * p2[d]! + p3[d]!) * t3);
      dense.push(v);
    }
  }
  dense.push([...ctrl[n - 1]!] as Vec3);
  const c = centreline(dense);
  const count = Math.max(2, Math.round(c.lengthM / spacingM) + 1);
  const out: Vec3[] = [];
  for (let i = 0; i < count; i++) out.push(pointAt(c, (c.lengthM * i) / (count - 1)));
  return out;
}
