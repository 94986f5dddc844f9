/**
 * Clearance geometry shared by the pre-check and the runtime monitor: the robot's moving
 * bodies (the tool point and every link capsule that rides on a moving frame) against the
 * workspace box and the keep-out volumes.
 *
 * Clearance convention, per (body, volume) pair, in metres:
 * - workspace: min distance from the body's surface to the box faces, negative when outside;
 * - keep-out: distance between the body's segment and the volume minus both radii; it
 *   saturates at −(radii) once the segment touches the volume (no penetration depth).
 * A pair is violated when its clearance drops below `min(0, clearance at the measured start)`:
 * a robot that already intrudes may move, but not deeper (otherwise it could never leave).
 *
 * Capsules on frame 0 (the base) never move, so they are not checked.
 */
import type { Mat4 } from "../../robots/math.ts";
import type { LinkCapsule, RobotModel } from "../../robots/types.ts";
import type { CompiledVolume, EffectiveLimits } from "./profile.ts";

/** One moving body: a link capsule, or the tool point (radius 0 on frame 9). */
export type Body = LinkCapsule;

/** Geometry compiled once per (robot, limits, tool offset). Immutable; evaluation uses caller scratch. */
export interface CompiledGeometry {
  bodies: readonly Body[];
  volumes: readonly CompiledVolume[];
  /** the volumes packed for the hot loop (see packVolumes) */
  packed: Float64Array;
  /** per body × (1 + volumes): 1 if the pair applies (ignoreLinks), body-major */
  applies: Uint8Array;
  /** pairs per body: 1 (workspace) + number of volumes */
  stride: number;
  /**
   * per joint j: an upper bound on the distance from joint j's axis to any point of any body
   * that joint j moves, m. A joint change Δ moves such a point by at most |Δ|·reachM[j].
   */
  reachM: Float64Array;
  /** per joint j: the same bound for the tool point alone, m */
  toolReachM: Float64Array;
  wsMin: readonly number[];
  wsMax: readonly number[];
}

export const TOOL_BODY = "tool";

/** Compile bodies, pair masks and reach bounds. `tcp` is the flange→tool transform (identity when omitted). */
export function compileGeometry(robot: RobotModel, limits: EffectiveLimits, tcp?: Mat4): CompiledGeometry {
  const bodies: Body[] = [
    { link: TOOL_BODY, frame: 9, a: [0, 0, 0], b: [0, 0, 0], radiusM: 0 },
    ...robot.capsules.filter((c) => c.frame >= 1),
  ];
  const volumes = limits.keepOut;
  const stride = 1 + volumes.length;
  const applies = new Uint8Array(bodies.length * stride);
  bodies.forEach((body, bi) => {
    applies[bi * stride] = 1;
    volumes.forEach((v, vi) => {
      applies[bi * stride + 1 + vi] = v.ignoreLinks.includes(body.link) ? 0 : 1;
    });
  });
  const dof = robot.joints.length;
  const tcpLen = tcp ? Math.hypot(tcp[3]!, tcp[7]!, tcp[11]!) : 0;
  // reach from frame j's origin (on joint j's axis) to a point fixed in frame f
  const chain = (j: number, f: number): number => {
    let r = 0;
    for (let m = j + 1; m <= Math.min(f, 7); m++) r += Math.hypot(robot.dh[m - 1]!.a, robot.dh[m - 1]!.d);
    if (f >= 8) r += robot.flangeOffsetM;
    if (f >= 9) r += tcpLen;
    return r;
  };
  const reachM = new Float64Array(dof);
  const toolReachM = new Float64Array(dof);
  for (let j = 1; j <= dof; j++) {
    toolReachM[j - 1] = chain(j, 9);
    let r = 0;
    for (const body of bodies) {
      if (body.frame < j) continue;
      const local = Math.max(Math.hypot(...body.a), Math.hypot(...body.b));
      r = Math.max(r, chain(j, body.frame) + local);
    }
    reachM[j - 1] = r;
  }
  return Object.freeze({
    bodies: Object.freeze(bodies),
    volumes,
    packed: packVolumes(volumes),
    applies,
    stride,
    reachM,
    toolReachM,
    wsMin: limits.workspace.minM,
    wsMax: limits.workspace.maxM,
  });
}

/** Scratch for clearance evaluation (reuse it: evaluation allocates nothing). */
export interface GeometryScratch {
  pa: Float64Array;
  pb: Float64Array;
  ba: Float64Array;
  bb: Float64Array;
  breaks: Float64Array;
  c1: Float64Array;
  c2: Float64Array;
}

