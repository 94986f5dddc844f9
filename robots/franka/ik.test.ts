/**
 * IK round trips: random q within limits → FK → IK, from a nearby seed and from home.
 * Success rates and worst residuals are printed for the record.
 */
import { describe, expect, it } from "vitest";
import { type Mat4, mat4Identity, type Pose, quatAngle, vnorm, vsub } from "../math.ts";
import type { RobotModel } from "../types.ts";
import { type IkResult, ikWorkspace, shoulderToFlangeReachM, solveIk, solveIkInto } from "./ik.ts";
import { forwardKinematics } from "./kinematics.ts";
import { FR3, FRANKA_HAND_TCP_OFFSET_M, FRANKA_HAND_YAW_RAD, PANDA } from "./models.ts";

function lcg(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 48271) % 2147483647;
    return s / 2147483647;
  };
}

/** Franka Hand TCP: yaw −π/4 on the flange, 0.1034 m out along z. */
function handTcp(): Mat4 {
  const t = mat4Identity();
  const c = Math.cos(FRANKA_HAND_YAW_RAD);
  const s = Math.sin(FRANKA_HAND_YAW_RAD);
  t[0] = c;
  t[1] = -s;
  t[4] = s;
  t[5] = c;
  t[11] = FRANKA_HAND_TCP_OFFSET_M;
  return t;
}

const TOL_P = 1e-4;
const TOL_O = 1e-3;

function withinLimits(model: RobotModel, q: readonly number[]): boolean {
  return q.length === 7 && q.every((v, i) => v >= model.joints[i]!.lower && v <= model.joints[i]!.upper);
}

/** Independent check of a solution: FK of the returned q against the target. */
function check(model: RobotModel, r: IkResult, target: Pose, tcp: Mat4 | undefined): void {
  if (!r.ok) return;
  const reached = forwardKinematics(model, r.q, tcp).tool;
  expect(vnorm(vsub(reached.xyz, target.xyz))).toBeLessThanOrEqual(TOL_P * 1.0001);
  expect(quatAngle(reached.quat_xyzw, target.quat_xyzw)).toBeLessThanOrEqual(TOL_O * 1.0001);
  expect(withinLimits(model, r.q)).toBe(true);
}

interface Tally {
  n: number;
  ok: number;
  worstP: number;
  worstO: number;
  iterations: number;
  reasons: Record<string, number>;
}

function tally(): Tally {
  return { n: 0, ok: 0, worstP: 0, worstO: 0, iterations: 0, reasons: {} };
}

function record(t: Tally, r: IkResult): void {
  t.n++;
  t.iterations += r.iterations;
  if (r.ok) {
    t.ok++;
    t.worstP = Math.max(t.worstP, r.positionResidualM);
    t.worstO = Math.max(t.worstO, r.orientationResidualRad);
  } else t.reasons[r.reason] = (t.reasons[r.reason] ?? 0) + 1;
}

function report(label: string, t: Tally): string {
  return (
    `${label}: ${t.ok}/${t.n} = ${((100 * t.ok) / t.n).toFixed(1)} % ok, worst residual ` +
    `${(t.worstP * 1e3).toFixed(4)} mm / ${(t.worstO * 1e3).toFixed(4)} mrad, ` +
    `mean iterations ${(t.iterations / t.n).toFixed(1)}, failures ${JSON.stringify(t.reasons)}`
  );
}

describe.each([
  ["Panda, flange", PANDA, undefined, 101],
  ["FR3, hand TCP", FR3, handTcp(), 202],
] as const)("IK round trips: %s", (label, model, tcp, seed) => {
  it("≥ 99 % from a nearby seed, ≥ 97 % from home, 500 random targets each; solutions within limits", () => {
    const rnd = lcg(seed);
    const ws = ikWorkspace();
    const near = tally();
    const home = tally();
    for (let k = 0; k < 500; k++) {
      const qTrue = model.joints.map((j) => j.lower + rnd() * (j.upper - j.lower));
      const target = forwardKinematics(model, qTrue, tcp).tool;
      // seed: every joint perturbed by up to ±0.15 rad, kept inside the limits
      const seedQ = qTrue.map((v, i) => {
        const j = model.joints[i]!;
        return Math.min(j.upper, Math.max(j.lower, v + (rnd() * 2 - 1) * 0.15));
      });
      const a = solveIkInto(model, target, { tcp, seedQ }, ws);
      record(near, a);
      check(model, a, target, tcp);
      const b = solveIkInto(model, target, { tcp }, ws);
      record(home, b);
      check(model, b, target, tcp);
      for (const r of [a, b]) if (!r.ok) expect(withinLimits(model, r.bestQ)).toBe(true);
    }
    console.log(report(`${label}, nearby seed`, near));
    console.log(report(`${label}, home seed`, home));
    expect(near.ok / near.n).toBeGreaterThanOrEqual(0.99);
    expect(home.ok / home.n).toBeGreaterThanOrEqual(0.97);
  });
});

