/**
 * Dense JointTrajectory (control-period samples, seam/) → FollowJointTrajectory goal.
 *
 * The controller (joint_trajectory_controller in franka_ros2) interpolates between points
 * itself, so the dense samples are thinned to one point every `pointPeriodS` (always keeping
 * the last sample). Each point carries positions plus velocities and accelerations from
 * central finite differences over the dense samples; the sequence is extended by the measured
 * start state before sample 0 (t = 0) and by a hold after the last sample, so the first point
 * is continuous with the measured state and the last one comes to rest. No point at t = 0 is
 * sent: the controller starts from its current state. Pure function (and the same as steps that
 * may pause, for a chunk's start: drivers/ros2/franka-arm.ts).
 */
import { runSteps, type Steps } from "../../seam/steps.ts";
import type { JointTrajectory } from "../../seam/types.ts";
import { type FollowJointTrajectoryGoal, type JointTrajectoryPointMsg, sToTime } from "./messages.ts";

export interface GoalStart {
  /** measured joint positions, rad, model order */
  q: readonly number[];
}

/** The sample indices kept as goal points. */
export function goalSampleIndices(count: number, periodS: number, pointPeriodS: number): number[] {
  const stride = Math.max(1, Math.round(pointPeriodS / periodS));
  const out: number[] = [];
  for (let i = stride - 1; i < count; i += stride) out.push(i);
  if (count > 0 && out[out.length - 1] !== count - 1) out.push(count - 1);
  return out;
}

export function buildFollowJointTrajectoryGoal(
  traj: JointTrajectory,
  start: GoalStart,
  jointNames: readonly string[],
  pointPeriodS: number,
  goalTimeToleranceS = 0.1,
): FollowJointTrajectoryGoal {
  return runSteps(
    buildFollowJointTrajectoryGoalSteps(traj, start, jointNames, pointPeriodS, goalTimeToleranceS),
  );
}

/** goal points built between two pause points of buildFollowJointTrajectoryGoalSteps */
const POINTS_PER_STEP = 16;

/** `buildFollowJointTrajectoryGoal` as steps (seam/steps.ts): it may pause every POINTS_PER_STEP points. */
export function* buildFollowJointTrajectoryGoalSteps(
  traj: JointTrajectory,
  start: GoalStart,
  jointNames: readonly string[],
  pointPeriodS: number,
  goalTimeToleranceS = 0.1,
): Steps<FollowJointTrajectoryGoal> {
  const dof = jointNames.length;
  const h = traj.periodS;
  const n = traj.count;
  // sample s(i) for i in -1 … n (−1 = measured start, n = hold at the last sample)
  const s = (i: number, j: number): number => {
    if (i < 0) return start.q[j]!;
    const k = Math.min(i, n - 1);
    return traj.q[k * dof + j]!;
  };
  const indices = goalSampleIndices(n, h, pointPeriodS);
  const points: JointTrajectoryPointMsg[] = new Array(indices.length);
  for (let p = 0; p < indices.length; p++) {
    const i = indices[p]!;
    const positions: number[] = new Array(dof);
    const velocities: number[] = new Array(dof);
    const accelerations: number[] = new Array(dof);
    const last = i === n - 1;
    for (let j = 0; j < dof; j++) {
      const prev = s(i - 1, j);
      const cur = s(i, j);
      const next = s(i + 1, j);
      positions[j] = cur;
      velocities[j] = last ? 0 : (next - prev) / (2 * h);
      accelerations[j] = last ? 0 : (next - 2 * cur + prev) / (h * h);
    }
    points[p] = { positions, velocities, accelerations, effort: [], time_from_start: sToTime((i + 1) * h) };
    if ((p + 1) % POINTS_PER_STEP === 0) yield;
  }
  return {
    trajectory: {
      header: { stamp: { sec: 0, nanosec: 0 }, frame_id: "" },
      joint_names: [...jointNames],
      points,
    },
    path_tolerance: [],
    goal_tolerance: [],
    goal_time_tolerance: sToTime(goalTimeToleranceS),
  };
}
