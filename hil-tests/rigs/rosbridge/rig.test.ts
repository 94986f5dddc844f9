/**
 * Loopback integration: roslib transport, Franka arm driver and ROS camera source against the
 * rosbridge rig on port 0, serving a kinematic test backend in real time.
 */
import { afterEach, describe, expect, it } from "vitest";
import sharp from "sharp";
import { holdTrajectory, interpolateChunk } from "../../../seam/interpolate.ts";
import type { SensorEvent } from "../../../seam/types.ts";
import { FR3 } from "../../../robots/franka/models.ts";
import { JointHistory, RosCameraSource } from "../../../drivers/camera/ros-camera.ts";
import { FrankaArmDriver } from "../../../drivers/ros2/franka-arm.ts";
import type { CameraInfoMsg, JointStateMsg } from "../../../drivers/ros2/messages.ts";
import { RoslibTransport } from "../../../drivers/ros2/roslib-transport.ts";
import { GoalStatus } from "../../../drivers/ros2/transport.ts";
import { FrankaRosbridgeRig, rigDepthTopics } from "./franka-rig.ts";
import { MirrorBackend } from "../../../drivers/mirror/mirror-backend.ts";
import { waitFor as until } from "../../../test-support/wait.ts";

const now = () => performance.now() / 1000;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup() {
  const backend = new MirrorBackend({ robot: FR3 });
  const rig = await FrankaRosbridgeRig.start({ backend, cameraRateHz: 20 });
  cleanups.push(() => rig.close());
  const transport = new RoslibTransport({
    url: rig.url,
    reconnectInitialDelayMs: 50,
    reconnectMaxDelayMs: 200,
  });
  cleanups.push(() => transport.close());
  return { backend, rig, transport };
}

/** a chunk moving joints 1 and 4 by `delta` rad over `rows` × 0.1 s */
function chunk(start: { q: number[]; dq: number[]; gripperWidthM: number }, delta: number, rows: number) {
  const out: number[][] = [];
  for (let r = 1; r <= rows; r++) {
    const q = [...start.q];
    q[0] = q[0]! + (delta * r) / rows;
    q[3] = q[3]! - (delta * r) / rows;
    out.push([...q, start.gripperWidthM]);
  }
  return interpolateChunk(start, out, 0.1, FR3.controlPeriodS);
}

describe("roslib transport against the rosbridge rig", () => {
  it("subscribes, calls a service, runs an action with feedback and result, and cancels", async () => {
    const { rig, transport } = await setup();
    await transport.connect();
    const states: JointStateMsg[] = [];
    transport.subscribe<JointStateMsg>("/franka/joint_states", "sensor_msgs/msg/JointState", (m) =>
      states.push(m),
    );
    await until(() => states.length >= 5);
    expect(states[0]!.name).toEqual(FR3.joints.map((j) => j.name));

    const res = await transport.callService<object, { success: boolean }>(
      "/franka_gripper/stop",
      "std_srvs/srv/Trigger",
      {},
    );
    expect(res.success).toBe(true);
    await expect(transport.callService("/nope", "std_srvs/srv/Trigger", {})).rejects.toMatchObject({
      code: "RB_ERR_ROS_SERVICE_FAILED",
    });

    const feedback: unknown[] = [];
    const move = transport.sendActionGoal<object, unknown, { success: boolean }>(
      "/franka_gripper/move",
      "franka_msgs/action/Move",
      { width: 0.04, speed: 0.2 },
      { onFeedback: (f) => feedback.push(f) },
    );
    const out = await move.result;
    expect(out).toMatchObject({ status: GoalStatus.SUCCEEDED, values: { success: true } });

    // FollowJointTrajectory with feedback, then cancel a long one
    const q0 = states.at(-1)!.position;
    const fjtFeedback: unknown[] = [];
    const long = transport.sendActionGoal<object, unknown, { error_code: number }>(
      rig.names.trajectoryAction,
      "control_msgs/action/FollowJointTrajectory",
      {
        trajectory: {
          header: { stamp: { sec: 0, nanosec: 0 }, frame_id: "" },
          joint_names: FR3.joints.map((j) => j.name),
          points: [
            { positions: q0.map((v, j) => (j === 0 ? v + 0.3 : v)), time_from_start: { sec: 3, nanosec: 0 } },
          ],
        },
      },
      { onFeedback: (f) => fjtFeedback.push(f) },
    );
    await until(() => fjtFeedback.length >= 3);
    long.cancel();
    const cancelled = await long.result;
    expect(cancelled.status).toBe(GoalStatus.CANCELED);
  });
});

