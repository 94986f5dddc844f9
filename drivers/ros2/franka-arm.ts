/**
 * Driver: a Franka arm (and its gripper) under franka_ros2, over any RosTransport.
 *
 * Lifecycle (ros2_control style, STYLE.md §2):
 * - `unconfigured`: nothing subscribed; only configure() is allowed.
 * - `inactive`: connected, joint states flowing; read() yes, motion and gripper no.
 * - `active`: everything allowed.
 * - `error`: the connection dropped or the robot reported an error (reflex); read() answers
 *   the last reading, motion no; an operator calls recover() (runs franka error recovery).
 * - `finalized`: shut down.
 *
 * The driver does not own the transport's life: configure() connects it if needed, shutdown()
 * only removes the driver's subscriptions (cameras may share the transport).
 */
import { LifecycleComponent, type LifecycleState } from "../../seam/lifecycle.ts";
import { runSliced, type Steps } from "../../seam/steps.ts";
import {
  type ExecuteOptions,
  type ExecuteResult,
  type JointReading,
  type JointTrajectory,
  type SensorEvent,
  type SensorEventListener,
  TICK_FAULT,
} from "../../seam/types.ts";
import type { RobotModel } from "../../robots/types.ts";
import { DeviceError } from "../errors.ts";
import type { FrankaRosConfig } from "./franka-config.ts";
import { parseFrankaRosConfig } from "./franka-config.ts";
import {
  FJT_ERROR_CODES,
  FJT_INVALID_GOAL,
  FJT_SUCCESSFUL,
  type FollowJointTrajectoryFeedback,
  type FollowJointTrajectoryGoal,
  type FollowJointTrajectoryResult,
  type GripperGraspGoal,
  type GripperMoveGoal,
  type GripperResult,
  type JointStateMsg,
  type TriggerResponse,
  sToTime,
  timeToS,
} from "./messages.ts";
import { StampClock } from "./stamp-clock.ts";
import { buildFollowJointTrajectoryGoal, buildFollowJointTrajectoryGoalSteps } from "./trajectory-goal.ts";
import {
  type ActionOutcome,
  GoalStatus,
  type PreparedActionGoal,
  type RosTransport,
  type Unsubscribe,
} from "./transport.ts";

/** A joint reading as the ROS driver measured it. */
export interface RosJointReading extends JointReading {
  /** header stamp of the joint state message, ROS seconds */
  stampS: number;
  /** gateway time at which the message arrived, s */
  receivedT: number;
}

/** What the trajectory controller answered (FollowJointTrajectory result). */
export interface ControllerResult {
  /** goal status (action_msgs/GoalStatus) */
  status: number;
  /** FollowJointTrajectory error_code (0 = SUCCESSFUL) */
  errorCode: number;
  /** name of the error code, e.g. "PATH_TOLERANCE_VIOLATED" */
  errorCodeName: string;
  /** the controller's error_string (franka_ros2: reflex / libfranka error names) */
  errorString: string;
}

export interface FrankaExecuteResult extends ExecuteResult {
  controller?: ControllerResult;
}

export interface FrankaArmDriverOptions {
  transport: RosTransport;
  robot: RobotModel;
  /** parsed resource config; default franka_ros2's names */
  config?: FrankaRosConfig;
  /** gateway monotonic clock, s */
  now: () => number;
  /** shared stamp → gateway time mapping (share it with cameras stamped by the same machine) */
  stampClock?: StampClock;
  /**
   * CPU time a chunk's goal preparation (build, and its JSON over rosbridge) runs between two
   * turns of the event loop, ms (default GOAL_SLICE_MS; tests: 0, a turn at every pause point)
   */
  goalSliceMs?: number;
}

/** ROS 2 interface names of franka_ros2's arm, gripper and error recovery */
export const FRANKA_ROS_TYPES = {
  jointState: "sensor_msgs/msg/JointState",
  fjt: "control_msgs/action/FollowJointTrajectory",
  move: "franka_msgs/action/Move",
  grasp: "franka_msgs/action/Grasp",
  homing: "franka_msgs/action/Homing",
  trigger: "std_srvs/srv/Trigger",
  errorRecovery: "franka_msgs/action/ErrorRecovery",
  cancelGoal: "action_msgs/srv/CancelGoal",
} as const;
const TYPES = FRANKA_ROS_TYPES;

/**
 * CPU time of one slice of a chunk's goal preparation, ms. Less than the planner's SLICE_MS: the
 * slices run as the motion starts, when the loop turn a slice runs in also serves the rest of
 * that start (the recorder's records of the chunk: ~0.5 ms in the turn after the execute call,
 * bench/act-turns.ts over the rig) and the joint states arriving, so a turn is the slice and then
 * some; the ~2.2 ms of preparation of a 3 s chunk's goal then take ~11 turns.
 */
