/**
 * One episode: ties its parts together and ends it with exactly one reason. The parts, one job
 * each: the clock and budgets (clock.ts), the chunk planner (planner.ts: rules → IK → clip →
 * interpolate → pre-check), the motion runner (motion.ts), the stop arbiter (stop.ts: the one
 * stop path) and the API edge (dto.ts). Every rule here is backend-independent: the backend only
 * executes already-accepted trajectories.
 */
import { randomUUID } from "node:crypto";
import { CodedError } from "../../seam/errors.ts";
import { runSliced } from "../../seam/steps.ts";
import type {
  ExecuteResult,
  Frame,
  JointReading,
  SensorEvent,
  StreamingMotion,
  TickVerdict,
} from "../../seam/types.ts";
import type { TaskReading } from "../../tasks/types.ts";
import type { ActRequest, EndReason, ObserveRequest, ReadingDto } from "../api/schemas.ts";
import { GatewayError } from "../errors.ts";
import type { EpisodeCounters, EpisodeResult } from "../recorder/result.ts";
import { type ClipEntry, violationDetails } from "../safety/precheck.ts";
import { fkWorkspace, forwardKinematicsInto } from "../../robots/franka/kinematics.ts";
import { mat4ToPose } from "../../robots/math.ts";
import { r6 } from "../time.ts";
import { EpisodeClock } from "./clock.ts";
import {
  type EpisodeStatusDto,
  type EventDto,
  eventDto,
  type FrameRefDto,
  frameRefDto,
  readingDto,
  statusDto,
} from "./dto.ts";
import { MotionRunner } from "./motion.ts";
import type { EpisodeObserver, ObserverContext } from "./observer.ts";
import {
  type ChunkPlan,
  checkChunk,
  type PlanContext,
  planChunk,
  planChunkSteps,
  resolveCameras,
} from "./planner.ts";
import { commandedReading, RealtimeDriver, systemWallClock } from "./realtime.ts";
import { episodeResult } from "./result.ts";
import {
  causeOfError,
  causeOfFault,
  causeOfJudge,
  causeOfVerdict,
  endReasonFor,
  isSafetyEvent,
  type StopCause,
  StopArbiter,
  TIME_LIMIT,
} from "./stop.ts";
import type { EpisodeSetup, EpisodeView, RealtimeStatus, SafetyEventDto } from "./view.ts";

export type { EpisodeCounters } from "../recorder/result.ts";
export type { SafetyEventDto } from "./view.ts";

export interface EpisodeConfig extends EpisodeSetup {
  observers: readonly EpisodeObserver[];
}

export class Episode implements EpisodeView {
  readonly id: string;
  readonly startedAt = new Date();
  private readonly clock: EpisodeClock;
  private readonly arbiter: StopArbiter;
  private readonly runner: MotionRunner;
  private readonly plan: PlanContext;
  private ended: { reason: EndReason; detail?: string; t: number } | undefined;
  /** how the episode ends once the running motion has returned (decided at the first stop) */
  private pendingEnd: { reason: EndReason; detail: string } | undefined;
  private pendingEvents: EventDto[] = [];
  private pendingSafety: SafetyEventDto[] = [];
  private readonly observations = new Set<string>();
  /** instrument readings by instrument name, episode time */
  private readonly instrumentLog = new Map<string, { t: number; values: Record<string, number> }[]>();
  private readonly unsubscribe: () => void;
  private submitted = false;
  /** an act's chunk is being planned (in slices): another motion call is refused as busy */
  private planning = false;
  /** the observers with a per-reading hook: the control loop calls only these (the console's has none) */
  private readonly readingObservers: readonly EpisodeObserver[];
  /** the reading handed to the judge each tick (reused: the control loop allocates nothing for it) */
  private readonly taskReading: TaskReading = { t: 0, q: [], gripperWidthM: 0 };
  /** FK scratch of toReading */
  private readonly fkWs = fkWorkspace();
  private resultOf: EpisodeResult | undefined;
  /** settles when the running motion (if any) has returned */
  private running: Promise<void> = Promise.resolve();
  private recordAt: string | undefined;
  /** realtime setting: the step queue paced to the wall clock (from the first advancing call) */
  private rt: RealtimeDriver | undefined;
  /** settles when the realtime loop has returned */
  private rtLoop: Promise<void> = Promise.resolve();
  /** the steps of the realtime loop's wake-up that runs now (its readings' steps) */
  private rtWakeSteps = 0;
  /** realtime on a streamed drive: the backend's streaming capability */
  private stream: StreamingMotion | undefined;
  private readonly counts: EpisodeCounters = {
    steps: 0,
    resetsUsed: 0,
    refusals: 0,
    clippedEntries: 0,
    safetyStops: 0,
    framesServed: 0,
  };

