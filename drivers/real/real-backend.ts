/**
 * The real bench behind the Backend seam: one FrankaArmDriver (franka_ros2 over a RosTransport),
 * one RosCameraSource (ROS image topics, sharing the arm's transport and stamp clock) and one
 * ContactSensor (the buzz box over serial, or a Firmata board), on one monotonic clock
 * (`performance.now()/1000`, backend seconds).
 *
 * Lifecycle: the one table of seam/lifecycle.ts; here, by what each state allows:
 * - `unconfigured`: nothing open; only configure().
 * - `inactive`: ROS connected, joint states, camera frames and contact events flow;
 *   describe/read/capture yes, execute/hold no.
 * - `active`: everything; execute() additionally needs the allow-motion switch.
 * - `error`: a device was lost (ROS connection, serial port) or the robot reported an error
 *   (reflex). Motion stopped; read() answers the last reading, capture() the cameras' latest
 *   frames; execute/hold refuse with a LifecycleError that names the fault; an operator calls
 *   recover() once the device is back (it ends `active`).
 * - `finalized`: shut down.
 *
 * Allow-motion switch: with `allowMotion: false` (the default) execute() refuses with
 * RB_ERR_MOTION_DISABLED before anything is sent. hold() sends no command (the
 * controller keeps its last target), so it is allowed without the switch.
 *
 * Events: arm faults, contact-sensor events (contact, fault, link instrument) and camera
 * decoding faults reach `onEvent` listeners synchronously from the receiving handler (for the
 * contact: inside the serial data callback), so a listener can call stop() within the 5 ms budget.
 */
import type { Calibration } from "../../calibration/schema.ts";
import { LifecycleComponent, type LifecycleState } from "../../seam/lifecycle.ts";
import {
  assertMotionArgs,
  type Backend,
  type BackendDescription,
  type ExecuteOptions,
  type ExecuteResult,
  type Frame,
  type JointReading,
  type JointTrajectory,
  type RealtimeDrive,
  type SensorEvent,
  type SensorEventListener,
  type StreamingMotion,
} from "../../seam/types.ts";
import { type Pose, poseToMat4 } from "../../robots/math.ts";
import type { RobotModel } from "../../robots/types.ts";
import { JointHistory, type RosCameraResource, RosCameraSource } from "../camera/ros-camera.ts";
import { FirmataContact } from "../firmata/firmata-contact.ts";
import { FrankaArmDriver } from "../ros2/franka-arm.ts";
import { createRosTransport } from "../ros2/transport-factory.ts";
import type { RosTransport, Unsubscribe } from "../ros2/transport.ts";
import { BuzzboxDriver } from "../serial/buzzbox-driver.ts";
import type { ContactSensor } from "../serial/contact-sensor.ts";
import type { TransportOpener } from "../serial/transport.ts";
import { openSerialPort } from "../serial/transport-serialport.ts";
import { DeviceError } from "../errors.ts";
import type { ContactResource, RealBackendConfig } from "./real-bench-config.ts";
import { cameraSeamPose, clonePose } from "../../calibration/camera-pose.ts";

export interface RealBackendContext {
  robot: RobotModel;
  /** the bench's calibration: base pose, tool offset, camera extrinsics */
  calibration?: Calibration;
  /** backend clock, s (default performance.now()/1000) */
  now?: () => number;
  /** tests: a ready-made ROS transport instead of one built from `cfg.ros` */
  transport?: RosTransport;
  /** tests: the serial opener (default serialport) */
  openSerial?: TransportOpener;
}

type ContactFactory<K extends ContactResource["type"]> = (
  r: Extract<ContactResource, { type: K }>,
  ctx: { open: TransportOpener; now: () => number },
) => ContactSensor | undefined;

/** One entry per contact-device kind; the compiler reports a missing kind. */
const CONTACTS: { [K in ContactResource["type"]]: ContactFactory<K> } = {
  buzzbox: (resource, ctx) => new BuzzboxDriver({ resource, open: ctx.open, now: ctx.now }),
  firmata: (resource, ctx) => new FirmataContact({ resource, open: ctx.open, now: ctx.now }),
  none: () => undefined,
};

