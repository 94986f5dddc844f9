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
  /** ring segments in the world frame (scratch) */
  private readonly ringWorld: Float64Array;
  private readonly touchDistM: number;
  private readonly reachM: number;
  /** smallest surface distance found by the last call, m (Infinity when nothing is near) */
  lastClearanceM = Infinity;

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
    ringSegments.forEach(([a, b], i) => {
      this.ringLocal.set([...a, ...b], i * 6);
    });
    this.ringWorld = new Float64Array(this.ringLocal.length);
    let ringR = 0;
    for (let i = 0; i < this.ringLocal.length; i += 3)
      ringR = Math.max(ringR, Math.hypot(this.ringLocal[i]!, this.ringLocal[i + 1]!, this.ringLocal[i + 2]!));
    this.touchDistM = wireRadiusM + ringWireRadiusM;
    this.reachM = ringR + this.touchDistM + 1e-3;
  }

  /** True when the ring at world ← loop `loop` touches the wire (distance ≤ 0). */
  ringTouchesWire(loop: Mat4): boolean {
    const r = this.ringLocal;
    const w = this.ringWorld;
    for (let i = 0; i < r.length; i += 3) {
      const x = r[i]!;
      const y = r[i + 1]!;
      const z = r[i + 2]!;
      w[i] = loop[0]! * x + loop[1]! * y + loop[2]! * z + loop[3]!;
      w[i + 1] = loop[4]! * x + loop[5]! * y + loop[6]! * z + loop[7]!;
      w[i + 2] = loop[8]! * x + loop[9]! * y + loop[10]! * z + loop[11]!;
    }
    const cx = loop[3]!;
    const cy = loop[7]!;
    const cz = loop[11]!;
    let best = Infinity;
    const nw = this.wireMid.length / 4;
    for (let k = 0; k < nw; k++) {
      const m = k * 4;
      const dx = this.wireMid[m]! - cx;
      const dy = this.wireMid[m + 1]! - cy;
      const dz = this.wireMid[m + 2]! - cz;
      const lim = this.reachM + this.wireMid[m + 3]!;
      if (dx * dx + dy * dy + dz * dz > lim * lim) continue;
      const o = k * 6;
      for (let i = 0; i < w.length; i += 6) {
        const d = segmentDistance(
          w[i]!,
          w[i + 1]!,
          w[i + 2]!,
          w[i + 3]!,
          w[i + 4]!,
          w[i + 5]!,
          this.wire[o]!,
          this.wire[o + 1]!,
          this.wire[o + 2]!,
          this.wire[o + 3]!,
          this.wire[o + 4]!,
          this.wire[o + 5]!,
        );
        if (d < best) best = d;
      }
    }
    this.lastClearanceM = best - this.touchDistM;
    return this.lastClearanceM <= 0;
  }
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
