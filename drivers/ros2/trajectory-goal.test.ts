import { describe, expect, it } from "vitest";
import { interpolateChunk } from "../../seam/interpolate.ts";
import { FR3 } from "../../robots/franka/models.ts";
import { densifyGoal } from "./goal-interpolation.ts";
import {
  buildFollowJointTrajectoryGoal,
  buildFollowJointTrajectoryGoalSteps,
  goalSampleIndices,
} from "./trajectory-goal.ts";
import { sToTime, timeToS } from "./messages.ts";

const names = FR3.joints.map((j) => j.name);

describe("FollowJointTrajectory goal from a dense trajectory", () => {
  const start = { q: [...FR3.homeQ], dq: new Array(7).fill(0), gripperWidthM: 0.08 };
  const rows = [1, 2, 3].map((r) => [...FR3.homeQ.map((v, j) => (j === 0 ? v + 0.05 * r : v)), 0.08]);
  const traj = interpolateChunk(start, rows, 0.1, 0.001);
  const goal = buildFollowJointTrajectoryGoal(traj, start, names, 0.01);

  it("thins to one point per 10 ms, keeps the last sample, stamps durations", () => {
    expect(goalSampleIndices(25, 0.001, 0.01)).toEqual([9, 19, 24]);
    const pts = goal.trajectory.points;
    expect(pts).toHaveLength(30);
    expect(timeToS(pts[0]!.time_from_start)).toBeCloseTo(0.01, 9);
    expect(timeToS(pts.at(-1)!.time_from_start)).toBeCloseTo(0.3, 9);
    expect(goal.trajectory.joint_names).toEqual(names);
    expect(sToTime(1.9999999999)).toEqual({ sec: 2, nanosec: 0 });
  });

  it("is continuous with the measured state and ends at rest", () => {
    const p0 = goal.trajectory.points[0]!;
    expect(Math.abs(p0.positions[0]! - start.q[0]!)).toBeLessThan(1e-3);
    const last = goal.trajectory.points.at(-1)!;
    expect(last.velocities.every((v) => v === 0)).toBe(true);
    expect(last.positions[0]).toBeCloseTo(start.q[0]! + 0.15, 9);
  });

  it("as steps: the same goal, with a pause point every 16 points", () => {
    const work = buildFollowJointTrajectoryGoalSteps(traj, start, names, 0.01);
    let pauses = 0;
    let r = work.next();
    for (; !r.done; r = work.next()) pauses++;
    expect(r.value).toEqual(goal);
    expect(pauses).toBe(Math.floor(goal.trajectory.points.length / 16));
  });

  it("round-trips through the rig's interpolation close to the dense samples", () => {
    const pts = goal.trajectory.points.map((p) => ({
      positions: p.positions,
      velocities: p.velocities,
      accelerations: p.accelerations,
      t: timeToS(p.time_from_start),
    }));
    const dense = densifyGoal(start, pts, 0.001);
    expect(dense.count).toBe(traj.count);
    let maxErr = 0;
    for (let i = 0; i < traj.count * 7; i++) maxErr = Math.max(maxErr, Math.abs(dense.q[i]! - traj.q[i]!));
    expect(maxErr).toBeLessThan(1e-5);
  });
});