  constructor(private readonly cfg: EpisodeConfig) {
    this.id = cfg.id ?? randomUUID();
    this.readingObservers = cfg.observers.filter((o) => o.onReading !== undefined);
    this.clock = new EpisodeClock(cfg.backend, cfg.budgets);
    this.arbiter = new StopArbiter(cfg.backend, (err, cause) => this.stopFailed(err, cause));
    this.runner = new MotionRunner(cfg.backend, cfg.monitor, this.arbiter, (v) =>
      this.requestStop(causeOfVerdict(v)),
    );
    this.plan = {
      task: cfg.task,
      level: cfg.level,
      actions: cfg.actions,
      budgets: cfg.budgets,
      limits: cfg.limits,
      maxDtS: cfg.maxDtS,
      toolFromFlange: cfg.toolFromFlange,
      desc: cfg.backend.describe(),
    };
    this.unsubscribe = cfg.backend.onEvent((e) => this.onSensorEvent(e));
    const ctx: ObserverContext = {
      fault: (cause) => this.requestStop(cause),
      recordAt: (path) => {
        this.recordAt = path;
      },
    };
    for (const o of cfg.observers) o.onStart?.(this, ctx);
  }

  // ------------------------------------------------------------------ the read-only view

  get config(): Readonly<EpisodeSetup> {
    return this.cfg;
  }

  /** backend seconds at which the episode started */
  get t0S(): number {
    return this.clock.t0;
  }

  /** episode seconds now */
  t(): number {
    return this.clock.t();
  }

  timeLeftS(): number {
    return this.clock.timeLeftS();
  }

  get isEnded(): boolean {
    return this.ended !== undefined;
  }

  get endReason(): EndReason | undefined {
    return this.ended?.reason;
  }

  /** episode seconds at which the episode ended */
  get endT(): number | undefined {
    return this.ended?.t;
  }

  get endDetail(): string | undefined {
    return this.ended?.detail;
  }

  get observationIds(): ReadonlySet<string> {
    return this.observations;
  }

  get counters(): Readonly<EpisodeCounters> {
    return this.counts;
  }

  /** result.json of the ended episode */
  get result(): EpisodeResult | undefined {
    return this.resultOf;
  }

  /** where the recorder writes this episode, when recorded */
  get recordPath(): string | undefined {
    return this.recordAt;
  }

  status(): EpisodeStatusDto {
    return statusDto(this);
  }

  realtimeStatus(): RealtimeStatus | undefined {
    const setup = this.cfg.realtime;
    if (this.cfg.setting !== "realtime" || !setup) return undefined;
    const c = this.rt?.counts;
    return {
      slowdown: setup.slowdown,
      committed_step: this.rt?.committedStep ?? 0,
      queue_rows: this.rt?.queueRows ?? 0,
      late_steps: c?.lateSteps ?? 0,
      stood_still_s: r6(c?.stoodStillS ?? 0),
      hold_steps: c?.holdSteps ?? 0,
      late_splices: c?.lateSplices ?? 0,
    };
  }

  /** realtime setting: the steps committed so far (0 before the start); allocates nothing (benches read it per wake-up) */
  get realtimeCommitted(): number {
    return this.rt?.committedStep ?? 0;
  }

  /** a reading for the API, with the tool pose by FK (per reading row, never per control tick) */
  toReading(r: JointReading): ReadingDto {
    const frames = forwardKinematicsInto(this.plan.desc.robot, r.q, this.fkWs, this.cfg.toolFromFlange);
    return readingDto(r, this.clock.t0, mat4ToPose(frames[9]!));
  }

  // ------------------------------------------------------------------ agent calls

