/**
 * The real backend wired to the rigs, end to end without hardware, over either ROS transport
 * (real-backend.test.ts: rosbridge; ros2/real-backend-rclnodejs.test.ts: native ROS 2):
 * - the rig serves the simulator under franka_ros2's names (arm, gripper, cameras), through a
 *   rosbridge server, or through the franka_ros2 stand-in node on a real DDS graph
 *   (rigs/ros2/link-server.ts);
 * - the buzz-box firmware runs in simavr; its contact pin follows the simulator's ring–wire
 *   contact (the sim's own `contact` events drive `simavrRig.setContact`), so the contact the real
 *   backend reports travels sim → pin → firmware → UART → pty → serialport → BuzzboxDriver.
 * The rigs run in a child process (real-bench.ts, the one rig runner of the tier-3 suites), like
 * a robot on its own computer: the backend under test is the only robot code in this process,
 * and what the simulator does is read over IPC (`simState`).
 * Needs socat, gcc-avr, avr-libc, libsimavr-dev, libelf-dev.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RosTransportResource } from "../drivers/ros2/transport-factory.ts";
import { interpolateChunk } from "../seam/interpolate.ts";
import type { JointTrajectory, SensorEvent } from "../seam/types.ts";
import { fkWorkspace, forwardKinematicsInto } from "../robots/franka/kinematics.ts";
import { PANDA } from "../robots/franka/models.ts";
import { poseToMat4 } from "../robots/math.ts";
import { solveToolPose } from "../calibration/wire-pose.ts";
import { isDeviceError } from "../drivers/errors.ts";
import { parseRealBackendConfig, type RealBackendConfigInput } from "../drivers/real/real-bench-config.ts";
import { createRealBackend, type RealBackend } from "../drivers/real/real-backend.ts";
import {
  type RealBench,
  type RealBenchOptions,
  type RigSimDescription,
  startRealBench,
} from "./real-bench.ts";
import { sleep, waitFor as until } from "../test-support/wait.ts";

const DT = PANDA.controlPeriodS;

/** How the suite reaches the rig: its ROS face and the matching transport resource. */
export interface SuiteTransport {
  /** "rosbridge" or "rclnodejs" (test titles) */
  name: string;
  /** the rig's ROS face (real-bench.ts `ros`; default its rosbridge server) */
  rigRos?: RealBenchOptions["ros"];
  /** the backend's `ros` resource for the started rig */
  resource: (rig: RealBench) => RosTransportResource;
  /** how long the transport may take to see the rig again after it was unreachable, ms */
  reconnectTimeoutMs: number;
  /** driver numbers for this transport (e.g. longer first-message waits for DDS discovery) */
  franka?: RealBackendConfigInput["franka"];
  /** camera ready wait, s */
  cameraReadyTimeoutS?: number;
}

export const ROSBRIDGE: SuiteTransport = {
  name: "rosbridge",
  resource: (rig) => ({
    type: "rosbridge",
    url: rig.url,
    reconnectInitialDelayMs: 50,
    reconnectMaxDelayMs: 200,
  }),
  reconnectTimeoutMs: 5000,
};