const IDENTITY: Pose = { xyz: [0, 0, 0], quat_xyzw: [0, 0, 0, 1] };

/** Build the real backend from its validated config (the bench-file factory entry). */
export function createRealBackend(cfg: RealBackendConfig, ctx: RealBackendContext): RealBackend {
  return new RealBackend(cfg, ctx);
}

export class RealBackend extends LifecycleComponent implements Backend {
  readonly kind = "real" as const;
  readonly now: () => number;
  private readonly cfg: RealBackendConfig;
  private readonly ctx: RealBackendContext;
  private readonly cameraResources: RosCameraResource[];
  private readonly toolOffset: Pose;
  private readonly basePose: Pose;
  private readonly listeners = new Set<SensorEventListener>();
  private readonly subs: Unsubscribe[] = [];
  private transport: RosTransport | undefined;
  private arm: FrankaArmDriver | undefined;
  private cameras: RosCameraSource | undefined;
  private contact: ContactSensor | undefined;
  /** aborts the running execute/hold on a device fault or stop() */
  private motion: AbortController | undefined;
  private motionFault: { device: string; message: string } | undefined;

  constructor(cfg: RealBackendConfig, ctx: RealBackendContext) {
    super();
    this.cfg = cfg;
    this.ctx = ctx;
    this.now = ctx.now ?? (() => performance.now() / 1000);
    const cal = ctx.calibration;
    this.toolOffset = cal ? clonePose(cal.tool.loopPoseFlange) : IDENTITY;
    this.basePose = cal ? clonePose(cal.robotBasePoseWorld) : IDENTITY;
    this.cameraResources = cfg.cameras.map((c) => {
      if (c.pose && c.frame) return { ...c, frame: c.frame, pose: c.pose };
      // extrinsics from the calibration: its intrinsics come along, CameraInfo is checked against them
      const intr = cal?.cameras.find((k) => k.name === c.name)?.intrinsics;
      return { ...c, ...this.poseFromCalibration(c.name), ...(intr ? { calibratedIntrinsics: intr } : {}) };
    });
  }

  /** the composed drivers (for operators and tests) */
  get drivers(): { arm?: FrankaArmDriver; cameras?: RosCameraSource; contact?: ContactSensor } {
    return {
      ...(this.arm ? { arm: this.arm } : {}),
      ...(this.cameras ? { cameras: this.cameras } : {}),
      ...(this.contact ? { contact: this.contact } : {}),
    };
  }

  /** true when execute() may move the robot */
  get motionAllowed(): boolean {
    return this.cfg.allowMotion;
  }

  // ───────────────────────── lifecycle (may throw) ─────────────────────────

  /** Connect ROS, wait for joint states and every camera, open the contact device. */
  protected override async onConfigure(): Promise<void> {
    const transport = this.ctx.transport ?? (await createRosTransport(this.cfg.ros));
    const arm = new FrankaArmDriver({
      transport,
      robot: this.ctx.robot,
      config: this.cfg.franka,
      now: this.now,
    });
    const history = new JointHistory();
    const cameras = new RosCameraSource({
      transport,
      cameras: this.cameraResources,
      now: this.now,
      stampClock: arm.stampClock,
      history,
    });
    const make = CONTACTS[this.cfg.contact.type] as ContactFactory<ContactResource["type"]>;
    const contact = make(this.cfg.contact, { open: this.ctx.openSerial ?? openSerialPort, now: this.now });
    this.transport = transport;
    this.arm = arm;
    this.cameras = cameras;
    this.contact = contact;
    this.subs.push(
      arm.onReading((r) => history.push(r)),
      arm.onEvent((e) => this.onDeviceEvent(e)),
      cameras.onError((err) =>
        this.onDeviceEvent({ type: "fault", t: this.now(), device: "camera", message: err.message }),
      ),
    );
    if (contact) this.subs.push(contact.onEvent((e) => this.onDeviceEvent(e)));
    try {
      await arm.configure();
      if (this.cameraResources.length > 0) {
        await cameras.configure();
        await cameras.waitReady(this.cfg.cameraReadyTimeoutS);
      }
      await contact?.configure();
    } catch (e) {
      await this.teardown();
      throw e;
    }
  }

