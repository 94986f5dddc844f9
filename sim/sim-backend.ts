/**
 * The simulated benches behind the Backend seam: the buzz-wire bench (default) and the pendulum
 * bench (`scene: "pendulum"`, a measurement apparatus with a photogate, see sim/pendulum/).
 *
 * Time is simulated: `execute` steps physics one control period per trajectory sample as fast
 * as the CPU allows, and `now()` is the number of steps taken × the period (monotonic over
 * resets). Everything is deterministic: the same seed and the same commands give bit-identical
 * readings, events and frames (no Math.random, no wall clock in the physics path).
 *
 * Lifecycle (the one table of seam/lifecycle.ts): `unconfigured` → configure() builds the world →
 * `inactive` (read, capture, reset, snapshot) → activate() → `active` (motion) → deactivate() /
 * shutdown() (frees WASM memory).
 *
 * Scenes: everything that differs between benches sits behind `BenchScene` (sim/bench-scene.ts):
 * start placement, per-step events, snapshot state, ground truth; `SCENES` says how each is built.
 */
import type { Calibration, CameraCalibration } from "../calibration/schema.ts";
import { LifecycleComponent, type LifecycleState } from "../seam/lifecycle.ts";
import {
  assertMotionArgs,
  type Backend,
  type BackendDescription,
  type CameraDescription,
  type ExecuteOptions,
  type ExecuteResult,
  type Frame,
  type JointReading,
  type JointTrajectory,
  type RealtimeDrive,
  type SensorEvent,
  type SensorEventListener,
  type SimPowers,
  TICK_FAULT,
} from "../seam/types.ts";
import { type Mat4, type Pose, poseToMat4 } from "../robots/math.ts";
import type { RobotModel } from "../robots/types.ts";
import { Rasterizer } from "./render/rasterizer.ts";
import type { Scene } from "./render/scene.ts";
import { sampleBenchCalibration } from "./buzzwire/bench.ts";
import type { BenchPhysicsOptions, BenchScene, SimSceneName } from "./bench-scene.ts";
import { BuzzWireBench, HANDLE_GRIP_WIDTH_M } from "./buzzwire/scene.ts";
import { cameraSeamPose, clonePose, worldFromCamera } from "../calibration/camera-pose.ts";
import { type PendulumBenchSpec, samplePendulumBench } from "./pendulum/bench.ts";
import { PendulumBench } from "./pendulum/scene.ts";
import { type ServoParams, type ServoState, servoAtRest, servoParams, servoStep } from "./servo.ts";
import { type RealismParams, SensorRealism } from "./sensors/realism.ts";
import { BLUR_MIN_PX, ExposureMotion } from "./sensors/motion-blur.ts";
import { loadRapier, type Rapier } from "./world.ts";

export type { SimSceneName };
export { HANDLE_GRIP_WIDTH_M };
export { PHOTOGATE } from "./pendulum/scene.ts";

export interface SimBackendOptions {
  robot: RobotModel;
  /** which bench to build (default "buzzwire") */
  scene?: SimSceneName;
  /** seed of the first bench (wire sampling when no calibration is given) */
  seed: number;
  /** a real bench's calibration: the sim becomes its digital twin (the wire is not sampled) */
  calibration?: Calibration;
  /** contact prediction distance, m (default 3 mm: above the 1.7 mm a 1.7 m/s tool moves per ms) */
  predictionDistanceM?: number;
  /** servo proportional gain, 1/s */
  servoKpPerS?: number;
  /**
   * The abort signal is checked at every control step; this sets how often the event loop runs
   * during execute/hold, so that an abort from outside the loop (an e-stop request, the
   * watchdog, a signal, a device event) can fire at all:
   * - `yieldSliceMs` (default 0.25): after at most this much wall time of stepping — the cost is
   *   one clock read per step and one event-loop turn per slice (≈1 % of throughput), and an
   *   outside abort waits at most one slice of wall time, then stops at the next step;
   * - `yieldEveryTicks`: instead, after every this many ticks (1 = every step; 0 = never, for
   *   physics benchmarks only). bench/sim-abort-poll.ts measures both against the old cadence.
   */
  yieldSliceMs?: number;
  yieldEveryTicks?: number;
  /**
   * Sensor realism (camera noise, depth holes, latencies, domain randomisation per seed; see
   * sim/sensors/realism.ts and docs/sensor-realism.md); absent or false: ideal sensors.
   */
  realism?: RealismParams | false;
  /** servo overrides (e.g. a perturbed "real" sim in tests, or a fitted twin): see ServoParams */
  servo?: { kpPerS?: number; kpPerJoint?: readonly number[]; delayTicks?: number };
}

