/**
 * The gateway's composition root: one bench (backend + robot + safety limits + task registry),
 * the current episode, the e-stop latch and the frame store. The HTTP layer (app.ts) is a thin
 * shell over this class, so everything here is testable without a server.
 */
import { randomUUID } from "node:crypto";
import { forwardKinematics } from "../robots/franka/kinematics.ts";
import type { Backend, JointReading, JointTrajectory, RealtimeDrive, TickVerdict } from "../seam/types.ts";
import { getTask } from "../tasks/registry.ts";
import type { TaskContext, TaskDefinition } from "../tasks/types.ts";
import type { EndReason, StartEpisodeRequest } from "./api/schemas.ts";
import { GatewayError } from "./errors.ts";
import type { Bench } from "./bench.ts";
import { type ActionCatalog, actionCatalog } from "./episode/actions.ts";
import { Episode } from "./episode/episode.ts";
import type { StopCause } from "./episode/stop.ts";
import type { AgentEvent, RealtimeSetup } from "./episode/view.ts";
import { EStopLatch } from "./safety/estop.ts";
import { SafetyMonitor } from "./safety/monitor.ts";
import { homeForEpisode } from "./strategy/episode-start.ts";
import { HomeError } from "./strategy/home.ts";
import type { EpisodeObserver } from "./episode/observer.ts";
import { FrameStore, type FrameStoreOptions } from "./frames/frame-store.ts";
import { ConsoleHub } from "./console/hub.ts";
import { collectBeforeEpisode } from "./episode/old-gc.ts";

export type { Bench } from "./bench.ts";

/** What a gateway is built with besides its bench. */
export interface GatewayOptions {
  /** observers attached to every episode (recorder, dashboards), made per episode */
  observers?: (episode: { task: string; seed: number }) => EpisodeObserver[];
  /** task definitions offered beside the registry's (they win over a registered id) */
  tasks?: readonly TaskDefinition[];
  /** realtime pacing fixed instead of measured (tests, benches); unset fields take the defaults */
  realtime?: Partial<RealtimeSetup>;
  /** the frame store's budget, retention and headroom (default FRAME_STORE_DEFAULTS) */
  frameStore?: Partial<FrameStoreOptions>;
  /** CPU time an act's planning runs between two turns of the event loop, ms (default SLICE_MS, seam/steps.ts; tests: 0) */
  planSliceMs?: number;
  /**
   * the old-generation collection run before each episode, while nothing moves (default
   * episode/old-gc.ts collectBeforeEpisode: V8's full GC when the process has `gc`)
   */
  collectBeforeEpisode?: () => void;
}

/** sim seconds held at a realtime episode's start to measure the sim's speed */
const REALTIME_PROBE_S = 0.05;
/**
 * sim seconds held before that (and when S is fixed) to warm up the sim and the per-step checks:
 * the first step of a fresh process (WebAssembly compiled on first use, JIT, a new world's first
 * physics step) takes 0.1–3 s once, the next ones with the safety monitor and the judge ~1 ms
 * until compiled; inside the schedule that would be late steps, inside the probe a slower sim
 */
const REALTIME_WARMUP_S = 0.2;
/**
 * then this many one-step trajectories (the arm held where it is), as the schedule's wake-ups
 * hand them over: an execute call's own path (trajectory setup, result, the tick hook) is
 * compiled only after hundreds of calls. `bench/realtime.ts --diag`, CPU per step of the
 * schedule's wake-ups 11–100, three runs each at load 2.3–2.9: without 1649 / 1457 / 700 µs,
 * with 591 / 338 / 674 µs (the rest ~0.1 ms either way); it costs ~0.3–1 s at the episode's start
 */
const REALTIME_WARMUP_CALLS = 800;

/**
 * Episodes the operator API keeps in memory (`GET /v1/admin/episodes`, `…/:id`, its record and
 * grade), the running one included; older ones are dropped, oldest first (their records and
 * result.json stay in the records directory). An ended episode holds its recorder, plan and
 * safety state (~45–65 KB on the sim bench): without a bound a gateway left running grew by that
 * per episode, and every old-generation collection marked it all.
 */
export const EPISODES_KEPT = 100;

export interface EstopState {
  engaged: boolean;
  reason?: string;
  /** wall-clock ISO time of the engage in force */
  since?: string;
  /** backend seconds at the engage (stop latency is measured against it) */
  backendT?: number;
}

export class Gateway {
  readonly frames: FrameStore;
  readonly actions: ActionCatalog;
  private current: Episode | undefined;
  private readonly history: Episode[] = [];
  readonly estopLatch = new EStopLatch();
  /** the operator console's live view (costs nothing in the control loop while nobody watches) */
  readonly console = new ConsoleHub();
  private estopBackendT: number | undefined;