  /** POST /v1/observe */
  async observe(req: ObserveRequest): Promise<{
    observation_id: string;
    readings: ReadingDto[];
    frames: FrameRefDto[];
    events: EventDto[];
    safety: SafetyEventDto[];
  }> {
    const backend = this.cfg.backend;
    const cameras = resolveCameras(this.plan.desc, req.cameras);
    if (cameras.length > this.cfg.budgets.maxFramesPerCall) {
      throw new GatewayError("RB_ERR_TOO_MANY_FRAMES", {
        count: cameras.length,
        max: this.cfg.budgets.maxFramesPerCall,
      });
    }
    const period = this.plan.desc.controlPeriodS;
    // time advances in whole control periods; less than half a period advances nothing
    const ticks = Math.round(req.advance_s / period);
    if (this.cfg.setting === "realtime") {
      // the world runs on: no advance reads what is there now; advance_s waits for the steps
      if (ticks > 0) {
        this.assertCanMoveRealtime();
        if (req.advance_s > this.cfg.budgets.maxCallS) {
          throw new GatewayError("RB_ERR_CALL_TOO_LONG", {
            seconds: req.advance_s,
            max: this.cfg.budgets.maxCallS,
          });
        }
        const rt = this.realtime();
        await rt.waitForStep(rt.committedStep + ticks);
      }
    } else if (ticks > 0) {
      this.assertCanMove();
      if (req.advance_s > this.cfg.budgets.maxCallS) {
        throw new GatewayError("RB_ERR_CALL_TOO_LONG", {
          seconds: req.advance_s,
          max: this.cfg.budgets.maxCallS,
        });
      }
      await this.motion(null, async (signal) => {
        this.counts.steps++;
        const res = await backend.hold(ticks * period, { signal, onTick: (r) => this.tick(r, -1) });
        if (res.outcome === "fault") this.requestStop(causeOfFault(res.fault));
      });
    }
    // `cameras: []` observes the robot without any image (backends read [] as every camera)
    const captured = cameras.length > 0 ? await this.captureOrFault(cameras, req.depth) : [];
    const reading = backend.read();
    const id = this.newObservation(reading.t - this.clock.t0);
    const dto = this.toReading(reading);
    const frames = this.storeFrames(captured, req.encoding, req.depth, [dto]);
    for (const o of this.cfg.observers) o.onObservation?.(this, id, reading, captured);
    if (ticks > 0) await this.flush();
    return {
      observation_id: id,
      readings: [dto],
      frames,
      events: this.drainEvents(),
      safety: this.drainSafety(),
    };
  }

  /** GET /v1/instruments/:name — every reading of a bench instrument so far, in episode time. */
  instrument(name: string): { observation_id: string; name: string; readings: Record<string, number>[] } {
    const known = this.cfg.task.instruments ?? [];
    if (!known.includes(name)) {
      throw new GatewayError("RB_ERR_UNKNOWN_INSTRUMENT", { name, instruments: known.join(", ") || "none" });
    }
    const readings = (this.instrumentLog.get(name) ?? []).map((r) => ({ t: r.t, ...r.values }));
    const t = this.t();
    const id = this.newObservation(t);
    for (const o of this.cfg.observers) o.onInstrumentRead?.(this, id, name, t);
    return { observation_id: id, name, readings };
  }

  /**
   * POST /v1/act. `onFrames` receives the raw frames captured during the chunk (the HTTP layer
   * encodes act's video from them); the realtime setting captures none.
   */
  async act(
    req: ActRequest,
    onFrames?: (frames: readonly Frame[]) => void,
  ): Promise<{
    executed_rows: number;
    clipped: ClipEntry[];
    readings: ReadingDto[];
    frames: FrameRefDto[];
    events: EventDto[];
    safety: SafetyEventDto[];
    robot_errors: string[];
    /** realtime: the control step the chunk starts at */
    start_step?: number;
  }> {
    if (this.cfg.setting === "realtime") return this.actRealtime(req);
    this.assertCanMove();
    const backend = this.cfg.backend;
    const chunk = checkChunk(this.plan, req);
    // planned in slices with a turn of the event loop between them: a stop that arrives meanwhile
    // (e-stop, contact, signal, new episode) stops the robot at once, and the act gives up with the
    // refusal the stop implies (RB_ERR_ESTOP, RB_ERR_EPISODE_ENDED …); nothing was recorded or moved
    this.planning = true;
    let plan: ChunkPlan;
    try {
      ({ value: plan } = await runSliced(planChunkSteps(this.plan, chunk, backend.read()), {
        ...(this.cfg.planSliceMs !== undefined ? { sliceMs: this.cfg.planSliceMs } : {}),
        pauseAround: true,
        resume: () => this.assertMayMove(),
      }));
    } finally {
      this.planning = false;
    }
    const { trajectory: traj, clipped, precheck } = plan;
    for (const o of this.cfg.observers) o.onCommand?.(this, req, clipped, precheck.ok);
    if (!precheck.ok) {
      this.refuseUnsafe(precheck.violation);
    }
    this.counts.clippedEntries += clipped.length;

    const readings: ReadingDto[] = [];
    let executedRows = 0;
    let frames: Frame[] = [];
    const robotErrors: string[] = [];
    // readings at the capture ticks (start, then every k ticks): each frame gets the nearest
    const every = chunk.capture?.everyTicks;
    const atCapture: ReadingDto[] = every ? [this.toReading(backend.read())] : [];
    await this.motion(traj, async (signal) => {
      this.counts.steps++;
      let nextRow = 0;
      const ends = traj.rowEndIndex;
      const res = await backend.execute(traj, {
        signal,
        ...(chunk.capture ? { capture: chunk.capture } : {}),
        onTick: (r, i) => {
          if (every && (i + 1) % every === 0) atCapture.push(this.toReading(r));
          // a real robot publishes at its own rate: a reading may land past a row's end sample;
          // one reading per row: a reading that lands past several row ends stands for each of them
          if (nextRow < ends.length && i >= ends[nextRow]!) {
            const dto = this.toReading(r);
            while (nextRow < ends.length && i >= ends[nextRow]!) {
              readings.push(dto);
              nextRow++;
            }
          }
          return this.tick(r, i);
        },
      });
      executedRows = ends.filter((e) => e < res.samplesExecuted).length;
      frames = res.frames;
      if (res.robotErrors) robotErrors.push(...res.robotErrors);
      // rows the robot finished without a reading at their end (a real robot's last reading came
      // before the final sample) get the final state: one reading per executed row
      while (readings.length < executedRows) readings.push(this.toReading(res.final));
      if (readings.length === 0 || readings[readings.length - 1]!.t !== r6(res.final.t - this.clock.t0)) {
        readings.push(this.toReading(res.final));
      }
      if (res.outcome === "fault") this.requestStop(causeOfFault(res.fault));
    });
    const f = req.frames;
    const frameRefs = f ? this.storeFrames(frames, f.encoding, f.depth, atCapture) : [];
    if (frames.length) for (const o of this.cfg.observers) o.onFrames?.(this, frames);
    if (frames.length) onFrames?.(frames);
    await this.flush();
    return {
      executed_rows: executedRows,
      clipped,
      readings,
      frames: frameRefs,
      events: this.drainEvents(),
      safety: this.drainSafety(),
      robot_errors: robotErrors,
    };
  }

