/**
 * Tool (loop) frame, the maths: the loop's ring as a circle in the flange frame, fitted to 3-D
 * points of the ring's surface (depth pixels of calibrated cameras, moved into the flange frame
 * by the robot's FK at each capture).
 *
 * The fit is geometric: centre c, unit axis n and radius R minimise Σ dᵢ², dᵢ the distance of
 * point i from the circle (√((ρᵢ − R)² + zᵢ²), zᵢ = (pᵢ − c)·n, ρᵢ its distance from the axis),
 * by Gauss–Newton from the nominal loop frame; points far from the current circle (the handle,
 * mixed edge pixels) are trimmed between passes. Pure; lengths in m.
 */
import { type Vec3, vcross, vdot, vscale, vsub, vunit } from "../robots/math.ts";
import { CodedError } from "../seam/errors.ts";
import { solveLinear, symmetricEigen } from "./linalg.ts";

export interface CircleFit {
  centre: Vec3;
  /** unit axis, oriented like the nominal one */
  axis: Vec3;
  radiusM: number;
  /** RMS distance of the kept points from the circle, m */
  rmsM: number;
  used: number;
  trimmed: number;
}

/** Two unit vectors completing n to an orthonormal basis. */
function basisOf(n: Vec3): [Vec3, Vec3] {
  const a: Vec3 = Math.abs(n[0]) < 0.9 ? [1, 0, 0] : [0, 1, 0];
  const u = vunit(vcross(n, a));
  return [u, vcross(n, u)];
}

function circleDistance(p: readonly number[], c: Vec3, n: Vec3, R: number): number {
  const d = vsub(p, c);
  const z = vdot(d, n);
  const rho = Math.sqrt(Math.max(0, vdot(d, d) - z * z));
  return Math.hypot(rho - R, z);
}

/** Least-squares plane normal of points (smallest principal axis), oriented along `like`. */
function planeNormal(ps: readonly Vec3[], like: Vec3): Vec3 {
  const m: Vec3 = [0, 0, 0];
  for (const p of ps) for (let k = 0; k < 3; k++) m[k]! += p[k]! / ps.length;
  const C = new Array<number>(9).fill(0);
  for (const p of ps) {
    const d = vsub(p, m);
    for (let r = 0; r < 3; r++) for (let c = 0; c < 3; c++) C[r * 3 + c]! += d[r]! * d[c]!;
  }
  const n = symmetricEigen(C, 3).vectors[0]! as Vec3;
  return vdot(n, like) < 0 ? vscale(n, -1) : n;
}

/**
 * Fit the ring's circle to points. `nominal` is where the file puts it (the start; points further
 * than `bandM` from it are ignored); `minPoints` below that raises RB_ERR_CALIB_TOO_FEW_POINTS.
 */
export function fitRingCircle(
  points: readonly Vec3[],
  nominal: { centre: Vec3; axis: Vec3; radiusM: number },
  opts: { bandM?: number; minPoints?: number; trimM?: number } = {},
): CircleFit {
  const band = opts.bandM ?? 0.008;
  const minPoints = opts.minPoints ?? 50;
  let c: Vec3 = [...nominal.centre];
  let n = vunit(nominal.axis);
  let R = nominal.radiusM;
  let kept = points.filter((p) => circleDistance(p, c, n, R) < band);
  if (kept.length < minPoints)
    throw new CodedError("RB_ERR_CALIB_TOO_FEW_POINTS", {
      procedure: "tool frame",
      got: kept.length,
      what: "ring points near the nominal loop",
      needed: minPoints,
    });
  // a first axis from the plane of the points near the nominal ring
  n = planeNormal(kept, n);
  for (let pass = 0; pass < 8; pass++) {
    // Gauss–Newton on (c, two tilts of n, R), numeric Jacobian
    for (let it = 0; it < 15; it++) {
      const [u, v] = basisOf(n);
      const params = (x: readonly number[]) => {
        const cc: Vec3 = [c[0] + x[0]!, c[1] + x[1]!, c[2] + x[2]!];
        const nn = vunit([
          n[0] + u[0] * x[3]! + v[0] * x[4]!,
          n[1] + u[1] * x[3]! + v[1] * x[4]!,
          n[2] + u[2] * x[3]! + v[2] * x[4]!,
        ]);
        return { cc, nn, RR: R + x[5]! };
      };
      const JtJ = new Array<number>(36).fill(0);
      const Jtr = new Array<number>(6).fill(0);
      const h = 1e-7;
      for (const p of kept) {
        const r0 = circleDistance(p, c, n, R);
        const J: number[] = [];
        for (let k = 0; k < 6; k++) {
          const x = [0, 0, 0, 0, 0, 0];
          x[k] = h;
          const { cc, nn, RR } = params(x);
          J.push((circleDistance(p, cc, nn, RR) - r0) / h);
        }
        for (let a = 0; a < 6; a++) {
          Jtr[a]! += J[a]! * r0;
          for (let b = 0; b < 6; b++) JtJ[a * 6 + b]! += J[a]! * J[b]!;
        }
      }
      for (let a = 0; a < 6; a++) JtJ[a * 6 + a]! *= 1 + 1e-9;
      const dx = solveLinear(
        JtJ,
        Jtr.map((g) => -g),
        6,
      );
      if (!dx)
        throw new CodedError("RB_ERR_CALIB_DEGENERATE", {
          procedure: "tool frame",
          reason: "the ring points do not fix a circle (seen from too few directions?)",
        });
      const { cc, nn, RR } = params(dx);
      c = cc;
      n = nn;
      R = RR;
      if (Math.hypot(dx[0]!, dx[1]!, dx[2]!) < 1e-9 && Math.hypot(dx[3]!, dx[4]!) < 1e-9) break;
    }
    // trim: halve the accepted distance each pass down to trimM (the handle's cap, stray pixels),
    // or 3 robust sigmas when the points scatter more than that
    const d = points.map((p) => circleDistance(p, c, n, R));
    const near = d.filter((x) => x < band).sort((a, b) => a - b);
    const med = near[Math.floor(near.length / 2)] ?? band;
    const lim = Math.max(opts.trimM ?? 0.001, Math.min(band / 2 ** (pass + 1), 3 * 1.4826 * med));
    const next = points.filter((_, i) => d[i]! < lim);
    const same = next.length === kept.length;
    kept = next;
    if (kept.length < minPoints)
      throw new CodedError("RB_ERR_CALIB_TOO_FEW_POINTS", {
        procedure: "tool frame",
        got: kept.length,
        what: "ring points after trimming",
        needed: minPoints,
      });
    if (same && pass > 3) break;
  }
  const rms = Math.sqrt(kept.reduce((s, p) => s + circleDistance(p, c, n, R) ** 2, 0) / kept.length);
  return {
    centre: c,
    axis: vdot(n, nominal.axis) < 0 ? vscale(n, -1) : n,
    radiusM: R,
    rmsM: rms,
    used: kept.length,
    trimmed: points.length - kept.length,
  };
}

/** Distance of a point from a circle, m (exported for residual reports). */
export function ringPointDistance(
  p: readonly number[],
  fit: Pick<CircleFit, "centre" | "axis" | "radiusM">,
): number {
  return circleDistance(p, fit.centre, fit.axis, fit.radiusM);
}