  private readonly extraTasks: ReadonlyMap<string, TaskDefinition>;

  constructor(
    readonly bench: Bench,
    private readonly opts: GatewayOptions = {},
  ) {
    this.frames = new FrameStore(opts.frameStore);
    this.actions = actionCatalog(bench.ik);
    this.console.attach(bench.backend, () => this.current);
    this.extraTasks = new Map((opts.tasks ?? []).map((t) => [t.id, t]));
  }

  get episode(): Episode | undefined {
    return this.current;
  }

  private readonly agentListeners = new Set<(e: AgentEvent, episodeId: string) => void>();

  /**
   * Listen to the agent-visible events of every episode as they happen (the events and safety
   * events its next response carries); returns unsubscribe. A listener that throws is dropped
   * from that call, never from the episode.
   */
  onAgentEvent(listener: (e: AgentEvent, episodeId: string) => void): () => void {
    this.agentListeners.add(listener);
    return () => {
      this.agentListeners.delete(listener);
    };
  }

  private agentQueue: [AgentEvent, string][] = [];

  /**
   * Queued, told after the handler that saw the event has returned: the stop it may cause is
   * issued first and never waits for a socket; listeners get the events in the order they came.
   */
  private pushAgentEvent(e: AgentEvent, episodeId: string): void {
    if (this.agentListeners.size === 0) return;
    this.agentQueue.push([e, episodeId]);
    if (this.agentQueue.length > 1) return;
    queueMicrotask(() => {
      const q = this.agentQueue;
      this.agentQueue = [];
      for (const [ev, id] of q) {
        for (const l of this.agentListeners) {
          try {
            l(ev, id);
          } catch {
            // a listener's failure (a closed socket) is the listener's, not the episode's
          }
        }
      }
    });
  }

  /** the last EPISODES_KEPT episodes, oldest first */
  episodes(): readonly Episode[] {
    return this.history;
  }

  findEpisode(id: string): Episode | undefined {
    return this.history.find((e) => e.id === id);
  }

  /** The running or last episode, for agent calls. */
  requireEpisode(): Episode {
    if (!this.current) throw new GatewayError("RB_ERR_NO_EPISODE");
    return this.current;
  }

  task(id: string): TaskDefinition {
    const t = this.extraTasks.get(id) ?? getTask(id);
    if (!t) throw new GatewayError("RB_ERR_UNKNOWN_TASK", { task: id });
    return t;
  }