const SNAPSHOT_MAGIC = "robot-gateway/sim-snapshot/2";

/** How to build each bench: from a given description (a snapshot's), else sampled from the seed. */
const SCENES: {
  [K in SimSceneName]: (ctx: {
    R: Rapier;
    robot: RobotModel;
    physics: BenchPhysicsOptions;
    seed: number;
    given: unknown;
    opts: SimBackendOptions;
  }) => BenchScene;
} = {
  // a given calibration makes the sim a real bench's digital twin (the wire is not sampled)
  buzzwire: ({ R, robot, physics, seed, given, opts }) =>
    new BuzzWireBench(
      R,
      robot,
      (given as Calibration | undefined) ?? opts.calibration ?? sampleBenchCalibration(robot, seed),
      physics,
    ),
  pendulum: ({ R, robot, physics, seed, given }) =>
    new PendulumBench(
      R,
      robot,
      (given as PendulumBenchSpec | undefined) ?? samplePendulumBench(robot, seed),
      physics,
    ),
};

export function createSimBackend(opts: SimBackendOptions): SimBackend {
  return new SimBackend(opts);
}

export class SimBackend extends LifecycleComponent implements Backend, SimPowers {
  readonly kind = "sim" as const;
  private R: Rapier | null = null;
  private bench: BenchScene | null = null;
  private basePose: Pose = { xyz: [0, 0, 0], quat_xyzw: [0, 0, 0, 1] };
  private toolOffset: Pose = { xyz: [0, 0, 0], quat_xyzw: [0, 0, 0, 1] };
  private startGripperM = HANDLE_GRIP_WIDTH_M;
  private seed: number;
  private readonly params: ServoParams;
  private servo: ServoState;
  /** the last commanded target (held between motions) */
  private target: Float64Array;
  private targetGripperM: number;
  private steps = 0;
  private contactClosed = false;
  private collisions = new Set<string>();
  private readonly listeners = new Set<SensorEventListener>();
  /** emit, bound once (the scene's afterStep runs per tick) */
  private readonly emitEvent = (e: SensorEvent) => this.emit(e);
  private stopRequested = false;
  private readonly rasterizers = new Map<string, Rasterizer>();
  private cameras: CameraDescription[] = [];
  private startQ: number[] = [];
  private readonly dt: number;
  /** scratch matrices for camera poses (frame capture) */
  private readonly toolM = new Float64Array(16);
  private readonly camM = new Float64Array(16);
  private readonly camScratchM = new Float64Array(16);
  /** motion blur: the exposure's image motion and its scratch (poses at its start and end) */
  private readonly exposure = new ExposureMotion();
  private posesA = new Float64Array(0);
  private posesB = new Float64Array(0);
  private readonly qA = new Float64Array(7);
  private readonly qB = new Float64Array(7);
  private readonly camA = new Float64Array(16);
  private readonly camB = new Float64Array(16);
  /** sensor realism of the current seed (null: ideal sensors) */
  private realism: SensorRealism | null = null;
  /** the last `histLen` measured states (for reading and frame latency), ring by step */
  private histLen = 1;
  private histQ = new Float64Array(7);
  private histDq = new Float64Array(7);
  private histG = new Float64Array(1);
  /** command delay line (servo.delayTicks + 1 slots, by step) */
  private delayQ: Float64Array;
  private delayG: Float64Array;