  /** POST /v1/finish */
  async finish(): Promise<void> {
    if (this.ended) throw new GatewayError("RB_ERR_EPISODE_ENDED", { reason: this.ended.reason });
    await this.haltRealtime();
    if (this.runner.busy || this.planning) throw new GatewayError("RB_ERR_BUSY");
    this.end("finished");
    await this.flush();
  }

  /** POST /v1/submit */
  async submit(answer: unknown, evidence: readonly string[]): Promise<void> {
    if (this.ended) throw new GatewayError("RB_ERR_EPISODE_ENDED", { reason: this.ended.reason });
    const judge = this.cfg.judge;
    if (!this.cfg.task.submission || !judge.onSubmit) {
      throw new GatewayError("RB_ERR_NO_SUBMISSION", { task: this.cfg.task.id });
    }
    if (this.submitted) throw new GatewayError("RB_ERR_ALREADY_SUBMITTED");
    await this.haltRealtime();
    if (this.runner.busy || this.planning) throw new GatewayError("RB_ERR_BUSY");
    this.submitted = true;
    for (const o of this.cfg.observers) o.onSubmit?.(this, answer, evidence);
    judge.onSubmit(answer, evidence, this.observations);
    this.end("submitted");
    await this.flush();
  }

  /** POST /v1/reset: counts against the task's reset budget. */
  async reset(): Promise<void> {
    this.assertCanMove();
    const budget = this.cfg.budgets.resets;
    if (budget === 0) throw new GatewayError("RB_ERR_NO_RESETS");
    if (this.counts.resetsUsed >= budget) throw new GatewayError("RB_ERR_RESETS_USED", { budget });
    if (!this.cfg.backend.reset) {
      throw new GatewayError("RB_ERR_BACKEND_UNSUPPORTED", {
        backend: this.cfg.backend.kind,
        operation: "reset",
        reason: "a physical bench cannot be put back to the start state",
      });
    }
    this.counts.resetsUsed++;
    await this.motion(null, async () => {
      await this.cfg.backend.reset!({ seed: this.cfg.seed });
    });
  }

  // ------------------------------------------------------------------ the one stop path

  /**
   * Stop now, whatever asks (tick, watchdog, sensor event, exception, fault outcome, e-stop,
   * signal, storage, operator): aborts the running motion and calls the backend's stop before it
   * returns. The first cause decides how the episode ends (`endReasonFor`): at once when no
   * motion runs, else when the motion has returned. Idempotent; after the end it only stops.
   */
  requestStop(cause: StopCause): void {
    this.recordStop(cause, this.arbiter.request(cause));
  }

  /**
   * The bookkeeping of a stop the arbiter has issued (`first`: it was the motion's first cause):
   * the end it implies (the judge's status decides a contact's) and its safety event.
   */
  private recordStop(cause: StopCause, first: boolean): void {
    if (!first || this.ended || this.pendingEnd) return;
    const reason = endReasonFor(cause, this.cfg.judge.status());
    this.pendingEnd = { reason, detail: cause.detail };
    if (isSafetyEvent(reason)) {
      if (reason !== "task_failed") this.counts.safetyStops++;
      const kind =
        (cause.data?.["kind"] as string | undefined) ??
        (cause.source === "exception" || cause.source === "device_fault" ? "fault" : cause.source);
      const details: Record<string, unknown> = { ...(cause.device ? { device: cause.device } : {}) };
      Object.assign(
        details,
        cause.data,
        { stop_source: cause.source },
        cause.code ? { code: cause.code } : {},
      );
      this.safetyEvent(kind, cause.detail, details);
    }
    if (!this.runner.busy) this.settle();
  }

