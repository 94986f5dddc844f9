/**
 * Deterministic seeded PRNG (SplitMix32-style mixing of a 32-bit counter). The simulator uses
 * it for every random choice so that a seed fully determines a bench; Math.random is never used.
 */
export interface Prng {
  /** uniform in [0, 1) */
  next(): number;
  /** uniform in [lo, hi) */
  uniform(lo: number, hi: number): number;
}

export function createPrng(seed: number): Prng {
  let state = (Math.trunc(seed) ^ 0x9e3779b9) >>> 0;
  const next = (): number => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    z = (z ^ (z >>> 16)) >>> 0;
    return z / 4294967296;
  };
  return { next, uniform: (lo, hi) => lo + (hi - lo) * next() };
}