  /** Start an episode. A running episode is ended as "aborted" first. */
  async startEpisode(req: Partial<StartEpisodeRequest> = {}): Promise<Episode> {
    // a latched e-stop refuses every episode start, whoever asks (API, run, tests)
    const es = this.estopLatch.current;
    if (es) throw new GatewayError("RB_ERR_ESTOP", { reason: es.reason ?? "operator" });
    await this.bench.preflight?.();
    const d = this.bench.defaults;
    const task = this.task(req.task ?? d.task);
    const level = req.level ?? d.level ?? task.defaultLevel;
    if (!Object.hasOwn(task.levels, level)) throw new GatewayError("RB_ERR_LEVEL", { task: task.id, level });
    const setting = req.setting ?? "standard";
    if (!task.settings.includes(setting)) {
      throw new GatewayError("RB_ERR_SETTING_UNAVAILABLE", {
        setting,
        reason: `task ${task.id} does not offer it`,
      });
    }
    const drive = setting === "realtime" ? this.realtimeDriveOf(this.bench.backend) : undefined;
    const privileged = req.privileged ?? false;
    if (privileged && !this.bench.simulated) {
      throw new GatewayError("RB_ERR_PRIVILEGED_UNAVAILABLE", { reason: "the bench is not simulated" });
    }
    const seed = req.seed ?? d.seed;
    if (this.current && !this.current.isEnded) {
      await this.current.stopAndEnd({ source: "operator", detail: "operator started a new episode" });
    }
    // the previous episode is over and nothing moves: the old generation is collected now rather
    // than wherever V8 would (inside a motion, a stop would wait for it); the reset or homing that
    // follows allocates the pages it freed again (see episode/old-gc.ts)
    (this.opts.collectBeforeEpisode ?? collectBeforeEpisode)();
    const backend = this.bench.backend;
    if (backend.reset) await backend.reset({ seed });
    else {
      // a real bench cannot teleport: drive it to the episode's start pose under the safety supervisor
      try {
        await homeForEpisode(this.bench, seed, this.estopLatch);
      } catch (e) {
        // whatever failed, the operator gets a coded answer and may recover and try again
        if (e instanceof HomeError)
          throw new GatewayError("RB_ERR_HOMING", { reason: e.message, kind: e.kind });
        throw new GatewayError("RB_ERR_HOMING", {
          reason: e instanceof Error ? e.message : String(e),
          kind: "backend",
        });
      }
    }
    const ctx: TaskContext = {
      robot: backend.describe().robot,
      toolFromFlange: this.bench.toolFromFlange,
      bench: this.bench.taskBench(seed),
    };
    const instance = task.sampleInstance(seed, ctx);
    const limits = this.bench.limitsFor(seed);
    const realtime = drive
      ? await this.realtimeSetup(backend, drive, () => {
          // throwaway instances of the per-step checks: their code warms up, not their state
          const monitor = new SafetyMonitor(ctx.robot, limits, this.bench.toolFromFlange);
          const judge = task.createJudge(instance, ctx);
          const t0 = backend.now();
          let armed = false;
          return (r) => {
            if (!armed) monitor.begin(r, null);
            armed = monitor.tick(r, -1) === "ok";
            judge.onReading({ t: r.t - t0, q: r.q, gripperWidthM: r.gripperWidthM });
            judge.status();
            return "ok";
          };
        })
      : undefined;
    const judge = task.createJudge(instance, ctx);
    this.frames.clear();
    const id = randomUUID();
    const ep = new Episode({
      id,
      task,
      level,
      setting,
      seed,
      instance,
      judge,
      // a call may not advance more than the safety profile lets one chunk last
      budgets: {
        ...task.budgets,
        maxCallS: Math.min(task.budgets.maxCallS, limits.maxChunkDurationS),
      },
      backend,
      limits,
      monitor: new SafetyMonitor(backend.describe().robot, limits, this.bench.toolFromFlange),
      actions: this.actions,
      frames: this.frames,
      toolFromFlange: this.bench.toolFromFlange,
      maxDtS: this.bench.maxDtS,
      privileged,
      observers: [...(this.opts.observers?.({ task: task.id, seed }) ?? []), this.console.observer],
      taskContext: ctx,
      ...(this.bench.provenance ? { provenance: this.bench.provenance } : {}),
      estop: this.estopLatch,
      motionAllowed: this.bench.motionAllowed,
      ...(realtime ? { realtime } : {}),
      ...(this.opts.planSliceMs !== undefined ? { planSliceMs: this.opts.planSliceMs } : {}),
      onAgentEvent: (e) => this.pushAgentEvent(e, id),
    });
    this.current = ep;
    this.history.push(ep);
    // the running episode is the newest: only ended ones are dropped
    if (this.history.length > EPISODES_KEPT) this.history.splice(0, this.history.length - EPISODES_KEPT);
    return ep;
  }

  /**
   * The realtime pacing, measured once per episode start: the sim warms up (REALTIME_WARMUP_S),
   * then holds for REALTIME_PROBE_S and its speed (sim s per wall s) picks S = 1 when it runs at
   * least 3× faster than real time, else the smallest S that leaves it that headroom.
   * `opts.realtime` may fix S (tests, benches); the warm-up runs then too.
   *
   * The stepped drive's margin is 0: the sim commits the due steps synchronously at each wake-up
   * and a splice is planned, pre-checked and queued in one synchronous turn, so the first step not
   * yet committed and not yet due can still take a new target (its slot ends after the splice).
   */
  private async realtimeSetup(
    backend: Backend,
    drive: Exclude<RealtimeDrive, { kind: "unavailable" }>,
    /** the warm-up's tick hook (the episode's per-step checks, on instances of their own) */
    warmTick: () => (r: JointReading) => TickVerdict,
  ): Promise<RealtimeSetup> {
    const fixed = this.opts.realtime;
    if (drive.kind === "streamed") {
      // a real arm keeps its own time: S = 1; the margin covers the time a trajectory needs to
      // reach the controller
      const periodS = backend.describe().controlPeriodS;
      return {
        drive: "streamed",
        slowdown: 1,
        marginSteps: Math.max(fixed?.marginSteps ?? 2, Math.ceil(drive.motion.leadS / periodS - 1e-9)),
        lateToleranceS: fixed?.lateToleranceS ?? 0.02,
        horizonSteps: fixed?.horizonSteps ?? 30_000,
        commandGapS: fixed?.commandGapS ?? 2,
        ...(fixed?.clock ? { clock: fixed.clock } : {}),
      };
    }
    let slowdown = fixed?.slowdown;
    let measuredSpeed: number | undefined;
    const tick = warmTick();
    await backend.hold(REALTIME_WARMUP_S, { onTick: tick });
    // one-step trajectories holding where the arm is, as the schedule's wake-ups hand them over
    const r0 = backend.read();
    const one: JointTrajectory = {
      periodS: backend.describe().controlPeriodS,
      count: 1,
      q: Float64Array.from(r0.q),
      gripperWidthM: Float64Array.of(r0.gripperWidthM),
      rowEndIndex: [0],
    };
    for (let i = 0; i < REALTIME_WARMUP_CALLS; i++) await backend.execute(one, { onTick: tick });
    if (slowdown === undefined) {
      const w0 = performance.now();
      await backend.hold(REALTIME_PROBE_S);
      const wallS = Math.max(1e-6, (performance.now() - w0) / 1000);
      measuredSpeed = REALTIME_PROBE_S / wallS;
      slowdown = measuredSpeed >= 3 ? 1 : Math.ceil(3 / measuredSpeed);
    }
    return {
      drive: "stepped",
      slowdown,
      marginSteps: fixed?.marginSteps ?? 0,
      lateToleranceS: fixed?.lateToleranceS ?? 0.02,
      horizonSteps: fixed?.horizonSteps ?? 30_000,
      commandGapS: fixed?.commandGapS ?? 2,
      ...(measuredSpeed !== undefined ? { measuredSpeed } : {}),
      ...(fixed?.clock ? { clock: fixed.clock } : {}),
    };
  }

