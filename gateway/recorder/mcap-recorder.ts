/**
 * The episode recorder: an EpisodeObserver that writes `<recordsDir>/<episode-id>/record.mcap`
 * (topics and shapes in record-format.ts) and `result.json` next to it.
 *
 * Cost model: `onReading` runs in the control loop (up to 1 kHz). It copies the sample into
 * preallocated Float64Arrays and nothing else; a full batch (default 20 ms of readings) is handed
 * to an async pump that serialises, encodes JPEGs (sharp, off the loop) and writes. Any other
 * stream item closes the open batch first, so the file's message order (MCAP `sequence`) is the
 * order in which the episode saw readings, events and commands — replay relies on that.
 *
 * Durability: the open MCAP chunk is written to the file and fdatasync'ed (a) when the episode
 * calls `flush()` — after each act chunk, advancing observe and submission, before the response
 * that acknowledges it is sent, so whatever an agent was told happened is on disk — (b) after
 * every sensor and safety event, without waiting, and (c) every `flushIntervalMs` (default 1 s) as
 * a backstop while a long chunk runs. A crash (even SIGKILL or power loss) thus loses nothing that
 * was acknowledged; a streaming MCAP reader recovers everything up to the last flushed chunk.
 *
 * Storage errors (disk full, read-only or vanished records directory) are fatal for the episode:
 * the recorder stops recording, reports the fault through the episode's one stop path
 * (`ctx.fault`, source `storage`, code RB_ERR_STORAGE: the robot stops at once and the episode
 * ends as `fault`), calls `onError` if given, and every later `flush()` rejects with that error.
 *
 * Permissions: episode folders are created 0700 and files 0600 (owner only): the record holds the
 * hidden task instance and bench geometry, which no other account (an agent) may read.
 */
import { mkdir, open, writeFile, type FileHandle } from "node:fs/promises";
import { GatewayError } from "../errors.ts";
import { join } from "node:path";
import {
  CompressedImage as FoxgloveCompressedImage,
  Log as FoxgloveLog,
} from "@foxglove/schemas/jsonschema.js";
import { JointStates as FoxgloveJointStates } from "@foxglove/schemas/jsonschema.js";
import { FileHandleWritable } from "@mcap/nodejs";
import sharp from "sharp";
import type { ActRequest } from "../api/schemas.ts";
import type { EpisodeObserver, ObserverContext } from "../episode/observer.ts";
import { episodeResult } from "../episode/result.ts";
import type { EpisodeView as Episode, SafetyEventDto } from "../episode/view.ts";
import type { ClipEntry } from "../safety/precheck.ts";
import type { Frame, ImageData, JointReading, SensorEvent } from "../../seam/types.ts";
import { McapStreamWriter } from "./mcap-stream-writer.ts";
import type { Provenance } from "./provenance.ts";
import {
  cameraTopic,
  type CommandMessage,
  type EndMessage,
  type EventMessage,
  f64ToBase64,
  jointBatchJsonBytes,
  type JointBatchMessage,
  type MetaMessage,
  RECORD_FORMAT,
  SCHEMAS,
  TOPICS,
} from "./record-format.ts";
import { type EpisodeResult, RESULT_FORMAT } from "./result.ts";

export interface McapRecorderOptions {
  /** folder that receives `<episode-id>/record.mcap` and `result.json` */
  recordsDir: string;
  /** bench name, software version and config hashes, written to meta and result.json */
  provenance?: Provenance;
  /** TaskContext.bench for a seed (the bench's `taskBench`), recorded so grade can rebuild the judge */
  taskBench?: (seed: number) => Record<string, unknown>;
  /** episode seconds of readings per /joint_states message; default 0.02 */
  jointBatchS?: number;
  /** wall-clock interval of chunk flush + fdatasync, ms; default 1000 */
  flushIntervalMs?: number;
  /** JPEG quality for raw camera frames, 1–100; default 85 */
  jpegQuality?: number;
  /**
   * called once when writing fails, with an RB_ERR_STORAGE error and the recorded episode;
   * recording stops. The composition ends the episode as a fault from here.
   */
  onError?: (err: GatewayError, ep: Episode | undefined) => void;
  /** called after each flush with the episode time of the newest sample on disk */
  onFlush?: (info: { tS: number; bytes: number }) => void;
}

