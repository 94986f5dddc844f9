/**
 * Board registration: the board's pose from ≥ 3 marked points touched with the tool. Given the
 * marks in the board frame and the touched points in the robot base frame, the rigid transform
 * base ← board that best maps one onto the other in the least-squares sense (Kabsch; solved with
 * Horn's unit-quaternion form, the largest eigenvector of a symmetric 4 × 4 matrix). Umeyama's
 * scale is reported as a check of the marks' board coordinates (it should be 1), not applied.
 *
 * Bad input raises coded errors that say what to do: too few marks, marks on one line, a touch
 * far from where the others put it (leave-one-out, with ≥ 4 marks).
 */
import { type Mat4, mat4Point, type Vec3, vnorm, vsub } from "../robots/math.ts";
import { CodedError } from "../seam/errors.ts";
import { rigid, symmetricEigen } from "./linalg.ts";

export interface RegistrationPair {
  /** mark name, e.g. "A" */
  name: string;
  /** the mark in the board frame, m */
  board: Vec3;
  /** where the tool touched it, robot base frame, m */
  base: Vec3;
}

export interface RegistrationResult {
  /** base ← board */
  baseFromBoard: Mat4;
  /** per mark: |base ← board · mark − touched|, mm */
  residuals: Array<{ name: string; residualMm: number }>;
  rmsMm: number;
  worstMm: number;
  /** Umeyama's similarity scale of the same fit (1 when the marks' coordinates are right) */
  scale: number;
}

export interface RegistrationOptions {
  /** marks must lie at least this far from the line through the others, m (default 0.02) */
  minSpreadM?: number;
  /** a touch further than this from the fit of the others is refused, m (default 0.005) */
  outlierM?: number;
}

function centroid(ps: readonly Vec3[]): Vec3 {
  const c: Vec3 = [0, 0, 0];
  for (const p of ps) for (let k = 0; k < 3; k++) c[k]! += p[k]! / ps.length;
  return c;
}

/** Rigid least-squares fit base ← board (no checks). */
export function kabsch(board: readonly Vec3[], base: readonly Vec3[]): { m: Mat4; scale: number } {
  const ca = centroid(board);
  const cb = centroid(base);
  // S = Σ a bᵀ over centred points
  const S = new Array<number>(9).fill(0);
  let varA = 0;
  for (let i = 0; i < board.length; i++) {
    const a = vsub(board[i]!, ca);
    const b = vsub(base[i]!, cb);
    varA += a[0] * a[0] + a[1] * a[1] + a[2] * a[2];
    for (let r = 0; r < 3; r++) for (let c = 0; c < 3; c++) S[r * 3 + c]! += a[r]! * b[c]!;
  }
  const [sxx, sxy, sxz, syx, syy, syz, szx, szy, szz] = S as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  // Horn (1987): the rotation's quaternion (w x y z) is the top eigenvector of N
  const N = [
    sxx + syy + szz,
    syz - szy,
    szx - sxz,
    sxy - syx,
    syz - szy,
    sxx - syy - szz,
    sxy + syx,
    szx + sxz,
    szx - sxz,
    sxy + syx,
    -sxx + syy - szz,
    syz + szy,
    sxy - syx,
    szx + sxz,
    syz + szy,
    -sxx - syy + szz,
  ];
  const eig = symmetricEigen(N, 4);
  const [w, x, y, z] = eig.vectors[3]! as [number, number, number, number];
  const R = [
    w * w + x * x - y * y - z * z,
    2 * (x * y - w * z),
    2 * (x * z + w * y),
    2 * (x * y + w * z),
    w * w - x * x + y * y - z * z,
    2 * (y * z - w * x),
    2 * (x * z - w * y),
    2 * (y * z + w * x),
    w * w - x * x - y * y + z * z,
  ];
  const Rca: Vec3 = [
    R[0]! * ca[0] + R[1]! * ca[1] + R[2]! * ca[2],
    R[3]! * ca[0] + R[4]! * ca[1] + R[5]! * ca[2],
    R[6]! * ca[0] + R[7]! * ca[1] + R[8]! * ca[2],
  ];
  // Umeyama's scale: Σ b'·(R a') / Σ|a'|², and N's largest eigenvalue is that Σ b'·(R a')
  const scale = varA > 0 ? eig.values[3]! / varA : 1;
  return { m: rigid(R, vsub(cb, Rca)), scale };
}

