/**
 * Wire teaching, the maths: a smooth centreline through the loop centres an operator recorded
 * while jogging the loop along the wire.
 *
 * The fit is a cubic P-spline per coordinate (uniform cubic B-splines, knots every `knotSpacingM`
 * of arc length, a second-difference penalty approximating λ ∫|r''|² ds), parameterised by arc
 * length: the first pass uses the chord lengths between taught poses, later passes the arc length
 * of each pose's foot point on the previous fit. When the fitted curve bends more sharply than
 * `minBendRadiusM` (the wire cannot: it is bent by hand around a former), λ is raised until it
 * does not. The result is resampled every `spacingM` of arc length — the calibration file's
 * `wire.pointsBase`.
 *
 * Bad input raises coded errors that say what to do: too few poses, a gap between taught poses,
 * a pose far from the curve through the others. Pure; lengths in m.
 */
import { type Vec3, vnorm, vsub } from "../robots/math.ts";
import { CodedError } from "../seam/errors.ts";
import { solveLinear } from "./linalg.ts";
import { centreline, pointAt } from "./wire-geometry.ts";

export interface WireFitOptions {
  /** B-spline knot spacing along the wire, m (default 0.02) */
  knotSpacingM?: number;
  /** smoothing weight λ of ∫|r''|² ds, m³ (default 1e-9: ~0.1 mm taught noise on a gently bent wire) */
  smoothingM3?: number;
  /** the wire bends no tighter than this, m (default 0.02) */
  minBendRadiusM?: number;
  /** spacing of the resampled centreline, m (default 0.005) */
  spacingM?: number;
  /** largest allowed distance between consecutive taught poses, m (default 0.03) */
  maxGapM?: number;
  /** a taught pose further than this from the fit through the others is refused, m (default 0.004) */
  outlierM?: number;
}

export interface WireFit {
  /** the centreline resampled by arc length, m (first point = first taught pose's foot point) */
  points: Vec3[];
  lengthM: number;
  /** arc length of each taught pose's foot point, m */
  taughtArcM: number[];
  /** distance of each taught pose from the fitted centreline, mm */
  residualsMm: number[];
  rmsResidualMm: number;
  worstResidualMm: number;
  /** largest curvature of the fit, 1/m */
  maxCurvaturePerM: number;
  /** the smoothing weight used (raised from the option when the curvature bound bit), m³ */
  smoothingM3: number;
}

interface Spline {
  /** coefficients, one Vec3 per basis function */
  c: Vec3[];
  h: number;
  segments: number;
  u0: number;
}

/** Uniform cubic B-spline basis at local s ∈ [0, 1] and its first two derivatives (per unit s). */
function basis(s: number): [number[], number[], number[]] {
  const t = 1 - s;
  return [
    [
      (t * t * t) / 6,
      (3 * s * s * s - 6 * s * s + 4) / 6,
      (-3 * s * s * s + 3 * s * s + 3 * s + 1) / 6,
      (s * s * s) / 6,
    ],
    [(-t * t) / 2, (3 * s * s - 4 * s) / 2, (-3 * s * s + 2 * s + 1) / 2, (s * s) / 2],
    [t, 3 * s - 2, -3 * s + 1, s],
  ];
}

function locate(sp: Spline, u: number): { k: number; s: number } {
  const x = (u - sp.u0) / sp.h;
  const k = Math.min(Math.max(Math.floor(x), 0), sp.segments - 1);
  return { k, s: x - k };
}

/** Point, first and second derivative (per m of parameter) of the spline at u. */
function evaluate(sp: Spline, u: number): [Vec3, Vec3, Vec3] {
  const { k, s } = locate(sp, u);
  const [b, d1, d2] = basis(s);
  const out: [Vec3, Vec3, Vec3] = [
    [0, 0, 0],
    [0, 0, 0],
    [0, 0, 0],
  ];
  for (let j = 0; j < 4; j++) {
    const c = sp.c[k + j]!;
    for (let d = 0; d < 3; d++) {
      out[0][d]! += b[j]! * c[d]!;
      out[1][d]! += (d1[j]! * c[d]!) / sp.h;
      out[2][d]! += (d2[j]! * c[d]!) / (sp.h * sp.h);
    }
  }
  return out;
}