/** What the recorder left behind. */
export interface RecordOutcome {
  recordPath: string;
  resultPath: string;
  result?: EpisodeResult;
  error?: Error;
}

interface SchemaDef {
  title: string;
}

type Item =
  | { kind: "json"; topic: string; schema: SchemaDef; tS: number; seq: number; payload: unknown }
  | { kind: "joints"; tS: number; seq: number; batch: OpenBatch }
  | {
      kind: "camera";
      topic: string;
      tS: number;
      seq: number;
      data: Promise<unknown>;
      /** ends the frame store's count of this image and its encoded copies (after the write) */
      release: () => void;
    }
  | { kind: "flush"; waiters?: Waiter[] }
  | { kind: "close" };

/** One batch of readings in preallocated arrays. */
interface OpenBatch {
  n: number;
  t: Float64Array;
  q: Float64Array;
  dq: Float64Array;
  tau: Float64Array | undefined;
  gripper: Float64Array;
}

interface Waiter {
  resolve: () => void;
  reject: (e: Error) => void;
}

/** Owner-only modes: the record holds the hidden task instance. */
export const RECORD_DIR_MODE = 0o700;
export const RECORD_FILE_MODE = 0o600;

/** The coded error of a failed write under `dir`. */
export function storageError(dir: string, err: unknown): GatewayError {
  if (err instanceof GatewayError && err.code === "RB_ERR_STORAGE") return err;
  const e = err as NodeJS.ErrnoException;
  const msg = String(e?.message ?? err);
  const reason = e?.code && !msg.startsWith(e.code) ? `${e.code}: ${msg}` : msg;
  return new GatewayError("RB_ERR_STORAGE", { dir, reason, ...(e?.code ? { errno: e.code } : {}) });
}

const UTF8 = new TextEncoder();

const LOG_LEVEL = { info: 2, warning: 3, error: 4 } as const;

export class McapRecorder implements EpisodeObserver {
  private readonly opts: Required<
    Omit<McapRecorderOptions, "provenance" | "taskBench" | "onError" | "onFlush">
  > &
    McapRecorderOptions;
  private t0 = 0;
  private startWallNs = 0n;
  private dof = 7;
  private capacity = 64;
  private batch: OpenBatch | undefined;
  private batchStartT = 0;
  private seq = 0;
  private readonly queue: Item[] = [];
  private pumping = false;
  private kickScheduled = false;
  private timer: NodeJS.Timeout | undefined;
  private handle: FileHandle | undefined;
  private writer: McapStreamWriter | undefined;
  /** the joint batches' JSON bytes are written here (grown when a batch needs more) */
  private batchBytes: Uint8Array = new Uint8Array(8192);
  private opened: Promise<void> | undefined;
  private readonly channelIds = new Map<string, number>();
  private readonly schemaIds = new Map<string, number>();
  private lastT = 0;
  private error: GatewayError | undefined;
  private episode: Episode | undefined;
  private ctx: ObserverContext | undefined;
  private closed = false;
  /** waiters of the flush item still in the queue, if any (flush() calls in a row share it) */
  private pendingFlush: Waiter[] | undefined;
  private finished!: (o: RecordOutcome) => void;
  private recordPath = "";
  private resultPath = "";
  private result: EpisodeResult | undefined;
  private readonly resultExtras: Partial<EpisodeResult> = {};
  private jointNames: string[] = [];
  /** resolves when record.mcap is closed and result.json written (or recording failed) */
  readonly done: Promise<RecordOutcome>;

  constructor(options: McapRecorderOptions) {
    this.opts = { jointBatchS: 0.02, flushIntervalMs: 1000, jpegQuality: 85, ...options };
    this.done = new Promise((res) => {
      this.finished = res;
    });
  }

