/**
 * The rosbridge rig: serves a `Backend` (the simulator, or any other) to ROS clients under
 * franka_ros2's names, over the rosbridge v2 protocol (JSON). It lets the real-bench drivers
 * (drivers/ros2, drivers/camera) run end to end without ROS installed.
 *
 * Served (names from the same resource config as the driver, defaults franka_ros2's):
 * - `<jointStatesTopic>` sensor_msgs/JointState of fr3_joint1…7 every `jointStateEveryTicks`
 *   control ticks of backend time; `<gripperNode>/joint_states` with both finger joints;
 * - `<trajectoryAction>` FollowJointTrajectory, as ros2_controllers' joint_trajectory_controller
 *   (closed loop) behaves: a goal is validated (joint names, points, strictly increasing
 *   time_from_start; a non-zero header.stamp whose trajectory ends in the past is rejected); an
 *   accepted goal preempts the active one (that one ends CANCELED with INVALID_GOAL "Current goal
 *   cancelled due to new incoming action."; through the ROS 2 stand-in ABORTED, as rclcpp_action
 *   lets joint_trajectory_controller ≥ 4.41 end it: rigs/ros2/franka_stand_in.py); the new
 *   trajectory takes effect at the next control slice and starts at its header.stamp (zero: when it takes effect); each control tick samples
 *   it at its time (goal-interpolation.ts `sampleKnots`: before the first point from the state at
 *   take-effect, then between the points the time falls between: points already past are passed
 *   over); feedback per slice, result with error_code / error_string; cancel holds the measured
 *   position; a commanded step above 1.05 × the joint's velocity limit is a reflex (libfranka);
 * - `<gripperNode>/move`, `/grasp`, `/homing` actions and `/stop` service;
 * - `<errorRecoveryAction>` clears the rig's reflex state;
 * - per camera: `/<name>/image_raw/compressed` (JPEG via sharp) and `/<name>/camera_info`; a
 *   camera with depth also `/<name>/aligned_depth_to_color/image_raw` (sensor_msgs/Image `16UC1`,
 *   millimetres, 0 = no return, aligned to the colour image) and its
 *   `/<name>/aligned_depth_to_color/camera_info` (the colour camera's model), as realsense2_camera
 *   publishes them with align_depth enabled (there under `/camera/<camera_name>/`). Depth is
 *   rendered only while someone subscribes to it.
 *
 * Time: the backend (the simulator) runs in its own time as fast as the CPU allows. The rig
 * owns every backend call and paces them against the wall clock: it executes `sliceS` of
 * backend time, then sleeps until wall time has caught up (backend seconds = wall seconds ×
 * `speedFactor`, default 1 = real time). So the rig behaves like a robot: time passes while
 * idle (the rig commands holds), motions take their real duration, and stop/cancel/connection
 * loss happen mid-motion. Header stamps are `epoch + backend seconds` (a ROS-like wall clock).
 *
 * The ROS face is a `RigServer`: the rosbridge server by default, or the native ROS 2 graph of
 * rigs/ros2/link-server.ts (`server` option).
 *
 * Fault injection: `server.setReachable(false|true)` (rosbridge also `killConnections()`),
 * `injectReflex(afterS, name)` (the next arm goal aborts after `afterS` with that reflex),
 * `delayGoals(ms)` (arm goals reach the controller `ms` late: a slow link).
 */
import { endianness } from "node:os";
import sharp from "sharp";
import type { Backend, Frame, JointTrajectory } from "../../../seam/types.ts";
import { ROS_CAMERA_TYPES } from "../../../drivers/camera/ros-camera.ts";
import { FRANKA_ROS_TYPES } from "../../../drivers/ros2/franka-arm.ts";
import { type FrankaRosConfigInput, parseFrankaRosConfig } from "../../../drivers/ros2/franka-config.ts";
import {
  bytesToBase64,
  FJT_INVALID_GOAL,
  FJT_INVALID_JOINTS,
  FJT_PATH_TOLERANCE_VIOLATED,
  FJT_SUCCESSFUL,
  type FollowJointTrajectoryGoal,
  type GripperGraspGoal,
  type GripperMoveGoal,
  sToTime,
  timeToS,
} from "../../../drivers/ros2/messages.ts";
import { goalKnots, type Knot, sampleKnots } from "../../../drivers/ros2/goal-interpolation.ts";
import {
  type ActionGoalAnswer,
  type ActionHandler,
  RosbridgeServer,
  type ServiceHandler,
} from "./rosbridge-server.ts";