/** Penalised least-squares fit of a cubic B-spline to points at parameters u. */
function fitSpline(u: readonly number[], pts: readonly Vec3[], knotSpacingM: number, lambda: number): Spline {
  const u0 = u[0]!;
  const span = u[u.length - 1]! - u0;
  const segments = Math.max(1, Math.round(span / knotSpacingM));
  const h = span / segments;
  const m = segments + 3;
  const A = new Array<number>(m * m).fill(0);
  const rhs = [0, 1, 2].map(() => new Array<number>(m).fill(0));
  const sp: Spline = { c: [], h, segments, u0 };
  for (let i = 0; i < u.length; i++) {
    const { k, s } = locate(sp, u[i]!);
    const [b] = basis(s);
    for (let a = 0; a < 4; a++) {
      for (let c = 0; c < 4; c++) A[(k + a) * m + k + c]! += b[a]! * b[c]!;
      for (let d = 0; d < 3; d++) rhs[d]![k + a]! += b[a]! * pts[i]![d]!;
    }
  }
  // ∫|r''|² ≈ Σ (Δ²c)² / h³ for uniform cubic B-splines
  const w = lambda / (h * h * h);
  for (let j = 0; j + 2 < m; j++) {
    const row = [1, -2, 1];
    for (let a = 0; a < 3; a++) for (let c = 0; c < 3; c++) A[(j + a) * m + j + c]! += w * row[a]! * row[c]!;
  }
  const cols = rhs.map((r) => solveLinear(A, r, m));
  if (cols.some((c) => !c))
    throw new CodedError("RB_ERR_CALIB_DEGENERATE", {
      procedure: "wire teaching",
      reason: "the spline system is singular (taught poses bunched in one place?)",
    });
  sp.c = [...Array(m).keys()].map((j) => [cols[0]![j]!, cols[1]![j]!, cols[2]![j]!] as Vec3);
  return sp;
}

/** Dense samples of the spline with their parameter. */
function sample(sp: Spline, n: number): Array<{ u: number; p: Vec3 }> {
  const span = sp.h * sp.segments;
  return [...Array(n + 1).keys()].map((i) => {
    const u = sp.u0 + (span * i) / n;
    return { u, p: evaluate(sp, u)[0] };
  });
}

/** Largest curvature along the spline, 1/m. */
function maxCurvature(sp: Spline, n: number): number {
  let worst = 0;
  const span = sp.h * sp.segments;
  for (let i = 0; i <= n; i++) {
    const [, d1, d2] = evaluate(sp, sp.u0 + (span * i) / n);
    const cx = d1[1] * d2[2] - d1[2] * d2[1];
    const cy = d1[2] * d2[0] - d1[0] * d2[2];
    const cz = d1[0] * d2[1] - d1[1] * d2[0];
    const v = vnorm(d1);
    if (v > 1e-9) worst = Math.max(worst, Math.hypot(cx, cy, cz) / (v * v * v));
  }
  return worst;
}

/** Foot point of p on a densely sampled polyline: arc length and distance. */
function project(c: ReturnType<typeof centreline>, p: Vec3): { s: number; d: number } {
  let best = { s: 0, d: Infinity };
  for (let i = 0; i + 1 < c.points.length; i++) {
    const a = c.points[i]!;
    const ab = vsub(c.points[i + 1]!, a);
    const len2 = ab[0] ** 2 + ab[1] ** 2 + ab[2] ** 2;
    const ap = vsub(p, a);
    const t = len2 > 0 ? Math.min(1, Math.max(0, (ap[0] * ab[0] + ap[1] * ab[1] + ap[2] * ab[2]) / len2)) : 0;
    const d = Math.hypot(ap[0] - ab[0] * t, ap[1] - ab[1] * t, ap[2] - ab[2] * t);
    if (d < best.d) best = { s: c.arcM[i]! + t * Math.sqrt(len2), d };
  }
  return best;
}

/**
 * Each pose's distance from the cubic through its four nearest neighbours in teaching order
 * (Lagrange interpolation over chord length): a local check that a smooth wire passes near it.
 */
function localPredictionErrors(ps: readonly Vec3[]): number[] {
  const u = [0];
  for (let i = 1; i < ps.length; i++) u.push(u[i - 1]! + vnorm(vsub(ps[i]!, ps[i - 1]!)));
  return ps.map((p, i) => {
    const others = [...ps.keys()]
      .filter((j) => j !== i)
      .sort((a, b) => Math.abs(a - i) - Math.abs(b - i) || a - b)
      .slice(0, 4);
    const pred: Vec3 = [0, 0, 0];
    for (const j of others) {
      let w = 1;
      for (const k of others) if (k !== j) w *= (u[i]! - u[k]!) / (u[j]! - u[k]!);
      for (let d = 0; d < 3; d++) pred[d]! += w * ps[j]![d]!;
    }
    return vnorm(vsub(p, pred));
  });
}

/**
 * The pose furthest from where its neighbours put the wire, when that exceeds `limitM`: of the
 * candidates, the one whose removal leaves the rest most consistent (a bad pose also spoils its
 * neighbours' predictions, so the largest error alone could name a good neighbour).
 */
