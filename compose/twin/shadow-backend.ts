/**
 * Shadow twin: a composite Backend in which the bench ("real", the primary) executes and a sim
 * twin receives the same accepted trajectory in lockstep from the same measured start state. The
 * gateway sees only the primary (its readings, frames, events, time); the twin's divergence is
 * kept per chunk and per trial and handed to `onDivergence` listeners (the shadow observer records
 * it on the record's /twin/divergence channel). It never goes through the sensor events: those
 * reach the agent, and the divergence (e.g. contacts the twin predicted) must not before the end.
 *
 * Lockstep: before each execute/hold the twin is put at the primary's measured state; the
 * primary's reading of each sample i is kept, and when the primary's motion returns the twin steps
 * through the same samples (in slices that yield to the event loop; its cost is bench/shadow.ts's
 * figure) and each pair of readings at the same sample is compared. Frames: whenever the primary captures, the twin renders the same
 * cameras at the same sample and the masks are compared.
 */
import type { Mat4 } from "../../robots/math.ts";
import { poseToMat4 } from "../../robots/math.ts";
import type {
  Backend,
  BackendDescription,
  ExecuteOptions,
  ExecuteResult,
  Frame,
  JointReading,
  JointTrajectory,
  SensorEventListener,
} from "../../seam/types.ts";
import type { LifecycleState } from "../../seam/lifecycle.ts";
import type { SimBackend } from "../../sim/sim-backend.ts";
import { DivergenceAccumulator, type DivergenceSummary, divergenceJson, type WireRef } from "./divergence.ts";

export interface ShadowOptions {
  /** the wire the progress is measured along (the bench's calibration); none: no progress */
  wire?: WireRef;
  /** contact edges closer than this are the same contact, s (default 0.1) */
  contactWindowS?: number;
}

export interface ChunkDivergence extends DivergenceSummary {
  chunk: number;
  kind: "execute" | "hold";
}

export class ShadowBackend implements Backend {
  readonly kind: Backend["kind"];
  private readonly listeners = new Set<SensorEventListener>();
  private readonly divergenceListeners = new Set<(c: ChunkDivergence) => void>();
  private readonly chunks: ChunkDivergence[] = [];
  private trialAcc: DivergenceAccumulator | null = null;
  private current: DivergenceAccumulator | null = null;
  /** twin time + offset = primary time (set at each sync) */
  private offsetS = 0;
  private toolFromFlange: Mat4 | null = null;
  private unsubscribe: (() => void)[] = [];
  /** every trajectory executed since the last reset, with its start (backend s) and measured start state */
  readonly executed: { traj: JointTrajectory; startS: number; start: JointReading; samples: number }[] = [];

  constructor(
    readonly primary: Backend,
    readonly twin: SimBackend,
    private readonly opts: ShadowOptions = {},
  ) {
    this.kind = primary.kind;
  }

  private get trial(): DivergenceAccumulator {
    this.trialAcc ??= this.accumulator();
    return this.trialAcc;
  }

  get lifecycle(): LifecycleState {
    return this.primary.lifecycle;
  }

  async configure(): Promise<void> {
    await this.primary.configure();
    await this.twin.configure();
    this.unsubscribe.push(
      this.primary.onEvent((e) => {
        if (e.type === "contact" && e.closed) this.current?.contact("real", e.t);
        for (const l of this.listeners) l(e);
      }),
      this.twin.onEvent((e) => {
        if (e.type === "contact" && e.closed) this.current?.contact("twin", e.t + this.offsetS);
      }),
    );
  }
  async activate(): Promise<void> {
    await this.primary.activate();
    if (this.twin.lifecycle === "inactive") {
      await this.twin.activate();
      // warm the twin's physics (JIT) up now: its first steps run inside the primary's control
      // loop, and a cold start there stalled a real bench's reading stream for ~0.6 s (stale-reading
      // stop on the rig). The twin is put at the primary's state before every chunk anyway.
      await this.twin.hold(0.25);
    }
  }
  async deactivate(): Promise<void> {
    await this.primary.deactivate();
    if (this.twin.lifecycle === "active") await this.twin.deactivate();
  }
  async shutdown(): Promise<void> {
    for (const u of this.unsubscribe.splice(0)) u();
    await this.primary.shutdown();
    await this.twin.shutdown();
  }

  describe(): BackendDescription {
    return this.primary.describe();
  }
  now(): number {
    return this.primary.now();
  }
  read(): JointReading {
    return this.primary.read();
  }
  onEvent(listener: SensorEventListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }
  async stop(reason: string): Promise<void> {
    await Promise.all([this.primary.stop(reason), this.twin.stop(reason)]);
  }
  async reset(opts: { seed: number }): Promise<void> {
    await this.primary.reset?.(opts);
    await this.twin.reset(opts);
    this.chunks.length = 0;
    this.executed.length = 0;
    this.trialAcc = null;
    this.toolFromFlange = null;
  }
  async recover(): Promise<void> {
    await this.primary.recover?.();
  }

  async execute(traj: JointTrajectory, opts: ExecuteOptions = {}): Promise<ExecuteResult> {
    const startS = this.primary.now();
    const start = this.primary.read();
    const res = await this.lockstep(
      "execute",
      opts,
      traj.count,
      (i) => this.twin.stepSample(traj, i),
      (o) => this.primary.execute(traj, o),
    );
    // a copy: the trajectory is valid only until execute settles (seam/types.ts Backend.execute)
    this.executed.push({ traj: copyTrajectory(traj), startS, start, samples: res.samplesExecuted });
    return res;
  }

