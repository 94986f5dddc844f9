/**
 * Exact ring–wire contact test (the buzz-wire circuit): the ring's capsules against the wire's
 * capsules by closed-form segment–segment distance. Rapier's capsule–capsule query in the
 * bundled build is approximate for crossing capsules (measured +1.2 mm at touch, see
 * docs/sim-decisions.md), too coarse for a 13.5 mm clearance game, so the circuit is judged
 * here; Rapier keeps the arm/environment collisions and the free bodies.
 *
 * Hot path: `ringTouchesWire` allocates nothing.
 */
import type { Mat4, Vec3 } from "../../robots/math.ts";

export class RingWireContact {
  /** wire segments, world frame: 6 numbers (ax ay az bx by bz) each */
  private readonly wire: Float64Array;
  /** wire segment midpoints and half-lengths: 4 numbers each */
  private readonly wireMid: Float64Array;
  /** ring segments in the loop frame */
  private readonly ringLocal: Float64Array;
  private readonly touchDistM: number;
  private readonly reachM: number;
  /** ring extent in the loop frame: nearest / farthest distance from the loop axis, z range, m */
  private readonly ringRhoMinM: number;
  private readonly ringRhoMaxM: number;
  private readonly ringZMinM: number;
  private readonly ringZMaxM: number;
  /**
   * Smallest surface distance seen by the last call, m: exact for every wire segment that could
   * touch, a lower bound for the segments skipped by the bounds (Infinity when nothing is near).
   * Touching (≤ 0) is always decided by the exact distance.
   */
  lastClearanceM = Infinity;
  /** exact segment–segment distances computed by the last call (for benchmarks and tests) */
  lastExactChecks = 0;

  constructor(
    wireSegments: ReadonlyArray<readonly [Vec3, Vec3]>,
    wireRadiusM: number,
    ringSegments: ReadonlyArray<readonly [Vec3, Vec3]>,
    ringWireRadiusM: number,
  ) {
    this.wire = new Float64Array(wireSegments.length * 6);
    this.wireMid = new Float64Array(wireSegments.length * 4);
    wireSegments.forEach(([a, b], i) => {
      this.wire.set([...a, ...b], i * 6);
      this.wireMid.set(
        [
          (a[0] + b[0]) / 2,
          (a[1] + b[1]) / 2,
          (a[2] + b[2]) / 2,
          Math.hypot(b[0] - a[0], b[1] - a[1], b[2] - a[2]) / 2,
        ],
        i * 4,
      );
    });
    this.ringLocal = new Float64Array(ringSegments.length * 6);
    let rhoMin = Infinity;
    let rhoMax = 0;
    let zMin = Infinity;
    let zMax = -Infinity;
    let ringR = 0;
    ringSegments.forEach(([a, b], i) => {
      this.ringLocal.set([...a, ...b], i * 6);
      rhoMin = Math.min(rhoMin, axisDistance2d(a[0], a[1], b[0], b[1]));
      rhoMax = Math.max(rhoMax, Math.hypot(a[0], a[1]), Math.hypot(b[0], b[1]));
      zMin = Math.min(zMin, a[2], b[2]);
      zMax = Math.max(zMax, a[2], b[2]);
      ringR = Math.max(ringR, Math.hypot(...a), Math.hypot(...b));
    });
    this.ringRhoMinM = rhoMin;
    this.ringRhoMaxM = rhoMax;
    this.ringZMinM = zMin;
    this.ringZMaxM = zMax;
    this.touchDistM = wireRadiusM + ringWireRadiusM;
    this.reachM = ringR + this.touchDistM + 1e-3;
  }

