/**
 * The franka_ros2 stand-in (rigs/ros2/franka_stand_in.py, rclpy) answers FollowJointTrajectory
 * goal replacement as joint_trajectory_controller does over a real DDS graph, tested with raw
 * goals through the rclnodejs transport (not through our driver); the rig behind it is the one
 * rig-replace.test.ts drives over rosbridge:
 * - a new goal preempts the active one: ABORTED, INVALID_GOAL (ros2_controllers ≥ 4.41; rcl
 *   has no EXECUTING → CANCELED without a cancel request), and the new one runs;
 * - a header.stamp in the future: the trajectory starts then;
 * - a non-zero stamp whose trajectory ends in the past is REJECTED (the goal response says so,
 *   as joint_trajectory_controller's goal callback), and the active goal runs on;
 * - a client's cancel still ends a goal CANCELED.
 * Times are read on the rig's own clock (joint-state stamps, the goal log). Needs
 * scripts/ros2-setup.sh.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MirrorBackend } from "../../drivers/mirror/mirror-backend.ts";
import type { JointStateMsg } from "../../drivers/ros2/messages.ts";
import { sToTime, timeToS } from "../../drivers/ros2/messages.ts";
import { createRclnodejsTransport } from "../../drivers/ros2/rclnodejs-transport.ts";
import { type ActionOutcome, GoalStatus } from "../../drivers/ros2/transport.ts";
import { FR3 } from "../../robots/franka/models.ts";
import { waitFor as until } from "../../test-support/wait.ts";
import { FrankaRosbridgeRig } from "../rigs/rosbridge/franka-rig.ts";
import { Ros2LinkServer, ros2ForThisProcess } from "../rigs/ros2/link-server.ts";

const env = ros2ForThisProcess();
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const FJT = "control_msgs/action/FollowJointTrajectory";
const NAMES = FR3.joints.map((j) => j.name);
type FjtResult = { error_code: number; error_string: string };

async function setup() {
  const backend = new MirrorBackend({ robot: FR3 });
  const server = await Ros2LinkServer.start({ env });
  const rig = await FrankaRosbridgeRig.start({ backend, server });
  cleanups.push(() => rig.close());
  const transport = await createRclnodejsTransport({ nodeName: "stand_in_replace_test" });
  cleanups.push(() => transport.close());
  await transport.connect();
  /** joint states: rig seconds (from the stamp) and joint 0 */
  const states: { t: number; q0: number }[] = [];
  transport.subscribe<JointStateMsg>(rig.names.jointStatesTopic, "sensor_msgs/msg/JointState", (m) =>
    states.push({ t: timeToS(m.header.stamp) - rig.stampOf(0), q0: m.position[0]! }),
  );
  // DDS discovery on a loaded machine
  await until(() => states.length >= 3, "joint states", 30_000);
  const q = [...backend.read().q];
  const send = (points: { dq0: number; t: number }[], stampS = 0) =>
    transport.sendActionGoal<object, unknown, FjtResult>(rig.names.trajectoryAction, FJT, {
      trajectory: {
        header: { stamp: stampS === 0 ? { sec: 0, nanosec: 0 } : sToTime(stampS), frame_id: "" },
        joint_names: NAMES,
        points: points.map((p) => ({
          positions: q.map((v, j) => (j === 0 ? v + p.dq0 : v)),
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

describe("franka_ros2 stand-in: FollowJointTrajectory goal replacement as joint_trajectory_controller", () => {
  it("a new goal preempts the active one (ABORTED, INVALID_GOAL) and runs", async () => {
    const { backend, rig, q, send } = await setup();
    const a = send([{ dq0: 0.2, t: 3 }]);
    await until(() => rig.goalLog.length === 1 && rig.goalLog[0]!.effectiveS !== undefined, "A runs");
    const b = send([{ dq0: -0.05, t: 0.5 }]);
    const ra: ActionOutcome<FjtResult> = await a.result;
    expect(ra.status).toBe(GoalStatus.ABORTED);
    expect(ra.values?.error_code).toBe(-1);
    const rb = await b.result;
    expect(rb.status).toBe(GoalStatus.SUCCEEDED);
    expect(rig.goalLog.map((g) => g.outcome)).toEqual(["preempted", "succeeded"]);
    expect(backend.read().q[0]).toBeCloseTo(q[0]! - 0.05, 6);
  }, 60_000);

  it("a header.stamp in the future: the trajectory starts at the stamp", async () => {
    const { rig, states, q, send } = await setup();
    // 3 s ahead: on a saturated machine (load 14) the goal once reached the rig more than 1.6 s
    // after the last joint state, and a trajectory ending in the past is rejected
    const startRig = states.at(-1)!.t + 3;
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
    expect(log.effectiveS!).toBeLessThan(startRig);
    expect(log.startS!).toBeCloseTo(startRig, 6);
    const still = states.filter((s) => s.t > log.effectiveS! && s.t <= startRig + 0.1);
    expect(still.length).toBeGreaterThan(10);
    for (const s of still) expect(Math.abs(s.q0 - q[0]!)).toBeLessThan(1e-9);
    await until(() => states.at(-1)!.t > startRig + 0.62, "past the end");
    expect(states.at(-1)!.q0).toBeCloseTo(q[0]! + 0.05, 9);
  }, 60_000);

  it("a non-zero stamp whose trajectory ends in the past is rejected; the active goal runs on", async () => {
    const { backend, rig, states, q, send } = await setup();
    const a = send([{ dq0: 0.03, t: 1 }]);
    await until(() => rig.goalLog[0]?.effectiveS !== undefined, "A runs");
    const old = send([{ dq0: -0.3, t: 0.5 }], rig.stampOf(states.at(-1)!.t - 10));
    const ro = await old.result;
    // rejected at the goal response: never accepted, so no terminal status (UNKNOWN)
    expect(ro).toMatchObject({ status: GoalStatus.UNKNOWN, message: "goal rejected" });
    expect(rig.goalLog[1]).toMatchObject({
      outcome: "rejected",
      reason: expect.stringMatching(/ends in the past/),
    });
    const ra = await a.result;
    expect(ra.status).toBe(GoalStatus.SUCCEEDED);
    expect(backend.read().q[0]).toBeCloseTo(q[0]! + 0.03, 6);
  }, 60_000);

  it("a client's cancel ends the goal CANCELED", async () => {
    const { rig, send } = await setup();
    const a = send([{ dq0: 0.2, t: 3 }]);
    await until(() => rig.goalLog[0]?.effectiveS !== undefined, "A runs");
    a.cancel();
    expect((await a.result).status).toBe(GoalStatus.CANCELED);
    expect(rig.goalLog[0]!.outcome).toBe("canceled");
  }, 60_000);
});