  /** path of record.mcap (set at episode start) */
  get path(): string {
    return this.recordPath;
  }

  // ------------------------------------------------------------------ observer

  onStart(ep: Episode, ctx?: ObserverContext): void {
    const c = ep.config;
    const desc = c.backend.describe();
    this.dof = desc.robot.dof;
    this.jointNames = desc.robot.joints.map((j) => j.name);
    this.capacity = Math.max(1, Math.ceil(this.opts.jointBatchS / desc.controlPeriodS) + 1);
    // backend seconds at episode t = 0, exactly as the episode computes `r.t - t0`
    this.t0 = ep.t0S;
    this.startWallNs = BigInt(ep.startedAt.getTime()) * 1_000_000n;
    this.episode = ep;
    this.ctx = ctx;
    const dir = join(this.opts.recordsDir, ep.id);
    this.recordPath = join(dir, "record.mcap");
    this.resultPath = join(dir, "result.json");
    ctx?.recordAt(this.recordPath);
    this.opened = this.open(dir);
    this.opened.catch(() => {}); // the pump awaits it and reports the failure

    const meta: MetaMessage = {
      format: RECORD_FORMAT,
      episode_id: ep.id,
      task: c.task.id,
      level: c.level,
      setting: c.setting,
      seed: c.seed,
      task_card: {
        title: c.task.title,
        instruction: c.task.instruction(c.level, c.setting, c.budgets),
        budgets: c.budgets,
        hides_success: c.task.hidesSuccess,
      },
      robot: desc.robot.id,
      joint_names: this.jointNames,
      tool_from_flange: Array.from(c.toolFromFlange),
      task_bench: c.taskContext?.bench ?? this.opts.taskBench?.(c.seed) ?? {},
      backend: c.backend.kind,
      control_period_s: desc.controlPeriodS,
      t0_backend_s: this.t0,
      started_at: ep.startedAt.toISOString(),
      ...(this.opts.provenance ? { provenance: this.opts.provenance } : {}),
      joint_batch_s: this.opts.jointBatchS,
      ...(c.realtime
        ? {
            realtime: {
              drive: c.realtime.drive,
              slowdown: c.realtime.slowdown,
              margin_steps: c.realtime.marginSteps,
              horizon_steps: c.realtime.horizonSteps,
              late_tolerance_s: c.realtime.lateToleranceS,
              command_gap_s: c.realtime.commandGapS,
              ...(c.realtime.measuredSpeed !== undefined ? { measured_speed: c.realtime.measuredSpeed } : {}),
            },
          }
        : {}),
    };
    this.json(TOPICS.meta, SCHEMAS.meta, 0, meta);
    this.json(TOPICS.instance, SCHEMAS.instance, 0, { instance: c.instance });
    // the first chunk (meta, instance) goes to disk at once: even an early crash leaves a gradeable header
    this.push({ kind: "flush" });
    this.timer = setInterval(() => this.requestFlush(), this.opts.flushIntervalMs);
    this.timer.unref();
  }

  /** Control loop: copy the sample into the open batch. No allocation except once per batch. */
  onReading(_ep: Episode, r: JointReading): void {
    if (this.error) return;
    const t = r.t - this.t0;
    let b = this.batch;
    if (!b) {
      b = this.batch = this.newBatch(r.tau !== undefined);
      this.batchStartT = t;
    }
    const i = b.n;
    const dof = this.dof;
    b.t[i] = t;
    for (let j = 0; j < dof; j++) {
      b.q[i * dof + j] = r.q[j]!;
      b.dq[i * dof + j] = r.dq[j]!;
    }
    if (b.tau && r.tau) for (let j = 0; j < dof; j++) b.tau[i * dof + j] = r.tau[j]!;
    b.gripper[i] = r.gripperWidthM;
    b.n = i + 1;
    if (b.n === this.capacity || t - this.batchStartT >= this.opts.jointBatchS - 1e-9) this.closeBatch();
  }