describe("IK failures and options", () => {
  it("reports a target 2 m away as unreachable, with a bestQ inside the limits", () => {
    const target: Pose = { xyz: [2, 0, 0.5], quat_xyzw: [1, 0, 0, 0] };
    const r = solveIk(PANDA, target);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.reason).toBe("unreachable");
    expect(r.positionResidualM).toBeGreaterThan(1);
    expect(withinLimits(PANDA, r.bestQ)).toBe(true);
  });

  it("reports a target just beyond the reach sphere as unreachable", () => {
    const reach = shoulderToFlangeReachM(PANDA);
    expect(reach).toBeCloseTo(
      Math.hypot(0.316, 0.0825) + Math.hypot(0.0825, 0.384) + Math.hypot(0.088, 0.107),
      12,
    );
    const target: Pose = { xyz: [0, reach + 0.01, 0.333], quat_xyzw: [0, 0, 0, 1] };
    const r = solveIk(PANDA, target);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toBe("unreachable");
  });

  it("the reach bound holds: no random configuration puts the flange beyond it", () => {
    const rnd = lcg(5);
    const reach = shoulderToFlangeReachM(FR3);
    let farthest = 0;
    for (let k = 0; k < 2000; k++) {
      const q = FR3.joints.map(() => (rnd() * 2 - 1) * Math.PI);
      const p = forwardKinematics(FR3, q).flange.xyz;
      farthest = Math.max(farthest, Math.hypot(p[0], p[1], p[2] - 0.333));
    }
    expect(farthest).toBeLessThanOrEqual(reach);
    expect(farthest).toBeGreaterThan(reach - 0.01);
  });

  it("a target beyond reach with a long tool is judged on the flange position", () => {
    // tool sticks 0.5 m out of the flange: a tool target 1.3 m from the shoulder can still be reachable
    const tcp = mat4Identity();
    tcp[11] = 0.5;
    const q = [0, 0.6, 0, -0.3, 0, 1.2, 0];
    const target = forwardKinematics(PANDA, q, tcp).tool;
    const r = solveIk(PANDA, target, { tcp, seedQ: q.map((v) => v + 0.05) });
    expect(r.ok).toBe(true);
    check(PANDA, r, target, tcp);
  });

  it("is deterministic for the same inputs and rng seed", () => {
    const target = forwardKinematics(PANDA, [0.5, 0.3, -0.4, -1.8, 0.2, 2.1, 0.3]).flange;
    const a = solveIk(PANDA, target, { rngSeed: 9 });
    const b = solveIk(PANDA, target, { rngSeed: 9 });
    expect(a).toEqual(b);
  });

  it("stays near a seed that already solves the target", () => {
    const q = [0.2, -0.4, 0.1, -2.2, 0.05, 1.8, 0.7];
    const target = forwardKinematics(PANDA, q).flange;
    const r = solveIk(PANDA, target, { seedQ: q });
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect(r.iterations).toBe(0);
      expect(r.q.map((v, i) => Math.abs(v - q[i]!)).every((d) => d < 1e-9)).toBe(true);
    }
  });

  it("honours tighter tolerances", () => {
    const target = forwardKinematics(FR3, [0.1, 0.2, 0.3, -1.5, 0.2, 1.5, 0.1]).flange;
    const r = solveIk(FR3, target, { positionToleranceM: 1e-7, orientationToleranceRad: 1e-7 });
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect(r.positionResidualM).toBeLessThanOrEqual(1e-7);
      expect(r.orientationResidualRad).toBeLessThanOrEqual(1e-7);
    }
  });

  it("gives up with ok:false when the budget is too small to converge", () => {
    const target = forwardKinematics(PANDA, [2, 1, -2, -0.5, 2, 3, -2]).flange;
    const r = solveIk(PANDA, target, { maxIterations: 1, restarts: 0 });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(["not_converged", "unreachable", "joint_limits"]).toContain(r.reason);
      expect(withinLimits(PANDA, r.bestQ)).toBe(true);
    }
  });
});
