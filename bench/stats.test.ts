/** The benchmarks' percentile: nearest rank (rank ⌈p/100 · n⌉), the definition their figures state. */
import { describe, expect, it } from "vitest";
import { pct } from "./stats.ts";

describe("pct (nearest rank)", () => {
  const hundred = Array.from({ length: 100 }, (_, i) => 100 - i); // 100 … 1, unsorted on purpose
  it("of 100 samples p99 is the 99th value (the second largest), p100 the largest, p50 the 50th", () => {
    expect(pct(hundred, 99)).toBe(99);
    expect(pct(hundred, 100)).toBe(100);
    expect(pct(hundred, 50)).toBe(50);
    expect(pct(hundred, 1)).toBe(1);
  });
  it("ranks round up: of 250 samples p99 is the 248th; of one sample every percentile is that sample; empty is NaN", () => {
    expect(pct(Array.from({ length: 250 }, (_, i) => i + 1), 99)).toBe(248);
    expect(pct([7], 99)).toBe(7);
    expect(pct([7], 1)).toBe(7);
    expect(pct([], 50)).toBeNaN();
  });
});