  constructor(private readonly opts: SimBackendOptions) {
    super();
    this.seed = opts.seed;
    this.dt = opts.robot.controlPeriodS;
    this.params = servoParams(opts.robot, opts.servo?.kpPerS ?? opts.servoKpPerS);
    if (opts.servo?.kpPerJoint) this.params.kpPerJoint = Float64Array.from(opts.servo.kpPerJoint);
    const delay = opts.servo?.delayTicks ?? 0;
    if (!(Number.isInteger(delay) && delay >= 0))
      throw new RangeError(`servo.delayTicks must be a whole number ≥ 0, got ${delay}`);
    this.params.delayTicks = delay;
    this.delayQ = new Float64Array((delay + 1) * 7);
    this.delayG = new Float64Array(delay + 1);
    this.servo = servoAtRest(opts.robot.homeQ, HANDLE_GRIP_WIDTH_M);
    this.target = Float64Array.from(opts.robot.homeQ);
    this.targetGripperM = HANDLE_GRIP_WIDTH_M;
  }

  protected override async onConfigure(): Promise<void> {
    this.R = await loadRapier();
    this.build(this.seed);
  }

  protected override async onDeactivate(): Promise<void> {
    this.holdHere();
  }

  protected override async onShutdown(_from: LifecycleState): Promise<void> {
    this.stopRequested = true;
    this.bench?.free();
    this.bench = null;
    this.rasterizers.clear();
  }

  /** the world stays as it is (readings and frames go on); a running motion stops and holds */
  protected override onError(): void {
    this.stopRequested = true;
    if (this.bench) this.holdHere();
  }

  describe(): BackendDescription {
    this.guard("describe");
    return {
      robot: this.opts.robot,
      cameras: this.cameras.map((c) => ({ ...c, distortion: [...c.distortion] })),
      controlPeriodS: this.dt,
      basePose: clonePose(this.basePose),
      toolOffset: clonePose(this.toolOffset),
    };
  }

  now(): number {
    return this.steps * this.dt;
  }

  read(): JointReading {
    this.guard("read");
    const re = this.realism;
    if (!re) {
      // copied by index: Array.from(Float64Array) goes through the iterator protocol (an iterator
      // and one result object per element, ≈1.6 KB per reading at 1 kHz: a scavenge every
      // ~150 ms, each a 1–3 ms pause of the gateway's loop that a stop could land in)
      const q = new Array<number>(7);
      const dq = new Array<number>(7);
      const sq = this.servo.q;
      const sdq = this.servo.dq;
      for (let j = 0; j < 7; j++) {
        q[j] = sq[j]!;
        dq[j] = sdq[j]!;
      }
      return { t: this.now(), q, dq, gripperWidthM: this.servo.gripperWidthM };
    }
    // a reading measured `lag` periods ago, with encoder noise of that step
    const lag = Math.min(re.readingLagTicks(this.dt), this.steps, this.histLen - 1);
    const step = this.steps - lag;
    const k = step % this.histLen;
    const q = new Array<number>(7);
    const dq = new Array<number>(7);
    for (let j = 0; j < 7; j++) {
      q[j] = this.histQ[k * 7 + j]! + re.jointNoise(step, j);
      dq[j] = this.histDq[k * 7 + j]!;
    }
    return { t: step * this.dt, q, dq, gripperWidthM: this.histG[k]! };
  }

  async execute(traj: JointTrajectory, opts: ExecuteOptions = {}): Promise<ExecuteResult> {
    this.checkExecute(traj);
    return this.run(traj.count, opts, traj);
  }

  private checkExecute(traj: JointTrajectory): void {
    this.guard("execute");
    if (Math.abs(traj.periodS - this.dt) > 1e-12)
      throw new Error(`trajectory period ${traj.periodS} s differs from the control period ${this.dt} s`);
    if (traj.q.length < traj.count * 7 || traj.gripperWidthM.length < traj.count)
      throw new Error("trajectory arrays are shorter than its sample count");
  }

  async hold(seconds: number, opts: ExecuteOptions = {}): Promise<ExecuteResult> {
    this.guard("hold");
    assertMotionArgs("hold", opts, seconds);
    return this.run(Math.round(seconds / this.dt), opts, null);
  }

  async capture(cameras: readonly string[], opts: { depth: boolean }): Promise<Frame[]> {
    this.guard("capture");
    return this.render(cameras, opts.depth);
  }

