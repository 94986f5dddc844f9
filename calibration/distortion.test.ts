import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { distortPoint, parseDistortion, undistortPoint } from "./distortion.ts";

describe("distortion (plumb bob)", () => {
  it("treats all-zero or empty coefficients as no distortion", () => {
    expect(parseDistortion([])).toBeNull();
    expect(parseDistortion([0, 0, 0, 0, 0])).toBeNull();
    expect(parseDistortion([0.1])).toEqual({ k1: 0.1, k2: 0, p1: 0, p2: 0, k3: 0 });
  });

  it("refuses models it does not implement and non-finite values", () => {
    expect(() => parseDistortion([0, 0, 0, 0, 0, 0.1, 0, 0])).toThrow(/k1 k2 p1 p2 k3/);
    expect(() => parseDistortion([Number.NaN])).toThrow(/finite/);
  });

  it("undistort inverts distort over a typical field of view", () => {
    const c = { k1: -0.28, k2: 0.07, p1: 0.001, p2: -0.0005, k3: 0 };
    fc.assert(
      fc.property(
        fc.double({ min: -0.6, max: 0.6, noNaN: true }),
        fc.double({ min: -0.45, max: 0.45, noNaN: true }),
        (x, y) => {
          const [xd, yd] = distortPoint(c, x, y);
          const u = undistortPoint(c, xd, yd);
          expect(u).not.toBeNull();
          expect(Math.abs(u![0] - x) + Math.abs(u![1] - y)).toBeLessThan(1e-8);
        },
      ),
    );
  });
});