  /**
   * Stop motion, then end: the one place for it (new episode, e-stop, operator end, shutdown,
   * signal). `reason` overrides the end reason the cause implies (an operator may end as
   * `finished`). Resolves when the backend's stop and the aborted motion have returned and the
   * observers have flushed, so the caller may reset or shut the backend down.
   */
  async stopAndEnd(cause: StopCause, reason?: EndReason): Promise<void> {
    // an explicit reason is how this stop ends, unless an earlier stop already decided
    if (reason && !this.ended && !this.pendingEnd) this.pendingEnd = { reason, detail: cause.detail };
    this.requestStop(cause);
    if (!this.ended) {
      const end = this.pendingEnd ?? {
        reason: endReasonFor(cause, this.cfg.judge.status()),
        detail: cause.detail,
      };
      this.end(end.reason, end.detail);
    }
    await this.arbiter.stopped;
    await this.running;
    // a flush that fails here has already gone the storage-fault way (robot stopped, episode a
    // fault with RB_ERR_STORAGE); a stop must never fail because the record could not be written
    await this.flush().catch(() => {});
  }

  /** End the episode (idempotent: the first reason wins). */
  end(reason: EndReason, detail?: string): void {
    if (this.ended) return;
    this.ended = { reason, t: this.t(), ...(detail ? { detail } : {}) };
    this.unsubscribe();
    this.resultOf = episodeResult(
      this,
      { reason, ...(detail ? { detail } : {}), tS: this.ended.t },
      this.cfg.provenance,
    );
    for (const o of this.cfg.observers) o.onEnd?.(this);
  }

  /**
   * Await every observer's flush (the record of what is about to be acknowledged is durable). An
   * observer whose flush fails stops the robot as a storage fault; its coded error is thrown.
   */
  async flush(): Promise<void> {
    const waits: Promise<void>[] = [];
    for (const o of this.cfg.observers) if (o.flush) waits.push(o.flush());
    if (waits.length === 0) return;
    const failed = (await Promise.allSettled(waits)).find((r) => r.status === "rejected");
    if (!failed) return;
    const err: unknown = failed.reason;
    const detail = `record: ${err instanceof Error ? err.message : String(err)}`;
    this.requestStop({ source: "storage", detail, ...(err instanceof CodedError ? { code: err.code } : {}) });
    if (err instanceof GatewayError) throw err;
    if (err instanceof CodedError) throw new GatewayError(err.code, err.details, err.message);
    throw err;
  }

  // ------------------------------------------------------------------ the realtime setting

  /**
   * POST /v1/act in the realtime setting: answers at once. The chunk is planned and pre-checked
   * from the COMMANDED state at its start step (continuity up to jerk at the join), then replaces
   * the queued rows from there on.
   */
  private async actRealtime(req: ActRequest): ReturnType<Episode["act"]> {
    this.assertCanMoveRealtime();
    const chunk = checkChunk(this.plan, req);
    if (chunk.capture) {
      throw new GatewayError("RB_ERR_REALTIME_NO_CAPTURE", { field: "frames" });
    }
    // the schedule starts once the first chunk is accepted: its planning (slow on the first call
    // of a process, before the code is compiled) is not taken from the first slots
    const rt = this.realtimeDriver();
    const step = rt.spliceStep(req.start_step);
    const start = rt.commandedState(step);
    const from = commandedReading(start, this.cfg.backend.now());
    const { trajectory: traj, clipped, precheck } = planChunk(this.plan, chunk, from, start.ddq);
    for (const o of this.cfg.observers) o.onCommand?.(this, req, clipped, precheck.ok);
    if (!precheck.ok) {
      this.refuseUnsafe(precheck.violation, { start_step: step });
    }
    this.counts.clippedEntries += clipped.length;
    this.counts.steps++;
    rt.splice(traj, step);
    this.startRealtime(rt);
    this.streamSplice(rt, step);
    await this.flush();
    return {
      executed_rows: 0,
      clipped,
      readings: [this.toReading(this.cfg.backend.read())],
      frames: [],
      events: this.drainEvents(),
      safety: this.drainSafety(),
      robot_errors: [],
      start_step: step,
    };
  }

  /** The realtime driver, started (the loop running as one long motion) on first use. */
  private realtime(): RealtimeDriver {
    const rt = this.realtimeDriver();
    this.startRealtime(rt);
    return rt;
  }