describe("Franka arm driver on the rig", () => {
  it("executes a trajectory: the backend follows, onTick runs per joint state", async () => {
    const { backend, transport } = await setup();
    const arm = new FrankaArmDriver({ transport, robot: FR3, now });
    await arm.configure();
    expect(arm.lifecycle).toBe("inactive");
    await expect(arm.execute(holdTrajectory(FR3.homeQ, 0.08, 10, 0.001))).rejects.toMatchObject({
      name: "LifecycleError",
    });
    await arm.activate();
    const start = arm.read();
    const traj = chunk(start, 0.2, 3);
    let ticks = 0;
    let lastIdx = -1;
    const res = await arm.execute(traj, {
      onTick: (_r, i) => {
        ticks++;
        expect(i).toBeGreaterThanOrEqual(lastIdx);
        lastIdx = i;
        return "ok";
      },
    });
    expect(res.outcome).toBe("completed");
    expect(res.controller?.errorCodeName).toBe("SUCCESSFUL");
    expect(ticks).toBeGreaterThan(20);
    const b = backend.read();
    expect(b.q[0]).toBeCloseTo(start.q[0]! + 0.2, 4);
    expect(b.q[3]).toBeCloseTo(start.q[3]! - 0.2, 4);
    await until(() => Math.abs(arm.read().q[0]! - b.q[0]!) < 1e-6);

    await arm.gripperMove(0.03, 0.2);
    await until(() => Math.abs(arm.read().gripperWidthM - 0.03) < 1e-4);
    expect(backend.read().gripperWidthM).toBeCloseTo(0.03, 5);
    await arm.shutdown();
  });

  it("refuses a trajectory that does not start at the measured state", async () => {
    const { transport } = await setup();
    const arm = new FrankaArmDriver({ transport, robot: FR3, now });
    await arm.configure();
    await arm.activate();
    const q = [...arm.read().q];
    q[2] = q[2]! + 0.5;
    await expect(arm.execute(holdTrajectory(q, 0.08, 10, 0.001))).rejects.toMatchObject({
      code: "RB_ERR_ROS_START_MISMATCH",
    });
  });

  it("stop and abort cancel the goal mid-motion", async () => {
    const { backend, transport } = await setup();
    const arm = new FrankaArmDriver({ transport, robot: FR3, now });
    await arm.configure();
    await arm.activate();
    const start = arm.read();
    const ac = new AbortController();
    const p = arm.execute(chunk(start, 0.4, 10), { signal: ac.signal });
    await until(() => Math.abs(backend.read().q[0]! - start.q[0]!) > 0.01);
    ac.abort();
    const res = await p;
    expect(res.outcome).toBe("aborted");
    expect(res.samplesExecuted).toBeLessThan(1000);
    const q0 = backend.read().q[0]!;
    expect(q0).toBeLessThan(start.q[0]! + 0.39);
    // the rig holds: no further motion
    await new Promise((r) => setTimeout(r, 100));
    expect(backend.read().q[0]).toBeCloseTo(q0, 6);

    const r2 = arm.read();
    const p2 = arm.execute(chunk(r2, -0.3, 10), { onTick: (_r, i) => (i > 50 ? "stop" : "ok") });
    const res2 = await p2;
    expect(res2.outcome).toBe("stopped");
  });

  it("a stop or an abort while a chunk's goal is built or serialised: the rig never gets the goal", async () => {
    const { backend, rig, transport } = await setup();
    // slices of 0 ms: a turn of the event loop at every pause point (for 300 goal points: 18 in
    // the build, one per point in the JSON, then the flatten)
    const arm = new FrankaArmDriver({ transport, robot: FR3, now, goalSliceMs: 0 });
    await arm.configure();
    await arm.activate();
    const start = arm.read();
    const traj = chunk(start, 0.2, 30);
    const turns = async (n: number) => {
      for (let i = 0; i < n; i++) await new Promise<void>((r) => setImmediate(r));
    };
    const goals = rig.goalLog.length;
    for (const k of [0, 10, 100, 200]) {
      const ac = new AbortController();
      const running = arm.execute(traj, { signal: ac.signal });
      await turns(k);
      let res: Awaited<typeof running>;
      if (k % 20 === 0) {
        const stopped = arm.stop("contact");
        res = await running;
        await stopped;
        expect(res.outcome, `stop after ${k} turns`).toBe("stopped");
      } else {
        ac.abort();
        res = await running;
        expect(res.outcome, `abort after ${k} turns`).toBe("aborted");
      }
      expect(res.samplesExecuted).toBe(0);
    }
    await new Promise((r) => setTimeout(r, 100));
    expect(rig.goalLog.length).toBe(goals);
    expect(backend.read().q[0]).toBeCloseTo(start.q[0]!, 9);
    // the same chunk, not stopped, reaches the rig and runs
    const ran = await arm.execute(chunk(arm.read(), 0.05, 2));
    expect(ran.outcome).toBe("completed");
    expect(rig.goalLog.length).toBe(goals + 1);
  });

  it("surfaces a reflex (error code and name), enters error, and recovers (operator)", async () => {
    const { rig, transport } = await setup();
    const arm = new FrankaArmDriver({ transport, robot: FR3, now });
    const events: SensorEvent[] = [];
    arm.onEvent((e) => events.push(e));
    await arm.configure();
    await arm.activate();
    rig.injectReflex(0.1, "cartesian_reflex");
    const res = await arm.execute(chunk(arm.read(), 0.2, 5));
    expect(res.outcome).toBe("fault");
    expect(res.robotErrors).toEqual(["cartesian_reflex"]);
    expect(res.controller?.errorCodeName).toBe("PATH_TOLERANCE_VIOLATED");
    expect(arm.lifecycle).toBe("error");
    expect(events.some((e) => e.type === "fault")).toBe(true);
    expect(rig.reflexState).toBe("cartesian_reflex");
    await arm.recover();
    expect(rig.reflexState).toBeUndefined();
    expect(arm.lifecycle).toBe("inactive");
  });

  it("connection lost mid-motion → fault and the robot stops; reconnects when the rig returns", async () => {
    const { backend, rig, transport } = await setup();
    const arm = new FrankaArmDriver({ transport, robot: FR3, now });
    const events: SensorEvent[] = [];
    arm.onEvent((e) => events.push(e));
    await arm.configure();
    await arm.activate();
    const start = arm.read();
    const p = arm.execute(chunk(start, 0.4, 10));
    await until(() => Math.abs(backend.read().q[0]! - start.q[0]!) > 0.01);
    rig.server.setReachable(false);
    const res = await p;
    expect(res.outcome).toBe("fault");
    expect(res.fault?.message).toMatch(/RB_ERR_ROS_CONNECTION_LOST|lost/);
    expect(arm.lifecycle).toBe("error");
    expect(events.find((e) => e.type === "fault")).toMatchObject({ device: `ros2:${rig.url}` });
    // the rig cancels the dropped client's goal: the backend holds
    await new Promise((r) => setTimeout(r, 50));
    const held = backend.read().q[0]!;
    await new Promise((r) => setTimeout(r, 100));
    expect(backend.read().q[0]).toBeCloseTo(held, 6);
    expect(held).toBeLessThan(start.q[0]! + 0.39);

    const before = arm.peek()!.receivedT;
    rig.server.setReachable(true);
    await until(() => transport.connected && arm.peek()!.receivedT > before);
    await arm.recover();
    await arm.activate();
    const again = await arm.execute(chunk(arm.read(), -0.05, 1));
    expect(again.outcome).toBe("completed");
  });
});

