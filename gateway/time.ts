/**
 * Episode time as the API, the task judge, summaries and replay see it. One neutral module (no
 * episode, no recorder) so that every side rounds identically without importing the other.
 */

/**
 * Episode seconds rounded to 1 µs. The live episode hands the judge event times rounded like this,
 * so replay must round the recorded ones the same way.
 */
export const r6 = (x: number): number => Math.round(x * 1e6) / 1e6;