export const GOAL_SLICE_MS = 0.2;

/** action_msgs/srv/CancelGoal return_code ERROR_REJECTED */
const CANCEL_REJECTED = 1;

interface RunningGoal {
  cancel(reason: "aborted" | "stopped" | "fault"): void;
  settled: Promise<unknown>;
  /** an execute()'s goal still being prepared: nothing has been sent */
  preparing?: boolean;
  /** a goal of the realtime stream (replaced by the next one), not an execute() */
  streamed?: boolean;
  /** streamed: gateway time at which its preemption (the controller took the next goal) arrived */
  preemptedAt?: number;
  /** streamed: a newer streamed goal was sent (its preemption is expected) */
  superseded?: boolean;
}

export class FrankaArmDriver extends LifecycleComponent {
  readonly config: FrankaRosConfig;
  readonly stampClock: StampClock;
  private readonly transport: RosTransport;
  private readonly robot: RobotModel;
  private readonly now: () => number;
  private readonly goalSliceMs: number;
  private readonly jointNames: readonly string[];
  private readonly subs: Unsubscribe[] = [];
  private readonly readingListeners = new Set<(r: RosJointReading) => void>();
  private readonly eventListeners = new Set<SensorEventListener>();
  private latest: RosJointReading | undefined;
  private gripperWidthM = Number.NaN;
  private lastNames: string[] = [];
  private readonly index: number[] = [];
  private goal: RunningGoal | undefined;
  /**
   * A goal was in flight when the connection dropped and no cancel of every trajectory goal has
   * been answered since: it may still run on the robot side. Cleared by an answered cancel.
   */
  private goalLostOnDisconnect = false;
  /** that cancel, sent when the connection came back (recover() waits for it) */
  private lostGoalsCancel: Promise<void> | undefined;
  private lostAtT = Number.NEGATIVE_INFINITY;

  constructor(opts: FrankaArmDriverOptions) {
    super();
    this.transport = opts.transport;
    this.robot = opts.robot;
    this.config = opts.config ?? parseFrankaRosConfig();
    this.now = opts.now;
    this.goalSliceMs = opts.goalSliceMs ?? GOAL_SLICE_MS;
    this.stampClock = opts.stampClock ?? new StampClock(opts.now);
    this.jointNames = this.config.jointNames ?? opts.robot.joints.map((j) => j.name);
    this.index = new Array(this.jointNames.length).fill(-1);
  }

  /** device name used in faults */
  get device(): string {
    return `ros2:${this.transport.endpoint}`;
  }

  // ───────────────────────── lifecycle (may throw) ─────────────────────────

  protected override async onConfigure(): Promise<void> {
    await this.transport.connect();
    const c = this.config;
    this.subs.push(
      this.transport.subscribe<JointStateMsg>(c.jointStatesTopic, TYPES.jointState, (m) =>
        this.onJointState(m),
      ),
      this.transport.subscribe<JointStateMsg>(`${c.gripperNode}/joint_states`, TYPES.jointState, (m) =>
        this.onGripperState(m),
      ),
      this.transport.onConnectionChange((e) => {
        if (e.type === "lost") this.onConnectionLost(e.reason);
        else if (e.type === "connected") this.onReconnected();
      }),
    );
    try {
      await this.waitForReading(c.firstJointStateTimeoutS, Number.NEGATIVE_INFINITY);
      // the gripper may be absent: wait briefly for its width, then go on without it
      const t0 = Date.now();
      while (!Number.isFinite(this.gripperWidthM) && Date.now() - t0 < c.gripperStateWaitS * 1000) {
        await new Promise((r) => setTimeout(r, 5));
      }
    } catch (e) {
      this.dropSubscriptions();
      throw e;
    }
  }

  protected override async onActivate(): Promise<void> {
    if (!this.transport.connected) {
      throw new DeviceError("RB_ERR_ROS_NOT_CONNECTED", {
        url: this.transport.endpoint,
        operation: "activate",
      });
    }
  }

  protected override async onDeactivate(): Promise<void> {
    await this.stop("deactivate");
  }

  protected override async onShutdown(_from: LifecycleState): Promise<void> {
    await this.stop("shutdown");
    this.dropSubscriptions();
  }

  /**
   * Operator only: leave the error state. Needs a live connection and a joint state newer than
   * the fault; when a goal was lost with the connection, the cancel of every trajectory goal
   * sent on the reconnect must have been answered (it is sent again if it failed: a failure
   * refuses the recovery, RB_ERR_ROS_GOAL_NOT_CANCELLED); runs franka error recovery (clears
   * reflexes), then the driver is `inactive`. Waiting for that answer matters: a cancel of all
   * goals (zero id, zero stamp) cancels whatever goal the server holds when it arrives,
   * including a new motion sent after the recovery.
   */
  async recover(): Promise<void> {
    await this.recoverWith(async () => {
      if (!this.transport.connected) {
        throw new DeviceError("RB_ERR_ROS_NOT_CONNECTED", {
          url: this.transport.endpoint,
          operation: "recover",
        });
      }
      await this.settleLostGoals();
      await this.waitForReading(this.config.firstJointStateTimeoutS, this.lostAtT);
      await this.errorRecovery();
    });
  }

