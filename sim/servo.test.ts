import { describe, expect, it } from "vitest";
import { interpolateChunk } from "../seam/interpolate.ts";
import { PANDA } from "../robots/franka/models.ts";
import { servoAtRest, servoParams, servoStep } from "./servo.ts";

describe("servo", () => {
  const p = servoParams(PANDA);
  const dt = PANDA.controlPeriodS;

  it("tracks a feasible dense trajectory with bounded error and respects limits", () => {
    const home = [...PANDA.homeQ];
    const rows = [
      [0.3, -0.5, 0.2, -2.0, 0.1, 1.8, 0.6, 0.04],
      [0.5, -0.3, 0.1, -1.8, -0.2, 2.0, 0.9, 0.02],
      [0.2, -0.6, -0.1, -2.2, 0.0, 1.6, 0.7, 0.08],
    ];
    const traj = interpolateChunk({ q: home, dq: [0, 0, 0, 0, 0, 0, 0], gripperWidthM: 0.08 }, rows, 1.0, dt);
    const s = servoAtRest(home, 0.08);
    let maxErr = 0;
    let prevDq = Float64Array.from(s.dq);
    for (let i = 0; i < traj.count; i++) {
      servoStep(s, p, traj.q, i * 7, traj.gripperWidthM[i]!, dt);
      for (let j = 0; j < 7; j++) {
        maxErr = Math.max(maxErr, Math.abs(s.q[j]! - traj.q[i * 7 + j]!));
        expect(Math.abs(s.dq[j]!)).toBeLessThanOrEqual(p.maxVelocity[j]! + 1e-12);
        expect(Math.abs(s.dq[j]! - prevDq[j]!)).toBeLessThanOrEqual(p.maxAcceleration[j]! * dt + 1e-12);
      }
      prevDq = Float64Array.from(s.dq);
    }
    expect(maxErr).toBeLessThan(1e-3);
    // settles on the final target
    for (let j = 0; j < 7; j++) expect(s.q[j]).toBeCloseTo(rows[2]![j]!, 6);
    // the fingers are speed-limited (0.05 m/s): 0.02 → 0.08 m needs 1.2 s, the row gave 1 s
    expect(s.gripperWidthM).toBeCloseTo(0.07, 9);
  });

  it("brakes without overshoot beyond the target on a step command", () => {
    const s = servoAtRest(PANDA.homeQ, 0.04);
    const target = [...PANDA.homeQ];
    target[0] = PANDA.homeQ[0]! + 0.5;
    let maxQ = -Infinity;
    for (let i = 0; i < 3000; i++) {
      servoStep(s, p, target, 0, 0.04, dt);
      maxQ = Math.max(maxQ, s.q[0]!);
    }
    expect(s.q[0]).toBeCloseTo(target[0]!, 6);
    expect(maxQ - target[0]!).toBeLessThan(0.01);
  });

  it("clamps positions to the joint limits and fingers to their speed", () => {
    const s = servoAtRest(PANDA.homeQ, 0.0);
    const target = [...PANDA.homeQ];
    target[3] = 1; // above the upper limit of joint 4
    for (let i = 0; i < 5000; i++) servoStep(s, p, target, 0, 1, dt);
    expect(s.q[3]).toBeLessThanOrEqual(PANDA.joints[3]!.upper);
    expect(s.gripperWidthM).toBe(PANDA.gripper.maxWidthM);
    const g = servoAtRest(PANDA.homeQ, 0);
    servoStep(g, p, PANDA.homeQ, 0, 0.08, dt);
    expect(g.gripperWidthM).toBeCloseTo(PANDA.gripper.maxSpeedMps * dt, 12);
  });
});