function copy3(src: Float64Array, o: number, dst: Float64Array): void {
  dst[0] = src[o]!;
  dst[1] = src[o + 1]!;
  dst[2] = src[o + 2]!;
}

const KIND_BOX = 0;
const KIND_SPHERE = 1;
const KIND_CAPSULE = 2;
/** packed volume record length (see packVolumes) */
const VOL_STRIDE = 17;

/**
 * Volumes packed into one Float64Array, VOL_STRIDE numbers each:
 * [kind, bounding centre xyz, bounding radius, …] then for a box: half extents (3) and the
 * base→box rotation rows (9); for a capsule: a (3), b (3), radius; a sphere needs only the
 * bounding sphere.
 */
function packVolumes(volumes: readonly CompiledVolume[]): Float64Array {
  const out = new Float64Array(volumes.length * VOL_STRIDE);
  volumes.forEach((v, i) => {
    const o = i * VOL_STRIDE;
    switch (v.type) {
      case "box":
        out[o] = KIND_BOX;
        out.set(v.center, o + 1);
        out[o + 4] = Math.hypot(...v.half);
        out.set(v.half, o + 5);
        out.set(v.rot, o + 8);
        break;
      case "sphere":
        out[o] = KIND_SPHERE;
        out.set(v.center, o + 1);
        out[o + 4] = v.radiusM;
        break;
      case "capsule":
        out[o] = KIND_CAPSULE;
        for (let k = 0; k < 3; k++) out[o + 1 + k] = 0.5 * (v.a[k]! + v.b[k]!);
        out[o + 4] = 0.5 * Math.hypot(v.b[0] - v.a[0], v.b[1] - v.a[1], v.b[2] - v.a[2]) + v.radiusM;
        out.set(v.a, o + 5);
        out.set(v.b, o + 8);
        out[o + 11] = v.radiusM;
        break;
    }
  });
  return out;
}

export function geometryScratch(): GeometryScratch {
  return {
    pa: new Float64Array(3),
    pb: new Float64Array(3),
    ba: new Float64Array(3),
    bb: new Float64Array(3),
    breaks: new Float64Array(8),
    c1: new Float64Array(3),
    c2: new Float64Array(3),
  };
}

function transformInto(m: Mat4, p: readonly number[], out: Float64Array): void {
  const x = p[0]!;
  const y = p[1]!;
  const z = p[2]!;
  out[0] = m[0]! * x + m[1]! * y + m[2]! * z + m[3]!;
  out[1] = m[4]! * x + m[5]! * y + m[6]! * z + m[7]!;
  out[2] = m[8]! * x + m[9]! * y + m[10]! * z + m[11]!;
}

/** Distance from point p to segment [a, b], m. */
export function pointSegmentDistance(
  p: ArrayLike<number>,
  a: ArrayLike<number>,
  b: ArrayLike<number>,
): number {
  const dx = b[0]! - a[0]!;
  const dy = b[1]! - a[1]!;
  const dz = b[2]! - a[2]!;
  const px = p[0]! - a[0]!;
  const py = p[1]! - a[1]!;
  const pz = p[2]! - a[2]!;
  const dd = dx * dx + dy * dy + dz * dz;
  let t = dd > 0 ? (px * dx + py * dy + pz * dz) / dd : 0;
  t = t < 0 ? 0 : Math.min(t, 1);
  const ex = px - t * dx;
  const ey = py - t * dy;
  const ez = pz - t * dz;
  return Math.sqrt(ex * ex + ey * ey + ez * ez);
}

/** Distance between segments [p1, q1] and [p2, q2], m (clamped closest points). */
export function segmentSegmentDistance(
  p1: ArrayLike<number>,
  q1: ArrayLike<number>,
  p2: ArrayLike<number>,
  q2: ArrayLike<number>,
): number {
  const d1x = q1[0]! - p1[0]!;
  const d1y = q1[1]! - p1[1]!;
  const d1z = q1[2]! - p1[2]!;
  const d2x = q2[0]! - p2[0]!;
  const d2y = q2[1]! - p2[1]!;
  const d2z = q2[2]! - p2[2]!;
  const rx = p1[0]! - p2[0]!;
  const ry = p1[1]! - p2[1]!;
  const rz = p1[2]! - p2[2]!;
  const a = d1x * d1x + d1y * d1y + d1z * d1z;
  const e = d2x * d2x + d2y * d2y + d2z * d2z;
  const f = d2x * rx + d2y * ry + d2z * rz;
  const eps = 1e-15;
  let s = 0;
  let t = 0;
  if (a <= eps && e <= eps) {
    s = 0;
    t = 0;
  } else if (a <= eps) {
    t = clamp01(f / e);
  } else {
    const c = d1x * rx + d1y * ry + d1z * rz;
    if (e <= eps) {
      s = clamp01(-c / a);
    } else {
      const b = d1x * d2x + d1y * d2y + d1z * d2z;
      const denom = a * e - b * b;
      s = denom > eps * a * e ? clamp01((b * f - c * e) / denom) : 0;
      t = (b * s + f) / e;
      if (t < 0) {
        t = 0;
        s = clamp01(-c / a);
      } else if (t > 1) {
        t = 1;
        s = clamp01((b - c) / a);
      }
    }
  }
  const ex = rx + d1x * s - d2x * t;
  const ey = ry + d1y * s - d2y * t;
  const ez = rz + d1z * s - d2z * t;
  return Math.sqrt(ex * ex + ey * ey + ez * ez);
}

