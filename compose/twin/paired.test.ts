import { describe, expect, it } from "vitest";
import { meanCi, mmrv, pearson, wilson } from "./paired.ts";

describe("paired-run metrics (SIMPLER's definitions)", () => {
  it("Pearson r against a hand computation", () => {
    // a = 0.2 0.5 0.9, b = 0.1 0.6 0.7: centred a −0.3333 −0.0333 0.3667, b −0.3667 0.1333 0.2333
    // Σab = 0.12222+(−0.00444)+0.08556 = 0.20333; Σa² = 0.11111+0.00111+0.13444 = 0.24667;
    // Σb² = 0.13444+0.01778+0.05444 = 0.20667 → r = 0.20333/√(0.050978) = 0.90057
    expect(pearson([0.2, 0.5, 0.9], [0.1, 0.6, 0.7])).toBeCloseTo(0.90057, 4);
    expect(pearson([1, 2, 3], [3, 2, 1])).toBeCloseTo(-1, 12);
    expect(pearson([0.5, 0.5], [0.5, 0.5])).toBe(1); // identical after centring
    expect(pearson([0.1, 0.9], [0.5, 0.5])).toBeNaN(); // one side without spread
  });

  it("MMRV against a hand computation", () => {
    // A (sim) = 0.9 0.4 0.5, B (real) = 0.8 0.6 0.3
    // i=0: vs 1 (A>, B>) agree; vs 2 agree → 0
    // i=1: vs 0 agree; vs 2: A 0.4>0.5 false, B 0.6>0.3 true → |0.6−0.3| = 0.3 → 0.3
    // i=2: vs 0 agree; vs 1: A 0.5>0.4 true, B 0.3>0.6 false → 0.3
    // MMRV = (0 + 0.3 + 0.3) / 3 = 0.2
    expect(mmrv([0.9, 0.4, 0.5], [0.8, 0.6, 0.3])).toBeCloseTo(0.2, 12);
    expect(mmrv([0.1, 0.2, 0.3], [0.2, 0.5, 0.9])).toBe(0); // same order
    // a tie on one side only (strict >): i=0: A .5>.5 false, B .2>.7 false → agree → 0;
    // i=1: A false, B .7>.2 true → |0.7−0.2| = 0.5 → MMRV = 0.25
    expect(mmrv([0.5, 0.5], [0.2, 0.7])).toBeCloseTo(0.25, 12);
  });

  it("intervals", () => {
    // Wilson, 7/10, z 1.96: centre (0.7+0.19208)/1.38416 = 0.64456, half 1.96·√(0.021+0.0009604)/1.38416 = 0.20982
    const [lo, hi] = wilson(7, 10);
    expect(lo).toBeCloseTo(0.3968, 3);
    expect(hi).toBeCloseTo(0.8922, 3);
    // t interval, n 4: mean 0.5, sd √(0.1/3) = 0.18257, t(3) 3.182 → half 3.182·0.18257/2 = 0.29047
    const m = meanCi([0.3, 0.4, 0.6, 0.7]);
    expect(m.mean).toBeCloseTo(0.5, 12);
    expect(m.ci[0]).toBeCloseTo(0.2095, 3);
    expect(m.ci[1]).toBeCloseTo(0.7905, 3);
  });
});