  protected override async onActivate(): Promise<void> {
    if (this.arm!.lifecycle === "inactive") await this.arm!.activate();
    if (this.contact?.lifecycle === "inactive") await this.contact.activate();
  }

  protected override async onDeactivate(): Promise<void> {
    await this.stop("deactivate");
    if (this.arm!.lifecycle === "active") await this.arm!.deactivate();
    if (this.contact?.lifecycle === "active") await this.contact.deactivate();
  }

  protected override async onShutdown(_from: LifecycleState): Promise<void> {
    await this.stop("shutdown");
    await this.teardown();
  }

  /**
   * Operator only: leave the error state once the lost device is back. Runs franka error
   * recovery when the arm faulted and waits (up to `timeoutS`) for the contact device's link.
   * Ends `active`, as the seam's `Backend.recover` promises (the gateway's
   * `POST /v1/admin/recover` calls nothing else before the next episode moves).
   */
  async recover(timeoutS = 5): Promise<void> {
    await this.recoverWith(async () => {
      if (this.arm!.lifecycle === "error") await this.arm!.recover();
      const c = this.contact;
      if (c) {
        const end = this.now() + timeoutS;
        while (!c.linkUp) {
          if (this.now() > end) {
            throw new DeviceError("RB_ERR_REAL_DEVICE_FAULT", {
              device: c.source,
              reason: "link still down",
              operation: "recover",
            });
          }
          await new Promise((r) => setTimeout(r, 10));
        }
      }
    });
    await this.activate();
  }

  // ───────────────────────── state ─────────────────────────

  describe(): BackendDescription {
    this.guard("describe");
    return {
      robot: this.ctx.robot,
      cameras: this.cameras!.describe(),
      controlPeriodS: this.ctx.robot.controlPeriodS,
      basePose: clonePose(this.basePose),
      toolOffset: clonePose(this.toolOffset),
    };
  }

  read(): JointReading {
    this.guard("read");
    return this.arm!.read();
  }

  async capture(cameras: readonly string[], opts: { depth: boolean }): Promise<Frame[]> {
    this.guard("capture");
    if (this.cameraResources.length === 0 && cameras.length === 0) return [];
    return this.cameras!.capture(cameras, opts);
  }

