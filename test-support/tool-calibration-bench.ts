/**
 * A sim bench for the tool-side calibration procedures (tool frame, wire teaching, board
 * registration), served on a real HTTP port (127.0.0.1, port 0), and the scripted operators that
 * stand in for a person on it:
 * - `ProbingTeacher` walks the loop along the wire and centres it at each pose with the buzz
 *   contact only: it pushes the loop out in four directions of the loop plane until the circuit
 *   closes, takes the loop positions at the contact instants (event time, readings interpolated)
 *   and moves the loop to the centre of the circle through them. It never reads the wire.
 * - `PointingToucher` touches board marks with the loop's tip where a person would, with a stated
 *   pointing error (seeded Gaussian): it is given the marks' true positions, as a person sees them.
 *
 * Both command the robot through the gateway's own IK, whose tool frame is the gateway's; the
 * procedures under test record flange poses only.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { BenchApi, fetchTransport, type Pose, type Reading } from "../calibration/api-client.ts";
import { rigid, rotationOf, rotvecToMat3 } from "../calibration/linalg.ts";
import type { Calibration } from "../calibration/schema.ts";
import {
  type BoardMark,
  loopTipLocal,
  type TeachOperator,
  type TeachStep,
  type TouchOperator,
} from "../calibration/tool-procedures.ts";
import { AGENT_TOKEN, OPERATOR_TOKEN, testGateway, type TestGateway } from "../compose/testing.ts";
import { FR3 } from "../robots/franka/models.ts";
import {
  type Mat4,
  mat4Mul,
  mat4Point,
  mat4RigidInverse,
  mat4ToPose,
  poseToMat4,
  type Vec3,
  vadd,
  vcross,
  vdot,
  vnorm,
  vscale,
  vsub,
  vunit,
  mat4Column,
} from "../robots/math.ts";
import { sampleBenchCalibration } from "../sim/buzzwire/bench.ts";

export interface ToolCalibrationBench {
  g: TestGateway;
  api: BenchApi;
  url: string;
  /** the calibration the sim was built from (the ground truth) */
  truth: Calibration;
  file: string;
  close(): Promise<void>;
}

/**
 * The sampled buzz-wire bench on a real port. A calibration session: neither wire contacts nor the
 * loop touching the board stop the episode, and the board is no keep-out (marks are touched on it).
 */
export async function toolCalibrationBench(seed = 3): Promise<ToolCalibrationBench> {
  const truth = sampleBenchCalibration(FR3, seed);
  const dir = mkdtempSync(join(tmpdir(), "rg-toolcal-"));
  const file = join(dir, "calibration.json");
  writeFileSync(file, JSON.stringify(truth, null, 2));
  const g = await testGateway(
    {
      backend: { type: "sim" },
      calibration: file,
      task: { id: "free-motion", seed },
      safety: { stopOnEvents: [] },
      keepOutsFromCalibration: false,
    },
    { recorder: false },
  );
  await g.app.listen({ host: "127.0.0.1", port: 0 });
  const url = `http://127.0.0.1:${(g.app.server.address() as AddressInfo).port}`;
  const api = new BenchApi(fetchTransport(url, { agent: AGENT_TOKEN, operator: OPERATOR_TOKEN }));
  return { g, api, url, truth, file, close: () => g.close() };
}

/** The gateway's IK tool frame (flange ← tool) as GET /v1/spec publishes it. */
export async function ikToolFrame(api: BenchApi): Promise<Mat4> {
  const spec = (await api.spec()) as unknown as {
    robot: { tool_frames?: Array<{ name: string; pose: Pose }> };
  };
  const t = spec.robot.tool_frames?.find((f) => f.name === "tool");
  if (!t) throw new Error("the spec publishes no tool frame");
  return poseToMat4(t.pose);
}

/** Joints that put the gateway's tool frame at `tool` (base frame), seeded at `seed`. */
async function ikTool(api: BenchApi, tool: Mat4, seed: readonly number[]): Promise<number[]> {
  return (await api.ik(mat4ToPose(tool) as Pose, [...seed])).q;
}

