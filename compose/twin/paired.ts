/**
 * Paired runs: do two benches (sim and real, or two sims) rank agents alike? The metrics SIMPLER
 * (Li et al., 2024, "Evaluating Real-World Robot Manipulation Policies in Simulation") uses:
 *
 * - Pearson r between the per-agent scores of side A and side B; when both sides are identical
 *   after centring (e.g. all agents equal on both), r = 1 as SIMPLER defines it; when only one side
 *   has no spread r is undefined (NaN).
 * - MMRV, mean maximum rank violation: for agent i, the largest |B_i − B_j| over the agents j whose
 *   order against i differs between A and B (strict comparisons: A_i > A_j ≠ B_i > B_j); averaged
 *   over agents. 0 = the same ranking; it weighs a swap by how far apart the agents really are.
 *   (A plays SIMPLER's "sim", B its "real".)
 *
 * Plus per side: success rate with a Wilson 95 % interval, mean progress with a Student-t 95 %
 * interval.
 */

export function pearson(a: readonly number[], b: readonly number[]): number {
  if (a.length !== b.length) throw new RangeError("pearson: sides of different length");
  const n = a.length;
  const ma = a.reduce((s, v) => s + v, 0) / n;
  const mb = b.reduce((s, v) => s + v, 0) / n;
  const ca = a.map((v) => v - ma);
  const cb = b.map((v) => v - mb);
  if (ca.every((v, i) => v === cb[i])) return 1;
  let sab = 0;
  let saa = 0;
  let sbb = 0;
  for (let i = 0; i < n; i++) {
    sab += ca[i]! * cb[i]!;
    saa += ca[i]! ** 2;
    sbb += cb[i]! ** 2;
  }
  if (saa === 0 || sbb === 0) return Number.NaN;
  return sab / Math.sqrt(saa * sbb);
}

export function mmrv(a: readonly number[], b: readonly number[]): number {
  if (a.length !== b.length) throw new RangeError("mmrv: sides of different length");
  const n = a.length;
  let sum = 0;
  for (let i = 0; i < n; i++) {
    let worst = 0;
    for (let j = 0; j < n; j++) {
      if (a[i]! > a[j]! !== b[i]! > b[j]!) worst = Math.max(worst, Math.abs(b[i]! - b[j]!));
    }
    sum += worst;
  }
  return n > 0 ? sum / n : Number.NaN;
}

/** Wilson score interval for k successes in n trials (z = 1.96). */
export function wilson(k: number, n: number, z = 1.96): [number, number] {
  if (n === 0) return [0, 1];
  const p = k / n;
  const d = 1 + (z * z) / n;
  const c = (p + (z * z) / (2 * n)) / d;
  const h = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / d;
  return [Math.max(0, c - h), Math.min(1, c + h)];
}

/** two-sided 95 % Student-t critical values, df 1…30 */
const T95 = [
  12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131,
  2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042,
];

/** mean with a Student-t 95 % interval (clamped to [lo, hi]) */
export function meanCi(v: readonly number[], lo = 0, hi = 1): { mean: number; ci: [number, number] } {
  const n = v.length;
  if (n === 0) return { mean: Number.NaN, ci: [lo, hi] };
  const m = v.reduce((s, x) => s + x, 0) / n;
  if (n === 1) return { mean: m, ci: [lo, hi] };
  const sd = Math.sqrt(v.reduce((s, x) => s + (x - m) ** 2, 0) / (n - 1));
  const t = T95[Math.min(n - 1, 30) - 1] ?? 1.96;
  const h = (t * sd) / Math.sqrt(n);
  return { mean: m, ci: [Math.max(lo, m - h), Math.min(hi, m + h)] };
}