  /**
   * True when the ring at world ← loop `loop` touches the wire (distance ≤ 0). Hot path.
   *
   * Three stages, each exact or conservative: wire segments whose bounding sphere is out of reach
   * of the ring are skipped; the rest are moved into the loop frame, where a lower bound on their
   * distance to the ring follows from the ring's extent (distance from the loop axis in
   * [ρmin, ρmax], height in [zmin, zmax]): |P − Q|² ≥ (|Pxy| − |Qxy|)² + (Pz − Qz)². Only a segment
   * whose bound is within touching distance gets the exact segment–segment distances.
   */
  ringTouchesWire(loop: Mat4): boolean {
    const cx = loop[3]!;
    const cy = loop[7]!;
    const cz = loop[11]!;
    // loop-frame axes (columns of the rotation)
    const r00 = loop[0]!;
    const r10 = loop[4]!;
    const r20 = loop[8]!;
    const r01 = loop[1]!;
    const r11 = loop[5]!;
    const r21 = loop[9]!;
    const r02 = loop[2]!;
    const r12 = loop[6]!;
    const r22 = loop[10]!;
    const touch = this.touchDistM;
    const r = this.ringLocal;
    const mid = this.wireMid;
    const wire = this.wire;
    let best = Infinity;
    let exact = 0;
    const nw = mid.length / 4;
    for (let k = 0; k < nw; k++) {
      const m = k * 4;
      const dx = mid[m]! - cx;
      const dy = mid[m + 1]! - cy;
      const dz = mid[m + 2]! - cz;
      const lim = this.reachM + mid[m + 3]!;
      if (dx * dx + dy * dy + dz * dz > lim * lim) continue;
      const o = k * 6;
      const ax = wire[o]! - cx;
      const ay = wire[o + 1]! - cy;
      const az = wire[o + 2]! - cz;
      const bx = wire[o + 3]! - cx;
      const by = wire[o + 4]! - cy;
      const bz = wire[o + 5]! - cz;
      // into the loop frame: Rᵀ (p − c)
      const ax1 = r00 * ax + r10 * ay + r20 * az;
      const ay1 = r01 * ax + r11 * ay + r21 * az;
      const az1 = r02 * ax + r12 * ay + r22 * az;
      const bx1 = r00 * bx + r10 * by + r20 * bz;
      const by1 = r01 * bx + r11 * by + r21 * bz;
      const bz1 = r02 * bx + r12 * by + r22 * bz;
      // height gap between the segment's and the ring's z ranges
      const zLo = Math.min(az1, bz1);
      const zHi = Math.max(az1, bz1);
      const gapZ = Math.max(0, this.ringZMinM - zHi, zLo - this.ringZMaxM);
      // radial gap: the segment's distance from the axis is convex along it (max at an end)
      const rhoFar = Math.sqrt(Math.max(ax1 * ax1 + ay1 * ay1, bx1 * bx1 + by1 * by1));
      const rhoNear = axisDistance2d(ax1, ay1, bx1, by1);
      const gapRho = Math.max(0, this.ringRhoMinM - rhoFar, rhoNear - this.ringRhoMaxM);
      const bound = Math.sqrt(gapZ * gapZ + gapRho * gapRho);
      if (bound > touch) {
        if (bound < best) best = bound;
        continue;
      }
      for (let i = 0; i < r.length; i += 6) {
        const d = segmentDistance(
          r[i]!,
          r[i + 1]!,
          r[i + 2]!,
          r[i + 3]!,
          r[i + 4]!,
          r[i + 5]!,
          ax1,
          ay1,
          az1,
          bx1,
          by1,
          bz1,
        );
        if (d < best) best = d;
      }
      exact += r.length / 6;
    }
    this.lastExactChecks = exact;
    this.lastClearanceM = best - touch;
    return this.lastClearanceM <= 0;
  }
}

/** Distance from the origin to the 2-D segment (ax, ay)–(bx, by). */
function axisDistance2d(ax: number, ay: number, bx: number, by: number): number {
  const ux = bx - ax;
  const uy = by - ay;
  const uu = ux * ux + uy * uy;
  let t = uu > 1e-24 ? -(ax * ux + ay * uy) / uu : 0;
  t = Math.min(1, Math.max(0, t));
  const px = ax + ux * t;
  const py = ay + uy * t;
  return Math.sqrt(px * px + py * py);
}

/** Closest distance between segments P0P1 and Q0Q1 (closed form, clamped parameters). */
export function segmentDistance(
  p0x: number,
  p0y: number,
  p0z: number,
  p1x: number,
  p1y: number,
  p1z: number,
  q0x: number,
  q0y: number,
  q0z: number,
  q1x: number,
  q1y: number,
  q1z: number,
): number {
  const ux = p1x - p0x;
  const uy = p1y - p0y;
  const uz = p1z - p0z;
  const vx = q1x - q0x;
  const vy = q1y - q0y;
  const vz = q1z - q0z;
  const wx = p0x - q0x;
  const wy = p0y - q0y;
  const wz = p0z - q0z;
  const a = ux * ux + uy * uy + uz * uz;
  const b = ux * vx + uy * vy + uz * vz;
  const c = vx * vx + vy * vy + vz * vz;
  const d = ux * wx + uy * wy + uz * wz;
  const e = vx * wx + vy * wy + vz * wz;
  const den = a * c - b * b;
  let s = den > 1e-18 ? (b * e - c * d) / den : 0;
  s = Math.min(1, Math.max(0, s));
  let t = c > 1e-18 ? (b * s + e) / c : 0;
  if (t < 0) {
    t = 0;
    s = Math.min(1, Math.max(0, a > 1e-18 ? -d / a : 0));
  } else if (t > 1) {
    t = 1;
    s = Math.min(1, Math.max(0, a > 1e-18 ? (b - d) / a : 0));
  }
  const dx = wx + ux * s - vx * t;
  const dy = wy + uy * s - vy * t;
  const dz = wz + uz * s - vz * t;
  return Math.sqrt(dx * dx + dy * dy + dz * dz);
}
