/**
 * The Backend seam: the one interface between the gateway (above) and the simulator or
 * the physical bench (below). `sim/` and `drivers/` import only this folder of `gateway/`.
 *
 * Time: every timestamp a backend produces is in **backend seconds** on the backend's own
 * monotonic clock (sim time for the simulator, a monotonic wall clock for a real bench).
 * The gateway maps backend seconds to episode seconds.
 */
import type { Pose } from "../robots/math.ts";
import type { RobotModel } from "../robots/types.ts";
import type { LifecycleState } from "./lifecycle.ts";

/** One measured joint state. Arrays hold the 7 arm joints in model order. */
export interface JointReading {
  /** backend seconds at which the state was measured */
  t: number;
  /** joint positions, rad */
  q: number[];
  /** joint velocities, rad/s */
  dq: number[];
  /** measured joint torques, N·m (absent when the backend has none) */
  tau?: number[];
  /** gripper opening between the fingers, m */
  gripperWidthM: number;
}

/**
 * A time-parameterised joint trajectory, sampled densely at the control period.
 * The gateway builds it (interpolation lives above the seam, once) and the safety
 * pre-check has already accepted exactly these samples. Sample 0 is one period after
 * the measured start state.
 */
export interface JointTrajectory {
  /** seconds between samples (the robot's control period) */
  periodS: number;
  /** number of samples */
  count: number;
  /** arm joint targets, rad: count × 7, row-major */
  q: Float64Array;
  /** gripper opening targets, m: count entries */
  gripperWidthM: Float64Array;
  /** for each chunk row, the sample index at which that row's target is reached */
  rowEndIndex: readonly number[];
}

/**
 * What the hot loop tells the backend after each tick (STYLE.md §3: the hot loop returns
 * results, a supervisor decides): `ok` go on; `stop` stop and hold at once (outcome
 * "stopped"); `fault` the supervisor found a fault: stop and hold at once, outcome "fault"
 * with `TICK_FAULT` as its fault.
 */
export type TickVerdict = "ok" | "stop" | "fault";

/** The fault of an execute/hold that a tick ended with verdict "fault". */
export const TICK_FAULT: Readonly<{ device: string; message: string }> = Object.freeze({
  device: "supervisor",
  message: "the control-loop supervisor reported a fault",
});

/** Options for execute / hold. */
export interface ExecuteOptions {
  /** aborts the motion at once; the backend then holds position */
  signal?: AbortSignal;
  /**
   * Called once per control tick (or per measured reading on a real bench) with the
   * latest reading. Runs in the control loop: keep it allocation-light. Returning "stop" or
   * "fault" makes the backend stop and hold at once (see TickVerdict).
   */
  onTick?: (reading: JointReading, sampleIndex: number) => TickVerdict;
  /** capture frames while moving, every `everyTicks` ticks (first capture at start) */
  capture?: { everyTicks: number; cameras: readonly string[]; depth: boolean };
}

/** Why an execute or hold returned. */
export type ExecuteOutcome = "completed" | "aborted" | "stopped" | "fault";

export interface ExecuteResult {
  outcome: ExecuteOutcome;
  /** samples that were commanded before the motion ended */
  samplesExecuted: number;
  /** the last reading */
  final: JointReading;
  /** frames captured during the motion (when `capture` was given) */
  frames: Frame[];
  /** for outcome "fault": what failed (device and message) */
  fault?: { device: string; message: string };
  /** robot errors (e.g. Franka reflexes) reported during the motion, by name */
  robotErrors?: string[];
}

/** A raw or already-encoded camera image. */
export type ImageData =
  | { kind: "raw"; width: number; height: number; channels: 3; data: Uint8Array }
  | { kind: "encoded"; format: "jpeg" | "png"; width: number; height: number; data: Uint8Array };

export interface Frame {
  camera: string;
  /** backend seconds of the exposure */
  t: number;
  rgb: ImageData;
  /** depth in millimetres, row-major width × height, 0 = no return */
  depthMm?: { width: number; height: number; data: Uint16Array };
}