  /**
   * How the bench's backend runs the realtime queue; refuses with RB_ERR_SETTING_UNAVAILABLE
   * (saying why) when it cannot, and a fixed S ≠ 1 on a streamed drive (a real arm keeps its time).
   */
  private realtimeDriveOf(backend: Backend): Exclude<RealtimeDrive, { kind: "unavailable" }> {
    const drive: RealtimeDrive = backend.realtimeDrive?.() ?? {
      kind: "unavailable",
      reason: `the ${backend.kind} backend has no realtime drive`,
    };
    if (drive.kind === "unavailable") {
      throw new GatewayError("RB_ERR_SETTING_UNAVAILABLE", { setting: "realtime", reason: drive.reason });
    }
    const s = this.opts.realtime?.slowdown;
    if (drive.kind === "streamed" && s !== undefined && s !== 1) {
      throw new GatewayError("RB_ERR_SETTING_UNAVAILABLE", {
        setting: "realtime",
        reason: `a real arm runs at S = 1 (its controller keeps its own time), S = ${s} was asked for`,
      });
    }
    return drive;
  }

  get estop(): EstopState {
    const cur = this.estopLatch.current;
    if (!cur) return { engaged: false };
    return {
      engaged: true,
      reason: cur.reason ?? "operator",
      since: new Date(cur.atMs).toISOString(),
      ...(this.estopBackendT !== undefined ? { backendT: this.estopBackendT } : {}),
    };
  }

  /** Latch the e-stop and stop all motion. Safe to call any number of times. */
  async engageEstop(reason: string, by = "operator"): Promise<EstopState> {
    if (this.estopLatch.engage(reason, by)) this.estopBackendT = this.bench.backend.now();
    await this.stopAndEnd({ source: "estop", detail: `e-stop: ${reason}` });
    return this.estop;
  }

  /**
   * The one stop path at gateway level: stop the running episode's motion (or, with none, the
   * backend) at once. Synchronous in its effect; the episode ends afterwards as the cause implies.
   */
  requestStop(cause: StopCause): void {
    const ep = this.current;
    if (ep) ep.requestStop(cause);
    else this.bench.backend.stop(cause.detail).catch(() => {});
  }

  /**
   * Stop motion, then end the running episode (`reason` overrides the end reason the cause
   * implies). Resolves when the backend's stop has returned and the record is flushed.
   */
  async stopAndEnd(
    cause: StopCause,
    reason?: EndReason,
    ep: Episode | undefined = this.current,
  ): Promise<void> {
    if (ep) await ep.stopAndEnd(cause, reason);
    else await this.bench.backend.stop(cause.detail);
  }

  /** Release a latched e-stop (operator). */
  releaseEstop(by = "operator"): EstopState {
    this.estopLatch.release(by);
    return this.estop;
  }

  /** FK for the API: tool and flange poses; never advances time. */
  fk(q: readonly number[]) {
    const robot = this.bench.backend.describe().robot;
    if (q.length !== robot.dof) {
      throw new GatewayError("RB_ERR_Q_WIDTH", { field: "q", width: q.length, dof: robot.dof });
    }
    const bad = q.findIndex((v) => !Number.isFinite(v));
    if (bad >= 0) throw new GatewayError("RB_ERR_NOT_FINITE", { row: 0, column: bad, value: String(q[bad]) });
    return forwardKinematics(robot, q, this.bench.toolFromFlange);
  }

  /**
   * Stop motion, end the running episode (`aborted` unless told otherwise, with the cause as its
   * detail), finish its record, then shut the backend down.
   */
  async shutdown(
    cause: StopCause = { source: "operator", detail: "gateway shut down" },
    reason?: EndReason,
  ): Promise<void> {
    await this.stopAndEnd(cause, reason);
    this.console.close();
    await this.bench.backend.shutdown();
  }
}
