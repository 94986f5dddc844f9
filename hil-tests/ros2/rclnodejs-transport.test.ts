/**
 * The rclnodejs transport on a real DDS graph: the rig serves a kinematic backend through the
 * franka_ros2 stand-in node (rclpy child process). Topics, services, actions with feedback and
 * cancel, camera bytes, and the graph-based connection state (peer killed → lost, in-flight
 * goals reject; peer back → connected). Needs scripts/ros2-setup.sh.
 */
import { afterEach, describe, expect, it } from "vitest";
import { MirrorBackend } from "../../drivers/mirror/mirror-backend.ts";
import { isDeviceError } from "../../drivers/errors.ts";
import type { CompressedImageMsg, JointStateMsg } from "../../drivers/ros2/messages.ts";
import { bytesOf } from "../../drivers/ros2/messages.ts";
import { createRclnodejsTransport } from "../../drivers/ros2/rclnodejs-transport.ts";
import { type ConnectionEvent, GoalStatus, type RosTransport } from "../../drivers/ros2/transport.ts";
import { FR3 } from "../../robots/franka/models.ts";
import { FrankaRosbridgeRig } from "../rigs/rosbridge/franka-rig.ts";
import { Ros2LinkServer, ros2ForThisProcess } from "../rigs/ros2/link-server.ts";

const env = ros2ForThisProcess();
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup() {
  const backend = new MirrorBackend({ robot: FR3 });
  const server = await Ros2LinkServer.start({ env });
  const rig = await FrankaRosbridgeRig.start({ backend, server, cameraRateHz: 20 });
  cleanups.push(() => rig.close());
  const transport = await createRclnodejsTransport({ nodeName: "rclnodejs_transport_test" });
  cleanups.push(() => transport.close());
  return { backend, rig, server, transport };
}

function until(cond: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const poll = () => {
      if (cond()) resolve();
      else if (Date.now() - t0 > timeoutMs) reject(new Error(`timed out waiting for ${what}`));
      else setTimeout(poll, 5);
    };
    poll();
  });
}

function fjtGoal(q0: ArrayLike<number>, delta: number, seconds: number) {
  return {
    trajectory: {
      header: { stamp: { sec: 0, nanosec: 0 }, frame_id: "" },
      joint_names: FR3.joints.map((j) => j.name),
      points: [
        {
          positions: Array.from(q0, (v, j) => (j === 0 ? v + delta : v)),
          time_from_start: { sec: seconds, nanosec: 0 },
        },
      ],
    },
  };
}

async function jointStates(transport: RosTransport): Promise<JointStateMsg[]> {
  const states: JointStateMsg[] = [];
  transport.subscribe<JointStateMsg>("/franka/joint_states", "sensor_msgs/msg/JointState", (m) =>
    states.push(m),
  );
  await until(() => states.length >= 5, "joint states");
  return states;
}