describe("ROS camera source on the rig", () => {
  it("frames arrive as JPEG with CameraInfo intrinsics, aligned to the nearest joint reading", async () => {
    const { backend, transport } = await setup();
    const arm = new FrankaArmDriver({ transport, robot: FR3, now });
    const history = new JointHistory();
    arm.onReading((r) => history.push(r));
    const cam = new RosCameraSource({
      transport,
      now,
      stampClock: arm.stampClock,
      history,
      cameras: [
        {
          name: "front",
          imageTopic: "/front/image_raw/compressed",
          imageKind: "compressed",
          cameraInfoTopic: "/front/camera_info",
          frame: "world",
          pose: { xyz: [0, 0, 0], quat_xyzw: [0, 0, 0, 1] },
        },
      ],
    });
    await arm.configure();
    await cam.configure();
    await cam.waitReady(5);
    const [d] = cam.describe();
    const ref = backend.describe().cameras[0]!;
    expect(d).toMatchObject({
      name: "front",
      width: ref.width,
      height: ref.height,
      fx: ref.fx,
      fy: ref.fy,
      cx: ref.cx,
      cy: ref.cy,
    });
    expect(d!.distortion).toEqual(ref.distortion);
    const [f] = await cam.capture(["front"]);
    expect(f!.rgb.kind).toBe("encoded");
    if (f!.rgb.kind !== "encoded") return;
    expect(f!.rgb.format).toBe("jpeg");
    expect([f!.rgb.width, f!.rgb.height]).toEqual([ref.width, ref.height]);
    const meta = await sharp(f!.rgb.data).metadata();
    expect([meta.width, meta.height]).toEqual([ref.width, ref.height]);
    expect(f!.reading).toBeDefined();
    expect(Math.abs(f!.reading!.t - f!.t)).toBeLessThan(0.01);
    await expect(cam.capture(["nope"])).rejects.toMatchObject({ code: "RB_ERR_UNKNOWN_CAMERA" });
  });

  it("a depth camera's aligned depth: 16UC1 millimetres with the colour camera's model, read as the seam's depthMm", async () => {
    const { backend, transport } = await setup();
    const arm = new FrankaArmDriver({ transport, robot: FR3, now });
    const depth = rigDepthTopics("front");
    const cam = new RosCameraSource({
      transport,
      now,
      stampClock: arm.stampClock,
      cameras: [
        {
          name: "front",
          imageTopic: "/front/image_raw/compressed",
          imageKind: "compressed",
          cameraInfoTopic: "/front/camera_info",
          depthTopic: depth.image,
          frame: "world",
          pose: { xyz: [0, 0, 0], quat_xyzw: [0, 0, 0, 1] },
        },
      ],
    });
    const infos: CameraInfoMsg[] = [];
    transport.subscribe<CameraInfoMsg>(depth.info, "sensor_msgs/msg/CameraInfo", (m) => infos.push(m));
    await arm.configure();
    await cam.configure();
    await cam.waitReady(5);
    const ref = backend.describe().cameras[0]!;
    expect(ref.depth).toBe(true);
    expect(cam.describe()[0]!.depth).toBe(true);
    const [f] = await cam.capture(["front"], { depth: true });
    // the mirror backend's depth pattern: 1000 mm everywhere
    expect(f!.depthMm).toMatchObject({ width: ref.width, height: ref.height });
    expect(new Set(f!.depthMm!.data)).toEqual(new Set([1000]));
    await until(() => infos.length > 0);
    expect(infos[0]!.k).toEqual([ref.fx, 0, ref.cx, 0, ref.fy, ref.cy, 0, 0, 1]);
    expect([infos[0]!.width, infos[0]!.height]).toEqual([ref.width, ref.height]);
  });
});
