/**
 * One episode: owns the episode clock and budgets, applies the chunk rules, runs the safety
 * pre-check and runtime monitor, feeds the task judge and the recorder, and ends the episode
 * with exactly one reason. Every rule here is backend-independent: the backend only executes
 * already-accepted trajectories.
 */
import { randomUUID } from "node:crypto";
import type { Mat4 } from "../../robots/math.ts";
import type {
  Setting,
  TaskBudgets,
  TaskContext,
  TaskDefinition,
  TaskJudge,
  TaskReading,
} from "../../tasks/types.ts";
import type { Provenance } from "../recorder/provenance.ts";
import { type EpisodeResult, episodeResult, r6 } from "../recorder/result.ts";
import type { z } from "zod";
import type {
  ActRequest,
  EndReason,
  EpisodeStatusSchema,
  FrameRefSchema,
  ObserveRequest,
  ReadingDto,
  SafetyEventSchema,
  SensorEventSchema,
} from "../api/schemas.ts";
import { GatewayError } from "../errors.ts";
import { CodedError } from "../../seam/errors.ts";
import type { FrameStore } from "../frames/frame-store.ts";
import { interpolateChunk } from "../../seam/interpolate.ts";
import { clipRows, type ClipEntry, precheckChunk, violationDetails } from "../safety/precheck.ts";
import type { EffectiveLimits } from "../safety/profile.ts";
import type {
  Backend,
  Frame,
  JointReading,
  JointTrajectory,
  SensorEvent,
  TickVerdict,
} from "../../seam/types.ts";
import { checkDt, checkRows } from "./chunk-rules.ts";
import type { ActionCatalog } from "./actions.ts";
import type { EpisodeObserver } from "./observer.ts";
import type { EStopLatch } from "../safety/estop.ts";
import type { SafetyMonitor, StopVerdict } from "../safety/monitor.ts";

/** Why a motion stopped and how the episode ends. */
interface StopCause {
  endReason: EndReason;
  kind: string;
  message: string;
  details: Record<string, unknown>;
}

function causeOf(v: StopVerdict): StopCause {
  const c = v.cause;
  const what = "joint" in c ? c.joint : "link" in c ? `${c.link} in ${c.volume}` : "";
  const message =
    c.kind === "task_event"
      ? `${c.event}: ${c.detail} (${c.source})`
      : c.kind === "device_fault"
        ? `${c.device}: ${c.message}`
        : `${c.kind}${what ? ` ${what}` : ""}`;
  return { endReason: v.endReason, kind: c.kind, message, details: { ...c } };
}

export interface EpisodeConfig {
  id?: string;
  task: TaskDefinition;
  level: string;
  setting: Setting;
  seed: number;
  instance: Record<string, unknown>;
  judge: TaskJudge;
  budgets: TaskBudgets;
  backend: Backend;
  limits: EffectiveLimits;
  monitor: SafetyMonitor;
  actions: ActionCatalog;
  frames: FrameStore;
  toolFromFlange: Mat4;
  maxDtS: number;
  privileged: boolean;
  observers: readonly EpisodeObserver[];
  /** what the task was told about the bench (recorded so `grade` can rebuild the judge) */
  taskContext?: TaskContext;
  provenance?: Provenance;
  /** the gateway's e-stop latch */
  estop: EStopLatch;
  /** false: a real bench started without the allow-motion switch */
  motionAllowed: boolean;
}

/** Response pieces, typed by the API schemas (the one source of their shape). */
type EventDto = z.infer<typeof SensorEventSchema>;
export type SafetyEventDto = z.infer<typeof SafetyEventSchema>;
type FrameRefDto = z.infer<typeof FrameRefSchema>;
type EpisodeStatusDto = z.infer<typeof EpisodeStatusSchema>;

/** Counters that go into result.json. */
export interface EpisodeCounters {
  steps: number;
  resetsUsed: number;
  refusals: number;
  clippedEntries: number;
  safetyStops: number;
  framesServed: number;
}