  onCommand(ep: Episode, req: ActRequest, clipped: readonly ClipEntry[], accepted: boolean): void {
    const msg: CommandMessage = {
      t: ep.t(),
      request: req,
      clipped: clipped.map((c) => ({ ...c })),
      accepted,
    };
    this.json(TOPICS.commands, SCHEMAS.command, msg.t, msg);
  }

  onEvent(_ep: Episode, e: SensorEvent): void {
    const { type, t: tb, ...data } = e;
    const msg: EventMessage = { type, t: tb - this.t0, data };
    this.json(TOPICS.events, SCHEMAS.event, msg.t, msg);
    const level =
      type === "fault" ? LOG_LEVEL.error : type === "contact" ? LOG_LEVEL.warning : LOG_LEVEL.info;
    this.log(msg.t, level, "events", `${type} ${JSON.stringify(data)}`);
    this.requestFlush();
  }

  onSafety(_ep: Episode, e: SafetyEventDto): void {
    this.json(TOPICS.safety, SCHEMAS.safety, e.t, e);
    this.log(e.t, e.kind === "refused" ? LOG_LEVEL.warning : LOG_LEVEL.error, "safety", e.message);
    this.requestFlush();
  }

  onObservation(ep: Episode, id: string, r: JointReading, frames: readonly Frame[]): void {
    const t = r.t - this.t0;
    this.json(TOPICS.observations, SCHEMAS.observation, t, {
      t,
      observation_id: id,
      cameras: frames.map((f) => f.camera),
    });
    this.onFrames(ep, frames);
  }

  onInstrumentRead(_ep: Episode, id: string, name: string, t: number): void {
    this.json(TOPICS.observations, SCHEMAS.observation, t, {
      t,
      observation_id: id,
      cameras: [],
      instrument: name,
    });
  }

  /**
   * Camera frames (observations call it; `act` videos need the episode to call it too).
   * Raw images are JPEG-encoded asynchronously, off the control loop. Until an image is written,
   * it and its encoded copies (JPEG, base64, JSON) count against the frame store's budget, so a
   * backlog of the recorder refuses new captures (503) instead of growing memory; only the RGB
   * image is kept (a depth plane is not recorded and not held).
   */
  onFrames(ep: Episode, frames: readonly Frame[]): void {
    if (this.error) return;
    this.closeBatch();
    for (const f of frames) {
      const tS = f.t - this.t0;
      const img = f.rgb;
      const copies = img.kind === "raw" ? Math.ceil(img.data.byteLength / 2) : img.data.byteLength * 3;
      const release = ep.config.frames.hold([img.data], copies);
      const data = this.compressedImage(f.camera, img, tS);
      data.catch(() => {}); // awaited (and its failure handled) by the pump, in order
      this.push({ kind: "camera", topic: cameraTopic(f.camera), tS, seq: this.seq++, data, release });
    }
  }

  /**
   * A message on a channel another observer owns (e.g. the shadow twin's /twin/divergence),
   * written in order with the episode's own messages. Ignored after the end.
   */
  recordJson(topic: string, schema: SchemaDef, tS: number, payload: unknown): void {
    if (this.closed) return;
    this.json(topic, schema, tS, payload);
  }

  /** Fields another observer adds to result.json (call before this recorder's onEnd). */
  addToResult(extra: Pick<EpisodeResult, "twin_divergence">): void {
    Object.assign(this.resultExtras, extra);
  }

  onSubmit(ep: Episode, answer: unknown, evidence: readonly string[]): void {
    const t = ep.t();
    this.json(TOPICS.submission, SCHEMAS.submission, t, { t, answer, evidence: [...evidence] });
    this.requestFlush();
  }