  /** The realtime driver (made on first use; its schedule starts with startRealtime). */
  private realtimeDriver(): RealtimeDriver {
    if (this.rt) return this.rt;
    const setup = this.cfg.realtime;
    if (!setup) throw new Error("realtime episode without a realtime setup");
    const backend = this.cfg.backend;
    const periodS = this.plan.desc.controlPeriodS;
    const rt = new RealtimeDriver(
      setup.clock ?? systemWallClock,
      {
        periodS,
        slowdown: setup.slowdown,
        marginSteps: setup.marginSteps,
        lateToleranceS: setup.lateToleranceS,
        horizonSteps: setup.horizonSteps,
        watchdogS: setup.commandGapS,
        streamed: setup.drive === "streamed",
      },
      backend.read(),
      (detail) => this.requestStop({ source: "watchdog", detail, data: { kind: "command_watchdog" } }),
    );
    this.rt = rt;
    return rt;
  }

  /** Start the schedule now and the loop as one long motion (once). */
  private startRealtime(rt: RealtimeDriver): void {
    if (rt.started) return;
    const backend = this.cfg.backend;
    rt.start();
    const drive = backend.realtimeDrive?.();
    if (drive?.kind === "streamed") {
      this.stream = drive.motion;
      this.rtLoop = this.motion(null, (signal) => this.runStreamed(rt, drive.motion, signal)).catch(() => {
        // a backend that threw has gone the fault way (requestStop) inside motion()
      });
      return;
    }
    this.rtLoop = this.motion(null, (signal) => {
      // one options object for every wake-up (the loop runs a wake-up per control period); a
      // reading of a wake-up's sample i belongs to its i-th step, judged against that step's target
      // (the wake-up's steps are committed when it runs them)
      const opts = {
        signal,
        onTick: (r: JointReading, i: number) => {
          if (!(i >= 0 && i < this.rtWakeSteps)) return this.tick(r, -1);
          const step = rt.committedStep - (this.rtWakeSteps - i);
          return this.tick(r, step, rt.commandedAt(step));
        },
      };
      const checked = (res: ExecuteResult): ExecuteResult => {
        if (res.outcome === "fault") this.requestStop(causeOfFault(res.fault));
        return res;
      };
      // a stepped backend that can run a wake-up's steps at once does (no promise chain per step)
      const runNow = drive?.kind === "stepped" ? drive.runNow : undefined;
      return rt.run(signal, (traj) => {
        this.rtWakeSteps = traj.count;
        return runNow ? checked(runNow(traj, opts)) : backend.execute(traj, opts).then(checked);
      });
    }).catch(() => {
      // a backend that threw has gone the fault way (requestStop) inside motion()
    });
  }

  /**
   * The realtime loop on a streamed drive (a real arm): the driver keeps the schedule, the queue,
   * the watchdog and the counts as on the sim, but a wake-up sends nothing (the controller runs
   * the steps from the trajectory streamed at the last splice); the readings pass the tick hook
   * (safety monitor, task rules) as they arrive. When the loop ends the arm holds where it is.
   */
  private async runStreamed(rt: RealtimeDriver, motion: StreamingMotion, signal: AbortSignal): Promise<void> {
    const backend = this.cfg.backend;
    const watching = motion
      .follow({ signal: AbortSignal.any([signal, rt.haltSignal]), onTick: (r) => this.tickStreamed(rt, r) })
      .then(
        (res) => {
          if (res.outcome === "fault") this.requestStop(causeOfFault(res.fault));
          rt.halt();
        },
        (e: unknown) => {
          rt.halt();
          throw e;
        },
      );
    try {
      await rt.run(signal, async (traj) => ({
        outcome: "completed",
        samplesExecuted: traj.count,
        final: backend.read(),
        frames: [],
      }));
    } finally {
      rt.halt();
      await watching.finally(() => backend.stop("realtime loop ended"));
    }
  }

  /**
   * Streamed drive: after a splice at `step`, stream the queue from the due step on (the rows
   * before `step` are the ones the controller runs already, so an on-time switch is seamless).
   * A splice the controller got after `step` was due is counted late by the steps it ran from
   * the old queue; a trajectory it never got is a device fault.
   */
  private streamSplice(rt: RealtimeDriver, step: number): void {
    const motion = this.stream;
    if (!motion) return;
    const backend = this.cfg.backend;
    const clock = this.cfg.realtime?.clock ?? systemWallClock;
    const from = Math.max(rt.committedStep, rt.dueStep());
    const { traj, before } = rt.queueFrom(from);
    const toBackend = (wallT: number) => backend.now() + (wallT - clock.now());
    const startS = toBackend(rt.dueWall(from - 1));
    const dueS = toBackend(rt.dueWall(step));
    const periodS = traj.periodS;
    motion.replace(traj, startS, before).then(
      ({ switchedByS }) => rt.countLateSplice(Math.ceil((switchedByS - dueS) / periodS - 1e-9)),
      (e: unknown) => {
        const message = e instanceof Error ? e.message : String(e);
        this.requestStop(causeOfFault({ device: backend.kind, message: `realtime stream: ${message}` }));
      },
    );
  }