/** Pinhole camera, OpenCV convention (x right, y down, z forward). */
export interface CameraDescription {
  name: string;
  width: number;
  height: number;
  fx: number;
  fy: number;
  cx: number;
  cy: number;
  /** OpenCV distortion coefficients k1 k2 p1 p2 k3 (all zero when undistorted) */
  distortion: number[];
  /** frame the pose is given in: "world" (fixed camera) or "tool" (wrist camera) */
  frame: "world" | "tool";
  /** camera-to-frame pose (camera optical frame in `frame`) */
  pose: Pose;
  depth: boolean;
}

/** Static description of what a backend offers. */
export interface BackendDescription {
  robot: RobotModel;
  cameras: CameraDescription[];
  /** control period, s */
  controlPeriodS: number;
  /** robot base pose in the world frame */
  basePose: Pose;
  /** flange→tool (TCP) pose used for tool frames */
  toolOffset: Pose;
}

/** Sensor events, timestamped in backend seconds. */
export type SensorEvent =
  | {
      type: "contact";
      t: number;
      /** true = circuit closed (loop touches the wire) */
      closed: boolean;
      /** which device saw it, e.g. "sim", "buzzbox", "firmata" */
      source: string;
    }
  | { type: "collision"; t: number; link: string; other: string; source: string }
  | { type: "fault"; t: number; device: string; message: string }
  | { type: "instrument"; t: number; name: string; values: Record<string, number>; source: string };

export type SensorEventListener = (e: SensorEvent) => void;

export {
  LIFECYCLE_TABLE,
  LifecycleComponent,
  LifecycleError,
  type LifecycleMethod,
  type LifecycleState,
} from "./lifecycle.ts";

export interface Backend {
  /** backend kind, for logs and records */
  readonly kind: "mirror" | "sim" | "real";
  readonly lifecycle: LifecycleState;
  configure(): Promise<void>;
  activate(): Promise<void>;
  deactivate(): Promise<void>;
  shutdown(): Promise<void>;

  describe(): BackendDescription;
  /** current backend time, s */
  now(): number;
  /** latest joint reading */
  read(): JointReading;
  /**
   * run a validated trajectory; resolves when it completes, is aborted or faults. The trajectory
   * is the caller's and valid until the promise settles (the realtime driver reuses its buffers):
   * a backend that keeps it longer keeps a copy.
   */
  execute(traj: JointTrajectory, opts?: ExecuteOptions): Promise<ExecuteResult>;
  /** keep the last target for `seconds` while time passes */
  hold(seconds: number, opts?: ExecuteOptions): Promise<ExecuteResult>;
  /** frames from the named cameras (all when empty) */
  capture(cameras: readonly string[], opts: { depth: boolean }): Promise<Frame[]>;
  /** subscribe to sensor events; returns an unsubscribe function */
  onEvent(listener: SensorEventListener): () => void;
  /** hold position now; safe to call any number of times */
  stop(reason: string): Promise<void>;
  /** move back to a start state (episode reset); sim teleports, a real bench drives there */
  reset?(opts: { seed: number }): Promise<void>;
  /**
   * real benches: clear a device error (e.g. Franka error recovery, reconnect) and return to
   * `active`. Operator only.
   */
  recover?(): Promise<void>;
  /**
   * How this backend runs the realtime setting's step queue (see RealtimeDrive); absent: the
   * backend cannot (the gateway refuses the setting with RB_ERR_SETTING_UNAVAILABLE). Pure:
   * answers from the configuration, in any lifecycle state.
   */
  realtimeDrive?(): RealtimeDrive;
}

/**
 * How a backend runs the realtime queue (the gateway's one RealtimeDriver keeps the queue, the
 * splice rules, the pre-check from the commanded state, the watchdog and the counts either way):
 * - `stepped`: the backend runs steps on demand (the sim): at each wake-up the gateway hands the
 *   due steps to `execute()`; the bench advances only as fast as it is asked to.
 * - `streamed`: the robot keeps its own time (a real arm): the gateway streams the queue ahead to
 *   the robot's controller through `StreamingMotion` and watches the readings; S is 1.
 * - `unavailable`: this backend cannot run the realtime setting; `reason` says why.
 */
