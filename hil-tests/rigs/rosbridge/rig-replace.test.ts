/**
 * The rig's FollowJointTrajectory server behaves as ros2_controllers' joint_trajectory_controller
 * does on goal replacement (the realtime setting streams the queue this way), tested with raw
 * goals over rosbridge, not through our driver:
 * - a new goal preempts the active one: CANCELED, INVALID_GOAL, "Current goal cancelled due to
 *   new incoming action.";
 * - a header.stamp in the future: the trajectory starts then;
 * - points already past when the goal takes effect are passed over (no interpolation back to
 *   them nor from the arm's own state);
 * - a non-zero stamp whose trajectory ends in the past is rejected, and the active goal runs on.
 * Every time is read on the rig's own clock (joint-state stamps, the goal log), so nothing here
 * depends on the machine's speed.
 */
import { afterEach, describe, expect, it } from "vitest";
import { FR3 } from "../../../robots/franka/models.ts";
import type { JointStateMsg } from "../../../drivers/ros2/messages.ts";
import { sToTime, timeToS } from "../../../drivers/ros2/messages.ts";
import { RoslibTransport } from "../../../drivers/ros2/roslib-transport.ts";
import { type ActionOutcome, GoalStatus } from "../../../drivers/ros2/transport.ts";
import { MirrorBackend } from "../../../drivers/mirror/mirror-backend.ts";
import { FrankaRosbridgeRig } from "./franka-rig.ts";
import { waitFor as until } from "../../../test-support/wait.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const FJT = "control_msgs/action/FollowJointTrajectory";
const NAMES = FR3.joints.map((j) => j.name);
type FjtResult = { error_code: number; error_string: string };

async function setup() {
  const backend = new MirrorBackend({ robot: FR3 });
  const rig = await FrankaRosbridgeRig.start({ backend });
  cleanups.push(() => rig.close());
  const transport = new RoslibTransport({ url: rig.url, reconnectInitialDelayMs: 50, reconnectMaxDelayMs: 200 });
  cleanups.push(() => transport.close());
  await transport.connect();
  /** joint states: rig seconds (from the stamp) and joint 0 */
  const states: { t: number; q0: number }[] = [];
  transport.subscribe<JointStateMsg>(rig.names.jointStatesTopic, "sensor_msgs/msg/JointState", (m) =>
    states.push({ t: timeToS(m.header.stamp) - rig.stampOf(0), q0: m.position[0]! }),
  );
  await until(() => states.length >= 3);
  const q = [...backend.read().q];
  const send = (points: { dq0: number; t: number }[], stampS = 0) =>
    transport.sendActionGoal<object, unknown, FjtResult>(rig.names.trajectoryAction, FJT, {
      trajectory: {
        header: { stamp: stampS === 0 ? { sec: 0, nanosec: 0 } : sToTime(stampS), frame_id: "" },
        joint_names: NAMES,
        points: points.map((p) => ({
          positions: q.map((v, j) => (j === 0 ? v + p.dq0 : v)),
          // at rest at every point (the controller then interpolates quintic splines)
          velocities: q.map(() => 0),
          accelerations: q.map(() => 0),
          time_from_start: sToTime(p.t),
        })),
      },
      path_tolerance: [],
      goal_tolerance: [],
      goal_time_tolerance: sToTime(0.1),
    });
  return { backend, rig, states, q, send };
}