/**
 * What the rig needs from its ROS face: the rosbridge server (default), or the native ROS 2
 * graph of hil-tests/rigs/ros2/link-server.ts. Types are ROS 2 interface names; rosbridge
 * ignores them (its clients name them), a DDS graph needs them.
 */
export interface RigServer {
  /** where clients connect, e.g. "ws://127.0.0.1:9090" (rosbridge) */
  readonly url: string;
  hasSubscribers(topic: string): boolean;
  publish(topic: string, msg: unknown): number;
  /** a topic the rig may publish on, with its type (before the first publish) */
  declareTopic(topic: string, type: string): void;
  advertiseService(name: string, handler: ServiceHandler, type: string): void;
  /**
   * `decidesAcceptance`: the handler accepts or rejects each goal itself (calls `ctx.accepted()`
   * once it takes it, throws before to reject), as joint_trajectory_controller's goal callback
   */
  advertiseAction(
    name: string,
    handler: ActionHandler,
    type: string,
    opts?: { decidesAcceptance?: boolean },
  ): void;
  /** refuse (false) or accept (true) clients; false also drops the connected ones */
  setReachable(up: boolean): void;
  close(): Promise<void>;
}

export interface FrankaRigOptions {
  backend: Backend;
  host?: string;
  /** default 0 (any free port) */
  port?: number;
  /** names (same schema as the driver's resource config) */
  names?: FrankaRosConfigInput;
  /** backend seconds executed per pacing step; default 0.01 s */
  sliceS?: number;
  /** backend seconds per wall second; default 1 (real time) */
  speedFactor?: number;
  /** publish a joint state every n control ticks; default 2 (500 Hz at 1 ms) */
  jointStateEveryTicks?: number;
  /** the ROS face; default a RosbridgeServer on host:port (the rig closes it) */
  server?: RigServer;
  /** camera publish rate, Hz of backend time; default 30 */
  cameraRateHz?: number;
  /** JPEG quality 1…100; default 80 */
  jpegQuality?: number;
}

interface ArmGoal {
  /** header.stamp, rig (backend) seconds; undefined: starts when it takes effect */
  startS: number | undefined;
  /** goal points, times from the start (absolute once started) */
  points: Knot[];
  /** the state when the trajectory took effect (set then) */
  before: Knot | undefined;
  signal: AbortSignal;
  names: string[];
  reflex?: { afterS: number; atS?: number; name: string };
  finish(a: ActionGoalAnswer): void;
  feedback(v: unknown): void;
}

/** What the rig's controller did with arm goals (tests read it). */
export interface ArmGoalLogEntry {
  /** rig seconds at which the goal reached the controller */
  arrivedS: number;
  /** rig seconds at which its trajectory starts (header.stamp, or when it took effect) */
  startS?: number;
  /** rig seconds at which it took effect (the next control slice) */
  effectiveS?: number;
  outcome?: "succeeded" | "preempted" | "canceled" | "aborted" | "rejected";
  reason?: string;
}

interface GripperGoal {
  w: Float64Array;
  cursor: number;
  signal: AbortSignal;
  finish(a: ActionGoalAnswer): void;
  /** success test on the final measured width */
  ok(widthM: number): boolean;
}

/** ROS 2 interface names of what the rig serves: the drivers' own */
const TYPES = {
  ...FRANKA_ROS_TYPES,
  compressedImage: ROS_CAMERA_TYPES.compressed,
  image: ROS_CAMERA_TYPES.raw,
  cameraInfo: ROS_CAMERA_TYPES.info,
} as const;

/** the aligned depth topics of camera `name` (realsense2_camera's names under the rig's camera namespace) */
export function rigDepthTopics(name: string): { image: string; info: string } {
  return {
    image: `/${name}/aligned_depth_to_color/image_raw`,
    info: `/${name}/aligned_depth_to_color/camera_info`,
  };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)));