/** Lift the loop straight up by `liftM` in three steps, clear of the wire; returns the joints. */
export async function liftLoop(
  api: BenchApi,
  liftM = 0.15,
  move: { maxJointSpeedRadS?: number } = {},
): Promise<number[]> {
  let r = await api.reading();
  for (let k = 1; k <= 3; k++) {
    const tool = poseToMat4((await api.fk(r.q)).tool);
    tool[11]! += liftM / 3;
    r = await api.moveTo(await ikTool(api, tool, r.q), move);
  }
  return r.q;
}

/**
 * A nominal value a lab might start from: `pose` moved by `mm` along (1, −1, 1)/√3 and turned by
 * `deg` about (0.3, 1, 0.2) (both applied in the pose's parent frame).
 */
export function perturbPose(pose: Pose, mm: number, deg: number): Pose {
  const m = poseToMat4(pose);
  const axis = [0.3, 1, 0.2];
  const n = Math.hypot(...axis);
  const R = rotvecToMat3(axis.map((v) => (v / n) * ((deg * Math.PI) / 180)));
  const Rm = rotationOf(m);
  const out = [0, 1, 2].flatMap((r) =>
    [0, 1, 2].map((c) => R[r * 3]! * Rm[c]! + R[r * 3 + 1]! * Rm[3 + c]! + R[r * 3 + 2]! * Rm[6 + c]!),
  );
  const d = mm / 1000 / Math.sqrt(3);
  return mat4ToPose(rigid(out, [m[3]! + d, m[7]! - d, m[11]! + d])) as Pose;
}

const minJerk = (s: number) => s * s * s * (10 - 15 * s + 6 * s * s);

/** Seeded standard normal numbers (Box–Muller over an LCG). */
function gaussian(seed: number): () => number {
  let s = seed >>> 0 || 1;
  const u = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s + 0.5) / 4294967296;
  };
  return () => Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u());
}

/** A loop frame at `origin` with z along `axis` and x pointing down (handle up), base frame. */
function loopFrame(origin: Vec3, axis: Vec3): Mat4 {
  const z = vunit(axis);
  const down: Vec3 = [0, 0, -1];
  const x = vunit(vsub(down, vscale(z, vdot(down, z))));
  const y = vcross(z, x);
  const m = new Float64Array(16);
  m.set([x[0], y[0], z[0], origin[0], x[1], y[1], z[1], origin[1], x[2], y[2], z[2], origin[2], 0, 0, 0, 1]);
  return m;
}

/** Centre of the circle through 2-D points (Kåsa's algebraic fit). */
function circleCentre2d(ps: ReadonlyArray<[number, number]>): [number, number] {
  // x² + y² + D x + E y + F = 0, least squares in D, E, F
  const A = new Array<number>(9).fill(0);
  const b = [0, 0, 0];
  for (const [x, y] of ps) {
    const row = [x, y, 1];
    const r = -(x * x + y * y);
    for (let i = 0; i < 3; i++) {
      b[i]! += row[i]! * r;
      for (let j = 0; j < 3; j++) A[i * 3 + j]! += row[i]! * row[j]!;
    }
  }
  // 3 × 3 solve by Cramer's rule
  const det = (m: number[]) =>
    m[0]! * (m[4]! * m[8]! - m[5]! * m[7]!) -
    m[1]! * (m[3]! * m[8]! - m[5]! * m[6]!) +
    m[2]! * (m[3]! * m[7]! - m[4]! * m[6]!);
  const d = det(A);
  const sub = (k: number) => A.map((v, i) => (i % 3 === k ? b[Math.floor(i / 3)]! : v));
  return [-det(sub(0)) / d / 2, -det(sub(1)) / d / 2];
}

export interface ProbingTeacherOptions {
  /** spacing of taught poses along the wire, m (default 0.012) */
  stepM?: number;
  /** stop once this much wire is taught, m (a person sees the end mark) */
  teachLengthM: number;
  /** the loop's clearance around the wire, m (inner radius − wire radius: what touching takes) */
  clearanceM: number;
  /** how far past the clearance a probe reaches, m (default 0.004) */
  overshootM?: number;
  /**
   * how long a probe's push out takes, s (default 0.8): a contact reported δ late puts its point
   * (push speed × δ) further out, so a bench whose contacts arrive with varying delay probes slower
   */
  probeS?: number;
  /** how far the four contacts of one centring may lie from one circle before it is probed again, m (default 0.0005) */
  probeSpreadM?: number;
  /**
   * creep speed, m/s: the push goes quickly (`probeS`) to 12 mm short of its reach (8 mm inside
   * the clearance), then creeps the rest at this constant speed, so a contact reported δ late is
   * creep × δ further out whatever the push's length (a person's approach-then-creep). Default:
   * one minimum-jerk push over `probeS`.
   */
  creepMps?: number;
  /** peak joint speed of the moves between probes, rad/s (default BenchApi.moveTo's) */
  maxJointSpeedRadS?: number;
}