  onEvent(listener: SensorEventListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  // ───────────────────────── motion ─────────────────────────

  /**
   * Run a validated trajectory on the arm (one FollowJointTrajectory goal). Refuses without the
   * allow-motion switch. `onTick` runs per joint-state message; frames are taken from the
   * cameras' latest images every `capture.everyTicks` samples (first at start; an image already
   * taken is not repeated). A device fault during the motion cancels it: outcome "fault".
   */
  async execute(traj: JointTrajectory, opts: ExecuteOptions = {}): Promise<ExecuteResult> {
    this.guard("execute");
    if (!this.cfg.allowMotion) throw new DeviceError("RB_ERR_MOTION_DISABLED", { operation: "execute" });
    return this.withMotion(opts, (o) => this.arm!.execute(traj, o));
  }

  /** Keep the last target for `seconds` (no command is sent; allowed without the switch). */
  async hold(seconds: number, opts: ExecuteOptions = {}): Promise<ExecuteResult> {
    this.guard("hold");
    assertMotionArgs("hold", opts, seconds);
    return this.withMotion(opts, (o) => this.arm!.hold(seconds, o));
  }

  /**
   * The realtime setting streams the queue to franka_ros2 (seam RealtimeDrive `streamed`):
   * FollowJointTrajectory goal replacement with stamps in the future, over either transport
   * (rosbridge, and native ROS 2: its stand-in, hil-tests/rigs/ros2, answers goal replacement as
   * joint_trajectory_controller does).
   */
  realtimeDrive(): RealtimeDrive {
    return { kind: "streamed", motion: this.streamingMotion() };
  }

  /** the StreamingMotion of this backend (one per realtime episode start) */
  private streamingMotion(): StreamingMotion {
    return {
      leadS: this.cfg.franka.streamLeadS,
      replace: async (traj, startS, before) => {
        this.guard("streamReplace");
        if (!this.cfg.allowMotion) throw new DeviceError("RB_ERR_MOTION_DISABLED", { operation: "stream" });
        const arm = this.arm!;
        // backend seconds → the controller's ROS clock (the stamp clock's offset: gateway − ROS)
        const offset = arm.stampClock.offset;
        if (Number.isNaN(offset)) {
          throw new DeviceError("RB_ERR_ROS_NO_JOINT_STATE", { topic: this.cfg.franka.jointStatesTopic });
        }
        const { switchedByT } = await arm.streamReplace(traj, startS - offset, before);
        return { switchedByS: switchedByT };
      },
      follow: (opts) => {
        this.guard("follow");
        return this.withMotion(opts, (o) => this.arm!.follow(o));
      },
    };
  }

  /** Hold position now: cancel the running goal and wait for it. Safe in any state, any number of times. */
  async stop(reason: string): Promise<void> {
    const cancelled = this.arm?.stop(reason); // cancels the goal synchronously: outcome "stopped"
    this.motion?.abort(); // ends a hold
    await cancelled;
  }

  // ───────────────────────── internals ─────────────────────────

  private async withMotion(
    opts: ExecuteOptions,
    run: (o: ExecuteOptions) => Promise<ExecuteResult>,
  ): Promise<ExecuteResult> {
    const cap = opts.capture;
    // checked before anything is registered, so a refusal leaves no listener and no motion behind
    assertMotionArgs("execute", opts);
    const ctl = new AbortController();
    this.motion = ctl;
    this.motionFault = undefined;
    const onOuterAbort = () => ctl.abort();
    opts.signal?.addEventListener("abort", onOuterAbort);
    if (opts.signal?.aborted) ctl.abort();
    const frames: Frame[] = [];
    const lastT = new Map<string, number>();
    const grab = () => {
      if (!cap) return;
      const names = cap.cameras.length > 0 ? cap.cameras : this.cameraResources.map((c) => c.name);
      for (const name of names) {
        const f = this.cameras!.latest(name, cap.depth);
        if (!f || lastT.get(name) === f.t) continue;
        lastT.set(name, f.t);
        frames.push(f);
      }
    };
    grab();
    let nextCapture = cap ? cap.everyTicks : Number.POSITIVE_INFINITY;
    const onTick = (r: JointReading, i: number) => {
      if (i >= nextCapture) {
        grab();
        while (nextCapture <= i) nextCapture += cap!.everyTicks;
      }
      return opts.onTick ? opts.onTick(r, i) : "ok";
    };
    try {
      const res = await run({ signal: ctl.signal, onTick });
      const fault = this.motionFault ?? res.fault;
      if (this.motionFault && res.outcome !== "fault") {
        return { ...res, outcome: "fault", fault: this.motionFault, frames };
      }
      return { ...res, frames, ...(fault ? { fault } : {}) };
    } finally {
      opts.signal?.removeEventListener("abort", onOuterAbort);
      if (this.motion === ctl) this.motion = undefined;
    }
  }

  /** Every device event passes here, synchronously, on its way to the listeners. */
  private onDeviceEvent(e: SensorEvent): void {
    if (e.type === "fault") {
      const f = { device: e.device, message: e.message };
      if (this.motion) {
        this.motionFault ??= f;
        this.motion.abort();
      }
      if (this.lifecycle === "active" || this.lifecycle === "inactive") this.enterError(f);
    }
    for (const l of this.listeners) l(e);
    if (e.type === "fault") void this.arm?.stop("device fault").catch(() => {});
  }

  private poseFromCalibration(name: string): { frame: "world" | "tool"; pose: Pose } {
    const cam = this.ctx.calibration?.cameras.find((c) => c.name === name);
    if (!cam) {
      throw new Error(
        `camera "${name}" has no frame/pose in the bench file and no extrinsics in the calibration file`,
      );
    }
    return cameraSeamPose(cam, poseToMat4(this.toolOffset));
  }

  private async teardown(): Promise<void> {
    for (const u of this.subs.splice(0)) u();
    const settle = (p: Promise<unknown> | undefined) => p?.catch(() => undefined);
    await settle(this.arm?.shutdown());
    await settle(this.cameras?.shutdown());
    if (this.contact && this.contact.lifecycle !== "finalized") await settle(this.contact.shutdown());
    if (!this.ctx.transport) await settle(this.transport?.close());
  }
}