export class FrankaRosbridgeRig {
  readonly server: RigServer;
  readonly names: ReturnType<typeof parseFrankaRosConfig>;
  private readonly backend: Backend;
  private readonly jointNames: string[];
  private readonly periodS: number;
  private readonly sliceS: number;
  private readonly speed: number;
  private readonly everyTicks: number;
  private readonly cameraPeriodS: number;
  private readonly jpegQuality: number;
  private epochS = 0;
  private running = false;
  private loop: Promise<void> | undefined;
  private holdQ: number[] = [];
  private holdW = 0;
  private arm: ArmGoal | undefined;
  private gripper: GripperGoal | undefined;
  private reflex: string | undefined;
  private pendingReflex: { afterS: number; name: string } | undefined;
  private nextCameraT = 0;
  private tick = 0;
  /** per published message: stamp (s) → wall time of publish (performance.now(), ms) */
  readonly publishLog = { jointState: new Map<number, number>(), frames: new Map<number, number>() };
  /** pacing: slices that finished later than their wall deadline */
  overruns = 0;
  /** every arm goal, in arrival order (the last 256) */
  readonly goalLog: ArmGoalLogEntry[] = [];
  private goalDelayMs = 0;
  private readonly logOf = new WeakMap<ArmGoal, ArmGoalLogEntry>();

  private constructor(server: RigServer, opts: FrankaRigOptions) {
    this.server = server;
    this.backend = opts.backend;
    this.names = parseFrankaRosConfig(opts.names ?? {});
    const robot = this.backend.describe().robot;
    this.jointNames = this.names.jointNames ? [...this.names.jointNames] : robot.joints.map((j) => j.name);
    this.periodS = this.backend.describe().controlPeriodS;
    this.sliceS = opts.sliceS ?? 0.01;
    this.speed = opts.speedFactor ?? 1;
    this.everyTicks = opts.jointStateEveryTicks ?? 2;
    this.cameraPeriodS = 1 / (opts.cameraRateHz ?? 30);
    this.jpegQuality = opts.jpegQuality ?? 80;
  }

  /** start the server and the pacing loop (configures and activates the backend if needed) */
  static async start(opts: FrankaRigOptions): Promise<FrankaRosbridgeRig> {
    const b = opts.backend;
    if (b.lifecycle === "unconfigured") await b.configure();
    if (b.lifecycle === "inactive") await b.activate();
    const server = opts.server ?? (await RosbridgeServer.start({ host: opts.host, port: opts.port }));
    const rig = new FrankaRosbridgeRig(server, opts);
    rig.epochS = Date.now() / 1000 - b.now();
    const r = b.read();
    rig.holdQ = [...r.q];
    rig.holdW = r.gripperWidthM;
    rig.advertise();
    rig.running = true;
    rig.loop = rig.pace();
    return rig;
  }

  get url(): string {
    return this.server.url;
  }

  /** ROS stamp (s) of a backend time */
  stampOf(backendS: number): number {
    return this.epochS + backendS;
  }

  /** the next arm goal aborts after `afterS` of motion with reflex `name` */
  injectReflex(afterS: number, name = "cartesian_reflex"): void {
    this.pendingReflex = { afterS, name };
  }

  /** arm goals reach the controller `ms` later than they arrive (0: at once) */
  delayGoals(ms: number): void {
    this.goalDelayMs = Math.max(0, ms);
  }

  /** the reflex the rig is in (undefined when none) */
  get reflexState(): string | undefined {
    return this.reflex;
  }

  async close(): Promise<void> {
    this.running = false;
    await this.loop;
    await this.server.close();
  }

  // ───────────── servers ─────────────

