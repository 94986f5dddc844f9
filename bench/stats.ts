/** Shared figures for the benchmarks. */

/**
 * The p-th percentile (0 < p ≤ 100) of a sample, nearest-rank on a sorted copy; NaN when empty.
 */
export function pct(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
}
