import { describe, expect, it } from "vitest";
import { type Mat4, mat4Identity } from "../math.ts";
import { jacobian, jacobianInto, jacobianWorkspace } from "./jacobian.ts";
import { forwardKinematics } from "./kinematics.ts";
import { FR3, PANDA } from "./models.ts";

function lcg(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 48271) % 2147483647;
    return s / 2147483647;
  };
}

/** Central finite differences of FK: linear velocity and the rotation vector of R(q+h)·R(q−h)ᵀ / 2h. */
function numericJacobian(q: number[], tcp: Mat4 | undefined, h = 1e-6): number[][] {
  const J = Array.from({ length: 6 }, () => new Array<number>(7).fill(0));
  const idx = tcp ? 9 : 8;
  for (let i = 0; i < 7; i++) {
    const qp = q.slice();
    const qm = q.slice();
    qp[i]! += h;
    qm[i]! -= h;
    const P = forwardKinematics(PANDA, qp, tcp).frames[idx]!;
    const Mn = forwardKinematics(PANDA, qm, tcp).frames[idx]!;
    for (let r = 0; r < 3; r++) J[r]![i] = (P[r * 4 + 3]! - Mn[r * 4 + 3]!) / (2 * h);
    // small rotation D = P_R · Mn_Rᵀ ≈ I + [ω]× · 2h
    const d = (a: number, b: number): number =>
      P[a * 4]! * Mn[b * 4]! + P[a * 4 + 1]! * Mn[b * 4 + 1]! + P[a * 4 + 2]! * Mn[b * 4 + 2]!;
    J[3]![i] = (d(2, 1) - d(1, 2)) / 2 / (2 * h);
    J[4]![i] = (d(0, 2) - d(2, 0)) / 2 / (2 * h);
    J[5]![i] = (d(1, 0) - d(0, 1)) / 2 / (2 * h);
  }
  return J;
}

describe("geometric Jacobian", () => {
  it.each([
    ["flange", undefined],
    [
      "tool",
      (() => {
        const t = mat4Identity();
        t[3] = 0.02;
        t[7] = -0.01;
        t[11] = 0.15;
        return t;
      })(),
    ],
  ] as const)("matches finite differences of FK (%s), 300 random q", (_name, tcp) => {
    const rnd = lcg(11);
    const ws = jacobianWorkspace();
    let worst = 0;
    for (let k = 0; k < 300; k++) {
      const q = PANDA.joints.map((j) => j.lower + rnd() * (j.upper - j.lower));
      const J = jacobianInto(PANDA, q, ws, tcp);
      const Jn = numericJacobian(q, tcp);
      for (let r = 0; r < 6; r++)
        for (let c = 0; c < 7; c++) worst = Math.max(worst, Math.abs(J[r * 7 + c]! - Jn[r]![c]!));
    }
    expect(worst).toBeLessThan(1e-7);
  });

  it("zero pose: joint 1 moves the flange along +y, joint 7 spins about −z", () => {
    const J = jacobian(FR3, [0, 0, 0, 0, 0, 0, 0]);
    // flange at (0.088, 0, 0.926): ω1 = z, v = z × p = (0, 0.088, 0)
    expect(J[0]).toBeCloseTo(0, 12);
    expect(J[7]).toBeCloseTo(0.088, 12);
    expect(J[14]).toBeCloseTo(0, 12);
    expect([J[21 + 6], J[28 + 6], J[35 + 6]]).toEqual([0, -0, -1].map((v) => expect.closeTo(v, 12)));
    // joint 7's axis passes through the flange: no linear velocity
    expect(Math.hypot(J[6]!, J[13]!, J[20]!)).toBeLessThan(1e-12);
  });

  it("the allocating variant returns its own copy", () => {
    const a = jacobian(PANDA, PANDA.homeQ);
    const b = jacobian(PANDA, PANDA.homeQ);
    expect(a).not.toBe(b);
    expect(Array.from(a)).toEqual(Array.from(b));
    expect(a.length).toBe(42);
  });
});
