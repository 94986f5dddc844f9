/**
 * The mirror backend: the measured state is exactly the commanded trajectory and the cameras
 * return a plain test pattern (a moving checkerboard). Also what the rosbridge rig's own tests
 * serve. It exists to test the API plumbing (routing, chunk rules,
 * budgets, frames) without physics. It has no dynamics and no contacts, so behaviour tests of
 * tasks must run on the simulator, never on the mirror.
 *
 * Fault injection (STYLE.md §7): `failOn` makes a chosen call fail, so fault handling is tested
 * on purpose.
 */
import { LifecycleComponent, type LifecycleState } from "../../seam/lifecycle.ts";
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
  type SensorEvent,
  type SensorEventListener,
  TICK_FAULT,
} from "../../seam/types.ts";
import type { RobotModel } from "../../robots/types.ts";

export interface MirrorBackendOptions {
  robot: RobotModel;
  /** cameras to fake; default one 64×48 "front" camera */
  cameras?: CameraDescription[];
  /** start configuration, rad; default the robot's home */
  startQ?: readonly number[];
  /** make the n-th call (1-based) of a method fail with a fault */
  failOn?: Partial<Record<"execute" | "capture" | "hold", number>>;
}

const IDENTITY_POSE = {
  xyz: [0, 0, 0] as [number, number, number],
  quat_xyzw: [0, 0, 0, 1] as [number, number, number, number],
};

/** A plain pinhole camera for the mirror's test pattern. */
export function mirrorCamera(name = "front", width = 64, height = 48): CameraDescription {
  return {
    name,
    width,
    height,
    fx: (60 * width) / 64,
    fy: (60 * width) / 64,
    cx: width / 2,
    cy: height / 2,
    distortion: [0, 0, 0, 0, 0],
    frame: "world",
    pose: { xyz: [1.5, 0, 0.5], quat_xyzw: [-0.5, 0.5, -0.5, 0.5] },
    depth: true,
  };
}

export class MirrorBackend extends LifecycleComponent implements Backend {
  readonly kind = "mirror" as const;
  /** control ticks since start; time is ticks × period (no float drift) */
  private ticks = 0;
  private q: number[];
  private dq: number[];
  private gripper: number;
  private readonly listeners = new Set<SensorEventListener>();
  private readonly calls = { execute: 0, capture: 0, hold: 0 };
  private readonly desc: BackendDescription;

  constructor(private readonly opts: MirrorBackendOptions) {
    super();
    this.q = [...(opts.startQ ?? opts.robot.homeQ)];
    this.dq = new Array(opts.robot.dof).fill(0);
    this.gripper = opts.robot.gripper.maxWidthM / 2;
    this.desc = {
      robot: opts.robot,
      cameras: opts.cameras ?? [mirrorCamera()],
      controlPeriodS: opts.robot.controlPeriodS,
      basePose: IDENTITY_POSE,
      toolOffset: IDENTITY_POSE,
    };
  }

  protected override async onConfigure(): Promise<void> {}

  protected override async onShutdown(_from: LifecycleState): Promise<void> {
    this.listeners.clear();
  }

  describe(): BackendDescription {
    this.guard("describe");
    return this.desc;
  }

  now(): number {
    return this.ticks * this.desc.controlPeriodS;
  }

  read(): JointReading {
    this.guard("read");
    return this.reading();
  }

  async execute(traj: JointTrajectory, opts: ExecuteOptions = {}): Promise<ExecuteResult> {
    this.guard("execute");
    assertMotionArgs("execute", opts);
    if (this.injected("execute")) return this.fault("execute");
    return this.run(traj, opts);
  }

  async hold(seconds: number, opts: ExecuteOptions = {}): Promise<ExecuteResult> {
    this.guard("hold");
    assertMotionArgs("hold", opts, seconds);
    if (this.injected("hold")) return this.fault("hold");
    const period = this.desc.controlPeriodS;
    const n = Math.round(seconds / period);
    const dof = this.q.length;
    const q = new Float64Array(n * dof);
    for (let i = 0; i < n; i++) for (let j = 0; j < dof; j++) q[i * dof + j] = this.q[j]!;
    return this.run(
      {
        periodS: period,
        count: n,
        q,
        gripperWidthM: new Float64Array(n).fill(this.gripper),
        rowEndIndex: [n - 1],
      },
      opts,
    );
  }