  /** Stop the realtime loop (the robot holds its last target) and wait for it to return. */
  private async haltRealtime(): Promise<void> {
    if (!this.rt) return;
    this.rt.halt();
    await this.rtLoop;
  }

  private assertCanMoveRealtime(): void {
    const es = this.cfg.estop.current;
    if (es) throw new GatewayError("RB_ERR_ESTOP", { reason: es.reason ?? "operator" });
    if (!this.cfg.motionAllowed) throw new GatewayError("RB_ERR_MOTION_DISABLED");
    if (this.ended) throw new GatewayError("RB_ERR_EPISODE_ENDED", { reason: this.ended.reason });
    if (this.rt?.isHalted) throw new GatewayError("RB_ERR_BUSY");
  }

  // ------------------------------------------------------------------ internals

  /** A chunk the pre-check refused: counted, kept as a safety event, answered 422 (nothing moved). */
  private refuseUnsafe(
    violation: Parameters<typeof violationDetails>[0],
    extra: Record<string, unknown> = {},
  ): never {
    this.counts.refusals++;
    const details = violationDetails(violation);
    this.safetyEvent("refused", `chunk refused: ${violation.kind}`, details, false);
    throw new GatewayError("RB_ERR_UNSAFE_CHUNK", {
      ...details,
      what: violation.joint ?? violation.link ?? violation.kind,
      ...extra,
    });
  }

  private assertCanMove(): void {
    this.assertMayMove();
    if (this.runner.busy || this.planning) throw new GatewayError("RB_ERR_BUSY");
  }

  /** No e-stop, motion allowed, not ended (checked again after every slice of an act's planning). */
  private assertMayMove(): void {
    const es = this.cfg.estop.current;
    if (es) throw new GatewayError("RB_ERR_ESTOP", { reason: es.reason ?? "operator" });
    if (!this.cfg.motionAllowed) throw new GatewayError("RB_ERR_MOTION_DISABLED");
    if (this.ended) throw new GatewayError("RB_ERR_EPISODE_ENDED", { reason: this.ended.reason });
  }

  /** One motion through the runner; afterwards the episode ends if a stop or a budget says so. */
  private async motion(
    traj: Parameters<MotionRunner["run"]>[0],
    body: (signal: AbortSignal) => Promise<void>,
  ): Promise<void> {
    this.pendingEnd = undefined;
    let failure: unknown;
    const run = this.runner.run(traj, body);
    this.running = run.then(
      () => {},
      () => {},
    );
    try {
      await run;
    } catch (err) {
      // a backend that throws mid-motion has lost a device or its state: stop and end as a fault
      failure = err;
      this.requestStop(causeOfError(err, "backend"));
    }
    this.settle();
    if (failure !== undefined) {
      const message = failure instanceof Error ? failure.message : String(failure);
      const device =
        failure instanceof CodedError ? { device_code: failure.code, device_details: failure.details } : {};
      throw new GatewayError("RB_ERR_BACKEND_FAULT", {
        device: this.cfg.backend.kind,
        reason: message,
        ...device,
      });
    }
  }

  /** No motion runs: end for the stop that was requested, or for a spent budget. */
  private settle(): void {
    if (this.ended) return;
    if (this.pendingEnd) {
      this.end(this.pendingEnd.reason, this.pendingEnd.detail);
      return;
    }
    const spent = this.clock.exhausted(this.counts.steps);
    if (spent) this.end(spent);
  }

  /**
   * A streamed realtime motion's reading (a real arm keeps its own time): judged against the
   * target of the step the controller commanded when it was measured (its time on the wall
   * clock, as streamSplice maps the other way), if that step is still kept.
   */
  private tickStreamed(rt: RealtimeDriver, r: JointReading): TickVerdict {
    const clock = this.cfg.realtime?.clock ?? systemWallClock;
    const step = rt.stepAtWall(r.t - this.cfg.backend.now() + clock.now());
    return this.tick(r, step, rt.commandedAt(step));
  }