  async hold(seconds: number, opts: ExecuteOptions = {}): Promise<ExecuteResult> {
    const count = Math.round(seconds / this.primary.describe().controlPeriodS);
    return this.lockstep(
      "hold",
      opts,
      count,
      () => this.twin.stepHold(),
      (o) => this.primary.hold(seconds, o),
    );
  }

  async capture(cameras: readonly string[], opts: { depth: boolean }): Promise<Frame[]> {
    const frames = await this.primary.capture(cameras, opts);
    this.trial.addImages(frames, this.twin.renderNow(cameras, false));
    return frames;
  }

  /** called at the end of every chunk with its divergence; returns the unsubscribe */
  onDivergence(listener: (c: ChunkDivergence) => void): () => void {
    this.divergenceListeners.add(listener);
    return () => {
      this.divergenceListeners.delete(listener);
    };
  }

  /** divergence of every chunk since the last reset */
  chunkDivergence(): readonly ChunkDivergence[] {
    return this.chunks;
  }

  /** divergence of the trial so far (all chunks and observes since the last reset) */
  trialDivergence(): DivergenceSummary {
    return this.trial.summary();
  }

  // ---------------------------------------------------------------------------------------

  private accumulator(): DivergenceAccumulator {
    this.toolFromFlange ??= poseToMat4(this.primary.describe().toolOffset);
    return new DivergenceAccumulator(
      this.primary.describe().robot,
      this.toolFromFlange,
      this.opts.wire ?? this.twinWire(),
      this.opts.contactWindowS ?? 0.1,
    );
  }

  /** the twin's wire (the bench's calibration) for progress; null on other scenes */
  private twinWire(): WireRef | null {
    if (this.twin.scene !== "buzzwire" || this.twin.lifecycle === "unconfigured") return null;
    const w = this.twin.currentCalibration().wire;
    return { pointsBase: w.pointsBase, startMarkM: w.startMarkM, endMarkM: w.endMarkM };
  }

  private async lockstep(
    kind: "execute" | "hold",
    opts: ExecuteOptions,
    count: number,
    step: (i: number) => JointReading,
    run: (o: ExecuteOptions) => Promise<ExecuteResult>,
  ): Promise<ExecuteResult> {
    // the same measured start state
    const start = this.primary.read();
    this.twin.syncTo(start);
    this.offsetS = this.primary.now() - this.twin.now();
    const acc = this.accumulator();
    this.current = acc;
    const cap = opts.capture;
    const twinFrames: Frame[][] = [];
    if (cap) twinFrames.push(this.twin.renderNow(cap.cameras, false));
    // the primary's control loop only keeps its readings by sample (allocation-free); the twin
    // steps after the primary's motion, in slices that yield, so a real bench's reading stream is
    // never held up by the twin (stepping inside the loop stalled the rig's ROS readings for
    // 0.6–0.8 s on a loaded machine: stale-reading stops). Same samples, same pairs, same result.
    const startNowS = this.primary.now();
    const realQ = new Float64Array(count * 7);
    const seen = new Uint8Array(count);
    const outer = opts.onTick;
    let res: ExecuteResult;
    try {
      res = await run({
        ...opts,
        onTick: (r, i) => {
          if (i >= 0 && i < count) {
            for (let j = 0; j < 7; j++) realQ[i * 7 + j] = r.q[j]!;
            seen[i] = 1;
          }
          return outer ? outer(r, i) : "ok";
        },
      });
      // the twin sees the samples the primary executed. A real primary counts the samples it has
      // readings for, which trail the robot by the transport: after a stop (e.g. on a contact the
      // box reported) the twin runs on to the samples the primary's clock says have passed, so a
      // contact the robot made is still predicted (those samples are not paired)
      const elapsed = Math.round((this.primary.now() - startNowS) / this.primary.describe().controlPeriodS);
      const upTo = Math.min(count, Math.max(res.samplesExecuted, res.outcome === "completed" ? 0 : elapsed));
      let yieldAt = performance.now() + 5;
      for (let i = 0; i < upTo; i++) {
        const tw = step(i);
        if (cap && (i + 1) % cap.everyTicks === 0) twinFrames.push(this.twin.renderNow(cap.cameras, false));
        if (seen[i] && i < res.samplesExecuted) acc.addSample(realQ.subarray(i * 7, i * 7 + 7), tw.q);
        if (performance.now() >= yieldAt) {
          await new Promise<void>((r) => setImmediate(r));
          yieldAt = performance.now() + 5;
        }
      }
    } finally {
      this.current = null;
    }
    const perCapture = Math.max(1, twinFrames[0]?.length ?? 1);
    res.frames.forEach((f, k) => {
      const tw = twinFrames[Math.floor(k / perCapture)];
      if (tw) acc.addImages([f], tw);
    });
    const chunk: ChunkDivergence = { chunk: this.chunks.length, kind, ...acc.summary() };
    this.chunks.push(chunk);
    this.trial.merge(acc);
    this.announce(chunk);
    return res;
  }

  private announce(c: ChunkDivergence): void {
    for (const l of this.divergenceListeners) l(c);
  }
}

export { divergenceJson };

function copyTrajectory(t: JointTrajectory): JointTrajectory {
  return {
    periodS: t.periodS,
    count: t.count,
    q: t.q.slice(),
    gripperWidthM: t.gripperWidthM.slice(),
    rowEndIndex: [...t.rowEndIndex],
  };
}