/** Wall-clock interval of the stale-reading check while a motion runs, ms. */
const STALE_CHECK_MS = 20;

export class Episode {
  readonly id: string;
  readonly startedAt = new Date();
  private readonly t0: number;
  private ended: { reason: EndReason; detail?: string; t: number } | undefined;
  private busy = false;
  private abort: AbortController | undefined;
  private pendingEvents: EventDto[] = [];
  private pendingSafety: SafetyEventDto[] = [];
  private readonly observations = new Set<string>();
  /** instrument readings by instrument name, episode time */
  private readonly instrumentLog = new Map<string, { t: number; values: Record<string, number> }[]>();
  /** a stop requested from an event listener, acted on at the next tick */
  private stopRequest: StopCause | undefined;
  private readonly unsubscribe: () => void;
  private submitted = false;
  /** the reading handed to the judge each tick (reused: the control loop allocates nothing for it) */
  private readonly taskReading: TaskReading = { t: 0, q: [], gripperWidthM: 0 };
  /** result of the ended episode (result.json) */
  result: EpisodeResult | undefined;
  /** where the recorder wrote this episode, when recorded */
  recordPath: string | undefined;
  readonly counters: EpisodeCounters = {
    steps: 0,
    resetsUsed: 0,
    refusals: 0,
    clippedEntries: 0,
    safetyStops: 0,
    framesServed: 0,
  };

  constructor(private readonly cfg: EpisodeConfig) {
    this.id = cfg.id ?? randomUUID();
    this.t0 = cfg.backend.now();
    this.unsubscribe = cfg.backend.onEvent((e) => this.onSensorEvent(e));
    for (const o of cfg.observers) o.onStart?.(this);
  }

  // ------------------------------------------------------------------ accessors

  get config(): Readonly<EpisodeConfig> {
    return this.cfg;
  }

  /** backend seconds at which the episode started */
  get t0S(): number {
    return this.t0;
  }

  /** episode seconds now */
  t(): number {
    return this.cfg.backend.now() - this.t0;
  }