  async capture(cameras: readonly string[], opts: { depth: boolean }): Promise<Frame[]> {
    this.guard("capture");
    if (this.injected("capture")) throw new Error("mirror: injected capture failure");
    const names = cameras.length ? cameras : this.desc.cameras.map((c) => c.name);
    return names.map((name) => this.pattern(name, opts.depth));
  }

  onEvent(listener: SensorEventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async stop(_reason: string): Promise<void> {
    this.dq.fill(0);
  }

  async reset(): Promise<void> {
    this.guard("reset");
    this.q = [...(this.opts.startQ ?? this.opts.robot.homeQ)];
    this.dq.fill(0);
  }

  /** Emit a sensor event as if a device had seen it (test hook). */
  emit(e: SensorEvent): void {
    for (const l of this.listeners) l(e);
  }

  private run(traj: JointTrajectory, opts: ExecuteOptions): ExecuteResult {
    const dof = this.q.length;
    const frames: Frame[] = [];
    const period = traj.periodS;
    let outcome: ExecuteResult["outcome"] = "completed";
    let i = 0;
    if (opts.capture) frames.push(...this.captureSync(opts.capture.cameras, opts.capture.depth));
    for (; i < traj.count; i++) {
      if (opts.signal?.aborted) {
        outcome = "aborted";
        break;
      }
      for (let j = 0; j < dof; j++) {
        const next = traj.q[i * dof + j]!;
        this.dq[j] = (next - this.q[j]!) / period;
        this.q[j] = next;
      }
      this.gripper = traj.gripperWidthM[i]!;
      this.ticks++;
      const verdict = opts.onTick ? opts.onTick(this.reading(), i) : "ok";
      if (verdict !== "ok") {
        i++;
        outcome = verdict === "stop" ? "stopped" : "fault";
        break;
      }
      if (opts.capture && (i + 1) % opts.capture.everyTicks === 0) {
        frames.push(...this.captureSync(opts.capture.cameras, opts.capture.depth));
      }
    }
    this.dq.fill(0);
    return {
      outcome,
      samplesExecuted: i,
      final: this.reading(),
      frames,
      ...(outcome === "fault" ? { fault: { ...TICK_FAULT } } : {}),
    };
  }

  private reading(): JointReading {
    return { t: this.now(), q: [...this.q], dq: [...this.dq], gripperWidthM: this.gripper };
  }

  private captureSync(cameras: readonly string[], depth: boolean): Frame[] {
    const names = cameras.length ? cameras : this.desc.cameras.map((c) => c.name);
    return names.map((n) => this.pattern(n, depth));
  }

  private pattern(name: string, depth: boolean): Frame {
    const cam = this.desc.cameras.find((c) => c.name === name) ?? this.desc.cameras[0]!;
    const { width, height } = cam;
    const rgb = new Uint8Array(width * height * 3);
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const o = (y * width + x) * 3;
        rgb[o] = (x * 255) / Math.max(1, width - 1);
        rgb[o + 1] = (y * 255) / Math.max(1, height - 1);
        // a checkerboard that moves one pixel per control tick, so successive frames differ
        rgb[o + 2] = (((x + this.ticks) >> 3) + (y >> 3)) % 2 ? 200 : 40;
      }
    }
    const frame: Frame = {
      camera: name,
      t: this.now(),
      rgb: { kind: "raw", width, height, channels: 3, data: rgb },
    };
    if (depth) frame.depthMm = { width, height, data: new Uint16Array(width * height).fill(1000) };
    return frame;
  }

  private injected(method: "execute" | "capture" | "hold"): boolean {
    this.calls[method]++;
    return this.opts.failOn?.[method] === this.calls[method];
  }

  private fault(method: string): ExecuteResult {
    return {
      outcome: "fault",
      samplesExecuted: 0,
      final: this.read(),
      frames: [],
      fault: { device: "mirror", message: `injected ${method} failure` },
    };
  }
}
