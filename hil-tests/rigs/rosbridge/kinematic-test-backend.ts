/**
 * A small kinematic Backend for the rosbridge rig's own tests (until/unless the simulator is
 * used): the measured state follows the commanded samples exactly, time advances one control
 * period per sample, and one camera returns a raw RGB gradient that changes with time.
 * No dynamics, no contacts: behaviour tests belong on the simulator (STYLE.md §7).
 */
import {
  assertLifecycle,
  type Backend,
  type BackendDescription,
  type ExecuteOptions,
  type ExecuteResult,
  type Frame,
  type JointReading,
  type JointTrajectory,
  type LifecycleState,
  type SensorEventListener,
} from "../../../gateway/seam/types.ts";
import { holdTrajectory } from "../../../gateway/motion/interpolate.ts";
import type { RobotModel } from "../../../robots/types.ts";

export class KinematicTestBackend implements Backend {
  readonly kind = "mirror" as const;
  private state: LifecycleState = "unconfigured";
  private tS = 0;
  private q: number[];
  private dq: number[];
  private grip: number;
  private readonly listeners = new Set<SensorEventListener>();

  constructor(
    private readonly robot: RobotModel,
    private readonly camera = { name: "front", width: 64, height: 48 },
  ) {
    this.q = [...robot.homeQ];
    this.dq = new Array(robot.dof).fill(0);
    this.grip = robot.gripper.maxWidthM;
  }

  get lifecycle(): LifecycleState {
    return this.state;
  }
  async configure(): Promise<void> {
    this.state = "inactive";
  }
  async activate(): Promise<void> {
    this.state = "active";
  }
  async deactivate(): Promise<void> {
    this.state = "inactive";
  }
  async shutdown(): Promise<void> {
    this.state = "finalized";
  }

  describe(): BackendDescription {
    const { name, width, height } = this.camera;
    return {
      robot: this.robot,
      cameras: [
        {
          name,
          width,
          height,
          fx: 55,
          fy: 56,
          cx: width / 2,
          cy: height / 2,
          distortion: [0.01, -0.02, 0, 0, 0.003],
          frame: "world",
          pose: { xyz: [1.2, 0, 0.6], quat_xyzw: [0, 0, 0, 1] },
          depth: false,
        },
      ],
      controlPeriodS: this.robot.controlPeriodS,
      basePose: { xyz: [0, 0, 0], quat_xyzw: [0, 0, 0, 1] },
      toolOffset: { xyz: [0, 0, 0.1034], quat_xyzw: [0, 0, 0, 1] },
    };
  }

  now(): number {
    return this.tS;
  }

  read(): JointReading {
    return { t: this.tS, q: [...this.q], dq: [...this.dq], gripperWidthM: this.grip };
  }

  async execute(traj: JointTrajectory, opts: ExecuteOptions = {}): Promise<ExecuteResult> {
    assertLifecycle("execute", this.state, ["active"]);
    const dof = this.robot.dof;
    let i = 0;
    let outcome: ExecuteResult["outcome"] = "completed";
    for (; i < traj.count; i++) {
      if (opts.signal?.aborted) {
        outcome = "aborted";
        break;
      }
      for (let j = 0; j < dof; j++) {
        const next = traj.q[i * dof + j]!;
        this.dq[j] = (next - this.q[j]!) / traj.periodS;
        this.q[j] = next;
      }
      this.grip = traj.gripperWidthM[i]!;
      this.tS += traj.periodS;
      if (opts.onTick?.(this.read(), i) === "stop") {
        outcome = "stopped";
        i++;
        break;
      }
    }
    return { outcome, samplesExecuted: i, final: this.read(), frames: [] };
  }

  async hold(seconds: number, opts: ExecuteOptions = {}): Promise<ExecuteResult> {
    const n = Math.round(seconds / this.robot.controlPeriodS);
    return this.execute(holdTrajectory(this.q, this.grip, n, this.robot.controlPeriodS), opts);
  }

  async capture(): Promise<Frame[]> {
    const { name, width, height } = this.camera;
    const data = new Uint8Array(width * height * 3);
    const shift = Math.floor(this.tS * 100) % 256;
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const d = (y * width + x) * 3;
        data[d] = (x * 4 + shift) % 256;
        data[d + 1] = y * 5;
        data[d + 2] = 128;
      }
    }
    return [{ camera: name, t: this.tS, rgb: { kind: "raw", width, height, channels: 3, data } }];
  }

  onEvent(listener: SensorEventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async stop(): Promise<void> {
    this.dq.fill(0);
  }
}