  /**
   * Control-loop hook, once per tick: task judge, observers, runtime monitor, time budget.
   * Allocation-light: no closures or arrays are created here while the answer is "ok".
   */
  private tick(r: JointReading, sampleIndex: number, commanded?: ArrayLike<number>): TickVerdict {
    if (this.arbiter.cause) return "stop";
    const t = r.t - this.clock.t0;
    const tr = this.taskReading;
    // the judge sees episode seconds as the API gives them (1 µs), so its stage and success times
    // do not carry the float noise of the backend clock minus the episode start
    tr.t = r6(t);
    tr.q = r.q;
    tr.gripperWidthM = r.gripperWidthM;
    this.cfg.judge.onReading(tr);
    for (const o of this.readingObservers) o.onReading?.(this, r);
    const v = this.cfg.monitor.tick(r, sampleIndex, commanded);
    if (v !== "ok") {
      this.requestStop(causeOfVerdict(v));
      return "stop";
    }
    if (this.clock.timeUp(t)) {
      this.requestStop(TIME_LIMIT);
      return "stop";
    }
    const st = this.cfg.judge.status();
    if (st.state === "failed" || (st.state === "success" && !this.cfg.task.hidesSuccess)) {
      this.requestStop(causeOfJudge(st));
      return "stop";
    }
    return "ok";
  }

  /**
   * A sensor event stops the robot from the event itself, not on the next reading: the safety
   * monitor's verdict comes first and a stop reaches the backend before any bookkeeping (the
   * record's encoding, the judge, the observers); that bookkeeping follows in the same order as
   * before, and the stop's own record (end reason from the judge's view of the event, safety
   * event) after it.
   */
  private onSensorEvent(e: SensorEvent): void {
    const v = this.cfg.monitor.onEvent(e);
    const cause = v === "ok" ? undefined : causeOfVerdict(v);
    const first = cause ? this.arbiter.request(cause) : false;
    const t = e.t - this.clock.t0;
    const dto = eventDto(e, t);
    this.pendingEvents.push(dto);
    this.cfg.onAgentEvent?.({ kind: "event", event: dto });
    if (e.type === "instrument") {
      let log = this.instrumentLog.get(e.name);
      if (!log) this.instrumentLog.set(e.name, (log = []));
      log.push({ t: dto.t, values: { ...e.values } });
    }
    if (e.type !== "fault") this.cfg.judge.onEvent(dto);
    for (const o of this.cfg.observers) o.onEvent?.(this, e);
    if (cause) this.recordStop(cause, first);
  }

  /**
   * A backend stop that failed must not become an unhandled rejection (it would end the
   * process): the motion is aborted already; while the episode runs the failure is kept as a
   * safety event (an ended episode's record is closed).
   */
  private stopFailed(err: unknown, cause: StopCause): void {
    if (this.ended) return;
    const message = err instanceof Error ? err.message : String(err);
    this.safetyEvent("fault", `stop failed: ${message}`, {
      device: this.cfg.backend.kind,
      reason: cause.detail,
    });
  }

  /** Record a safety event; `pending` = also report it in the next response (refusals travel in the error instead). */
  private safetyEvent(kind: string, message: string, details: Record<string, unknown>, pending = true): void {
    const ev: SafetyEventDto = { t: r6(this.t()), kind, message, details };
    if (pending) {
      this.pendingSafety.push(ev);
      this.cfg.onAgentEvent?.({ kind: "safety", event: ev });
    }
    for (const o of this.cfg.observers) o.onSafety?.(this, ev);
  }

  private async captureOrFault(cameras: string[], depth: boolean): Promise<Frame[]> {
    try {
      return await this.cfg.backend.capture(cameras, { depth });
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.requestStop(causeOfFault({ device: "camera", message }));
      throw new GatewayError("RB_ERR_BACKEND_FAULT", { device: "camera", reason: message });
    }
  }

  /** Store frames; each carries the reading (of `near`, episode time) nearest its exposure. */
  private storeFrames(
    frames: readonly Frame[],
    encoding: "jpeg" | "png",
    depth: boolean,
    near: readonly ReadingDto[] = [],
  ): FrameRefDto[] {
    this.counts.framesServed += frames.length;
    return frames.map((f) => {
      const t = f.t - this.clock.t0;
      let best: ReadingDto | undefined;
      for (const r of near) if (!best || Math.abs(r.t - t) < Math.abs(best.t - t)) best = r;
      return frameRefDto(f.camera, t, this.cfg.frames.put(f, encoding, depth), best);
    });
  }

  /** Issue an observation id at episode time `t` (recorded with that same t, so grade agrees). */
  private newObservation(t: number): string {
    const id = `obs-${randomUUID()}`;
    this.observations.add(id);
    this.cfg.judge.onObservation?.(id, t);
    return id;
  }

  private drainEvents(): EventDto[] {
    const e = this.pendingEvents;
    this.pendingEvents = [];
    return e;
  }

  private drainSafety(): SafetyEventDto[] {
    const s = this.pendingSafety;
    this.pendingSafety = [];
    return s;
  }
}