  private advertise(): void {
    const n = this.names;
    const g = n.gripperNode;
    this.server.declareTopic(n.jointStatesTopic, TYPES.jointState);
    this.server.declareTopic(`${g}/joint_states`, TYPES.jointState);
    for (const c of this.backend.describe().cameras) {
      this.server.declareTopic(`/${c.name}/image_raw/compressed`, TYPES.compressedImage);
      this.server.declareTopic(`/${c.name}/camera_info`, TYPES.cameraInfo);
      if (c.depth) {
        const d = rigDepthTopics(c.name);
        this.server.declareTopic(d.image, TYPES.image);
        this.server.declareTopic(d.info, TYPES.cameraInfo);
      }
    }
    this.server.advertiseAction(
      n.trajectoryAction,
      (goal, ctx) =>
        this.onTrajectoryGoal(goal as FollowJointTrajectoryGoal, ctx.signal, ctx.feedback, ctx.accepted),
      TYPES.fjt,
      { decidesAcceptance: true },
    );
    const maxW = this.backend.describe().robot.gripper.maxWidthM;
    this.server.advertiseAction(
      `${g}/move`,
      (goal, ctx) => {
        const m = goal as GripperMoveGoal;
        return this.onGripperGoal(m.width, m.speed, ctx.signal, (w) => Math.abs(w - m.width) < 1e-3);
      },
      TYPES.move,
    );
    this.server.advertiseAction(
      `${g}/grasp`,
      (goal, ctx) => {
        const m = goal as GripperGraspGoal;
        return this.onGripperGoal(
          m.width,
          m.speed,
          ctx.signal,
          (w) => w >= m.width - m.epsilon.inner - 1e-6 && w <= m.width + m.epsilon.outer + 1e-6,
        );
      },
      TYPES.grasp,
    );
    this.server.advertiseAction(
      `${g}/homing`,
      (_goal, ctx) => this.onGripperGoal(maxW, 0.05, ctx.signal, (w) => Math.abs(w - maxW) < 1e-3),
      TYPES.homing,
    );
    this.server.advertiseService(
      `${g}/stop`,
      () => {
        const gg = this.gripper;
        if (gg) {
          this.gripper = undefined;
          this.holdW = this.backend.read().gripperWidthM;
          gg.finish({ status: 6, values: { success: false, error: "stopped" } });
        }
        return { success: true, message: "" };
      },
      TYPES.trigger,
    );
    this.server.advertiseAction(
      n.errorRecoveryAction,
      async () => {
        this.reflex = undefined;
        return { status: 4, values: {} };
      },
      TYPES.errorRecovery,
    );
  }

  private async onTrajectoryGoal(
    goal: FollowJointTrajectoryGoal,
    signal: AbortSignal,
    feedback: (v: unknown) => void,
    accepted?: () => void,
  ): Promise<ActionGoalAnswer> {
    if (this.goalDelayMs > 0) await sleep(this.goalDelayMs);
    const log: ArmGoalLogEntry = { arrivedS: this.backend.now() };
    this.goalLog.push(log);
    if (this.goalLog.length > 256) this.goalLog.shift();
    const names = goal.trajectory?.joint_names ?? [];
    const order = this.jointNames.map((jn) => names.indexOf(jn));
    const refuse = (code: number, reason: string): ActionGoalAnswer => {
      log.outcome = "aborted";
      log.reason = reason;
      return { status: 6, values: { error_code: code, error_string: reason } };
    };
    if (order.some((k) => k < 0) || names.length !== this.jointNames.length) {
      return refuse(FJT_INVALID_JOINTS, `expected joints ${this.jointNames.join(",")}`);
    }
    if (this.reflex) {
      return refuse(FJT_PATH_TOLERANCE_VIOLATED, `robot in reflex mode (${this.reflex}); run error recovery`);
    }
    // joint_trajectory_controller validate_trajectory_msg: a refused goal is REJECTED (the active
    // goal runs on); over rosbridge a rejected goal answers a failed action_result
    const reject = (reason: string): never => {
      log.outcome = "rejected";
      log.reason = reason;
      throw new Error(`goal rejected: ${reason}`);
    };
    const pts = goal.trajectory.points;
    if (pts.length === 0) reject("empty trajectory");
    const pick = (arr: number[] | undefined) =>
      arr && arr.length === names.length ? order.map((k) => arr[k]!) : undefined;
    const points = pts.map((p) => ({
      positions: order.map((k) => p.positions[k]!),
      velocities: pick(p.velocities),
      accelerations: pick(p.accelerations),
      t: timeToS(p.time_from_start),
    }));
    for (let k = 1; k < points.length; k++) {
      if (!(points[k]!.t > points[k - 1]!.t))
        reject(`time_from_start of point ${k} is not after point ${k - 1}`);
    }
    const stamp = goal.trajectory.header?.stamp;
    const stampS = stamp ? timeToS(stamp) : 0;
    const startS = stampS !== 0 ? stampS - this.epochS : undefined;
    if (startS !== undefined && startS + points[points.length - 1]!.t < this.backend.now()) {
      reject("trajectory with a non-zero start time ends in the past");
    }
    const dof = this.jointNames.length;
    accepted?.();
    return new Promise<ActionGoalAnswer>((resolve) => {
      const previous = this.arm;
      if (previous) {
        this.arm = undefined;
        this.endGoal(previous, "preempted", {
          status: 5,
          values: {
            error_code: FJT_INVALID_GOAL,
            error_string: "Current goal cancelled due to new incoming action.",
          },
        });
      }
      const g: ArmGoal = {
        startS,
        points: goalKnots(points, 0, dof),
        before: undefined,
        signal,
        names: [...this.jointNames],
        finish: resolve,
        feedback,
      };
      if (this.pendingReflex) {
        g.reflex = { afterS: this.pendingReflex.afterS, name: this.pendingReflex.name };
        this.pendingReflex = undefined;
      }
      this.logOf.set(g, log);
      this.arm = g;
    });
  }

