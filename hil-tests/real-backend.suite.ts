/**
 * The real backend wired to the rigs, end to end without hardware, over either ROS transport
 * (real-backend.test.ts: rosbridge; ros2/real-backend-rclnodejs.test.ts: native ROS 2):
 * - the rig serves the simulator under franka_ros2's names (arm, gripper, cameras), through a
 *   rosbridge server, or through the franka_ros2 stand-in node on a real DDS graph
 *   (rigs/ros2/link-server.ts);
 * - the buzz-box firmware runs in simavr; its contact pin follows the simulator's ring–wire
 *   contact (the sim's own `contact` events drive `simavrRig.setContact`), so the contact the real
 *   backend reports travels sim → pin → firmware → UART → pty → serialport → BuzzboxDriver.
 * Needs socat, gcc-avr, avr-libc, libsimavr-dev, libelf-dev.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RosTransportResource } from "../drivers/ros2/transport-factory.ts";
import { interpolateChunk } from "../seam/interpolate.ts";
import type { JointTrajectory, SensorEvent } from "../seam/types.ts";
import { fkWorkspace, forwardKinematicsInto } from "../robots/franka/kinematics.ts";
import { PANDA } from "../robots/franka/models.ts";
import { poseToMat4 } from "../robots/math.ts";
import { solveToolPose } from "../calibration/wire-pose.ts";
import { createSimBackend, type SimBackend } from "../sim/sim-backend.ts";
import { isDeviceError } from "../drivers/errors.ts";
import { parseRealBackendConfig, type RealBackendConfigInput } from "../drivers/real/real-bench-config.ts";
import { createRealBackend, type RealBackend } from "../drivers/real/real-backend.ts";
import { FrankaRosbridgeRig, type RigServer } from "./rigs/rosbridge/franka-rig.ts";
import { buildSimavrRig, type SimavrRig, startSimavrRig } from "./rigs/simavr/simavr-rig.ts";
import { sleep, waitFor as until } from "../test-support/wait.ts";

const DT = PANDA.controlPeriodS;

/** How the suite reaches the rig: its ROS face and the matching transport resource. */
export interface SuiteTransport {
  /** "rosbridge" or "rclnodejs" (test titles) */
  name: string;
  /** the rig's server; undefined: the rig's own rosbridge server */
  startServer?: () => Promise<RigServer>;
  /** the backend's `ros` resource for the started rig */
  resource: (rig: FrankaRosbridgeRig) => RosTransportResource;
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
    let dir: string;
    let sim: SimBackend;
    let rig: FrankaRosbridgeRig;
    let avr: SimavrRig;
    let real: RealBackend;
    const simEvents: SensorEvent[] = [];
    const events: SensorEvent[] = [];
    const linkPath = () => join(dir, "buzzbox-tty");