  onEvent(listener: SensorEventListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** The sim runs the realtime queue stepped: the gateway hands it the due steps (seam RealtimeDrive). */
  realtimeDrive(): RealtimeDrive {
    return { kind: "stepped", runNow: this.runNowBound };
  }

  private readonly runNowBound = (traj: JointTrajectory, opts: ExecuteOptions) => this.runNow(traj, opts);

  async stop(_reason: string): Promise<void> {
    this.stopRequested = true;
    if (this.bench) this.holdHere();
  }

  async reset(opts: { seed: number }): Promise<void> {
    this.guard("reset");
    this.stopRequested = true;
    this.seed = opts.seed;
    this.build(opts.seed);
  }

  snapshot(): Uint8Array {
    this.guard("snapshot");
    const bench = this.bench!;
    const header = JSON.stringify({
      magic: SNAPSHOT_MAGIC,
      scene: bench.kind,
      seed: this.seed,
      description: bench.description,
      sceneState: bench.saveState(),
      steps: this.steps,
      servo: {
        q: Array.from(this.servo.q),
        dq: Array.from(this.servo.dq),
        qRefPrev: Array.from(this.servo.qRefPrev),
        gripperWidthM: this.servo.gripperWidthM,
      },
      target: Array.from(this.target),
      targetGripperM: this.targetGripperM,
      contactClosed: this.contactClosed,
      collisions: [...this.collisions],
      history: this.realism
        ? { q: Array.from(this.histQ), dq: Array.from(this.histDq), g: Array.from(this.histG) }
        : null,
    });
    const head = new TextEncoder().encode(header);
    const world = bench.physics.takeSnapshot();
    const out = new Uint8Array(4 + head.length + world.length);
    new DataView(out.buffer).setUint32(0, head.length, true);
    out.set(head, 4);
    out.set(world, 4 + head.length);
    return out;
  }

  restore(snap: Uint8Array): void {
    this.guard("restore");
    const len = new DataView(snap.buffer, snap.byteOffset, snap.byteLength).getUint32(0, true);
    const h = JSON.parse(new TextDecoder().decode(snap.subarray(4, 4 + len))) as SnapshotHeader;
    if (h.magic !== SNAPSHOT_MAGIC) throw new Error("not a simulator snapshot");
    this.stopRequested = true;
    if (h.scene !== this.bench!.kind) throw new Error(`snapshot of another scene than "${this.scene}"`);
    if (JSON.stringify(h.description) !== JSON.stringify(this.bench!.description))
      this.build(h.seed, h.description);
    this.seed = h.seed;
    const bench = this.bench!;
    bench.physics.restoreSnapshot(snap.subarray(4 + len));
    bench.restoreState(h.sceneState);
    this.steps = h.steps;
    this.servo = {
      q: Float64Array.from(h.servo.q),
      dq: Float64Array.from(h.servo.dq),
      qRefPrev: Float64Array.from(h.servo.qRefPrev),
      gripperWidthM: h.servo.gripperWidthM,
    };
    this.target = Float64Array.from(h.target);
    this.targetGripperM = h.targetGripperM;
    this.contactClosed = h.contactClosed;
    this.collisions = new Set(h.collisions);
    bench.arm.updateKinematics(this.servo.q);
    if (h.history && h.history.q.length === this.histQ.length) {
      this.histQ.set(h.history.q);
      this.histDq.set(h.history.dq);
      this.histG.set(h.history.g);
      this.fillDelayLine();
    } else this.fillHistory();
  }

  privilegedState(): Record<string, unknown> {
    this.guard("privilegedState");
    return {
      seed: this.seed,
      t: this.now(),
      ...this.bench!.privileged({ contactClosed: this.contactClosed }),
      collisions: [...this.collisions],
      startQ: [...this.startQ],
    };
  }

  // ---- twin hooks (compose/shadow-backend.ts drives a sim twin sample by sample)

  /**
   * Put the arm at a measured state (a real bench's start state): at rest there, holding it, the
   * reading history and command delay line filled with it. A sim power (restore's lifecycle).
   */
  syncTo(r: { q: ArrayLike<number>; gripperWidthM: number }): void {
    this.guard("restore");
    this.servo = servoAtRest(r.q, r.gripperWidthM);
    this.target = Float64Array.from(r.q);
    this.targetGripperM = r.gripperWidthM;
    this.bench!.arm.applyArm(this.servo.q, this.servo.gripperWidthM, true);
    this.fillHistory();
  }

  /** One control step towards sample `i` of a trajectory (synchronous; active only). */
  stepSample(traj: JointTrajectory, i: number): JointReading {
    this.guard("execute");
    this.target.set(traj.q.subarray(i * 7, i * 7 + 7));
    this.targetGripperM = traj.gripperWidthM[i]!;
    this.tick();
    return this.read();
  }

  /** One control step holding the last target (synchronous; active only). */
  stepHold(): JointReading {
    this.guard("hold");
    this.tick();
    return this.read();
  }

  /** Frames of the current state, synchronously (the twin's render beside a real frame). */
  renderNow(cameras: readonly string[], depth: boolean): Frame[] {
    this.guard("capture");
    return this.render(cameras, depth);
  }

  /** The current calibration (sampled or given); buzz-wire scene only. */
  currentCalibration(): Calibration {
    const b = this.bench;
    if (!(b instanceof BuzzWireBench)) throw new Error(`scene "${this.scene}" has no buzz-wire calibration`);
    return b.calibration;
  }

  /** The current pendulum bench (sampled from the seed); pendulum scene only. */
  currentPendulum(): PendulumBenchSpec {
    const b = this.bench;
    if (!(b instanceof PendulumBench)) throw new Error(`scene "${this.scene}" has no pendulum`);
    return b.spec;
  }

  /** Which bench this backend simulates. */
  get scene(): SimSceneName {
    return this.opts.scene ?? "buzzwire";
  }

  // ---------------------------------------------------------------------------------------

  private build(seed: number, given?: unknown): void {
    this.bench?.free();
    this.bench = null;
    const physics: BenchPhysicsOptions = {
      timestepS: this.dt,
      predictionDistanceM: this.opts.predictionDistanceM ?? 0.003,
    };
    const bench = SCENES[this.scene]({
      R: this.R!,
      robot: this.opts.robot,
      physics,
      seed,
      given,
      opts: this.opts,
    });
    this.bench = bench;
    const start = bench.start;
    this.basePose = clonePose(start.basePose);
    this.toolOffset = clonePose(start.toolOffset);
    this.startQ = [...start.q];
    this.startGripperM = start.gripperM;
    this.servo = servoAtRest(this.startQ, this.startGripperM);
    this.target = Float64Array.from(this.startQ);
    this.targetGripperM = this.startGripperM;
    bench.arm.applyArm(this.servo.q, this.servo.gripperWidthM, true);
    this.cameras = cameraDescriptions({ cameras: start.cameras }, poseToMat4(this.toolOffset));
    this.rasterizers.clear();
    const rp = this.opts.realism;
    this.realism = rp ? new SensorRealism(rp, seed) : null;
    // every RGB LUT now, not on the frame that first needs one (a 1–1.5 ms tail per new LUT)
    this.realism?.prepare();
    // the history reaches back over the longest frame latency plus half an exposure (motion blur)
    this.histLen = this.realism
      ? Math.max(
          this.realism.maxFrameLagTicks(this.dt) + this.realism.exposureHalfTicks(this.dt),
          this.realism.readingLagTicks(this.dt),
        ) + 1
      : 1;
    this.histQ = new Float64Array(this.histLen * 7);
    this.histDq = new Float64Array(this.histLen * 7);
    this.histG = new Float64Array(this.histLen);
    this.fillHistory();
    // a fresh bench starts open; tell listeners if the circuit was closed
    if (this.contactClosed) {
      this.contactClosed = false;
      this.emit({ type: "contact", closed: false, t: this.now(), source: "sim" });
    }
    this.collisions.clear();
  }

  /** every slot of the reading history (and the command delay line) holds the current state */
  private fillHistory(): void {
    this.fillDelayLine();
    for (let k = 0; k < this.histLen; k++) {
      this.histQ.set(this.servo.q, k * 7);
      this.histDq.set(this.servo.dq, k * 7);
      this.histG[k] = this.servo.gripperWidthM;
    }
  }

  private fillDelayLine(): void {
    for (let k = 0; k < this.delayG.length; k++) {
      this.delayQ.set(this.target, k * 7);
      this.delayG[k] = this.targetGripperM;
    }
  }

  private holdHere(): void {
    this.target.set(this.servo.q);
    this.servo.qRefPrev.set(this.servo.q);
    this.targetGripperM = this.servo.gripperWidthM;
  }

  /** One control tick: servo, kinematic bodies, physics step, contact edges (hot path). */
  private tick(): void {
    const bench = this.bench!;
    const d = this.params.delayTicks ?? 0;
    if (d === 0) servoStep(this.servo, this.params, this.target, 0, this.targetGripperM, this.dt);
    else {
      // the servo sees the command of `d` periods ago
      const slots = d + 1;
      const k = this.steps % slots;
      this.delayQ.set(this.target, k * 7);
      this.delayG[k] = this.targetGripperM;
      const old = (this.steps + 1) % slots;
      servoStep(this.servo, this.params, this.delayQ, old * 7, this.delayG[old]!, this.dt);
    }
    bench.arm.applyArm(this.servo.q, this.servo.gripperWidthM);
    const c = bench.step();
    this.steps++;
    const t = this.now();
    if (this.realism) {
      const k = this.steps % this.histLen;
      this.histQ.set(this.servo.q, k * 7);
      this.histDq.set(this.servo.dq, k * 7);
      this.histG[k] = this.servo.gripperWidthM;
    }
    if (c.loopOnWire !== this.contactClosed) {
      this.contactClosed = c.loopOnWire;
      this.emit({ type: "contact", closed: c.loopOnWire, t, source: "sim" });
    }
    bench.afterStep(t, this.emitEvent);
    if (c.collisions.length > 0 || this.collisions.size > 0) {
      const now = new Set(c.collisions);
      for (const pair of c.collisions) {
        if (this.collisions.has(pair)) continue;
        const [link, other] = pair.split("|") as [string, string];
        this.emit({ type: "collision", t, link, other, source: "sim" });
      }
      this.collisions = now;
    }
  }

  /**
   * Step `count` control periods towards the samples of `traj` (null: hold the last target).
   * Per step it allocates the reading handed to `onTick` and nothing else; the last of those
   * readings is the result's `final` (the state after the last step: read() again would copy
   * the same values).
   */
  private async run(
    count: number,
    opts: ExecuteOptions,
    traj: JointTrajectory | null,
  ): Promise<ExecuteResult> {
    const st = this.runStart(opts);
    const cap = opts.capture;
    if (cap) st.frames.push(...this.render(cap.cameras, cap.depth));
    const yieldEvery = this.opts.yieldEveryTicks;
    const sliceMs = yieldEvery === undefined ? (this.opts.yieldSliceMs ?? 0.25) : 0;
    for (;;) {
      const untilMs = sliceMs > 0 ? performance.now() + sliceMs : Number.POSITIVE_INFINITY;
      if (this.runSteps(st, count, opts, traj, untilMs, yieldEvery ?? 0)) break;
      // outside the loop the world may change (a stop, a reset): the final reading is read anew
      await new Promise<void>((r) => setImmediate(r));
      st.last = null;
    }
    return this.runEnd(st);
  }

  /**
   * `count` steps at once, synchronously (no frames, no turn of the event loop between them): the
   * realtime setting's due steps of one wake-up, one or a few (seam RealtimeDrive `runNow`).
   */
  private runNow(traj: JointTrajectory, opts: ExecuteOptions): ExecuteResult {
    this.checkExecute(traj);
    if (opts.capture) throw new Error("runNow: frames are captured by execute");
    const st = this.runStart(opts);
    this.runSteps(st, traj.count, opts, traj, Number.POSITIVE_INFINITY, 0);
    return this.runEnd(st);
  }

  private runStart(opts: ExecuteOptions): RunState {
    this.stopRequested = false;
    assertMotionArgs("execute", opts);
    return { done: 0, outcome: "completed", last: null, frames: [] };
  }

  /**
   * Steps of a run from `st.done` on, until the run ends (true) or, past `untilMs` (wall ms) or
   * `yieldEvery` steps, it should let the event loop turn (false).
   */
  private runSteps(
    st: RunState,
    count: number,
    opts: ExecuteOptions,
    traj: JointTrajectory | null,
    untilMs: number,
    yieldEvery: number,
  ): boolean {
    const cap = opts.capture;
    while (st.done < count) {
      if (opts.signal?.aborted) {
        st.outcome = "aborted";
        return true;
      }
      if (this.stopRequested || this.lifecycle !== "active") {
        st.outcome = "stopped";
        return true;
      }
      const i = st.done;
      if (traj) {
        const q = traj.q;
        const o = i * 7;
        const target = this.target;
        for (let j = 0; j < 7; j++) target[j] = q[o + j]!;
        this.targetGripperM = traj.gripperWidthM[i]!;
      }
      this.tick();
      st.done = i + 1;
      st.last = null;
      let verdict: ReturnType<NonNullable<ExecuteOptions["onTick"]>> = "ok";
      if (opts.onTick) {
        st.last = this.read();
        verdict = opts.onTick(st.last, i);
      }
      if (verdict !== "ok") {
        st.outcome = verdict === "stop" ? "stopped" : "fault";
        return true;
      }
      if (cap && st.done % cap.everyTicks === 0) st.frames.push(...this.render(cap.cameras, cap.depth));
      if (yieldEvery > 0 ? st.done % yieldEvery === 0 : performance.now() >= untilMs) return false;
    }
    return true;
  }

  private runEnd(st: RunState): ExecuteResult {
    if (st.outcome !== "completed" && this.bench) this.holdHere();
    const res: ExecuteResult = {
      outcome: st.outcome,
      samplesExecuted: st.done,
      final: st.last ?? this.read(),
      frames: st.frames,
    };
    if (st.outcome === "fault") res.fault = { ...TICK_FAULT };
    return res;
  }

  private render(names: readonly string[], depth: boolean): Frame[] {
    const bench = this.bench!;
    const wanted = names.length === 0 ? this.cameras : names.map((n) => this.cameraByName(n));
    const re = this.realism;
    const out: Frame[] = [];
    for (const cam of wanted) {
      let r = this.rasterizers.get(cam.name);
      if (!r) {
        r = new Rasterizer(cam);
        this.rasterizers.set(cam.name, r);
      }
      const camIndex = this.cameras.indexOf(cam);
      // with realism the frame shows (and is stamped at) its exposure, `lag` periods ago
      const lag = re
        ? Math.min(re.frameLagTicks(this.steps, camIndex, this.dt), this.steps, this.histLen - 1)
        : 0;
      let drawn: Scene | null = null;
      const draw = () => {
        const scene = bench.syncRender(this.contactClosed);
        drawn = scene;
        re?.randomiseScene(scene);
        // a wrist camera rides on the tool: world ← tool (loop frame) · tool ← camera
        const worldFromTool = cam.frame === "tool" ? bench.arm.toolWorld(this.toolM) : null;
        const worldFromCam = worldFromCamera(cam, worldFromTool, this.camM, this.camScratchM);
        return r.render(scene, worldFromCam, r.createTarget());
      };
      const past = (this.steps - lag) % this.histLen;
      // motion blur: the arm (and a wrist camera) at the exposure's start and end
      const interval = re ? this.exposureStates(re, lag, cam) : 0;
      const img =
        lag > 0 ? bench.arm.withKinematics(this.histQ.subarray(past * 7, past * 7 + 7), draw) : draw();
      let motion = null;
      if (interval > 0 && drawn !== null) {
        const ex = this.exposure;
        // the scene as drawn: its poses (and camM) are those of the frame's instant
        if (ex.set((drawn as Scene).objects, this.posesA, this.posesB, this.camA, this.camM, this.camB)) {
          r.motionField(ex.toA, ex.toB, ex.moving, null, null, ex.tiles, BLUR_MIN_PX);
          motion = ex.motion(img.depthMm, interval * 1000);
        }
      }
      if (re)
        re.processFrame(
          this.steps,
          camIndex,
          cam.width,
          cam.height,
          img.rgb,
          depth && cam.depth ? img.depthMm : null,
          cam.fx,
          motion,
        );
      const frame: Frame = {
        camera: cam.name,
        t: (this.steps - lag) * this.dt,
        rgb: { kind: "raw", width: cam.width, height: cam.height, channels: 3, data: img.rgb },
      };
      if (depth && cam.depth) frame.depthMm = { width: cam.width, height: cam.height, data: img.depthMm };
      out.push(frame);
    }
    return out;
  }

  /**
   * The render poses of the scene (posesA, posesB) and the camera (camA, camB) at the start and
   * end of the exposure of a frame shown `lag` periods ago: the longer of the colour and infrared
   * exposures, centred on the frame's instant, its end clamped to now and its start to the
   * history; joint states between control steps interpolated linearly. Returns the interval in
   * s, 0 when the arm did not move over it (then nothing moves: the scene's other bodies are not
   * blurred) or blur is off.
   */
  private exposureStates(re: SensorRealism, lag: number, cam: CameraDescription): number {
    const half = re.exposureHalfTicks(this.dt, false);
    if (half === 0) return 0;
    const bench = this.bench!;
    const mid = this.steps - lag;
    const oldest = Math.max(0, this.steps - (this.histLen - 1));
    const ta = Math.max(oldest, mid - half);
    const tb = Math.min(this.steps, mid + half);
    if (!(tb > ta)) return 0;
    this.stateAt(ta, this.qA);
    this.stateAt(tb, this.qB);
    let moved = false;
    for (let j = 0; j < 7; j++) if (this.qA[j] !== this.qB[j]) moved = true;
    if (!moved) return 0;
    const posesAt = (q: Float64Array, poses: Float64Array, camOut: Float64Array) =>
      bench.arm.withKinematics(q, () => {
        const objects = bench.syncRender(this.contactClosed).objects;
        for (let i = 0; i < objects.length; i++) poses.set(objects[i]!.pose, 16 * i);
        const worldFromTool = cam.frame === "tool" ? bench.arm.toolWorld(this.toolM) : null;
        camOut.set(worldFromCamera(cam, worldFromTool, this.camScratchM, this.camM));
      });
    const n = 16 * bench.syncRender(this.contactClosed).objects.length;
    if (this.posesA.length !== n) {
      this.posesA = new Float64Array(n);
      this.posesB = new Float64Array(n);
    }
    posesAt(this.qA, this.posesA, this.camA);
    posesAt(this.qB, this.posesB, this.camB);
    return (tb - ta) * this.dt;
  }

  /** the measured joint angles at (fractional) step t from the history, into `out` */
  private stateAt(t: number, out: Float64Array): void {
    const s0 = Math.floor(t);
    const f = t - s0;
    const k0 = (s0 % this.histLen) * 7;
    const k1 = (Math.min(this.steps, s0 + 1) % this.histLen) * 7;
    for (let j = 0; j < 7; j++) {
      const a = this.histQ[k0 + j]!;
      out[j] = f === 0 ? a : a + f * (this.histQ[k1 + j]! - a);
    }
  }

  private cameraByName(name: string): CameraDescription {
    const c = this.cameras.find((x) => x.name === name);
    if (!c) throw new Error(`unknown camera "${name}" (have: ${this.cameras.map((x) => x.name).join(", ")})`);
    return c;
  }

  private emit(e: SensorEvent): void {
    for (const l of this.listeners) l(e);
  }
}

interface SnapshotHeader {
  magic: string;
  scene: SimSceneName;
  seed: number;
  description: unknown;
  sceneState: Record<string, unknown>;
  steps: number;
  servo: { q: number[]; dq: number[]; qRefPrev: number[]; gripperWidthM: number };
  target: number[];
  targetGripperM: number;
  contactClosed: boolean;
  collisions: string[];
  history?: { q: number[]; dq: number[]; g: number[] } | null;
}

/** Camera descriptions as the seam states them (wrist cameras relative to the tool frame). */
export function cameraDescriptions(
  cal: { cameras: readonly CameraCalibration[] },
  toolFromFlange: Mat4,
): CameraDescription[] {
  return cal.cameras.map((c) => {
    const i = c.intrinsics;
    const { frame, pose } = cameraSeamPose(c, toolFromFlange);
    return {
      name: c.name,
      width: i.widthPx,
      height: i.heightPx,
      fx: i.fxPx,
      fy: i.fyPx,
      cx: i.cxPx,
      cy: i.cyPx,
      distortion: [...i.distortion],
      frame,
      pose,
      depth: c.depth,
    };
  });
}

/** A run's progress (SimBackend.run / runNow). */
interface RunState {
  done: number;
  outcome: ExecuteResult["outcome"];
  /** the reading after the last step, when nothing can have changed the state since */
  last: JointReading | null;
  frames: Frame[];
}