/** Largest distance of a point from the line through the two points furthest apart, m. */
function spreadFromLine(ps: readonly Vec3[]): number {
  let best = 0;
  let ia = 0;
  let ib = 0;
  for (let i = 0; i < ps.length; i++)
    for (let j = i + 1; j < ps.length; j++) {
      const d = vnorm(vsub(ps[i]!, ps[j]!));
      if (d > best) [best, ia, ib] = [d, i, j];
    }
  if (best === 0) return 0;
  const a = ps[ia]!;
  const u = vsub(ps[ib]!, a).map((v) => v / best) as Vec3;
  let far = 0;
  for (const p of ps) {
    const d = vsub(p, a);
    const along = d[0] * u[0] + d[1] * u[1] + d[2] * u[2];
    far = Math.max(far, Math.sqrt(Math.max(0, d[0] ** 2 + d[1] ** 2 + d[2] ** 2 - along * along)));
  }
  return far;
}

/** Register the board from touched marks; coded errors for too few, collinear or outlying marks. */
export function registerBoardPoints(
  pairs: readonly RegistrationPair[],
  opts: RegistrationOptions = {},
): RegistrationResult {
  const procedure = "board registration";
  if (pairs.length < 3)
    throw new CodedError("RB_ERR_CALIB_TOO_FEW_POINTS", {
      procedure,
      got: pairs.length,
      what: "touched marks",
      needed: 3,
    });
  const minSpread = opts.minSpreadM ?? 0.02;
  const spread = spreadFromLine(pairs.map((p) => p.board));
  if (spread < minSpread)
    throw new CodedError("RB_ERR_CALIB_DEGENERATE", {
      procedure,
      reason: `the marks ${pairs.map((p) => p.name).join(", ")} lie on one line (${(spread * 1000).toFixed(1)} mm off it, at least ${minSpread * 1000} mm needed): their rotation about that line is unknown`,
    });
  const outlier = opts.outlierM ?? 0.005;
  if (pairs.length >= 4) {
    // leave one out: each touch against the fit through the others
    let worst = { name: "", d: 0 };
    for (let k = 0; k < pairs.length; k++) {
      const rest = pairs.filter((_, i) => i !== k);
      if (spreadFromLine(rest.map((p) => p.board)) < minSpread) continue;
      const { m } = kabsch(
        rest.map((p) => p.board),
        rest.map((p) => p.base),
      );
      const d = vnorm(vsub(mat4Point(m, pairs[k]!.board), pairs[k]!.base));
      if (d > worst.d) worst = { name: pairs[k]!.name, d };
    }
    if (worst.d > outlier) {
      // only the worst is named: one bad touch drags every other leave-one-out fit too
      throw new CodedError("RB_ERR_CALIB_OUTLIER_POSE", {
        procedure,
        which: `mark ${worst.name}`,
        distanceMm: +(worst.d * 1000).toFixed(2),
        limitMm: outlier * 1000,
      });
    }
  }
  const { m, scale } = kabsch(
    pairs.map((p) => p.board),
    pairs.map((p) => p.base),
  );
  const residuals = pairs.map((p) => ({
    name: p.name,
    residualMm: vnorm(vsub(mat4Point(m, p.board), p.base)) * 1000,
  }));
  const rmsMm = Math.sqrt(residuals.reduce((s, r) => s + r.residualMm ** 2, 0) / residuals.length);
  return {
    baseFromBoard: m,
    residuals,
    rmsMm,
    worstMm: Math.max(...residuals.map((r) => r.residualMm)),
    scale,
  };
}
