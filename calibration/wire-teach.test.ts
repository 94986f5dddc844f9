import { describe, expect, it } from "vitest";
import type { Vec3 } from "../robots/math.ts";
import { catmullRom, centreline, minCurvatureRadiusM, pointAt } from "./wire-geometry.ts";
import { centrelineDistance, fitWire } from "./wire-teach.ts";

/** A bent wire like the sampled ones: ~0.4 m, bends of a few cm radius. */
const truth = catmullRom(
  [
    [0.4, -0.2, 0.18],
    [0.45, -0.12, 0.2],
    [0.42, -0.04, 0.23],
    [0.48, 0.04, 0.21],
    [0.44, 0.12, 0.19],
    [0.47, 0.2, 0.2],
  ],
  0.002,
);

function rng(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return (s / 2147483648) * 2 - 1;
  };
}

/** Loop centres every `stepM` along the truth with uniform noise of ±noiseM per axis. */
function taught(stepM: number, noiseM: number, seed = 5): Vec3[] {
  const c = centreline(truth);
  const n = rng(seed);
  const out: Vec3[] = [];
  for (let s = 0; s <= c.lengthM + 1e-9; s += stepM) {
    const p = pointAt(c, s);
    out.push([p[0] + noiseM * n(), p[1] + noiseM * n(), p[2] + noiseM * n()]);
  }
  return out;
}

describe("wire teaching fit", () => {
  it("recovers the centreline within 0.2 mm RMS from poses every 12 mm with ±0.2 mm noise", () => {
    const t = taught(0.012, 0.0002);
    const fit = fitWire(t);
    const d = centrelineDistance(fit.points, truth);
    expect(d.rmsM).toBeLessThan(0.0002);
    expect(d.maxM).toBeLessThan(0.0006);
    // arc-length parameterised: equal spacing, lengths agree with the truth
    const seg = fit.points
      .slice(1)
      .map((p, i) => Math.hypot(...(p.map((v, k) => v - fit.points[i]![k]!) as Vec3)));
    expect(Math.max(...seg) - Math.min(...seg)).toBeLessThan(1e-4);
    // the taught poses run from the wire's start to within one step of its end
    expect(Math.abs(fit.lengthM - 0.012 * (t.length - 1))).toBeLessThan(0.002);
    expect(fit.residualsMm).toHaveLength(t.length);
    expect(fit.rmsResidualMm).toBeGreaterThan(0.05);
    expect(fit.rmsResidualMm).toBeLessThan(0.3);
    expect(fit.taughtArcM[0]).toBeCloseTo(0, 3);
  });

  it("bounds the curvature: a tight bend bound smooths the fit more", () => {
    const t = taught(0.012, 0.0002);
    const loose = fitWire(t);
    const truthR = minCurvatureRadiusM(centreline(truth));
    const bound = truthR * 1.5;
    const tight = fitWire(t, { minBendRadiusM: bound });
    expect(1 / tight.maxCurvaturePerM).toBeGreaterThanOrEqual(bound * 0.999);
    expect(tight.smoothingM3).toBeGreaterThan(loose.smoothingM3);
    expect(minCurvatureRadiusM(centreline(tight.points))).toBeGreaterThan(truthR);
  });

  it("refuses too few poses, a gap and a pose far from the rest, with codes", () => {
    const t = taught(0.012, 0);
    expect(() => fitWire(t.slice(0, 3))).toThrow(
      expect.objectContaining({ code: "RB_ERR_CALIB_TOO_FEW_POINTS" }),
    );
    const gap = [...t.slice(0, 8), ...t.slice(12)];
    expect(() => fitWire(gap)).toThrow(
      expect.objectContaining({
        code: "RB_ERR_CALIB_PATH_GAP",
        message: expect.stringContaining("#7 and #8"),
      }),
    );
    for (const i of [1, 10, t.length - 1]) {
      const far = t.map((p) => [...p] as Vec3);
      far[i]![2] += 0.008;
      expect(() => fitWire(far)).toThrow(
        expect.objectContaining({
          code: "RB_ERR_CALIB_OUTLIER_POSE",
          message: expect.stringContaining(`#${i} `),
        }),
      );
    }
  });
});