  private endGoal(g: ArmGoal, outcome: NonNullable<ArmGoalLogEntry["outcome"]>, a: ActionGoalAnswer): void {
    const log = this.logOf.get(g);
    if (log) {
      log.outcome = outcome;
      const reason = (a.values as { error_string?: string } | undefined)?.error_string;
      if (reason) log.reason = reason;
    }
    g.finish(a);
  }

  /** the goal takes effect now (backend time `nowS`, measured state `m`) */
  private takeEffect(g: ArmGoal, nowS: number, m: { q: readonly number[]; dq: readonly number[] }): void {
    const startS = g.startS ?? nowS;
    for (const k of g.points) k.t += startS;
    g.before = { t: nowS, q: [...m.q], v: [...m.dq], a: new Array(m.q.length).fill(0) };
    if (g.reflex) g.reflex.atS = nowS + g.reflex.afterS;
    const log = this.logOf.get(g);
    if (log) {
      log.startS = startS;
      log.effectiveS = nowS;
    }
  }

  private onGripperGoal(
    widthM: number,
    speedMps: number,
    signal: AbortSignal,
    ok: (w: number) => boolean,
  ): Promise<ActionGoalAnswer> {
    const from = this.holdW;
    const n = Math.max(1, Math.ceil(Math.abs(widthM - from) / Math.max(1e-3, speedMps) / this.periodS));
    const w = new Float64Array(n);
    for (let i = 0; i < n; i++) w[i] = from + ((widthM - from) * (i + 1)) / n;
    return new Promise<ActionGoalAnswer>((resolve) => {
      this.gripper?.finish({ status: 5, values: { success: false, error: "preempted" } });
      this.gripper = { w, cursor: 0, signal, finish: resolve, ok };
    });
  }

  // ───────────── pacing loop: the only place that calls the backend ─────────────