describe("rclnodejs transport against the franka_ros2 stand-in over DDS", () => {
  it("refuses calls before connect with RB_ERR_ROS_NOT_CONNECTED", async () => {
    const transport = await createRclnodejsTransport({ nodeName: "rclnodejs_unconnected" });
    cleanups.push(() => transport.close());
    expect(transport.connected).toBe(false);
    await expect(transport.callService("/franka_gripper/stop", "std_srvs/srv/Trigger", {})).rejects.toSatisfy(
      (e: unknown) => isDeviceError(e, "RB_ERR_ROS_NOT_CONNECTED"),
    );
    const goal = transport.sendActionGoal("/franka_gripper/homing", "franka_msgs/action/Homing", {});
    await expect(goal.result).rejects.toSatisfy((e: unknown) => isDeviceError(e, "RB_ERR_ROS_NOT_CONNECTED"));
  });

  it("subscribes, calls a service, runs actions with feedback and result, and cancels", async () => {
    const { rig, transport } = await setup();
    await transport.connect();
    const states = await jointStates(transport);
    expect(states[0]!.name).toEqual(FR3.joints.map((j) => j.name));
    expect(states[0]!.position.length).toBe(7);

    const res = await transport.callService<object, { success: boolean }>(
      "/franka_gripper/stop",
      "std_srvs/srv/Trigger",
      {},
    );
    expect(res.success).toBe(true);
    // no server on a DDS graph: the wait for it times out
    await expect(
      transport.callService("/nope", "std_srvs/srv/Trigger", {}, { timeoutMs: 300 }),
    ).rejects.toSatisfy((e: unknown) => isDeviceError(e, "RB_ERR_ROS_SERVICE_TIMEOUT"));

    const move = transport.sendActionGoal<object, unknown, { success: boolean; error: string }>(
      "/franka_gripper/move",
      "franka_msgs/action/Move",
      { width: 0.04, speed: 0.2 },
    );
    expect(await move.result).toMatchObject({ status: GoalStatus.SUCCEEDED, values: { success: true } });
    // a grasp: the fingers close to the width within epsilon
    const grasp = transport.sendActionGoal<object, unknown, { success: boolean; error: string }>(
      "/franka_gripper/grasp",
      "franka_msgs/action/Grasp",
      { width: 0.03, epsilon: { inner: 0.001, outer: 0.001 }, speed: 0.2, force: 20 },
    );
    expect(await grasp.result).toMatchObject({ status: GoalStatus.SUCCEEDED, values: { success: true } });

    const q0 = states.at(-1)!.position;
    const done = transport.sendActionGoal<object, unknown, { error_code: number; error_string: string }>(
      rig.names.trajectoryAction,
      "control_msgs/action/FollowJointTrajectory",
      fjtGoal(q0, 0.05, 1),
    );
    expect(await done.result).toMatchObject({ status: GoalStatus.SUCCEEDED, values: { error_code: 0 } });
    await until(() => Math.abs(states.at(-1)!.position[0]! - (q0[0]! + 0.05)) < 1e-3, "arm at the goal");

    const feedback: { joint_names: string[]; actual: { positions: ArrayLike<number> } }[] = [];
    const long = transport.sendActionGoal<object, (typeof feedback)[number], { error_code: number }>(
      rig.names.trajectoryAction,
      "control_msgs/action/FollowJointTrajectory",
      fjtGoal(states.at(-1)!.position, 0.3, 3),
      { onFeedback: (f) => feedback.push(f) },
    );
    await until(() => feedback.length >= 3, "trajectory feedback");
    expect(feedback[0]!.joint_names).toEqual(FR3.joints.map((j) => j.name));
    long.cancel();
    expect((await long.result).status).toBe(GoalStatus.CANCELED);
  }, 60_000);

  it("delivers compressed camera frames as bytes", async () => {
    const { transport } = await setup();
    await transport.connect();
    const frames: CompressedImageMsg[] = [];
    transport.subscribe<CompressedImageMsg>(
      "/front/image_raw/compressed",
      "sensor_msgs/msg/CompressedImage",
      (m) => frames.push(m),
    );
    await until(() => frames.length >= 1, "a camera frame");
    const jpeg = bytesOf(frames[0]!.data);
    expect(frames[0]!.format).toBe("jpeg");
    expect([jpeg[0], jpeg[1]]).toEqual([0xff, 0xd8]); // JPEG start of image
  });

  it("the peer leaving the graph → lost, the goal in flight rejects; it comes back → connected", async () => {
    const { rig, server, transport } = await setup();
    const events: ConnectionEvent[] = [];
    transport.onConnectionChange((e) => events.push(e));
    await transport.connect();
    const states = await jointStates(transport);
    const goal = transport.sendActionGoal(
      rig.names.trajectoryAction,
      "control_msgs/action/FollowJointTrajectory",
      fjtGoal(states.at(-1)!.position, 0.3, 5),
    );
    await until(() => Math.abs(states.at(-1)!.position[0]! - states[0]!.position[0]!) > 0.01, "motion");
    server.setReachable(false); // SIGKILL: no goodbye, the DDS lease runs out
    await expect(goal.result).rejects.toSatisfy((e: unknown) =>
      isDeviceError(e, "RB_ERR_ROS_CONNECTION_LOST"),
    );
    expect(transport.connected).toBe(false);
    expect(events.find((e) => e.type === "lost")).toMatchObject({ reason: /\/franka\/joint_states/ });
    await expect(transport.callService("/franka_gripper/stop", "std_srvs/srv/Trigger", {})).rejects.toSatisfy(
      (e: unknown) => isDeviceError(e, "RB_ERR_ROS_NOT_CONNECTED"),
    );

    server.setReachable(true);
    await until(() => transport.connected, "connected again", 20_000);
    expect(events.filter((e) => e.type === "connected").map((e) => (e as { count: number }).count)).toEqual([
      1, 2,
    ]);
    const n = states.length;
    await until(() => states.length > n + 5, "joint states again");
    const res = await transport.callService<object, { success: boolean }>(
      "/franka_gripper/stop",
      "std_srvs/srv/Trigger",
      {},
    );
    expect(res.success).toBe(true);
    await transport.close();
    expect(events.at(-1)).toEqual({ type: "closed" });
  }, 60_000);
});