  /**
   * Write everything recorded so far to the file and fdatasync it. The episode awaits this after
   * a chunk, an advancing observe or a submission, before it acknowledges the call. Rejects with
   * the RB_ERR_STORAGE error when the record cannot be written; resolves at once after the end.
   */
  flush(): Promise<void> {
    if (this.error) return Promise.reject(this.error);
    if (!this.opened) return Promise.resolve(); // no episode yet: nothing recorded
    if (this.closed) return this.done.then((o) => (o.error ? Promise.reject(o.error) : undefined));
    this.closeBatch();
    return new Promise<void>((resolve, reject) => {
      const w: Waiter = { resolve, reject };
      // a flush item still queued behind nothing else covers this call too
      const last = this.queue[this.queue.length - 1];
      if (last?.kind === "flush" && this.pendingFlush && last.waiters === this.pendingFlush) {
        this.pendingFlush.push(w);
        return;
      }
      this.pendingFlush = [w];
      this.push({ kind: "flush", waiters: this.pendingFlush });
    });
  }

  onEnd(ep: Episode): void {
    if (this.timer) clearInterval(this.timer);
    if (this.closed) return;
    this.closed = true;
    // the episode's own end time: a real clock has moved on since end() was called
    const t = ep.endT ?? ep.t();
    const endedAt = new Date().toISOString();
    const end: EndMessage = {
      reason: ep.endReason ?? "aborted",
      ...(ep.endDetail ? { detail: ep.endDetail } : {}),
      t,
      counters: { ...ep.counters },
      started_at: ep.startedAt.toISOString(),
      ended_at: endedAt,
      ...(ep.realtimeStatus?.() ? { realtime: ep.realtimeStatus()! } : {}),
    };
    const live = ep.result as Partial<EpisodeResult> | undefined;
    const result =
      live?.format === RESULT_FORMAT
        ? (live as EpisodeResult)
        : episodeResult(
            ep,
            { reason: end.reason, ...(end.detail ? { detail: end.detail } : {}), tS: t },
            this.opts.provenance,
          );
    this.result = { ...result, ...this.resultExtras };
    this.json(TOPICS.end, SCHEMAS.end, t, end);
    this.json(TOPICS.result, SCHEMAS.result, t, this.result);
    this.push({ kind: "close" });
  }

  // ------------------------------------------------------------------ internals

  /** written batches, for reuse (a batch's arrays serve again once its bytes are in the chunk) */
  private readonly spareBatches: OpenBatch[] = [];

  private newBatch(withTau: boolean): OpenBatch {
    const spare = this.spareBatches.pop();
    if (spare && (spare.tau !== undefined) === withTau) {
      spare.n = 0;
      return spare;
    }
    const cap = this.capacity;
    const dof = this.dof;
    return {
      n: 0,
      t: new Float64Array(cap),
      q: new Float64Array(cap * dof),
      dq: new Float64Array(cap * dof),
      tau: withTau ? new Float64Array(cap * dof) : undefined,
      gripper: new Float64Array(cap),
    };
  }

  private closeBatch(): void {
    const b = this.batch;
    if (!b || b.n === 0) return;
    this.batch = undefined;
    this.push({ kind: "joints", tS: b.t[0]!, seq: this.seq++, batch: b });
  }

  private json(topic: string, schema: SchemaDef, tS: number, payload: unknown): void {
    if (this.error) return;
    this.closeBatch();
    this.push({ kind: "json", topic, schema, tS, seq: this.seq++, payload });
  }

  private log(tS: number, level: number, name: string, message: string): void {
    this.json(TOPICS.log, FoxgloveLog, tS, {
      timestamp: this.stamp(tS),
      level,
      message,
      name,
      file: "",
      line: 0,
    });
  }

  private requestFlush(): void {
    if (this.error || this.closed) return;
    this.closeBatch();
    const last = this.queue[this.queue.length - 1];
    if (last?.kind === "flush") return;
    this.push({ kind: "flush" });
  }

  private push(item: Item): void {
    this.queue.push(item);
    if (this.pumping || this.kickScheduled) return;
    this.kickScheduled = true;
    setImmediate(() => {
      this.kickScheduled = false;
      void this.pump();
    });
  }