/**
 * The scripted wire teacher: starts with the loop threaded on the wire (the bench's start pose),
 * centres it by probing, hands the pose to the procedure, steps on along the extrapolated wire.
 */
export class ProbingTeacher implements TeachOperator {
  /** centred loop centres so far, base frame */
  readonly centres: Vec3[] = [];
  /** probes that found no contact (widened and retried) */
  misses = 0;
  /** centrings probed again because the four contacts did not lie on one circle */
  reprobes = 0;
  /** holds after a probe until a late "open" arrived */
  lateOpens = 0;
  private axis: Vec3 | null = null;
  private q: number[] = [];
  private contactClosed = false;
  private taughtM = 0;

  constructor(
    private readonly api: BenchApi,
    private readonly opts: ProbingTeacherOptions,
  ) {}

  async next(): Promise<TeachStep> {
    const step = this.opts.stepM ?? 0.012;
    if (this.taughtM >= this.opts.teachLengthM) return "done";
    let guess: Mat4;
    if (this.centres.length === 0) {
      const r = await this.api.reading();
      this.q = r.q;
      guess = poseToMat4((await this.api.fk(r.q)).tool);
      this.axis = mat4Column(guess, 2);
    } else {
      const n = this.centres.length;
      const w = this.centres[n - 1]!;
      const chord = n >= 2 ? vsub(w, this.centres[n - 2]!) : vscale(this.axis!, step);
      let dir = vunit(chord);
      if (n >= 3) {
        // keep turning as the last two chords turned
        const prev = vunit(vsub(this.centres[n - 2]!, this.centres[n - 3]!));
        dir = vunit(vadd(dir, vsub(dir, prev)));
      }
      this.axis = dir;
      guess = loopFrame(vadd(w, vscale(dir, step)), dir);
      this.q = (
        await this.api.moveTo(await ikTool(this.api, guess, this.q), { settleS: 0.1, ...this.speed() })
      ).q;
    }
    const centre = await this.centreAt(guess);
    const at = loopFrame(centre, mat4Column(guess, 2));
    this.q = (await this.api.moveTo(await ikTool(this.api, at, this.q), { settleS: 0.2, ...this.speed() })).q;
    if (this.centres.length > 0) this.taughtM += vnorm(vsub(centre, this.centres[this.centres.length - 1]!));
    this.centres.push(centre);
    if (this.centres.length === 1) return "start";
    return this.taughtM >= this.opts.teachLengthM ? "end" : "record";
  }

  private speed(): { maxJointSpeedRadS?: number } {
    const v = this.opts.maxJointSpeedRadS;
    return v === undefined ? {} : { maxJointSpeedRadS: v };
  }

  /**
   * Probe ±x, ±y of the loop frame `at` (the loop is there now); the wire's crossing point. The
   * four contact points lie on one circle about it, as far out as the clearance (plus the same
   * contact latency in every direction); when their distances from the centre spread over more
   * than `probeSpreadM` (a contact reported late on a busy machine), all four are probed again
   * (twice at most), as a person probes again when a side felt off.
   */
  private async centreAt(at: Mat4): Promise<Vec3> {
    let best: { centre: Vec3; spreadM: number } | undefined;
    for (let attempt = 0; attempt < 3; attempt++) {
      const c = await this.probeCentre(at);
      if (!best || c.spreadM < best.spreadM) best = c;
      if (c.spreadM <= (this.opts.probeSpreadM ?? 0.0005)) break;
      this.reprobes++;
    }
    // three times off: the most consistent of them
    return best!.centre;
  }

