/**
 * Buzz-wire progress geometry, pure: where the wire passes through the loop.
 *
 * The loop is a ring in the xy plane of the tool (loop) frame, centred on its origin. The wire
 * "runs through the loop" at arc position s when the centreline crosses the loop plane at s
 * inside the ring's clear opening (distance from the loop centre + wire radius < inner radius).
 * Runs per reading in the control loop: no allocation besides the result object reuse.
 */
import type { Mat4 } from "../../robots/math.ts";

export interface WireGeometry {
  /** centreline points, base frame, flat xyz triples */
  xyz: Float64Array;
  /** cumulative arc length at each point, m */
  arcM: Float64Array;
  wireRadiusM: number;
  loopInnerRadiusM: number;
}

export function wireGeometry(
  points: readonly (readonly number[])[],
  wireRadiusM: number,
  loopInnerRadiusM: number,
): WireGeometry {
  const xyz = new Float64Array(points.length * 3);
  const arcM = new Float64Array(points.length);
  points.forEach((p, i) => {
    xyz[i * 3] = p[0]!;
    xyz[i * 3 + 1] = p[1]!;
    xyz[i * 3 + 2] = p[2]!;
    if (i > 0) {
      const dx = p[0]! - xyz[i * 3 - 3]!;
      const dy = p[1]! - xyz[i * 3 - 2]!;
      const dz = p[2]! - xyz[i * 3 - 1]!;
      arcM[i] = arcM[i - 1]! + Math.hypot(dx, dy, dz);
    }
  });
  return { xyz, arcM, wireRadiusM, loopInnerRadiusM };
}

/** Result of `threadedArc`: reused between calls. */
export interface ThreadHit {
  /** arc position where the wire passes through the loop, m (NaN when not threaded) */
  sM: number;
  /** distance of the crossing from the loop centre, m */
  offsetM: number;
}

/**
 * Arc position at which the wire runs through the loop, or NaN.
 * @param loop base ← loop frame (row-major), z = loop axis
 */
export function threadedArc(g: WireGeometry, loop: Mat4, out: ThreadHit): ThreadHit {
  const cx = loop[3]!;
  const cy = loop[7]!;
  const cz = loop[11]!;
  const nx = loop[2]!;
  const ny = loop[6]!;
  const nz = loop[10]!;
  const p = g.xyz;
  const n = g.arcM.length;
  let best = Number.POSITIVE_INFINITY;
  let bestS = Number.NaN;
  let d0 = (p[0]! - cx) * nx + (p[1]! - cy) * ny + (p[2]! - cz) * nz;
  for (let i = 1; i < n; i++) {
    const o = i * 3;
    const d1 = (p[o]! - cx) * nx + (p[o + 1]! - cy) * ny + (p[o + 2]! - cz) * nz;
    if ((d0 <= 0 && d1 > 0) || (d0 >= 0 && d1 < 0) || (d0 === 0 && d1 === 0)) {
      const u = d0 === d1 ? 0 : d0 / (d0 - d1);
      const x = p[o - 3]! + (p[o]! - p[o - 3]!) * u - cx;
      const y = p[o - 2]! + (p[o + 1]! - p[o - 2]!) * u - cy;
      const z = p[o - 1]! + (p[o + 2]! - p[o - 1]!) * u - cz;
      const dist = Math.sqrt(x * x + y * y + z * z);
      if (dist < best) {
        best = dist;
        bestS = g.arcM[i - 1]! + (g.arcM[i]! - g.arcM[i - 1]!) * u;
      }
    }
    d0 = d1;
  }
  if (best + g.wireRadiusM < g.loopInnerRadiusM) {
    out.sM = bestS;
    out.offsetM = best;
  } else {
    out.sM = Number.NaN;
    out.offsetM = best;
  }
  return out;
}