  private stamp(tS: number): { sec: number; nsec: number } {
    const ns = this.logTime(tS);
    return { sec: Number(ns / 1_000_000_000n), nsec: Number(ns % 1_000_000_000n) };
  }

  private logTime(tS: number): bigint {
    return this.startWallNs + BigInt(Math.max(0, Math.round(tS * 1e9)));
  }

  private async open(dir: string): Promise<void> {
    await mkdir(dir, { recursive: true, mode: RECORD_DIR_MODE });
    this.handle = await open(this.recordPath, "wx", RECORD_FILE_MODE);
    this.writer = new McapStreamWriter(new FileHandleWritable(this.handle));
    await this.writer.start("robot-gateway");
  }

  private async channel(
    topic: string,
    schema: SchemaDef,
    metadata: Record<string, string> = {},
  ): Promise<number> {
    let id = this.channelIds.get(topic);
    if (id !== undefined) return id;
    const w = this.writer!;
    let schemaId = this.schemaIds.get(schema.title);
    if (schemaId === undefined) {
      schemaId = await w.registerSchema({
        name: schema.title,
        encoding: "jsonschema",
        data: UTF8.encode(JSON.stringify(schema)),
      });
      this.schemaIds.set(schema.title, schemaId);
    }
    id = await w.registerChannel({
      topic,
      schemaId,
      messageEncoding: "json",
      metadata: new Map(Object.entries(metadata)),
    });
    this.channelIds.set(topic, id);
    return id;
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      await this.opened;
      while (this.queue.length > 0 && !this.error) {
        const batch = this.queue.splice(0, this.queue.length);
        for (const item of batch) {
          if (this.error) break;
          await this.write(item);
        }
      }
    } catch (err) {
      this.fail(err);
    } finally {
      this.pumping = false;
    }
    if (this.queue.length > 0 && !this.error) void this.pump();
  }

  private async write(item: Item): Promise<void> {
    const w = this.writer!;
    switch (item.kind) {
      case "json": {
        const meta: Record<string, string> = item.topic === TOPICS.instance ? { audience: "operator" } : {};
        const ch = await this.channel(item.topic, item.schema, meta);
        await this.add(ch, item.seq, item.tS, UTF8.encode(JSON.stringify(item.payload)));
        return;
      }
      case "joints": {
        const b = item.batch;
        const lastT = b.t[b.n - 1]!;
        const ch =
          this.channelIds.get(TOPICS.jointStates) ??
          (await this.channel(TOPICS.jointStates, SCHEMAS.jointBatch));
        // the MCAP chunk copies the bytes at once: one scratch buffer serves every batch
        const bytes =
          jointBatchJsonBytes(b, this.dof, this.batchBytes) ??
          UTF8.encode(JSON.stringify(this.batchMessage(b)));
        if (bytes.buffer !== this.batchBytes.buffer) this.batchBytes = new Uint8Array(bytes.buffer);
        await this.add(ch, item.seq, item.tS, bytes);
        const pv =
          this.channelIds.get(TOPICS.jointStatesPreview) ??
          (await this.channel(TOPICS.jointStatesPreview, FoxgloveJointStates));
        await this.add(pv, item.seq, lastT, UTF8.encode(JSON.stringify(this.preview(b))));
        if (this.spareBatches.length < 4) this.spareBatches.push(b);
        return;
      }
      case "camera": {
        try {
          const payload = await item.data;
          const ch = await this.channel(item.topic, FoxgloveCompressedImage);
          await this.add(ch, item.seq, item.tS, UTF8.encode(JSON.stringify(payload)));
        } finally {
          item.release();
        }
        return;
      }
      case "flush": {
        if (item.waiters === this.pendingFlush) this.pendingFlush = undefined;
        try {
          await w.flushChunk();
          await this.handle!.datasync();
        } catch (e) {
          const err = storageError(this.opts.recordsDir, e);
          for (const x of item.waiters ?? []) x.reject(err);
          throw err;
        }
        for (const x of item.waiters ?? []) x.resolve();
        this.opts.onFlush?.({ tS: this.lastT, bytes: Number(await this.size()) });
        return;
      }
      case "close": {
        await w.end();
        await this.handle!.datasync();
        await this.handle!.close();
        this.handle = undefined;
        if (this.result) {
          await writeFile(this.resultPath, `${JSON.stringify(this.result, null, 2)}\n`, {
            mode: RECORD_FILE_MODE,
            flag: "wx",
          });
        }
        this.finished({
          recordPath: this.recordPath,
          resultPath: this.resultPath,
          ...(this.result ? { result: this.result } : {}),
        });
        return;
      }
    }
  }

  private async size(): Promise<bigint> {
    return BigInt((await this.handle!.stat()).size);
  }

  private async add(channelId: number, sequence: number, tS: number, data: Uint8Array): Promise<void> {
    if (tS > this.lastT) this.lastT = tS;
    const logTime = this.logTime(tS);
    await this.writer!.addMessage({ channelId, sequence, logTime, publishTime: logTime, data });
  }

  /** The /joint_states message of a batch (exact float64, base64). */
  private batchMessage(b: OpenBatch): JointBatchMessage {
    const n = b.n;
    const nd = n * this.dof;
    return {
      encoding: "f64le-base64",
      n,
      dof: this.dof,
      t_first: b.t[0]!,
      t_last: b.t[n - 1]!,
      t: f64ToBase64(b.t, n),
      q: f64ToBase64(b.q, nd),
      dq: f64ToBase64(b.dq, nd),
      ...(b.tau ? { tau: f64ToBase64(b.tau, nd) } : {}),
      gripper_width_m: f64ToBase64(b.gripper, n),
    };
  }

  /** foxglove.JointStates of the batch's last sample (a light channel Foxglove can plot). */
  private preview(b: OpenBatch): unknown {
    const dof = this.dof;
    const last = b.n - 1;
    return {
      timestamp: this.stamp(b.t[last]!),
      joints: [
        ...this.jointNames.map((name, j) => ({
          name,
          position: b.q[last * dof + j]!,
          velocity: b.dq[last * dof + j]!,
        })),
        { name: "gripper_width", position: b.gripper[last]! },
      ],
    };
  }

  private async compressedImage(camera: string, img: ImageData, tS: number): Promise<unknown> {
    let format: string;
    let bytes: Uint8Array;
    if (img.kind === "encoded") {
      format = img.format;
      bytes = img.data;
    } else {
      format = "jpeg";
      bytes = await sharp(Buffer.from(img.data.buffer, img.data.byteOffset, img.data.byteLength), {
        raw: { width: img.width, height: img.height, channels: img.channels },
      })
        .jpeg({ quality: this.opts.jpegQuality })
        .toBuffer();
    }
    return {
      timestamp: this.stamp(tS),
      frame_id: camera,
      data: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64"),
      format,
    };
  }

  private fail(err: unknown): void {
    if (this.error) return;
    this.error = storageError(this.opts.recordsDir, err);
    if (this.timer) clearInterval(this.timer);
    for (const item of this.queue) {
      if (item.kind === "camera") item.release();
      if (item.kind === "flush") for (const x of item.waiters ?? []) x.reject(this.error);
    }
    this.queue.length = 0;
    this.pendingFlush = undefined;
    this.ctx?.fault({
      source: "storage",
      code: "RB_ERR_STORAGE",
      detail: `${this.error.code}: ${this.error.message}`,
    });
    this.opts.onError?.(this.error, this.episode);
    void this.handle?.close().catch(() => {});
    this.finished({ recordPath: this.recordPath, resultPath: this.resultPath, error: this.error });
  }
}

/** An observers factory for the Gateway's `observers` option: one recorder per episode. */
export function recorderObservers(options: McapRecorderOptions): () => McapRecorder[] {
  return () => [new McapRecorder(options)];
}