  /** Operator only: call franka error recovery (franka_msgs/action/ErrorRecovery). */
  async errorRecovery(): Promise<void> {
    this.guard("errorRecovery");
    const action = this.config.errorRecoveryAction;
    const out = await this.transport.sendActionGoal<object, unknown, object>(action, TYPES.errorRecovery, {})
      .result;
    if (out.status !== GoalStatus.SUCCEEDED) {
      throw new DeviceError("RB_ERR_ROS_ACTION_FAILED", { action, reason: describeOutcome(out) });
    }
  }

  // ───────────────────────── readings ─────────────────────────

  /** latest reading; throws RB_ERR_ROS_NO_JOINT_STATE before the first one */
  read(): RosJointReading {
    this.guard("read");
    if (!this.latest)
      throw new DeviceError("RB_ERR_ROS_NO_JOINT_STATE", { topic: this.config.jointStatesTopic });
    return this.latest;
  }

  /** latest reading or undefined (any state) */
  peek(): RosJointReading | undefined {
    return this.latest;
  }

  /** be called with every joint state (control loop: keep listeners light) */
  onReading(listener: (r: RosJointReading) => void): Unsubscribe {
    this.readingListeners.add(listener);
    return () => this.readingListeners.delete(listener);
  }

  /** fault events (connection lost, robot errors) */
  onEvent(listener: SensorEventListener): Unsubscribe {
    this.eventListeners.add(listener);
    return () => this.eventListeners.delete(listener);
  }

  // ───────────────────────── motion ─────────────────────────

  /**
   * Execute a dense trajectory as one FollowJointTrajectory goal. `onTick` runs once per joint
   * state message with the sample index estimated from elapsed time. Setup problems throw;
   * how the motion ended is returned.
   *
   * The goal is built and made ready to send (its JSON text over rosbridge: ~1.2 ms for a 3 s
   * chunk) in slices with a turn of the event loop between them (seam/steps.ts runSliced, one
   * turn before the first and after the last), and sent in a turn of its own: a contact or an
   * e-stop arriving meanwhile is handled at once. A stop() or an abort between two slices means
   * the goal is never sent: the execute ends "stopped" (stop) or "aborted" (signal) with nothing
   * executed, as an execute aborted before its start does.
   */
  async execute(traj: JointTrajectory, opts: ExecuteOptions = {}): Promise<FrankaExecuteResult> {
    this.guard("execute");
    if (this.goal) throw new DeviceError("RB_ERR_ROS_MOTION_BUSY", { action: this.config.trajectoryAction });
    const start = this.read();
    const dof = this.jointNames.length;
    for (let j = 0; j < dof && traj.count > 0; j++) {
      const d = Math.abs(traj.q[j]! - start.q[j]!);
      if (d > this.config.startToleranceRad) {
        throw new DeviceError("RB_ERR_ROS_START_MISMATCH", {
          joint: this.jointNames[j],
          distanceRad: Number(d.toFixed(4)),
          toleranceRad: this.config.startToleranceRad,
        });
      }
    }
    if (opts.signal?.aborted || traj.count === 0) {
      return {
        outcome: opts.signal?.aborted ? "aborted" : "completed",
        samplesExecuted: 0,
        final: start,
        frames: [],
      };
    }
    // the goal in preparation is the running goal: stop() cancels it (nothing will be sent), a
    // second execute or a stream is refused as busy
    let cancelled: "aborted" | "stopped" | "fault" | undefined;
    let prepared: () => void = () => {};
    const preparing: RunningGoal = {
      preparing: true,
      cancel: (reason) => {
        cancelled ??= reason;
      },
      settled: new Promise<void>((resolve) => {
        prepared = resolve;
      }),
    };
    this.goal = preparing;
    const notSent = new Error("goal not sent");
    let goal: PreparedActionGoal<FollowJointTrajectoryFeedback, FollowJointTrajectoryResult>;
    try {
      ({ value: goal } = await runSliced(this.trajectoryGoalSteps(traj, start), {
        sliceMs: this.goalSliceMs,
        pauseAround: true,
        resume: () => {
          if (!cancelled && opts.signal?.aborted) cancelled = "aborted";
          if (cancelled) throw notSent;
          this.guard("execute");
        },
      }));
    } catch (e) {
      if (e !== notSent || !cancelled) throw e;
      return {
        outcome: cancelled,
        samplesExecuted: 0,
        final: this.latest ?? start,
        frames: [],
        ...(cancelled === "fault" ? { fault: { ...TICK_FAULT } } : {}),
      };
    } finally {
      if (this.goal === preparing) this.goal = undefined;
      prepared();
    }
    return this.runGoal(traj, goal, opts);
  }