function clamp01(x: number): number {
  return x < 0 ? 0 : Math.min(x, 1);
}

/**
 * Signed distance from segment [a, b] to the box |x_k| ≤ half_k (box frame), m: the exact
 * distance when apart, and minus the penetration depth when the segment enters the box (so a
 * point radius-0 body inside a box is an intrusion, not a touch).
 * The squared distance is convex and piecewise quadratic in the segment parameter, with
 * breaks where a coordinate crosses a face plane; minimise each piece in closed form.
 */
export function segmentAabbDistance(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  half: ArrayLike<number>,
  breaks: Float64Array = new Float64Array(8),
): number {
  let n = 0;
  breaks[n++] = 0;
  breaks[n++] = 1;
  for (let k = 0; k < 3; k++) {
    const d = b[k]! - a[k]!;
    if (d === 0) continue;
    const t1 = (half[k]! - a[k]!) / d;
    const t2 = (-half[k]! - a[k]!) / d;
    if (t1 > 0 && t1 < 1) breaks[n++] = t1;
    if (t2 > 0 && t2 < 1) breaks[n++] = t2;
  }
  // insertion sort of ≤ 8 values
  for (let i = 1; i < n; i++) {
    const v = breaks[i]!;
    let k = i - 1;
    while (k >= 0 && breaks[k]! > v) {
      breaks[k + 1] = breaks[k]!;
      k--;
    }
    breaks[k + 1] = v;
  }
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i + 1 < n; i++) {
    const t0 = breaks[i]!;
    const t1 = breaks[i + 1]!;
    if (t1 <= t0 && i + 2 < n) continue;
    const tm = 0.5 * (t0 + t1);
    let A = 0;
    let B = 0;
    let C = 0;
    for (let k = 0; k < 3; k++) {
      const d = b[k]! - a[k]!;
      const pm = a[k]! + tm * d;
      const h = half[k]!;
      let off: number;
      if (pm > h) off = a[k]! - h;
      else if (pm < -h) off = a[k]! + h;
      else continue;
      A += d * d;
      B += 2 * d * off;
      C += off * off;
    }
    let t = A > 0 ? -B / (2 * A) : t0;
    t = t < t0 ? t0 : Math.min(t, t1);
    const f = A * t * t + B * t + C;
    if (f < best) best = f;
    if (best <= 0) return -penetrationDepth(a, b, half);
  }
  return Math.sqrt(Math.max(0, best));
}

/** Samples along a segment used to estimate how deep it reaches into a box. */
const DEPTH_SAMPLES = 16;

/**
 * How deep a segment that meets the box reaches inside, m (≥ 1e-9): the largest over sampled
 * points of the distance to the nearest face. Depth is concave along the segment, so the
 * samples underestimate it by at most the segment length / DEPTH_SAMPLES, never its sign.
 */
function penetrationDepth(a: ArrayLike<number>, b: ArrayLike<number>, half: ArrayLike<number>): number {
  let deepest = 1e-9;
  for (let i = 0; i <= DEPTH_SAMPLES; i++) {
    const t = i / DEPTH_SAMPLES;
    let depth = Number.POSITIVE_INFINITY;
    for (let k = 0; k < 3; k++) {
      const p = a[k]! + t * (b[k]! - a[k]!);
      const d = half[k]! - Math.abs(p);
      if (d < depth) depth = d;
    }
    if (depth > deepest) deepest = depth;
  }
  return deepest;
}

/**
 * Clearances of every (body, volume) pair for one configuration, written into `out`
 * (body-major, `stride` = 1 + volumes; slot 0 of a body = workspace). Pairs that do not
 * apply get +Infinity. Allocation-free. `frames` are FK frames (0 base … 8 flange, 9 tool).
 *
 * With `floor` given, a keep-out pair whose cheap bounding-sphere lower bound already exceeds
 * `floor[p] + extraM` gets that lower bound instead of its exact clearance (enough to prove
 * the pair safe); without `floor` every clearance is exact.
 * @returns the smallest value written, m
 */