export type RealtimeDrive =
  | {
      kind: "stepped";
      /**
       * Run a wake-up's due steps (one or a few) at once, synchronously, as execute() would
       * (without frames); optional: the driver then awaits execute(). A wake-up per control
       * period, 1 kHz: this spares it execute's promise chain.
       */
      runNow?: (traj: JointTrajectory, opts: ExecuteOptions) => ExecuteResult;
    }
  | { kind: "streamed"; motion: StreamingMotion }
  | { kind: "unavailable"; reason: string };

/** When the controller had certainly switched to a streamed trajectory. */
export interface StreamSwitch {
  /**
   * backend seconds by which the controller ran the new trajectory: the first answer the robot
   * sent about it (an upper bound of the switch; the true switch is between the send and this)
   */
  switchedByS: number;
}

/**
 * Capability of a backend whose realtime drive is `streamed`: trajectory replacement with a start
 * time in the future (franka_ros2: a FollowJointTrajectory goal whose header stamp is in the
 * future preempts the running goal; the controller samples the new trajectory at its own clock).
 * Lifecycle: both calls need `active`; replace() also the allow-motion switch.
 */
export interface StreamingMotion {
  /** how long before a sample is due the robot must have its trajectory, s (sets the splice margin) */
  readonly leadS: number;
  /**
   * Replace everything the robot does from now on with `traj`: sample i is due at backend time
   * `startS + (i + 1)·traj.periodS`; `before` is the target due at `startS` (the sample before
   * sample 0, for the derivatives at the join). Samples already due when the robot gets it are
   * run as the controller samples them (the robot keeps time). Sends at once; resolves when the
   * robot has certainly switched (rejects when it never will: refused, connection lost).
   */
  replace(traj: JointTrajectory, startS: number, before: readonly number[]): Promise<StreamSwitch>;
  /**
   * Watch the streamed motion until `signal` aborts ("aborted"), `onTick` says stop / fault, or
   * the robot faults ("fault"): `onTick` runs per measured reading (sample index −1).
   */
  follow(opts: ExecuteOptions): Promise<ExecuteResult>;
}

/**
 * Capability of a simulated backend, beside Backend (a real bench never has it): the powers an
 * operator or a grader may use on a simulation and nothing else can offer. Check with
 * `hasSimPowers`. Lifecycle: snapshot/restore in inactive and active, privilegedState also in
 * error (seam/lifecycle.ts).
 */
export interface SimPowers {
  /** opaque snapshot of the full state */
  snapshot(): Uint8Array;
  /** return to a snapshot of this backend's kind of scene; throws on another's */
  restore(snap: Uint8Array): void;
  /** ground-truth state for operators and graders (never the agent) */
  privilegedState(): Record<string, unknown>;
}

/** True when `b` offers the simulator's powers (all three of them). */
export function hasSimPowers<B extends Backend>(b: B): b is B & SimPowers {
  const p = b as Partial<SimPowers>;
  return (
    typeof p.snapshot === "function" &&
    typeof p.restore === "function" &&
    typeof p.privilegedState === "function"
  );
}

/**
 * Check the arguments every backend receives alike (setup-time checks; they throw):
 * hold seconds finite and ≥ 0, capture every whole number ≥ 1 ticks.
 */
export function assertMotionArgs(method: string, opts: ExecuteOptions, holdSeconds?: number): void {
  if (holdSeconds !== undefined && !(Number.isFinite(holdSeconds) && holdSeconds >= 0)) {
    throw new RangeError(`${method}(): hold seconds must be finite and ≥ 0, got ${holdSeconds}`);
  }
  const every = opts.capture?.everyTicks;
  if (every !== undefined && !(Number.isInteger(every) && every >= 1)) {
    throw new RangeError(`${method}(): capture.everyTicks must be a whole number ≥ 1, got ${every}`);
  }
}