  /** a chunk's FollowJointTrajectory goal from the measured start, built and prepared to send, as steps */
  private *trajectoryGoalSteps(
    traj: JointTrajectory,
    start: RosJointReading,
  ): Steps<PreparedActionGoal<FollowJointTrajectoryFeedback, FollowJointTrajectoryResult>> {
    const goalMsg = yield* buildFollowJointTrajectoryGoalSteps(
      traj,
      start,
      this.jointNames,
      this.config.goalPointPeriodS,
      this.config.goalTimeToleranceS,
    );
    return yield* this.transport.prepareActionGoal<
      FollowJointTrajectoryGoal,
      FollowJointTrajectoryFeedback,
      FollowJointTrajectoryResult
    >(this.config.trajectoryAction, TYPES.fjt, goalMsg);
  }

  /**
   * Hold: the controller keeps its last target by itself; this waits `seconds` on the gateway
   * clock, calling `onTick` per reading, and returns early on abort or "stop".
   */
  async hold(seconds: number, opts: ExecuteOptions = {}): Promise<ExecuteResult> {
    this.guard("hold");
    const t0 = this.now();
    const period = this.robot.controlPeriodS;
    return new Promise<ExecuteResult>((resolve) => {
      let done = false;
      const finish = (outcome: ExecuteResult["outcome"], fault?: ExecuteResult["fault"]) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        offReading();
        offEvent();
        opts.signal?.removeEventListener("abort", onAbort);
        const final = this.latest!;
        const samples = Math.min(
          Math.round(seconds / period),
          Math.max(0, Math.round((final.t - t0) / period)),
        );
        resolve({ outcome, samplesExecuted: samples, final, frames: [], ...(fault ? { fault } : {}) });
      };
      const onAbort = () => finish("aborted");
      const offReading = this.onReading((r) => {
        const v = opts.onTick?.(r, Math.max(0, Math.floor((r.t - t0) / period))) ?? "ok";
        if (v === "stop") finish("stopped");
        else if (v === "fault") finish("fault", { ...TICK_FAULT });
      });
      const offEvent = this.onEvent((e) => {
        if (e.type === "fault") finish("fault", { device: e.device, message: e.message });
      });
      opts.signal?.addEventListener("abort", onAbort);
      const timer = setTimeout(() => finish("completed"), seconds * 1000);
      if (opts.signal?.aborted) finish("aborted");
    });
  }

  /**
   * Realtime streaming (joint_trajectory_controller goal replacement): send `traj` as a new
   * FollowJointTrajectory goal whose `header.stamp` is `startStampS` (ROS seconds), so sample i is
   * due at `startStampS + (i + 1)·periodS` on the controller's clock; `before` is the target due
   * at the stamp (derivatives at the join). The controller preempts the goal it runs (that goal
   * ends with INVALID_GOAL: ABORTED "Current goal preempted by new incoming action." in
   * ros2_controllers ≥ 4.41, CANCELED "Current goal cancelled due to new incoming action." as
   * older ones meant it — a replacement, neither a stop nor a fault, once a newer streamed goal
   * was sent) and samples the new trajectory from then on: points
   * already due are passed over as its clock says. A streamed goal that ends otherwise than
   * SUCCEEDED or preempted/cancelled (rejected, aborted by a reflex) is a device fault.
   *
   * @returns resolves with the gateway time by which the controller certainly ran the new goal:
   *   the first answer about it (the preempted goal's result, its own first feedback, or its
   *   result); rejects when it never ran (refused, connection lost)
   */
  streamReplace(
    traj: JointTrajectory,
    startStampS: number,
    before: readonly number[],
  ): Promise<{ switchedByT: number }> {
    this.guard("streamReplace");
    const busy = this.goal;
    if (busy && !busy.streamed) {
      throw new DeviceError("RB_ERR_ROS_MOTION_BUSY", { action: this.config.trajectoryAction });
    }
    const action = this.config.trajectoryAction;
    const goalMsg = buildFollowJointTrajectoryGoal(
      traj,
      { q: before },
      this.jointNames,
      this.config.goalPointPeriodS,
      this.config.goalTimeToleranceS,
    );
    goalMsg.trajectory.header.stamp = sToTime(startStampS);
    let switched: (t: number) => void = () => {};
    let never: (e: Error) => void = () => {};
    let known = false;
    const evidence = new Promise<{ switchedByT: number }>((resolve, reject) => {
      switched = (t) => {
        if (known) return;
        known = true;
        resolve({ switchedByT: t });
      };
      never = (e) => {
        if (known) return;
        known = true;
        reject(e);
      };
    });
    evidence.catch(() => {}); // the caller may not wait for it; a fault is reported as an event
    const prev = busy;
    if (prev) prev.superseded = true;
    const handle = this.transport.sendActionGoal<
      FollowJointTrajectoryGoal,
      FollowJointTrajectoryFeedback,
      FollowJointTrajectoryResult
    >(action, TYPES.fjt, goalMsg, { onFeedback: () => switched(this.now()) });
    // the controller answers the preempted goal when it accepts this one (a goal that ended on its
    // own meanwhile says nothing about this one)
    if (prev)
      void prev.settled.then(() => {
        if (prev.preemptedAt !== undefined) switched(prev.preemptedAt);
      });
    // the gripper has its own action: one Move towards the stream's final opening when it changes
    const gEnd = traj.gripperWidthM[traj.count - 1]!;
    const gNow = this.latest?.gripperWidthM ?? gEnd;
    if (Number.isFinite(this.gripperWidthM) && Math.abs(gEnd - gNow) > 1e-4) {
      const durationS = Math.max(traj.periodS, traj.count * traj.periodS);
      const speed = Math.min(
        this.robot.gripper.maxSpeedMps,
        Math.max(0.005, Math.abs(gEnd - gNow) / durationS),
      );
      this.transport
        .sendActionGoal<GripperMoveGoal, unknown, GripperResult>(
          `${this.config.gripperNode}/move`,
          TYPES.move,
          {
            width: gEnd,
            speed,
          },
        )
        .result.catch(() => undefined);
    }
    const result = withCancelDeadline(handle.result, this.config.cancelTimeoutS);
    let cancelled = false;
    const running: RunningGoal = {
      streamed: true,
      cancel: () => {
        if (cancelled) return;
        cancelled = true;
        result.startDeadline();
        handle.cancel();
      },
      settled: Promise.resolve(),
    };
    running.settled = result.promise.then(
      (out) => {
        const code = out.values?.error_code ?? Number.NaN;
        if (out.status === GoalStatus.SUCCEEDED) switched(this.now());
        else if (out.status === GoalStatus.ABORTED && code === FJT_INVALID_GOAL && running.superseded) {
          // preempted by the next streamed goal, as joint_trajectory_controller ≥ 4.41 ends it
          running.preemptedAt = this.now();
          switched(this.now());
        } else if (out.status === GoalStatus.CANCELED) {
          // preempted by the next streamed goal (INVALID_GOAL) or cancelled by stop(): it ran
          if (code === FJT_INVALID_GOAL) running.preemptedAt = this.now();
          if (code === FJT_INVALID_GOAL || cancelled) switched(this.now());
          else never(new Error(`${action}: cancelled before it ran`));
        } else {
          const name = FJT_ERROR_CODES[code] ?? describeOutcome(out);
          const message = `${action}: streamed goal ${name}${out.values?.error_string ? ` (${out.values.error_string})` : ""}`;
          never(new Error(message));
          this.deviceFault(message, "franka");
        }
      },
      (e: unknown) => never(e instanceof Error ? e : new Error(String(e))),
    );
    this.goal = running;
    void running.settled.then(() => {
      if (this.goal === running) this.goal = undefined;
    });
    return evidence;
  }

  /**
   * Watch the streamed motion: `onTick` per joint state (sample index −1) until the signal
   * aborts ("aborted"), a tick says stop / fault, or a fault event arrives ("fault"). Sends
   * nothing.
   */
  follow(opts: ExecuteOptions = {}): Promise<ExecuteResult> {
    this.guard("follow");
    return new Promise<ExecuteResult>((resolve) => {
      let done = false;
      const finish = (outcome: ExecuteResult["outcome"], fault?: ExecuteResult["fault"]) => {
        if (done) return;
        done = true;
        offReading();
        offEvent();
        opts.signal?.removeEventListener("abort", onAbort);
        resolve({
          outcome,
          samplesExecuted: 0,
          final: this.latest!,
          frames: [],
          ...(fault ? { fault } : {}),
        });
      };
      const onAbort = () => finish("aborted");
      const offReading = this.onReading((r) => {
        const v = opts.onTick?.(r, -1) ?? "ok";
        if (v === "stop") finish("stopped");
        else if (v === "fault") finish("fault", { ...TICK_FAULT });
      });
      const offEvent = this.onEvent((e) => {
        if (e.type === "fault") finish("fault", { device: e.device, message: e.message });
      });
      opts.signal?.addEventListener("abort", onAbort);
      if (opts.signal?.aborted) finish("aborted");
    });
  }

  /** Hold position now: cancel the running goal and wait for its end. Safe to call any number of times. */
  async stop(_reason: string): Promise<void> {
    const g = this.goal;
    if (!g) return;
    g.cancel("stopped");
    await g.settled;
  }

  // ───────────────────────── gripper ─────────────────────────

  /** move the fingers to `widthM` at `speedMps` (franka_msgs/action/Move) */
  async gripperMove(widthM: number, speedMps = this.config.gripperSpeedMps): Promise<void> {
    this.guard("gripperMove");
    const goal: GripperMoveGoal = { width: widthM, speed: speedMps };
    await this.gripperAction("move", TYPES.move, goal);
  }

  /** grasp at `widthM` ± epsilon with `forceN` (franka_msgs/action/Grasp) */
  async gripperGrasp(
    widthM: number,
    forceN = this.config.graspForceN,
    speedMps = this.config.gripperSpeedMps,
    epsilonM = this.config.graspEpsilonM,
  ): Promise<void> {
    this.guard("gripperGrasp");
    const goal: GripperGraspGoal = {
      width: widthM,
      epsilon: { inner: epsilonM, outer: epsilonM },
      speed: speedMps,
      force: forceN,
    };
    await this.gripperAction("grasp", TYPES.grasp, goal);
  }

  /** home the gripper (operator; franka_msgs/action/Homing) */
  async gripperHoming(): Promise<void> {
    this.guard("gripperHoming");
    await this.gripperAction("homing", TYPES.homing, {});
  }

  /** stop the fingers (std_srvs/srv/Trigger on <gripper>/stop); allowed in every live state */
  async gripperStop(): Promise<void> {
    this.guard("gripperStop");
    const service = `${this.config.gripperNode}/stop`;
    const res = await this.transport.callService<object, TriggerResponse>(service, TYPES.trigger, {});
    if (!res.success)
      throw new DeviceError("RB_ERR_ROS_GRIPPER_FAILED", { operation: "stop", reason: res.message });
  }

  // ───────────────────────── internals ─────────────────────────

  private async gripperAction(operation: string, type: string, goal: object): Promise<void> {
    const action = `${this.config.gripperNode}/${operation}`;
    const out = await this.transport.sendActionGoal<object, unknown, GripperResult>(action, type, goal)
      .result;
    if (out.status !== GoalStatus.SUCCEEDED || !out.values?.success) {
      throw new DeviceError("RB_ERR_ROS_GRIPPER_FAILED", {
        operation,
        reason: out.values?.error || describeOutcome(out),
      });
    }
  }

  private runGoal(
    traj: JointTrajectory,
    goal: PreparedActionGoal<FollowJointTrajectoryFeedback, FollowJointTrajectoryResult>,
    opts: ExecuteOptions,
  ): Promise<FrankaExecuteResult> {
    const action = this.config.trajectoryAction;
    const period = traj.periodS;
    const t0 = this.now();
    let cancelReason: "aborted" | "stopped" | "fault" | undefined;
    const handle = goal.send();

    // gripper: one Move goal towards the final width when the trajectory changes it
    const g0 = traj.gripperWidthM[0]!;
    const g1 = traj.gripperWidthM[traj.count - 1]!;
    const durationS = traj.count * period;
    const gripperHandle =
      Math.abs(g1 - g0) > 1e-4
        ? this.transport.sendActionGoal<GripperMoveGoal, unknown, GripperResult>(
            `${this.config.gripperNode}/move`,
            TYPES.move,
            {
              width: g1,
              speed: Math.min(this.robot.gripper.maxSpeedMps, Math.max(0.005, Math.abs(g1 - g0) / durationS)),
            },
          )
        : undefined;
    const gripper = gripperHandle ? gripperHandle.result.catch(() => undefined) : Promise.resolve(undefined);

    const result = withCancelDeadline(handle.result, this.config.cancelTimeoutS);
    const cancel = (reason: "aborted" | "stopped" | "fault") => {
      if (cancelReason) return;
      cancelReason = reason;
      result.startDeadline();
      handle.cancel();
      gripperHandle?.cancel();
    };
    const onAbort = () => cancel("aborted");
    opts.signal?.addEventListener("abort", onAbort);
    const offReading = this.onReading((r) => {
      if (!opts.onTick || cancelReason) return;
      const idx = Math.min(traj.count - 1, Math.max(0, Math.floor((r.t - t0) / period)));
      const v = opts.onTick(r, idx);
      if (v !== "ok") cancel(v === "stop" ? "stopped" : "fault");
    });

    const settle = async (): Promise<FrankaExecuteResult> => {
      let outcome: ActionOutcome<FollowJointTrajectoryResult> | undefined;
      let transportError: Error | undefined;
      try {
        outcome = await result.promise;
      } catch (e) {
        transportError = e instanceof Error ? e : new Error(String(e));
      } finally {
        offReading();
        opts.signal?.removeEventListener("abort", onAbort);
      }
      const final = this.latest!;
      const elapsedSamples = Math.min(traj.count, Math.max(0, Math.floor((final.t - t0) / period) + 1));
      if (outcome?.status !== GoalStatus.SUCCEEDED) gripperHandle?.cancel();
      await gripper;
      if (transportError || !outcome) {
        const message = transportError?.message ?? "no result";
        return {
          outcome: "fault",
          samplesExecuted: elapsedSamples,
          final,
          frames: [],
          fault: { device: this.device, message },
        };
      }
      const values = outcome.values;
      const errorCode =
        values?.error_code ?? (outcome.status === GoalStatus.SUCCEEDED ? FJT_SUCCESSFUL : Number.NaN);
      const controller: ControllerResult = {
        status: outcome.status,
        errorCode,
        errorCodeName: FJT_ERROR_CODES[errorCode] ?? `UNKNOWN(${errorCode})`,
        errorString: values?.error_string ?? outcome.message ?? "",
      };
      if (outcome.status === GoalStatus.SUCCEEDED && errorCode === FJT_SUCCESSFUL) {
        return { outcome: "completed", samplesExecuted: traj.count, final, frames: [], controller };
      }
      if (outcome.status === GoalStatus.CANCELED) {
        return {
          outcome: cancelReason ?? "stopped",
          samplesExecuted: elapsedSamples,
          final,
          frames: [],
          controller,
          ...(cancelReason === "fault" ? { fault: { ...TICK_FAULT } } : {}),
        };
      }
      // aborted / rejected by the controller or the robot (reflex): the arm needs recovery
      const robotError = controller.errorString || controller.errorCodeName;
      const message = `${action}: ${controller.errorCodeName}${controller.errorString ? ` (${controller.errorString})` : ""}`;
      this.deviceFault(message, "franka");
      return {
        outcome: "fault",
        samplesExecuted: elapsedSamples,
        final,
        frames: [],
        fault: { device: "franka", message },
        robotErrors: [robotError],
        controller,
      };
    };

    const settled = settle();
    const running: RunningGoal = { cancel, settled: settled.catch(() => undefined) };
    this.goal = running;
    const clear = () => {
      if (this.goal === running) this.goal = undefined;
    };
    // both branches handled: the caller gets the rejection, this chain must not raise it again
    settled.then(clear, clear);
    return settled;
  }

  /** hot path: one joint state message */
  private onJointState(m: JointStateMsg): void {
    const names = m.name;
    if (!sameNames(names, this.lastNames)) {
      this.lastNames = names.slice();
      for (let j = 0; j < this.jointNames.length; j++) this.index[j] = names.indexOf(this.jointNames[j]!);
      this.updateGripperFrom(m);
    } else if (names.length > this.jointNames.length) {
      this.updateGripperFrom(m);
    }
    const dof = this.jointNames.length;
    const q: number[] = new Array(dof);
    const dq: number[] = new Array(dof);
    const tau: number[] | undefined = m.effort.length === names.length ? new Array(dof) : undefined;
    for (let j = 0; j < dof; j++) {
      const k = this.index[j]!;
      if (k < 0) {
        this.emit({
          type: "fault",
          t: this.now(),
          device: this.device,
          message: new DeviceError("RB_ERR_ROS_JOINT_MISSING", {
            topic: this.config.jointStatesTopic,
            joint: this.jointNames[j],
          }).message,
        });
        return;
      }
      q[j] = m.position[k]!;
      dq[j] = m.velocity[k] ?? 0;
      if (tau) tau[j] = m.effort[k]!;
    }
    const stampS = timeToS(m.header.stamp);
    const r: RosJointReading = {
      t: this.stampClock.observe(stampS),
      q,
      dq,
      gripperWidthM: Number.isFinite(this.gripperWidthM) ? this.gripperWidthM : 0,
      stampS,
      receivedT: this.now(),
    };
    if (tau) r.tau = tau;
    this.latest = r;
    for (const l of this.readingListeners) l(r);
  }

  private onGripperState(m: JointStateMsg): void {
    this.updateGripperFrom(m);
  }

  private updateGripperFrom(m: JointStateMsg): void {
    const [a, b] = this.config.gripperFingerJoints;
    const ia = m.name.indexOf(a);
    const ib = m.name.indexOf(b);
    if (ia >= 0 && ib >= 0) this.gripperWidthM = m.position[ia]! + m.position[ib]!;
  }

  private onConnectionLost(reason: string): void {
    this.lostAtT = this.now();
    // a goal still being prepared was never sent (its execute gives up at its next slice)
    if (this.goal && !this.goal.preparing) this.goalLostOnDisconnect = true;
    if (this.lifecycle === "unconfigured" || this.lifecycle === "finalized") return;
    this.deviceFault(`connection lost: ${reason}`, this.device);
  }

  private onReconnected(): void {
    if (!this.goalLostOnDisconnect || this.lostGoalsCancel) return;
    // a goal may still run on the robot side: cancel every goal of the trajectory action. If
    // that fails the arm may still be moving on a goal nobody watches: a fault, never swallowed
    // (and recover() tries once more before it lets the arm move again).
    const cancel = this.cancelAllTrajectoryGoals();
    this.lostGoalsCancel = cancel;
    cancel.then(
      () => {
        if (this.lostGoalsCancel === cancel) this.lostGoalsCancel = undefined;
      },
      (e: unknown) => {
        if (this.lostGoalsCancel === cancel) this.lostGoalsCancel = undefined;
        this.deviceFault(
          `RB_ERR_ROS_GOAL_NOT_CANCELLED: ${e instanceof Error ? e.message : String(e)}`,
          this.device,
        );
      },
    );
  }

  /** before a recovery: the goals lost with the connection are cancelled, or this throws */
  private async settleLostGoals(): Promise<void> {
    if (this.lostGoalsCancel) await this.lostGoalsCancel.catch(() => {});
    if (this.goalLostOnDisconnect) await this.cancelAllTrajectoryGoals();
  }

  /**
   * Cancel every goal of the trajectory action (zero goal id and zero stamp = all goals,
   * action_msgs/srv/CancelGoal); clears `goalLostOnDisconnect` once answered without a
   * rejection. Rejects with RB_ERR_ROS_GOAL_NOT_CANCELLED.
   */
  private async cancelAllTrajectoryGoals(): Promise<void> {
    const service = `${this.config.trajectoryAction}/_action/cancel_goal`;
    const failed = (reason: string) =>
      new DeviceError("RB_ERR_ROS_GOAL_NOT_CANCELLED", { action: this.config.trajectoryAction, reason });
    let res: { return_code?: number } | undefined;
    try {
      res = await this.transport.callService<unknown, { return_code?: number }>(
        service,
        TYPES.cancelGoal,
        {
          goal_info: { goal_id: { uuid: new Array(16).fill(0) }, stamp: { sec: 0, nanosec: 0 } },
        },
        { timeoutMs: 2000 },
      );
    } catch (e) {
      throw failed(`${service}: ${e instanceof Error ? e.message : String(e)}`);
    }
    // ERROR_NONE 0, ERROR_REJECTED 1, ERROR_UNKNOWN_GOAL_ID 2, ERROR_GOAL_TERMINATED 3:
    // only a rejection leaves a goal running
    if (res?.return_code === CANCEL_REJECTED) throw failed(`${service} rejected the cancel (return_code 1)`);
    this.goalLostOnDisconnect = false;
  }

  private deviceFault(message: string, device: string): void {
    if (this.lifecycle !== "unconfigured") this.enterError({ device, message });
    this.emit({ type: "fault", t: this.now(), device, message });
  }

  private emit(e: SensorEvent): void {
    for (const l of [...this.eventListeners]) l(e);
  }

  private waitForReading(timeoutS: number, afterT: number): Promise<void> {
    if (this.latest && this.latest.receivedT > afterT) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        off();
        reject(new DeviceError("RB_ERR_ROS_NO_JOINT_STATE", { topic: this.config.jointStatesTopic }));
      }, timeoutS * 1000);
      const off = this.onReading((r) => {
        if (r.receivedT <= afterT) return;
        clearTimeout(timer);
        off();
        resolve();
      });
    });
  }

  private dropSubscriptions(): void {
    for (const u of this.subs.splice(0)) u();
  }
}

function sameNames(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function describeOutcome(out: ActionOutcome<unknown>): string {
  const names = ["UNKNOWN", "ACCEPTED", "EXECUTING", "CANCELING", "SUCCEEDED", "CANCELED", "ABORTED"];
  return `status ${names[out.status] ?? out.status}${out.message ? `: ${out.message}` : ""}`;
}

/**
 * The action result, which fails `timeoutS` after startDeadline() (called once a cancel was
 * requested) if it has not arrived by then. One timer per cancel; nothing runs while the goal
 * runs normally.
 */
function withCancelDeadline<T>(
  p: Promise<T>,
  timeoutS: number,
): { promise: Promise<T>; startDeadline(): void } {
  let timer: NodeJS.Timeout | undefined;
  let settled = false;
  let fail: (e: Error) => void = () => {};
  const promise = new Promise<T>((resolve, reject) => {
    fail = reject;
    p.then(resolve, reject).finally(() => {
      settled = true;
      clearTimeout(timer);
    });
  });
  return {
    promise,
    startDeadline() {
      if (settled || timer) return;
      timer = setTimeout(() => fail(new Error(`no result ${timeoutS} s after cancel`)), timeoutS * 1000);
    },
  };
}