    const startAvr = async () => {
      avr = await startSimavrRig({ linkPath: linkPath() });
      avr.setContact(sim.privilegedState().contactClosed === true);
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
          path: linkPath(),
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
      const tool = poseToMat4(sim.currentCalibration().tool.loopPoseFlange);
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
      buildSimavrRig();
      dir = mkdtempSync(join(tmpdir(), "real-backend-"));
      sim = createSimBackend({ robot: PANDA, seed: 3 });
      await sim.configure();
      await sim.activate();
      sim.onEvent((e) => {
        simEvents.push(e);
        if (e.type === "contact") avr?.setContact(e.closed);
      });
      const server = await t.startServer?.();
      rig = await FrankaRosbridgeRig.start({ backend: sim, cameraRateHz: 5, ...(server ? { server } : {}) });
      await startAvr();
      real = createRealBackend(config(), { robot: PANDA, calibration: sim.currentCalibration() });
      real.onEvent((e) => events.push(e));
      await real.configure();
      await real.activate();
    }, 30_000);

    afterAll(async () => {
      await real?.shutdown();
      await avr?.kill();
      await rig?.close();
      await sim?.shutdown();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it("describes the bench from CameraInfo and calibration", () => {
      const d = real.describe();
      expect(real.kind).toBe("real");
      expect(d.robot).toBe(PANDA);
      const simFront = sim.describe().cameras.find((c) => c.name === "front")!;
      const [front] = d.cameras;
      expect(front).toMatchObject({ name: "front", width: simFront.width, fx: simFront.fx, frame: "world" });
      expect(front!.pose.xyz[0]).toBeCloseTo(simFront.pose.xyz[0], 9);
      expect(d.toolOffset).toEqual(sim.describe().toolOffset);
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
      expect(Math.abs(sim.read().q[0]! - target[0]!)).toBeLessThan(0.01);
      expect(Math.abs(real.read().q[0]! - sim.read().q[0]!)).toBeLessThan(0.01);
      // back to the start mark for the contact test
      expect((await real.execute(moveTo(start.q, 0.5))).outcome).toBe("completed");
    });

    it("a sweep into the wire → contact from the buzz box (not the sim) reaches the listeners; stop() halts", async () => {
      const q0 = real.read().q;
      const n0 = events.length;
      const simN0 = simEvents.length;
      const off = real.onEvent((e) => {
        if (e.type === "contact" && e.closed) void real.stop("contact"); // what the gateway does
      });
      const res = await real.execute(moveTo(sideways(0.03), 1.5));
      off();
      const contact = events.slice(n0).find((e) => e.type === "contact");
      expect(contact).toMatchObject({ type: "contact", closed: true, source: "buzzbox" });
      expect(simEvents.slice(simN0).some((e) => e.type === "contact" && e.closed)).toBe(true);
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
      await until(() => Math.abs(sim.read().q[0]! - q0[0]!) > 0.01, "motion started");
      await avr.kill();
      const res = await p;
      expect(res.outcome).toBe("fault");
      expect(res.fault?.device).toBe("buzzbox");
      expect(real.lifecycle).toBe("error");
      await sleep(150);
      const held = sim.read().q[0]!;
      await sleep(150);
      expect(sim.read().q[0]!).toBeCloseTo(held, 4);
      expect(held).toBeGreaterThan(target[0]! + 0.05);
      await expect(real.execute(moveTo(q0, 0.3))).rejects.toThrow(/RB_ERR_REAL_DEVICE_FAULT|error state/);

      await startAvr();
      await real.recover(); // back to active
      expect(events.some((e) => e.type === "instrument" && e.name === "buzzbox.link")).toBe(true);
      expect((await real.execute(moveTo(q0, 0.5))).outcome).toBe("completed");
    }, 20_000);

    it(`losing the ROS connection (${t.name}) mid-motion → fault, motion stops; recovers when ROS returns`, async () => {
      const q0 = real.read().q;
      const target = [...q0];
      target[0] = target[0]! + 0.3;
      const p = real.execute(moveTo(target, 3));
      await until(() => Math.abs(sim.read().q[0]! - q0[0]!) > 0.01, "motion started");
      rig.server.setReachable(false);
      const res = await p;
      expect(res.outcome).toBe("fault");
      expect(res.fault?.message).toMatch(/lost|RB_ERR_ROS_CONNECTION_LOST/);
      expect(real.lifecycle).toBe("error");
      expect(events.some((e) => e.type === "fault" && e.device.startsWith("ros2:"))).toBe(true);
      await sleep(100);
      const held = sim.read().q[0]!;
      await sleep(150);
      expect(sim.read().q[0]!).toBeCloseTo(held, 4);
      expect(held).toBeLessThan(target[0]! - 0.05);

      rig.server.setReachable(true);
      await until(
        () => real.drivers.arm!.peek()!.receivedT > real.now() - 0.05,
        "joint states again",
        t.reconnectTimeoutMs,
      );
      await real.recover(); // back to active
      expect((await real.execute(moveTo(q0, 0.5))).outcome).toBe("completed");
    }, 20_000);
  });
}