  private async probeCentre(at: Mat4): Promise<{ centre: Vec3; spreadM: number }> {
    const o = mat4Column(at, 3);
    const ex = mat4Column(at, 0);
    const ey = mat4Column(at, 1);
    const pts: Array<[number, number]> = [];
    for (const d of [ex, vscale(ex, -1), ey, vscale(ey, -1)]) {
      let reach = this.opts.clearanceM + (this.opts.overshootM ?? 0.004);
      let hit: Vec3 | null = null;
      for (let attempt = 0; attempt < 3 && !hit; attempt++) {
        hit = await this.probe(at, d, reach);
        if (!hit) {
          this.misses++;
          reach += 0.005;
        }
      }
      if (!hit) throw new Error(`no wire contact within ${(reach * 1000).toFixed(1)} mm along a probe`);
      const rel = vsub(hit, o);
      pts.push([vdot(rel, ex), vdot(rel, ey)]);
    }
    const [cx, cy] = circleCentre2d(pts);
    const r = pts.map(([x, y]) => Math.hypot(x - cx, y - cy));
    return {
      centre: vadd(o, vadd(vscale(ex, cx), vscale(ey, cy))),
      spreadM: Math.max(...r) - Math.min(...r),
    };
  }

  /**
   * Push the loop from `at` along `dir` up to `reach` and back; the loop centre (gateway tool
   * origin) at the instant the circuit closed, or null when it did not.
   */
  private async probe(at: Mat4, dir: Vec3, reach: number): Promise<Vec3 | null> {
    const out = new Float64Array(at);
    out[3]! += dir[0] * reach;
    out[7]! += dir[1] * reach;
    out[11]! += dir[2] * reach;
    const q0 = this.q;
    const q1 = await ikTool(this.api, out, q0);
    const creep = this.opts.creepMps;
    const creepM = Math.min(0.012, reach);
    let qMid: number[] | undefined;
    if (creep) {
      const mid = new Float64Array(at);
      mid[3]! += dir[0] * (reach - creepM);
      mid[7]! += dir[1] * (reach - creepM);
      mid[11]! += dir[2] * (reach - creepM);
      qMid = await ikTool(this.api, mid, q0);
    }
    const dt = 0.01;
    const rows: number[][] = [];
    const grip = (await this.api.reading()).gripper_width_m;
    const leg = (from: number[], to: number[], s: number) => {
      const n = Math.round(s / dt);
      for (let k = 1; k <= n; k++) {
        const m = minJerk(k / n);
        rows.push([...from.map((v, j) => v + (to[j]! - v) * m), grip]);
      }
    };
    if (qMid && creep) {
      leg(q0, qMid, this.opts.probeS ?? 0.8);
      // constant speed between cosine ramps of 0.25 s (starts and ends at rest, bounded acceleration)
      const ramp = 0.25;
      const T = creepM / creep + ramp;
      const n = Math.max(1, Math.round(T / dt));
      const speed = (t: number) =>
        t < ramp
          ? 0.5 - 0.5 * Math.cos((Math.PI * t) / ramp)
          : t > T - ramp
            ? 0.5 - 0.5 * Math.cos((Math.PI * (T - t)) / ramp)
            : 1;
      const cum = [0];
      for (let k = 1; k <= n; k++) cum.push(cum[k - 1]! + speed((k - 0.5) * dt));
      for (let k = 1; k <= n; k++) {
        const m = cum[k]! / cum[n]!;
        rows.push([...qMid.map((v, j) => v + (q1[j]! - v) * m), grip]);
      }
    } else leg(q0, q1, this.opts.probeS ?? 0.8);
    leg(q1, q0, 0.5);
    for (let k = 0; k < 10; k++) rows.push([...q0, grip]);
    const res = await this.api.act(dt, rows);
    if (res.episode.status !== "running")
      throw new Error(
        `probe ended the episode: ${res.episode.reason} (safety ${JSON.stringify(res.safety)})`,
      );
    // a contact that began before this probe (reported late, after the previous call returned)
    // is no hit of it; its state still counts
    const startT = res.readings[0]?.t ?? Number.NEGATIVE_INFINITY;
    let hitT: number | null = null;
    for (const e of contactEvents(res.events)) {
      if (e.closed && hitT === null && !this.contactClosed && e.t >= startT) hitT = e.t;
      this.contactClosed = e.closed;
    }
    // the buzzer may still sound for a moment after the loop came back (a contact sensor that
    // reports late): hold and listen, up to 2 s, before calling the start pose touching
    const hold = Array.from({ length: 20 }, () => [...q0, grip]);
    for (let k = 0; k < 10 && this.contactClosed; k++) {
      const h = await this.api.act(dt, hold);
      if (h.episode.status !== "running") throw new Error(`hold ended the episode: ${h.episode.reason}`);
      for (const e of contactEvents(h.events)) this.contactClosed = e.closed;
      this.lateOpens++;
    }
    if (this.contactClosed) throw new Error("the loop still touches the wire at the probe's start pose");
    if (hitT === null) return null;
    const q = interpolateReading(res.readings, hitT);
    const tool = poseToMat4((await this.api.fk(q)).tool);
    return mat4Column(tool, 3);
  }
}