describe("rosbridge rig: FollowJointTrajectory goal replacement as joint_trajectory_controller", () => {
  it("a new goal preempts the active one (CANCELED, INVALID_GOAL) and runs from where the arm is", async () => {
    const { backend, rig, q, send } = await setup();
    const a = send([{ dq0: 0.2, t: 3 }]);
    await until(() => rig.goalLog.length === 1 && rig.goalLog[0]!.effectiveS !== undefined);
    const b = send([{ dq0: -0.05, t: 0.5 }]);
    const ra: ActionOutcome<FjtResult> = await a.result;
    expect(ra.status).toBe(GoalStatus.CANCELED);
    expect(ra.values).toMatchObject({
      error_code: -1,
      error_string: "Current goal cancelled due to new incoming action.",
    });
    const rb = await b.result;
    expect(rb.status).toBe(GoalStatus.SUCCEEDED);
    expect(rig.goalLog.map((g) => g.outcome)).toEqual(["preempted", "succeeded"]);
    expect(backend.read().q[0]).toBeCloseTo(q[0]! - 0.05, 6);
  });

  it("a header.stamp in the future: the trajectory starts at the stamp", async () => {
    const { rig, states, q, send } = await setup();
    // start 1 s ahead: hold where the arm is for the first 0.1 s of the trajectory, then move
    const startRig = states.at(-1)!.t + 1;
    const g = send(
      [
        { dq0: 0, t: 0.1 },
        { dq0: 0.05, t: 0.6 },
      ],
      rig.stampOf(startRig),
    );
    const res = await g.result;
    expect(res.status).toBe(GoalStatus.SUCCEEDED);
    const log = rig.goalLog[0]!;
    // it reached the controller before its start (1 s of lead), and starts at its stamp
    expect(log.effectiveS!).toBeLessThan(startRig);
    expect(log.startS!).toBeCloseTo(startRig, 6);
    // until the first point (stamp + 0.1 s) the arm stands where it was; then it moves; at the
    // last point it is there
    const still = states.filter((s) => s.t > log.effectiveS! && s.t <= startRig + 0.1);
    expect(still.length).toBeGreaterThan(10);
    for (const s of still) expect(Math.abs(s.q0 - q[0]!)).toBeLessThan(1e-9);
    const moving = states.filter((s) => s.t > startRig + 0.2 && s.t < startRig + 0.5);
    expect(moving.length).toBeGreaterThan(10);
    for (const s of moving) expect(s.q0 - q[0]!).toBeGreaterThan(1e-4);
    await until(() => states.at(-1)!.t > startRig + 0.62);
    expect(states.at(-1)!.q0).toBeCloseTo(q[0]! + 0.05, 9);
  });

  it("points already past when the goal arrives are passed over, not interpolated to", async () => {
    const { rig, states, q, send } = await setup();
    // the stamp 0.25 s in the past: the point at 0.1 s (far away) is past, the controller samples
    // the segment the time falls in (0.2 s → 3 s), which starts where the arm is
    const stampRig = states.at(-1)!.t - 0.25;
    const g = send(
      [
        { dq0: 0.5, t: 0.1 },
        { dq0: 0, t: 0.2 },
        { dq0: 0.02, t: 3 },
      ],
      rig.stampOf(stampRig),
    );
    const res = await g.result;
    expect(res.status).toBe(GoalStatus.SUCCEEDED);
    const during = states.filter((s) => s.t >= rig.goalLog[0]!.effectiveS!);
    expect(Math.max(...during.map((s) => s.q0 - q[0]!))).toBeLessThan(0.0201);
    expect(states.at(-1)!.q0).toBeCloseTo(q[0]! + 0.02, 6);
  });

  it("a non-zero stamp whose trajectory ends in the past is rejected; the active goal runs on", async () => {
    const { backend, rig, states, q, send } = await setup();
    const a = send([{ dq0: 0.03, t: 1 }]);
    await until(() => rig.goalLog[0]?.effectiveS !== undefined);
    const old = send([{ dq0: -0.3, t: 0.5 }], rig.stampOf(states.at(-1)!.t - 10));
    const ro = await old.result;
    expect(ro.status).not.toBe(GoalStatus.SUCCEEDED);
    expect(rig.goalLog[1]).toMatchObject({ outcome: "rejected", reason: expect.stringMatching(/ends in the past/) });
    const ra = await a.result;
    expect(ra.status).toBe(GoalStatus.SUCCEEDED);
    expect(backend.read().q[0]).toBeCloseTo(q[0]! + 0.03, 6);
  });

  it("a goal that makes the arm jump is a velocity reflex (the arm holds, the goal aborts)", async () => {
    const { backend, rig, states, q, send } = await setup();
    // already 0.5 s into a segment to a point 0.4 rad away: the controller samples mid-segment
    const g = send(
      [
        { dq0: 0, t: 0.1 },
        { dq0: 0.4, t: 1.5 },
      ],
      rig.stampOf(states.at(-1)!.t - 0.6),
    );
    const res = await g.result;
    expect(res.status).toBe(GoalStatus.ABORTED);
    expect(res.values?.error_string).toBe("joint_velocity_violation");
    expect(rig.reflexState).toBe("joint_velocity_violation");
    expect(Math.abs(backend.read().q[0]! - q[0]!)).toBeLessThan(1e-9);
  });
});