  private async pace(): Promise<void> {
    const nPer = Math.max(1, Math.round(this.sliceS / this.periodS));
    const dof = this.jointNames.length;
    const q = new Float64Array(nPer * dof);
    const w = new Float64Array(nPer);
    const traj: JointTrajectory = {
      periodS: this.periodS,
      count: nPer,
      q,
      gripperWidthM: w,
      rowEndIndex: [nPer - 1],
    };
    const wall0 = performance.now();
    const b0 = this.backend.now();
    const robot = this.backend.describe().robot;
    const out = new Float64Array(dof);
    /** the last commanded arm target (the velocity check compares each step with it) */
    const lastCmd = Float64Array.from(this.holdQ);
    while (this.running) {
      this.handleCancels();
      const nowS = this.backend.now();
      let arm = this.arm;
      if (arm && !arm.before) {
        const m = this.backend.read();
        this.takeEffect(arm, nowS, m);
      }
      const grip = this.gripper;
      let violated = false;
      for (let i = 0; i < nPer; i++) {
        if (arm) sampleKnots(arm.before!, arm.points, nowS + (i + 1) * this.periodS, out);
        else for (let j = 0; j < dof; j++) out[j] = this.holdQ[j]!;
        for (let j = 0; j < dof; j++) {
          const prev = i === 0 ? lastCmd[j]! : q[(i - 1) * dof + j]!;
          if (arm && Math.abs(out[j]! - prev) / this.periodS > robot.joints[j]!.maxVelocity * 1.05)
            violated = true;
          q[i * dof + j] = out[j]!;
        }
        w[i] = grip ? grip.w[Math.min(grip.cursor + i, grip.w.length - 1)]! : this.holdW;
      }
      if (arm && violated) {
        // libfranka would stop with a reflex: the arm holds where it is, the goal aborts
        this.reflex = "joint_velocity_violation";
        this.arm = undefined;
        this.holdQ = [...this.backend.read().q];
        this.endGoal(arm, "aborted", {
          status: 6,
          values: { error_code: FJT_PATH_TOLERANCE_VIOLATED, error_string: "joint_velocity_violation" },
        });
        arm = undefined;
        for (let i = 0; i < nPer; i++) for (let j = 0; j < dof; j++) q[i * dof + j] = this.holdQ[j]!;
      }
      for (let j = 0; j < dof; j++) lastCmd[j] = q[(nPer - 1) * dof + j]!;
      const res = await this.backend.execute(traj, {
        onTick: (r) => {
          if (++this.tick % this.everyTicks === 0) this.publishJointState(r.t, r.q, r.dq, r.tau);
          return "ok";
        },
      });
      const r = this.backend.read();
      this.publishGripperState(r.t, r.gripperWidthM);
      if (res.outcome === "fault" || (res.robotErrors?.length ?? 0) > 0) {
        this.reflex = res.robotErrors?.[0] ?? res.fault?.message ?? "backend fault";
      }
      // arm goal progress
      if (arm && this.arm === arm) {
        arm.feedback({
          header: { stamp: sToTime(this.stampOf(r.t)), frame_id: "" },
          joint_names: arm.names,
          desired: { positions: Array.from(q.subarray((nPer - 1) * dof, nPer * dof)) },
          actual: { positions: r.q, velocities: r.dq },
          error: { positions: r.q.map((v, j) => q[(nPer - 1) * dof + j]! - v) },
        });
        const endS = arm.points[arm.points.length - 1]!.t;
        if (this.reflex || (arm.reflex?.atS !== undefined && r.t >= arm.reflex.atS)) {
          const name = this.reflex ?? arm.reflex!.name;
          this.reflex = name;
          this.arm = undefined;
          this.holdQ = [...r.q];
          this.endGoal(arm, "aborted", {
            status: 6,
            values: { error_code: FJT_PATH_TOLERANCE_VIOLATED, error_string: name },
          });
        } else if (r.t >= endS - 1e-9) {
          this.arm = undefined;
          this.holdQ = [...arm.points[arm.points.length - 1]!.q];
          this.endGoal(arm, "succeeded", {
            status: 4,
            values: { error_code: FJT_SUCCESSFUL, error_string: "" },
          });
        }
      }
      if (grip && this.gripper === grip) {
        grip.cursor += nPer;
        if (grip.cursor >= grip.w.length) {
          this.gripper = undefined;
          this.holdW = grip.w[grip.w.length - 1]!;
          const ok = grip.ok(r.gripperWidthM);
          grip.finish({
            status: ok ? 4 : 6,
            values: { success: ok, error: ok ? "" : "width out of tolerance" },
          });
        }
      }
      // cameras
      if (r.t >= this.nextCameraT) {
        this.nextCameraT = r.t + this.cameraPeriodS;
        await this.publishCameras();
      }
      // wall-clock pacing
      const due = wall0 + ((this.backend.now() - b0) / this.speed) * 1000;
      const lag = due - performance.now();
      if (lag < -this.sliceS * 1000) this.overruns++;
      await sleep(lag);
    }
  }

  private handleCancels(): void {
    const arm = this.arm;
    if (arm?.signal.aborted) {
      this.arm = undefined;
      this.holdQ = [...this.backend.read().q];
      this.endGoal(arm, "canceled", {
        status: 5,
        values: { error_code: FJT_SUCCESSFUL, error_string: "canceled" },
      });
    }
    const g = this.gripper;
    if (g?.signal.aborted) {
      this.gripper = undefined;
      this.holdW = this.backend.read().gripperWidthM;
      g.finish({ status: 5, values: { success: false, error: "canceled" } });
    }
  }

  private publishJointState(
    t: number,
    q: readonly number[],
    dq: readonly number[],
    tau?: readonly number[],
  ): void {
    const topic = this.names.jointStatesTopic;
    if (!this.server.hasSubscribers(topic)) return;
    const stampS = this.stampOf(t);
    this.server.publish(topic, {
      header: { stamp: sToTime(stampS), frame_id: "" },
      name: this.jointNames,
      position: q,
      velocity: dq,
      effort: tau ?? [],
    });
    remember(this.publishLog.jointState, stampS);
  }