/** The contact events of an act answer, in order: time and whether the circuit closed. */
function contactEvents(events: readonly unknown[]): Array<{ t: number; closed: boolean }> {
  const out: Array<{ t: number; closed: boolean }> = [];
  for (const e of events as Array<{
    type: string;
    t: number;
    data?: { closed?: boolean };
    closed?: boolean;
  }>) {
    if (e.type === "contact") out.push({ t: e.t, closed: e.data?.closed ?? e.closed ?? false });
  }
  return out;
}

/** Joint angles at time t, linear between the bracketing readings. */
function interpolateReading(readings: readonly Reading[], t: number): number[] {
  for (let i = 0; i + 1 < readings.length; i++) {
    const a = readings[i]!;
    const b = readings[i + 1]!;
    if (t >= a.t && t <= b.t) {
      const s = b.t > a.t ? (t - a.t) / (b.t - a.t) : 0;
      return a.q.map((v, j) => v + (b.q[j]! - v) * s);
    }
  }
  return (readings[0] && t < readings[0].t ? readings[0] : readings[readings.length - 1]!).q;
}

/**
 * The scripted toucher: brings the loop's tip to each mark (true board pose · mark) plus a seeded
 * Gaussian pointing error of `pointingErrorM` per axis (σ), approaching from 40 mm above.
 */
export class PointingToucher implements TouchOperator {
  private readonly noise: () => number;
  /** the pointing error of each touch, m */
  readonly errors: Vec3[] = [];

  constructor(
    private readonly api: BenchApi,
    private readonly truth: Calibration,
    private readonly pointingErrorM: number,
    seed = 11,
    /** peak joint speed of its moves, rad/s (default BenchApi.moveTo's) */
    private readonly maxJointSpeedRadS?: number,
  ) {
    this.noise = gaussian(seed);
  }

  async touch(mark: BoardMark): Promise<void> {
    const baseFromWorld = mat4RigidInverse(poseToMat4(this.truth.robotBasePoseWorld));
    const board = mat4Mul(baseFromWorld, poseToMat4(this.truth.board.poseWorld));
    const err: Vec3 = [0, 1, 2].map(() => this.pointingErrorM * this.noise()) as Vec3;
    this.errors.push(err);
    const target = vadd(mat4Point(board, mark.boardM), err);
    const r = await this.api.reading();
    const nowLoop = poseToMat4((await this.api.fk(r.q)).tool);
    // the loop hangs tip down (x down), its axis level as it is now
    const z0 = mat4Column(nowLoop, 2);
    const axis = vunit([z0[0], z0[1], 0]);
    const tip = loopTipLocal(this.truth)[0];
    // up 40 mm where it is, over the mark, down onto it
    const here = mat4Column(nowLoop, 3);
    let q = r.q;
    for (const [x, y, z] of [
      [here[0], here[1], Math.max(here[2], target[2] + tip) + 0.04],
      [target[0], target[1], target[2] + tip + 0.04],
      [target[0], target[1], target[2] + tip],
    ] as Vec3[]) {
      const loop = loopFrame([x, y, z], axis);
      q = (
        await this.api.moveTo(await ikTool(this.api, loop, q), {
          settleS: 0.3,
          ...(this.maxJointSpeedRadS !== undefined ? { maxJointSpeedRadS: this.maxJointSpeedRadS } : {}),
        })
      ).q;
    }
  }
}