export function findOutlier(ps: readonly Vec3[], limitM: number): { i: number; d: number } | null {
  if (ps.length < 6) return null;
  const err = localPredictionErrors(ps);
  if (Math.max(...err) <= limitM) return null;
  let best = { i: -1, d: 0, rest: Infinity };
  err.forEach((e, i) => {
    if (e <= limitM / 3) return;
    const rest = Math.max(...localPredictionErrors(ps.filter((_, j) => j !== i)));
    if (rest < best.rest) best = { i, d: e, rest };
  });
  return best.i >= 0 ? { i: best.i, d: best.d } : null;
}

/** Check the taught path for size and gaps (coded errors). */
export function checkTaughtPath(taught: readonly Vec3[], maxGapM = 0.03): void {
  if (taught.length < 4)
    throw new CodedError("RB_ERR_CALIB_TOO_FEW_POINTS", {
      procedure: "wire teaching",
      got: taught.length,
      what: "taught poses",
      needed: 4,
    });
  for (let i = 1; i < taught.length; i++) {
    const gap = vnorm(vsub(taught[i]!, taught[i - 1]!));
    if (gap > maxGapM)
      throw new CodedError("RB_ERR_CALIB_PATH_GAP", {
        gapMm: +(gap * 1000).toFixed(1),
        from: `#${i - 1}`,
        to: `#${i}`,
        maxGapMm: maxGapM * 1000,
      });
  }
}

/** One fit at a fixed smoothing (no checks): chord-length start, two reparameterisations. */
function fitOnce(taught: readonly Vec3[], knot: number, lambda: number, dense: number) {
  let u = [0];
  for (let i = 1; i < taught.length; i++) u.push(u[i - 1]! + vnorm(vsub(taught[i]!, taught[i - 1]!)));
  let sp = fitSpline(u, taught, knot, lambda);
  let line = centreline(sample(sp, dense).map((x) => x.p));
  for (let pass = 0; pass < 2; pass++) {
    const feet = taught.map((p) => project(line, p).s);
    // keep the parameters increasing (a pose recorded twice at one spot)
    for (let i = 1; i < feet.length; i++) feet[i] = Math.max(feet[i]!, feet[i - 1]! + 1e-6);
    u = feet;
    sp = fitSpline(u, taught, knot, lambda);
    line = centreline(sample(sp, dense).map((x) => x.p));
  }
  return { sp, line };
}

/** Fit the centreline through the taught loop centres (base frame, in teaching order). */
export function fitWire(taught: readonly Vec3[], opts: WireFitOptions = {}): WireFit {
  checkTaughtPath(taught, opts.maxGapM ?? 0.03);
  const knot = opts.knotSpacingM ?? 0.02;
  const minR = opts.minBendRadiusM ?? 0.02;
  const outlier = opts.outlierM ?? 0.004;
  let lambda = opts.smoothingM3 ?? 1e-9;
  const chord = taught.slice(1).reduce((s, p, i) => s + vnorm(vsub(p, taught[i]!)), 0);
  const dense = Math.max(200, Math.ceil(chord / 0.0005));
  let fit = fitOnce(taught, knot, lambda, dense);
  const outlierPose = findOutlier(taught, outlier);
  if (outlierPose)
    throw new CodedError("RB_ERR_CALIB_OUTLIER_POSE", {
      procedure: "wire teaching",
      which: `taught pose #${outlierPose.i}`,
      distanceMm: +(outlierPose.d * 1000).toFixed(2),
      limitMm: outlier * 1000,
    });
  let kappa = maxCurvature(fit.sp, dense);
  for (let it = 0; it < 40 && kappa > 1 / minR; it++) {
    lambda *= 2;
    fit = fitOnce(taught, knot, lambda, dense);
    kappa = maxCurvature(fit.sp, dense);
  }
  const line = fit.line;
  const spacing = opts.spacingM ?? 0.005;
  const count = Math.max(2, Math.round(line.lengthM / spacing) + 1);
  const points = [...Array(count).keys()].map((i) => pointAt(line, (line.lengthM * i) / (count - 1)));
  const feet = taught.map((p) => project(line, p));
  const residualsMm = feet.map((f) => f.d * 1000);
  return {
    points,
    lengthM: line.lengthM,
    taughtArcM: feet.map((f) => f.s),
    residualsMm,
    rmsResidualMm: Math.sqrt(residualsMm.reduce((s, r) => s + r * r, 0) / residualsMm.length),
    worstResidualMm: Math.max(...residualsMm),
    maxCurvaturePerM: kappa,
    smoothingM3: lambda,
  };
}

/** RMS and largest distance of the points of `a` from the polyline `b`, m (teaching accuracy). */
export function centrelineDistance(
  a: readonly Vec3[],
  b: readonly (readonly number[])[],
): { rmsM: number; maxM: number } {
  const line = centreline(b);
  const d = a.map((p) => project(line, p).d);
  return { rmsM: Math.sqrt(d.reduce((s, x) => s + x * x, 0) / d.length), maxM: Math.max(...d) };
}
