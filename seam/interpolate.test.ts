import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { interpolateChunk } from "./interpolate.ts";

const P = 0.001;
const zeros = [0, 0, 0, 0, 0, 0, 0];

function derivs(q: Float64Array, dof: number, j: number, start: number[], period = P) {
  const n = q.length / dof;
  const pos = [start[j]!, ...Array.from({ length: n }, (_, i) => q[i * dof + j]!)];
  const vel = pos.slice(1).map((p, i) => (p - pos[i]!) / period);
  const acc = vel.slice(1).map((v, i) => (v - vel[i]!) / period);
  return { pos, vel, acc };
}

function maxAccJump(acc: number[]): number {
  let m = 0;
  for (let i = 1; i < acc.length; i++) m = Math.max(m, Math.abs(acc[i]! - acc[i - 1]!));
  return m;
}

describe("interpolateChunk", () => {
  it("reaches every row exactly at its row end sample", () => {
    const rows = [
      [0.1, 0, 0, 0, 0, 0, 0, 0.04],
      [0.3, -0.1, 0, 0, 0, 0, 0, 0.05],
      [0.3, -0.1, 0.2, 0, 0, 0, 0, 0.05],
    ];
    const t = interpolateChunk({ q: zeros, dq: zeros, gripperWidthM: 0.04 }, rows, 0.05, P);
    expect(t.count).toBe(150);
    expect(t.rowEndIndex).toEqual([49, 99, 149]);
    rows.forEach((r, k) => {
      for (let j = 0; j < 7; j++) expect(t.q[t.rowEndIndex[k]! * 7 + j]).toBeCloseTo(r[j]!, 12);
      expect(t.gripperWidthM[t.rowEndIndex[k]!]).toBeCloseTo(r[7]!, 12);
    });
  });

  it("keeps a held row bit-exact and never swings past a row (no overshoot)", () => {
    const rows = [
      [0.2, 0, 0, 0, 0, 0, 0, 0],
      [0.2, 0, 0, 0, 0, 0, 0, 0],
      [0.1, 0, 0, 0, 0, 0, 0, 0],
    ];
    const t = interpolateChunk({ q: zeros, dq: zeros, gripperWidthM: 0 }, rows, 0.1, P);
    for (let i = 100; i < 200; i++) expect(t.q[i * 7]).toBe(0.2);
    for (let i = 0; i < t.count; i++) {
      expect(t.q[i * 7]!).toBeGreaterThanOrEqual(0);
      expect(t.q[i * 7]!).toBeLessThanOrEqual(0.2);
    }
  });

  it("starts at the measured position and velocity and is continuous in acceleration", () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: -0.05, max: 0.05, noNaN: true }), { minLength: 1, maxLength: 6 }),
        fc.double({ min: -0.3, max: 0.3, noNaN: true }),
        (steps, v0) => {
          const start = [0.1, 0, 0, 0, 0, 0, 0];
          let acc = 0.1;
          const rows = steps.map((s) => {
            acc += s;
            return [acc, 0, 0, 0, 0, 0, 0, 0];
          });
          const dq = [v0, 0, 0, 0, 0, 0, 0];
          const coarse = interpolateChunk({ q: start, dq, gripperWidthM: 0 }, rows, 0.05, P);
          const fine = interpolateChunk({ q: start, dq, gripperWidthM: 0 }, rows, 0.05, P / 10);
          const d = derivs(coarse.q, 7, 0, start);
          const f = derivs(fine.q, 7, 0, start, P / 10);
          // first finite-difference velocity ≈ measured velocity
          expect(Math.abs(f.vel[0]! - v0)).toBeLessThan(0.01 + 0.01 * Math.abs(v0));
          // acceleration is continuous: its largest per-tick change shrinks with the tick
          // (a jump at a knot would stay the same size at any sampling rate)
          const jc = maxAccJump(d.acc);
          const jf = maxAccJump(f.acc);
          if (jc > 1e-6) expect(jf / jc).toBeLessThan(0.2);
        },
      ),
      { numRuns: 200 },
    );
  });
});