export function describeRealBackend(t: SuiteTransport): void {
  describe(`real backend on the rig (simulator) over ${t.name} + buzz box in simavr`, () => {
    let rig: RealBench;
    let simDesc: RigSimDescription;
    let real: RealBackend;
    const events: SensorEvent[] = [];
    /** the simulated arm's joint angles behind the rig */
    const simQ = async () => (await rig.simState()).q;
    /** resolve once `pred` holds for the simulator's state (polled over IPC) */
    const untilSim = async (pred: (q: number[]) => boolean, what: string) => {
      let q = await simQ();
      const end = Date.now() + 10_000;
      while (!pred(q)) {
        if (Date.now() > end) throw new Error(`timed out after 10000 ms waiting for ${what}`);
        await sleep(5);
        q = await simQ();
      }
    };

    const config = (over: Partial<RealBackendConfigInput> = {}) =>
      parseRealBackendConfig({
        type: "real",
        ros: t.resource(rig),
        ...(t.franka ? { franka: t.franka } : {}),
        ...(t.cameraReadyTimeoutS ? { cameraReadyTimeoutS: t.cameraReadyTimeoutS } : {}),
        cameras: [
          { name: "front", imageTopic: "/front/image_raw/compressed", cameraInfoTopic: "/front/camera_info" },
        ],
        contact: {
          type: "buzzbox",
          path: rig.linkPath,
          debounceMs: 2,
          // simavr is a child process a loaded machine can starve; a pulled plug is seen from the port
          heartbeatTimeoutMs: 2000,
          pingIntervalMs: 200,
          reconnectInitialMs: 50,
          reconnectMaxMs: 200,
        },
        allowMotion: true,
        ...over,
      });

    /** trajectory from the measured state to `q` (gripper kept) in `dtS` */
    const moveTo = (q: readonly number[], dtS: number): JointTrajectory => {
      const r = real.read();
      return interpolateChunk(r, [[...q, r.gripperWidthM]], dtS, DT);
    };

    /** joint target that moves the loop `offsetM` along its own y axis (towards the wire's side) */
    const sideways = (offsetM: number): number[] => {
      const r = real.read();
      const tool = poseToMat4(rig.calibration.tool.loopPoseFlange);
      const f = forwardKinematicsInto(PANDA, r.q, fkWorkspace(), tool);
      const target = Float64Array.from(f[9]!);
      target[3] = target[3]! + target[1]! * offsetM;
      target[7] = target[7]! + target[5]! * offsetM;
      target[11] = target[11]! + target[9]! * offsetM;
      const ik = solveToolPose(PANDA, target, tool, r.q);
      expect(ik.positionErrorM).toBeLessThan(1e-5);
      return [...ik.q];
    };

    beforeAll(async () => {
      rig = await startRealBench({
        seed: 3,
        robot: "panda",
        cameras: ["front"],
        cameraRateHz: 5,
        ...(t.rigRos ? { ros: t.rigRos } : {}),
        // a loaded machine: the child starts tsx, warms the physics up and boots simavr
        startTimeoutS: 80,
      });
      simDesc = await rig.simDescription();
      real = createRealBackend(config(), { robot: PANDA, calibration: rig.calibration });
      real.onEvent((e) => events.push(e));
      await real.configure();
      await real.activate();
    }, 90_000);

    afterAll(async () => {
      await real?.shutdown();
      await rig?.close();
    });

    it("describes the bench from CameraInfo and calibration", () => {
      const d = real.describe();
      expect(real.kind).toBe("real");
      expect(d.robot).toBe(PANDA);
      const simFront = simDesc.cameras.find((c) => c.name === "front")!;
      const [front] = d.cameras;
      expect(front).toMatchObject({ name: "front", width: simFront.width, fx: simFront.fx, frame: "world" });
      expect(front!.pose.xyz[0]).toBeCloseTo(simFront.pose.xyz[0], 9);
      expect(d.toolOffset).toEqual(simDesc.toolOffset);
    });

    it("refuses motion without the allow-motion switch, naming it", async () => {
      const locked = createRealBackend(
        config({ allowMotion: false, cameras: [], contact: { type: "none" } }),
        {
          robot: PANDA,
        },
      );
      await locked.configure();
      await locked.activate();
      try {
        const r = locked.read();
        const err = await locked
          .execute(interpolateChunk(r, [[...r.q, r.gripperWidthM]], 0.1, DT))
          .catch((e) => e);
        expect(isDeviceError(err, "RB_ERR_MOTION_DISABLED")).toBe(true);
        expect(String(err.message)).toMatch(/allowMotion|--allow-motion/);
      } finally {
        await locked.shutdown();
      }
    });

    it("executes a trajectory and the simulated arm follows; frames are captured during the motion", async () => {
      const start = real.read();
      const target = [...start.q];
      target[0] = target[0]! + 0.08;
      const res = await real.execute(moveTo(target, 0.5), {
        capture: { everyTicks: 100, cameras: ["front"], depth: false },
      });
      expect(res.outcome).toBe("completed");
      expect(res.frames.length).toBeGreaterThanOrEqual(1);
      expect(res.frames[0]!.camera).toBe("front");
      await sleep(100);
      const q = await simQ();
      expect(Math.abs(q[0]! - target[0]!)).toBeLessThan(0.01);
      expect(Math.abs(real.read().q[0]! - q[0]!)).toBeLessThan(0.01);
      // back to the start mark for the contact test
      expect((await real.execute(moveTo(start.q, 0.5))).outcome).toBe("completed");
    });

    it("a stop while a chunk's goal is still prepared (the turn the chunk starts): the controller never gets it", async () => {
      const q0 = real.read().q;
      const target = [...q0];
      target[0] = target[0]! + 0.2;
      const goals = (await rig.goalLog()).length;
      // a 3 s chunk: 300 goal points, built and (over rosbridge) serialised in slices before the send
      const running = real.execute(moveTo(target, 3));
      await real.stop("contact"); // as a contact or an e-stop arriving in the next turn
      expect(await running).toMatchObject({ outcome: "stopped", samplesExecuted: 0 });
      await sleep(200);
      expect((await rig.goalLog()).length).toBe(goals);
      expect(Math.abs((await simQ())[0]! - q0[0]!)).toBeLessThan(1e-4);
      expect(real.lifecycle).toBe("active");
    });

    it("a sweep into the wire → contact from the buzz box (not the sim) reaches the listeners; stop() halts", async () => {
      const q0 = real.read().q;
      const n0 = events.length;
      const simCloses0 = (await rig.simState()).contactCloses;
      const off = real.onEvent((e) => {
        if (e.type === "contact" && e.closed) void real.stop("contact"); // what the gateway does
      });
      const res = await real.execute(moveTo(sideways(0.03), 1.5));
      off();
      const contact = events.slice(n0).find((e) => e.type === "contact");
      expect(contact).toMatchObject({ type: "contact", closed: true, source: "buzzbox" });
      expect((await rig.simState()).contactCloses).toBeGreaterThan(simCloses0);
      expect(events.some((e) => e.type === "contact" && e.source === "sim")).toBe(false);
      expect(res.outcome).toBe("stopped");
      // stopped well before the end of the 1.5 s sweep
      expect(res.samplesExecuted).toBeLessThan(1400);
      await real.stop("again"); // idempotent
      // back out: the circuit opens again
      expect((await real.execute(moveTo(q0, 0.8))).outcome).toBe("completed");
      await until(
        () => events.at(-1)?.type === "contact" && (events.at(-1) as { closed: boolean }).closed === false,
        "open",
      );
    });

    it("pulling the buzz box's plug mid-motion → fault, motion stops; recovers when the box returns", async () => {
      const q0 = real.read().q;
      const target = [...q0];
      target[0] = target[0]! - 0.3;
      const p = real.execute(moveTo(target, 3));
      await untilSim((q) => Math.abs(q[0]! - q0[0]!) > 0.01, "motion started");
      await rig.killBuzzbox();
      const res = await p;
      expect(res.outcome).toBe("fault");
      expect(res.fault?.device).toBe("buzzbox");
      expect(real.lifecycle).toBe("error");
      await sleep(150);
      const held = (await simQ())[0]!;
      await sleep(150);
      expect((await simQ())[0]!).toBeCloseTo(held, 4);
      expect(held).toBeGreaterThan(target[0]! + 0.05);
      await expect(real.execute(moveTo(q0, 0.3))).rejects.toThrow(/RB_ERR_REAL_DEVICE_FAULT|error state/);

      await rig.restartBuzzbox();
      await real.recover(); // back to active
      expect(events.some((e) => e.type === "instrument" && e.name === "buzzbox.link")).toBe(true);
      expect((await real.execute(moveTo(q0, 0.5))).outcome).toBe("completed");
    }, 20_000);

    it(`losing the ROS connection (${t.name}) mid-motion → fault, motion stops; recovers when ROS returns`, async () => {
      const q0 = real.read().q;
      const target = [...q0];
      target[0] = target[0]! + 0.3;
      const p = real.execute(moveTo(target, 3));
      await untilSim((q) => Math.abs(q[0]! - q0[0]!) > 0.01, "motion started");
      await rig.setRosReachable(false);
      const res = await p;
      expect(res.outcome).toBe("fault");
      expect(res.fault?.message).toMatch(/lost|RB_ERR_ROS_CONNECTION_LOST/);
      expect(real.lifecycle).toBe("error");
      expect(events.some((e) => e.type === "fault" && e.device.startsWith("ros2:"))).toBe(true);
      await sleep(100);
      const held = (await simQ())[0]!;
      await sleep(150);
      expect((await simQ())[0]!).toBeCloseTo(held, 4);
      expect(held).toBeLessThan(target[0]! - 0.05);

      await rig.setRosReachable(true);
      await until(
        () => real.drivers.arm!.peek()!.receivedT > real.now() - 0.05,
        "joint states again",
        t.reconnectTimeoutMs,
      );
      // back to active: as an operator does, recover again while the transport has not yet seen
      // the peer back (joint states can flow a graph poll before the transport says connected)
      const recoverBy = Date.now() + t.reconnectTimeoutMs;
      for (;;) {
        try {
          await real.recover();
          break;
        } catch (err) {
          if (!isDeviceError(err, "RB_ERR_ROS_NOT_CONNECTED") || Date.now() > recoverBy) throw err;
          await sleep(50);
        }
      }
      // the motion goes at once: recover() has waited for the answer of the cancel of every
      // trajectory goal the driver sends on the reconnect (processed after this goal, it would
      // cancel it: the first motion after a stand-in restart used to end `stopped`)
      const back = await real.execute(moveTo(q0, 0.5));
      // on a failure, say what ended the motion (a device fault, robot errors, the last events)
      const why = JSON.stringify({
        samples: back.samplesExecuted,
        fault: back.fault,
        robotErrors: back.robotErrors,
        events: events
          .slice(-5)
          .map(
            (e) =>
              `${e.type}${"device" in e ? ` ${e.device}` : ""}${"message" in e ? `: ${e.message}` : ""} @${e.t.toFixed(3)}`,
          ),
        now: real.now().toFixed(3),
      });
      expect(back.outcome, why).toBe("completed");
    }, 20_000);
  });
}