export function evalClearances(
  g: CompiledGeometry,
  frames: readonly Mat4[],
  s: GeometryScratch,
  out: Float64Array,
  floor?: Float64Array,
  extraM = 0,
): number {
  let minAll = Number.POSITIVE_INFINITY;
  const { bodies, stride, applies, wsMin, wsMax } = g;
  const vols = g.packed;
  const pa = s.pa;
  const pb = s.pb;
  const ba = s.ba;
  const bb = s.bb;
  const nv = stride - 1;
  for (let bi = 0; bi < bodies.length; bi++) {
    const body = bodies[bi]!;
    const m = frames[body.frame]!;
    transformInto(m, body.a, pa);
    transformInto(m, body.b, pb);
    const br = body.radiusM;
    // workspace: both end points inside the box shrunk by the radius
    let ws = Number.POSITIVE_INFINITY;
    for (let k = 0; k < 3; k++) {
      const lo = wsMin[k]!;
      const hi = wsMax[k]!;
      const c1 = pa[k]! - lo;
      const c2 = hi - pa[k]!;
      const c3 = pb[k]! - lo;
      const c4 = hi - pb[k]!;
      if (c1 < ws) ws = c1;
      if (c2 < ws) ws = c2;
      if (c3 < ws) ws = c3;
      if (c4 < ws) ws = c4;
    }
    ws -= br;
    const base = bi * stride;
    out[base] = ws;
    if (ws < minAll) minAll = ws;
    // body bounding sphere
    const mx = 0.5 * (pa[0]! + pb[0]!);
    const my = 0.5 * (pa[1]! + pb[1]!);
    const mz = 0.5 * (pa[2]! + pb[2]!);
    const hx = pa[0]! - mx;
    const hy = pa[1]! - my;
    const hz = pa[2]! - mz;
    const bodyRad = Math.sqrt(hx * hx + hy * hy + hz * hz) + br;
    for (let vi = 0; vi < nv; vi++) {
      const slot = base + 1 + vi;
      if (applies[slot] === 0) {
        out[slot] = Number.POSITIVE_INFINITY;
        continue;
      }
      const o = vi * VOL_STRIDE;
      const kind = vols[o]!;
      if (floor !== undefined) {
        const dx = mx - vols[o + 1]!;
        const dy = my - vols[o + 2]!;
        const dz = mz - vols[o + 3]!;
        const lb = Math.sqrt(dx * dx + dy * dy + dz * dz) - vols[o + 4]! - bodyRad;
        if (lb > floor[slot]! + extraM) {
          out[slot] = lb;
          if (lb < minAll) minAll = lb;
          continue;
        }
      }
      let c: number;
      if (kind === KIND_SPHERE) {
        copy3(vols, o + 1, s.c1);
        c = pointSegmentDistance(s.c1, pa, pb) - vols[o + 4]! - br;
      } else if (kind === KIND_CAPSULE) {
        copy3(vols, o + 5, s.c1);
        copy3(vols, o + 8, s.c2);
        c = segmentSegmentDistance(pa, pb, s.c1, s.c2) - vols[o + 11]! - br;
      } else {
        // box: rows of the base→box rotation at o+8…o+16, half extents at o+5…o+7
        const cx = vols[o + 1]!;
        const cy = vols[o + 2]!;
        const cz = vols[o + 3]!;
        for (let k = 0; k < 3; k++) {
          const r0 = vols[o + 8 + k * 3]!;
          const r1 = vols[o + 9 + k * 3]!;
          const r2 = vols[o + 10 + k * 3]!;
          ba[k] = r0 * (pa[0]! - cx) + r1 * (pa[1]! - cy) + r2 * (pa[2]! - cz);
          bb[k] = r0 * (pb[0]! - cx) + r1 * (pb[1]! - cy) + r2 * (pb[2]! - cz);
        }
        copy3(vols, o + 5, s.c1);
        c = segmentAabbDistance(ba, bb, s.c1, s.breaks) - br;
      }
      out[slot] = c;
      if (c < minAll) minAll = c;
    }
  }
  return minAll;
}

/** Allowed floor per pair from the clearances at the measured start: min(0, start) − tolerance. */
export function allowedFloor(
  startClearance: Float64Array,
  out: Float64Array,
  toleranceM = 1e-9,
): Float64Array {
  for (let i = 0; i < startClearance.length; i++) out[i] = Math.min(0, startClearance[i]!) - toleranceM;
  return out;
}