  private publishGripperState(t: number, widthM: number): void {
    const topic = `${this.names.gripperNode}/joint_states`;
    if (!this.server.hasSubscribers(topic)) return;
    this.server.publish(topic, {
      header: { stamp: sToTime(this.stampOf(t)), frame_id: "" },
      name: [...this.names.gripperFingerJoints],
      position: [widthM / 2, widthM / 2],
      velocity: [0, 0],
      effort: [],
    });
  }

  private async publishCameras(): Promise<void> {
    const wantsDepth = (c: { name: string; depth: boolean }) =>
      c.depth && this.server.hasSubscribers(rigDepthTopics(c.name).image);
    const cams = this.backend
      .describe()
      .cameras.filter(
        (c) =>
          this.server.hasSubscribers(`/${c.name}/image_raw/compressed`) ||
          this.server.hasSubscribers(`/${c.name}/camera_info`) ||
          wantsDepth(c),
      );
    if (cams.length === 0) return;
    const frames = await this.backend.capture(
      cams.map((c) => c.name),
      { depth: cams.some(wantsDepth) },
    );
    for (const f of frames) {
      const cam = cams.find((c) => c.name === f.camera);
      // a frame that fails to encode is dropped, as a camera drops one (no unhandled rejection)
      if (cam) this.publishFrame(f, cam.width, cam.height, cam).catch(() => {});
    }
  }

  private async publishFrame(
    f: Frame,
    width: number,
    height: number,
    cam: { fx: number; fy: number; cx: number; cy: number; distortion: number[] },
  ): Promise<void> {
    const stamp = sToTime(this.stampOf(f.t));
    const header = { stamp, frame_id: `${f.camera}_optical_frame` };
    let jpeg: Uint8Array;
    if (f.rgb.kind === "encoded" && f.rgb.format === "jpeg") jpeg = f.rgb.data;
    else if (f.rgb.kind === "raw") {
      jpeg = await sharp(f.rgb.data, { raw: { width: f.rgb.width, height: f.rgb.height, channels: 3 } })
        .jpeg({ quality: this.jpegQuality })
        .toBuffer();
    } else {
      jpeg = await sharp(f.rgb.data).jpeg({ quality: this.jpegQuality }).toBuffer();
    }
    const info = {
      header,
      height,
      width,
      distortion_model: "plumb_bob",
      d: cam.distortion,
      k: [cam.fx, 0, cam.cx, 0, cam.fy, cam.cy, 0, 0, 1],
      r: [1, 0, 0, 0, 1, 0, 0, 0, 1],
      p: [cam.fx, 0, cam.cx, 0, 0, cam.fy, cam.cy, 0, 0, 0, 1, 0],
      binning_x: 0,
      binning_y: 0,
      roi: { x_offset: 0, y_offset: 0, height: 0, width: 0, do_rectify: false },
    };
    this.server.publish(`/${f.camera}/camera_info`, info);
    const depth = rigDepthTopics(f.camera);
    if (f.depthMm && this.server.hasSubscribers(depth.image)) {
      // aligned to colour: the same stamp, optical frame and camera model (realsense2_camera does
      // the same); uint8[] data in the host's byte order, said by is_bigendian
      const d = f.depthMm.data;
      this.server.publish(depth.info, info);
      this.server.publish(depth.image, {
        header,
        height: f.depthMm.height,
        width: f.depthMm.width,
        encoding: "16UC1",
        is_bigendian: endianness() === "BE" ? 1 : 0,
        step: f.depthMm.width * 2,
        data: bytesToBase64(new Uint8Array(d.buffer, d.byteOffset, d.byteLength)),
      });
    }
    this.server.publish(`/${f.camera}/image_raw/compressed`, {
      header,
      format: "jpeg",
      data: bytesToBase64(jpeg),
    });
    remember(this.publishLog.frames, timeToS(stamp));
  }
}

/** keep the last 4096 entries */
function remember(m: Map<number, number>, stampS: number): void {
  m.set(Math.round(stampS * 1e6), performance.now());
  if (m.size > 4096) m.delete(m.keys().next().value!);
}

export function startFrankaRosbridgeRig(opts: FrankaRigOptions): Promise<FrankaRosbridgeRig> {
  return FrankaRosbridgeRig.start(opts);
}