  timeLeftS(): number {
    return Math.max(0, this.cfg.budgets.timeLimitS - this.t());
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

  status(): EpisodeStatusDto {
    const s: EpisodeStatusDto = { id: this.id, status: this.ended ? "ended" : "running" };
    if (this.ended) {
      s.reason = this.ended.reason;
      if (this.ended.detail) s.detail = this.ended.detail;
    }
    return s;
  }

  toReading(r: JointReading): ReadingDto {
    const out: ReadingDto = {
      t: r6(r.t - this.t0),
      q: r.q.map(r6),
      dq: r.dq.map(r6),
      gripper_width_m: r6(r.gripperWidthM),
    };
    if (r.tau) out.tau = r.tau.map(r6);
    return out;
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
    const cameras = this.resolveCameras(req.cameras);
    if (cameras.length > this.cfg.budgets.maxFramesPerCall) {
      throw new GatewayError("RB_ERR_TOO_MANY_FRAMES", {
        count: cameras.length,
        max: this.cfg.budgets.maxFramesPerCall,
      });
    }
    const period = this.cfg.backend.describe().controlPeriodS;
    // time advances in whole control periods; less than half a period advances nothing
    const ticks = Math.round(req.advance_s / period);
    if (ticks > 0) {
      this.assertCanMove();
      if (req.advance_s > this.cfg.budgets.maxCallS) {
        throw new GatewayError("RB_ERR_CALL_TOO_LONG", {
          seconds: req.advance_s,
          max: this.cfg.budgets.maxCallS,
        });
      }
      await this.motion(null, async (signal) => {
        this.counters.steps++;
        const res = await this.cfg.backend.hold(ticks * period, {
          signal,
          onTick: (r) => this.tick(r, -1),
        });
        this.afterMotion(res.outcome, res.fault);
      });
    }
    // cameras: [] asks for no image (backends read an empty list as "all")
    const captured = cameras.length ? await this.captureOrFault(cameras, req.depth) : [];
    const reading = this.cfg.backend.read();
    const id = this.newObservation(reading.t - this.t0);
    const frames = this.storeFrames(captured, req.encoding, req.depth);
    for (const o of this.cfg.observers) o.onObservation?.(this, id, reading, captured);
    return {
      observation_id: id,
      readings: [this.toReading(reading)],
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

  /** POST /v1/act */
  async act(req: ActRequest): Promise<{
    executed_rows: number;
    clipped: ClipEntry[];
    readings: ReadingDto[];
    frames: FrameRefDto[];
    events: EventDto[];
    safety: SafetyEventDto[];
    robot_errors: string[];
  }> {
    if (this.cfg.setting !== "standard") {
      throw new GatewayError("RB_ERR_SETTING_UNAVAILABLE", {
        setting: this.cfg.setting,
        reason: "not implemented",
      });
    }
    this.assertCanMove();
    const backend = this.cfg.backend;
    const desc = backend.describe();
    const period = desc.controlPeriodS;
    const open = this.cfg.task.levels[this.cfg.level]?.actions ?? [];
    const action = this.cfg.actions.get(req.type);
    if (!action || !open.includes(action.type)) {
      throw new GatewayError("RB_ERR_ACTION_TYPE", { type: req.type, open: open.join(", ") });
    }
    checkDt(req.dt, period, this.cfg.maxDtS);
    const raw = checkRows(req.rows, action.columns.length, this.cfg.budgets.maxRowsPerChunk, action.type);
    const durationS = raw.length * req.dt;
    if (durationS > this.cfg.budgets.maxCallS + 1e-9) {
      throw new GatewayError("RB_ERR_CALL_TOO_LONG", { seconds: durationS, max: this.cfg.budgets.maxCallS });
    }
    const frameReq = req.frames;
    const frameCams = frameReq ? this.resolveCameras(frameReq.cameras) : [];
    let everyTicks = 0;
    if (frameReq) {
      everyTicks = Math.max(1, Math.round(1 / (frameReq.fps * period)));
      const count = frameCams.length * (Math.floor(durationS / period / everyTicks) + 1);
      if (count > this.cfg.budgets.maxFramesPerCall) {
        throw new GatewayError("RB_ERR_TOO_MANY_FRAMES", { count, max: this.cfg.budgets.maxFramesPerCall });
      }
    }

    const start = backend.read();
    const jointRows = action.toJointRows(raw, start);
    const { rows, clipped } = clipRows(jointRows, this.cfg.limits);
    const traj = interpolateChunk(start, rows, req.dt, period);
    const verdict = precheckChunk({
      robot: desc.robot,
      limits: this.cfg.limits,
      start,
      trajectory: traj,
      tcp: this.cfg.toolFromFlange,
    });
    for (const o of this.cfg.observers) o.onCommand?.(this, req, clipped, verdict.ok);
    if (!verdict.ok) {
      this.counters.refusals++;
      const details = violationDetails(verdict.violation);
      this.safetyEvent("refused", `chunk refused: ${verdict.violation.kind}`, details, false);
      throw new GatewayError("RB_ERR_UNSAFE_CHUNK", {
        ...details,
        what: verdict.violation.joint ?? verdict.violation.link ?? verdict.violation.kind,
      });
    }
    this.counters.clippedEntries += clipped.length;

    const readings: ReadingDto[] = [];
    let executedRows = 0;
    let frames: Frame[] = [];
    const robotErrors: string[] = [];
    await this.motion(traj, async (signal) => {
      this.counters.steps++;
      let nextRow = 0;
      const res = await backend.execute(traj, {
        signal,
        capture:
          frameReq && frameCams.length ? { everyTicks, cameras: frameCams, depth: frameReq.depth } : undefined,
        onTick: (r, i) => {
          // a real robot publishes at its own rate: a reading may land past a row's end sample
          const ends = traj.rowEndIndex;
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
      executedRows = traj.rowEndIndex.filter((e) => e < res.samplesExecuted).length;
      frames = res.frames;
      if (res.robotErrors) robotErrors.push(...res.robotErrors);
      // rows the robot finished without a reading at their end (a real robot's last reading came
      // before the final sample) get the final state: one reading per executed row
      while (readings.length < executedRows) readings.push(this.toReading(res.final));
      if (readings.length === 0 || readings[readings.length - 1]!.t !== r6(res.final.t - this.t0)) {
        readings.push(this.toReading(res.final));
      }
      this.afterMotion(res.outcome, res.fault);
    });
    const frameRefs = frameReq ? this.storeFrames(frames, frameReq.encoding, frameReq.depth) : [];
    if (frames.length) for (const o of this.cfg.observers) o.onFrames?.(this, frames);
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
  finish(): void {
    if (this.ended) throw new GatewayError("RB_ERR_EPISODE_ENDED", { reason: this.ended.reason });
    if (this.busy) throw new GatewayError("RB_ERR_BUSY");
    this.end("finished");
  }

  /** POST /v1/submit */
  submit(answer: unknown, evidence: readonly string[]): void {
    if (this.ended) throw new GatewayError("RB_ERR_EPISODE_ENDED", { reason: this.ended.reason });
    const judge = this.cfg.judge;
    if (!this.cfg.task.submission || !judge.onSubmit) {
      throw new GatewayError("RB_ERR_NO_SUBMISSION", { task: this.cfg.task.id });
    }
    if (this.submitted) throw new GatewayError("RB_ERR_ALREADY_SUBMITTED");
    if (this.busy) throw new GatewayError("RB_ERR_BUSY");
    this.submitted = true;
    for (const o of this.cfg.observers) o.onSubmit?.(this, answer, evidence);
    judge.onSubmit(answer, evidence, this.observations);
    this.end("submitted");
  }

  /** POST /v1/reset: counts against the task's reset budget. */
  async reset(): Promise<void> {
    this.assertCanMove();
    const budget = this.cfg.budgets.resets;
    if (budget === 0) throw new GatewayError("RB_ERR_NO_RESETS");
    if (this.counters.resetsUsed >= budget) throw new GatewayError("RB_ERR_RESETS_USED", { budget });
    if (!this.cfg.backend.reset) {
      throw new GatewayError("RB_ERR_BACKEND_UNSUPPORTED", {
        backend: this.cfg.backend.kind,
        operation: "reset",
        reason: "a physical bench cannot be put back to the start state",
      });
    }
    this.counters.resetsUsed++;
    await this.motion(null, async () => {
      await this.cfg.backend.reset!({ seed: this.cfg.seed });
    });
  }

  /** Stop any motion now (e-stop, operator abort). Safe to call any number of times. */
  async stopMotion(reason: string): Promise<void> {
    this.abort?.abort(reason);
    await this.cfg.backend.stop(reason);
  }

  /** End the episode (idempotent: the first reason wins). */
  end(reason: EndReason, detail?: string): void {
    if (this.ended) return;
    this.ended = { reason, t: this.t(), ...(detail ? { detail } : {}) };
    this.abort?.abort(reason);
    this.unsubscribe();
    this.result = episodeResult(
      this,
      { reason, ...(detail ? { detail } : {}), tS: this.ended.t },
      this.cfg.provenance,
    );
    for (const o of this.cfg.observers) o.onEnd?.(this);
  }

  // ------------------------------------------------------------------ internals

  private assertCanMove(): void {
    const es = this.cfg.estop.current;
    if (es) throw new GatewayError("RB_ERR_ESTOP", { reason: es.reason ?? "operator" });
    if (!this.cfg.motionAllowed) throw new GatewayError("RB_ERR_MOTION_DISABLED");
    if (this.ended) throw new GatewayError("RB_ERR_EPISODE_ENDED", { reason: this.ended.reason });
    if (this.busy) throw new GatewayError("RB_ERR_BUSY");
  }

  /** Run one motion with the busy flag and an abort controller; one at a time. */
  private async motion(
    traj: JointTrajectory | null,
    body: (signal: AbortSignal) => Promise<void>,
  ): Promise<void> {
    this.busy = true;
    this.abort = new AbortController();
    this.stopRequest = undefined;
    this.cfg.monitor.begin(this.cfg.backend.read(), traj);
    // readings that stop arriving never reach tick(): a timer on the backend clock catches them
    // a check that fires late (the event loop was blocked, e.g. by a long pre-check) is skipped:
    // readings queued meanwhile have not been read yet, so the gap would be the gateway's own
    let lastCheckMs = Number.NaN;
    const watchdog = setInterval(() => {
      const nowMs = performance.now();
      const onTime = nowMs - lastCheckMs <= 2 * STALE_CHECK_MS;
      lastCheckMs = nowMs;
      if (!onTime) return;
      const v = this.cfg.monitor.checkTime(this.cfg.backend.now());
      if (v !== "ok" && !this.stopRequest) {
        this.stopRequest = causeOf(v);
        this.abort?.abort(this.stopRequest.message);
        this.stopBackend(this.stopRequest.message);
      }
    }, STALE_CHECK_MS);
    try {
      await body(this.abort.signal);
    } catch (err) {
      // a backend that throws mid-motion has lost a device or its state: stop and end as a fault
      const message = err instanceof Error ? err.message : String(err);
      this.stopRequest ??= { endReason: "fault", kind: "fault", message: `backend: ${message}`, details: {} };
      this.busy = false;
      this.abort = undefined;
      this.checkAfterMotion();
      const device = err instanceof CodedError ? { device_code: err.code, device_details: err.details } : {};
      throw new GatewayError("RB_ERR_BACKEND_FAULT", {
        device: this.cfg.backend.kind,
        reason: message,
        ...device,
      });
    } finally {
      clearInterval(watchdog);
      this.busy = false;
      this.abort = undefined;
    }
    this.checkAfterMotion();
  }

  /**
   * Control-loop hook, once per tick: runtime monitor, task judge, time budget.
   * Allocation-light: no closures or arrays are created here.
   */
  private tick(r: JointReading, sampleIndex: number): TickVerdict {
    if (this.stopRequest) return "stop";
    const t = r.t - this.t0;
    const tr = this.taskReading;
    tr.t = t;
    tr.q = r.q;
    tr.gripperWidthM = r.gripperWidthM;
    this.cfg.judge.onReading(tr);
    for (const o of this.cfg.observers) o.onReading?.(this, r);
    const v = this.cfg.monitor.tick(r, sampleIndex);
    if (v !== "ok") {
      this.stopRequest = causeOf(v);
      return "stop";
    }
    if (t >= this.cfg.budgets.timeLimitS) {
      this.stopRequest = {
        endReason: "time_limit",
        kind: "time_limit",
        message: "time limit reached",
        details: {},
      };
      return "stop";
    }
    const st = this.cfg.judge.status();
    if (st.state === "failed" || (st.state === "success" && !this.cfg.task.hidesSuccess)) {
      this.stopRequest = {
        endReason: st.state === "failed" ? "task_failed" : "success",
        kind: "task",
        message: st.state === "failed" ? st.reason : "task succeeded",
        details: {},
      };
      return "stop";
    }
    return "ok";
  }

  private onSensorEvent(e: SensorEvent): void {
    const t = e.t - this.t0;
    const dto = eventDto(e, t);
    this.pendingEvents.push(dto);
    if (e.type === "instrument") {
      let log = this.instrumentLog.get(e.name);
      if (!log) this.instrumentLog.set(e.name, (log = []));
      log.push({ t: dto.t, values: { ...e.values } });
    }
    if (e.type !== "fault") this.cfg.judge.onEvent(dto);
    for (const o of this.cfg.observers) o.onEvent?.(this, e);
    const v = this.cfg.monitor.onEvent(e);
    if (v !== "ok" && !this.stopRequest) {
      const cause = causeOf(v);
      this.stopRequest = cause;
      // a device event while idle ends the episode at once; while moving, the next tick stops
      if (!this.busy) this.applyStop(cause);
    }
  }

  private afterMotion(outcome: string, fault?: { device: string; message: string }): void {
    if (outcome === "fault" && !this.stopRequest) {
      this.stopRequest = {
        endReason: "fault",
        kind: "fault",
        message: `${fault?.device ?? "backend"}: ${fault?.message ?? "fault"}`,
        details: { ...(fault ?? {}) },
      };
    }
  }

  private checkAfterMotion(): void {
    if (this.stopRequest) {
      this.applyStop(this.stopRequest);
      return;
    }
    if (this.counters.steps >= this.cfg.budgets.maxSteps) this.end("step_limit");
    else if (this.t() >= this.cfg.budgets.timeLimitS) this.end("time_limit");
  }

  private applyStop(cause: StopCause): void {
    if (
      cause.endReason === "safety_stop" ||
      cause.endReason === "fault" ||
      cause.endReason === "task_failed"
    ) {
      if (cause.endReason !== "task_failed") this.counters.safetyStops++;
      this.safetyEvent(cause.kind, cause.message, cause.details);
      this.stopBackend(cause.message);
    }
    this.end(cause.endReason, cause.message);
  }

  /**
   * Stop the backend without waiting (from a timer or an event listener). A stop that fails
   * must not become an unhandled rejection, which would end the process: the motion is aborted
   * already; while the episode runs the failure is kept as a safety event (an ended episode's
   * record is closed).
   */
  private stopBackend(reason: string): void {
    this.cfg.backend.stop(reason).catch((err: unknown) => {
      if (this.ended) return;
      const message = err instanceof Error ? err.message : String(err);
      this.safetyEvent("fault", `stop failed: ${message}`, { device: this.cfg.backend.kind, reason });
    });
  }

  /** Record a safety event; `pending` = also report it in the next response (refusals travel in the error instead). */
  private safetyEvent(kind: string, message: string, details: Record<string, unknown>, pending = true): void {
    const ev: SafetyEventDto = { t: r6(this.t()), kind, message, details };
    if (pending) this.pendingSafety.push(ev);
    for (const o of this.cfg.observers) o.onSafety?.(this, ev);
  }

  private async captureOrFault(cameras: string[], depth: boolean): Promise<Frame[]> {
    try {
      return await this.cfg.backend.capture(cameras, { depth });
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.applyStop({
        endReason: "fault",
        kind: "fault",
        message: `camera: ${message}`,
        details: { device: "camera" },
      });
      throw new GatewayError("RB_ERR_BACKEND_FAULT", { device: "camera", reason: message });
    }
  }

  private resolveCameras(requested: readonly string[] | undefined): string[] {
    const all = this.cfg.backend.describe().cameras.map((c) => c.name);
    if (!requested) return all;
    for (const c of requested) {
      if (!all.includes(c))
        throw new GatewayError("RB_ERR_UNKNOWN_CAMERA", { camera: c, cameras: all.join(", ") });
    }
    return [...requested];
  }

  private storeFrames(frames: readonly Frame[], encoding: "jpeg" | "png", depth: boolean): FrameRefDto[] {
    this.counters.framesServed += frames.length;
    return frames.map((f) => {
      const ids = this.cfg.frames.put(f, encoding, depth);
      const ref: FrameRefDto = { camera: f.camera, t: r6(f.t - this.t0), rgb: `/v1/frames/${ids.rgb}` };
      if (ids.depth) ref.depth = `/v1/frames/${ids.depth}`;
      return ref;
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

function eventDto(e: SensorEvent, t: number): EventDto {
  const { type, t: _t, ...data } = e;
  return { type, t: r6(t), data };
}
