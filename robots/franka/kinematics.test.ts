/**
 * Forward kinematics against an independent formulation: a product of exponentials whose screw
 * axes are read off the Franka zero pose (all links upright, elbow offset 0.0825 m, wrist offset
 * 0.088 m), not from the DH table; plus closed-form poses of special configurations.
 */
import { describe, expect, it } from "vitest";
import { type Mat4, mat4Identity, mat4Mul } from "../math.ts";
import { FRANKA_HAND_TCP_OFFSET_M, FR3, PANDA } from "./models.ts";
import { fkWorkspace, forwardKinematics, forwardKinematicsInto } from "./kinematics.ts";

/** Seeded uniform generator for reproducible random configurations. */
function lcg(seed: number): () => number {
  let s = seed % 2147483647;
  if (s <= 0) s += 2147483646;
  return () => {
    s = (s * 48271) % 2147483647;
    return s / 2147483647;
  };
}

/** Zero-pose screw axes (unit axis ω, a point on it) in the base frame, joints 1…7. */
const SCREWS: { w: [number, number, number]; p: [number, number, number] }[] = [
  { w: [0, 0, 1], p: [0, 0, 0] }, // base yaw
  { w: [0, 1, 0], p: [0, 0, 0.333] }, // shoulder pitch, 0.333 m up
  { w: [0, 0, 1], p: [0, 0, 0] }, // upper-arm roll, on the vertical axis
  { w: [0, -1, 0], p: [0.0825, 0, 0.333 + 0.316] }, // elbow, 0.0825 m forward of the axis
  { w: [0, 0, 1], p: [0, 0, 0] }, // forearm roll, back on the vertical axis
  { w: [0, -1, 0], p: [0, 0, 0.333 + 0.316 + 0.384] }, // wrist pitch at 1.033 m
  { w: [0, 0, -1], p: [0.088, 0, 0] }, // flange roll, 0.088 m forward, axis pointing down
];
/** Zero-pose flange: 0.107 m below the wrist, x forward, z down. */
const M_FLANGE = new Float64Array([1, 0, 0, 0.088, 0, -1, 0, 0, 0, 0, -1, 1.033 - 0.107, 0, 0, 0, 1]);

/** exp of the twist (ω, v = −ω × p) times θ, as a 4×4 row-major matrix (Rodrigues). */
function screwExp(w: readonly number[], p: readonly number[], th: number): Mat4 {
  const [x, y, z] = [w[0]!, w[1]!, w[2]!];
  const c = Math.cos(th);
  const s = Math.sin(th);
  const v = 1 - c;
  const R = [
    [c + x * x * v, x * y * v - z * s, x * z * v + y * s],
    [y * x * v + z * s, c + y * y * v, y * z * v - x * s],
    [z * x * v - y * s, z * y * v + x * s, c + z * z * v],
  ];
  // a rotation about an axis through p: t = (I − R) p
  const t = [0, 1, 2].map((r) => p[r]! - (R[r]![0]! * p[0]! + R[r]![1]! * p[1]! + R[r]![2]! * p[2]!));
  return new Float64Array([...R[0]!, t[0]!, ...R[1]!, t[1]!, ...R[2]!, t[2]!, 0, 0, 0, 1]);
}

function poeFlange(q: readonly number[]): Mat4 {
  let T = mat4Identity();
  for (let i = 0; i < 7; i++) T = mat4Mul(T, screwExp(SCREWS[i]!.w, SCREWS[i]!.p, q[i]!));
  return mat4Mul(T, M_FLANGE);
}

function maxAbsDiff(a: Mat4, b: Mat4): number {
  let m = 0;
  for (let i = 0; i < 16; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

describe("forward kinematics", () => {
  it("zero pose: flange at (0.088, 0, 0.926) pointing down", () => {
    const f = forwardKinematics(PANDA, [0, 0, 0, 0, 0, 0, 0]).frames[8]!;
    expect(maxAbsDiff(f, M_FLANGE)).toBeLessThan(1e-12);
  });

  it("home pose matches the closed form (flange down, forearm horizontal)", () => {
    const q2 = -Math.PI / 4;
    // upper arm pitched by q2, elbow offset perpendicular, forearm horizontal after q4 = −3π/4,
    // wrist offset 0.088 forward, flange 0.107 down; q7 = π/4 turns the flange x axis by −45°
    const x = 0.316 * Math.sin(q2) + 0.0825 * Math.cos(q2) + 0.384 + 0.088;
    const z = 0.333 + 0.316 * Math.cos(q2) - 0.0825 * Math.sin(q2) + 0.0825 - 0.107;
    const f = forwardKinematics(PANDA, PANDA.homeQ).frames[8]!;
    const c = Math.SQRT1_2;
    const expected = new Float64Array([c, -c, 0, x, -c, -c, 0, 0, 0, 0, -1, z, 0, 0, 0, 1]);
    expect(maxAbsDiff(f, expected)).toBeLessThan(1e-12);
    expect(x).toBeCloseTo(0.3069, 4);
    expect(z).toBeCloseTo(0.5903, 4);
  });

  it("agrees with the product of exponentials over 1000 random configurations", () => {
    const rnd = lcg(42);
    const ws = fkWorkspace();
    let worst = 0;
    for (let k = 0; k < 1000; k++) {
      const q = PANDA.joints.map(() => (rnd() * 2 - 1) * Math.PI);
      const frames = forwardKinematicsInto(PANDA, q, ws);
      worst = Math.max(worst, maxAbsDiff(frames[8]!, poeFlange(q)));
    }
    expect(worst).toBeLessThan(1e-12);
  });

  it("applies the tool transform after the flange", () => {
    const rnd = lcg(7);
    const tcp = mat4Identity();
    tcp[11] = FRANKA_HAND_TCP_OFFSET_M;
    tcp[3] = 0.01;
    for (let k = 0; k < 50; k++) {
      const q = FR3.joints.map((j) => j.lower + rnd() * (j.upper - j.lower));
      const r = forwardKinematics(FR3, q, tcp);
      expect(maxAbsDiff(r.frames[9]!, mat4Mul(poeFlange(q), tcp))).toBeLessThan(1e-12);
      expect(r.tool.xyz[0]).toBeCloseTo(r.frames[9]![3]!, 12);
    }
  });

  it("allocating and workspace variants agree", () => {
    const q = [0.3, -0.2, 0.1, -2, 0.4, 1.9, -0.5];
    const ws = fkWorkspace();
    const a = forwardKinematicsInto(PANDA, q, ws)[8]!;
    const b = forwardKinematics(PANDA, q).frames[8]!;
    expect(maxAbsDiff(a, b)).toBe(0);
  });
});
