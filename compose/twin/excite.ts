/**
 * Servo excitation for system identification, played through a running gateway's operator and
 * Standard API (the path a real bench takes: pre-check, supervisor, recorder), and the reference
 * timeline sysid rebuilds from its records.
 *
 * Why excitation: the sim's joint servo (sim/servo.ts) is feed-forward + proportional. Its error
 * obeys e[k] = (1 − kp·dt)·e[k−1] while no limit saturates, so from a matched start state it
 * tracks every reference the pre-check accepts exactly, whatever kp is: smooth agent chunks carry
 * no information about the gain. The gain shows only in a transient — an error the servo must
 * remove. Inside the safety profile the API offers one: a chunk is planned from the *measured*
 * state, and a bench with a command delay is still finishing the previous chunk when the next
 * one starts, so the reference the servo receives jumps back by the motion of the delayed tail.
 * The excitation makes that jump large and frequent: short rest-to-rest chunks, played back to
 * back, each a doublet step of every joint with its own sign pattern (joints are decoupled in the
 * model, so all seven are excited at once), sized to a share of the profile's acceleration limit.
 * A bench with no command delay gives no transient: then the gain has no effect on any accepted
 * chunk and the fit keeps the prior (reported as not identified).
 *
 * The fit needs the exact reference each tick: `timelineSegment` rebuilds it from the record
 * (accepted joint_position commands with their clipping, each interpolated — seam/interpolate.ts,
 * the gateway's one implementation — from the measured reading the gateway planned it from, held
 * between commands), so one segment covers a whole episode and the servo is simulated through
 * chunk boundaries with its delay line.
 */
import { ROBOTS } from "../../robots/franka/models.ts";
import type { RobotId } from "../../robots/types.ts";
import { CodedError } from "../../seam/errors.ts";
import { interpolateChunk } from "../../seam/interpolate.ts";
import type { ServoParams } from "../../sim/servo.ts";
import type { RecordedEpisode } from "./replay.ts";
import { fitServo, rmsPerJoint, type Segment, servoError } from "./sysid.ts";

export interface ExcitationOptions {
  /** episodes to record (each a fresh episode started by the operator API); default 2 */
  episodes?: number;
  /** doublets per episode; default 100 (6 s at the default step) */
  doublets?: number;
  /** seconds per step (one chunk of one row); default 0.03 */
  stepS?: number;
  /** share of the profile's jerk limit a step's peak may use (half of it of the acceleration limit); default 0.8 */
  limitShare?: number;
  /** task and level the episodes run (default: the gateway's current task) */
  task?: string;
  seed?: number;
}

export interface GatewayHandle {
  /** base URL, e.g. http://127.0.0.1:8080 */
  url: string;
  agentToken: string;
  operatorToken: string;
}

/** peaks of a rest-to-rest quintic of amplitude A over T: acceleration 10/√3 · A/T², jerk 60 · A/T³ */
const QUINTIC_PEAK_ACCEL = 10 / Math.sqrt(3);
const QUINTIC_PEAK_JERK = 60;

/**
 * The sign pattern of joint j in doublet k: Walsh-like, so no two joints move alike (the fit is
 * per joint; distinct patterns keep a cross-coupling in a real arm visible as residual).
 */
export function excitationSign(j: number, k: number): 1 | -1 {
  return ((k >> (j % 3)) + j) % 2 === 0 ? 1 : -1;
}

/**
 * The act requests of one excitation episode from the start state `q0` (7 joints), the gripper
 * opening and the profile's acceleration and jerk limits. Each doublet is two chunks: out by
 * ±A_j, back. The jump a chunk boundary gives grows with the jerk at the end of the previous
 * chunk (the delayed tail moves ≈ jerk·τ³/6 in the last τ = delay + reading latency), so steps
 * are short and A_j sits at a share of the jerk limit (and of the acceleration limit).
 */
export function excitationChunks(
  q0: readonly number[],
  gripperM: number,
  limits: { maxAccel: readonly number[]; maxJerk: readonly number[] },
  periodS: number,
  o: ExcitationOptions = {},
): { type: "joint_position"; dt: number; rows: number[][] }[] {
  const n = o.doublets ?? 100;
  const steps = Math.max(1, Math.round((o.stepS ?? 0.03) / periodS));
  const T = steps * periodS;
  const share = o.limitShare ?? 0.8;
  // the acceleration keeps half the share: a chunk that starts on the previous one's tail adds to it
  const amp = limits.maxAccel
    .slice(0, 7)
    .map((a, j) =>
      Math.min(
        (0.5 * share * a * T * T) / QUINTIC_PEAK_ACCEL,
        (share * limits.maxJerk[j]! * T ** 3) / QUINTIC_PEAK_JERK,
      ),
    );
  const out: { type: "joint_position"; dt: number; rows: number[][] }[] = [];
  for (let k = 0; k < n; k++) {
    const away = q0.slice(0, 7).map((q, j) => q + excitationSign(j, k) * amp[j]!);
    out.push({ type: "joint_position", dt: T, rows: [[...away, gripperM]] });
    out.push({ type: "joint_position", dt: T, rows: [[...q0.slice(0, 7), gripperM]] });
  }
  return out;
}

interface ApiError {
  error?: { code?: string; message?: string };
}

async function call<T>(
  g: GatewayHandle,
  method: "GET" | "POST",
  path: string,
  token: string,
  body?: unknown,
): Promise<T> {
  const res = await fetch(new URL(path, g.url), {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  const json = text ? (JSON.parse(text) as unknown) : {};
  if (!res.ok) {
    const e = (json as ApiError).error;
    throw new CodedError("RB_ERR_TWIN_INPUT", {
      tool: "sysid excite",
      path: `${method} ${path}`,
      reason: `answered ${res.status} ${e?.code ?? ""}: ${e?.message ?? text.slice(0, 200)}`,
    });
  }
  return json as T;
}

interface TaskCard {
  task_id: string;
  level: string;
  safety: { joints: { max_acceleration: number; max_jerk: number }[] };
  episode: { status: string };
}

/**
 * Play the excitation on a running gateway: per episode, start one (operator API), read the
 * profile from the task card and the start state from an observation, send the chunks (agent
 * API), finish, and collect the record path the operator API reports. Returns the record paths.
 */
export async function runExcitation(
  g: GatewayHandle,
  o: ExcitationOptions = {},
  log: (line: string) => void = () => {},
): Promise<string[]> {
  const spec = await call<{ control: { control_period_s: number } }>(g, "GET", "/v1/spec", g.agentToken);
  const period = spec.control.control_period_s;
  const records: string[] = [];
  const current = await call<TaskCard>(g, "GET", "/v1/task", g.agentToken);
  for (let e = 0; e < (o.episodes ?? 2); e++) {
    const ep = await call<{ id: string }>(g, "POST", "/v1/admin/episodes", g.operatorToken, {
      task: o.task ?? current.task_id,
      level: current.level,
      seed: (o.seed ?? 1) + e,
    });
    const card = await call<TaskCard>(g, "GET", "/v1/task", g.agentToken);
    const obs = await call<{ readings: { q: number[]; gripper_width_m: number }[] }>(
      g,
      "POST",
      "/v1/observe",
      g.agentToken,
      { cameras: [] },
    );
    const r0 = obs.readings.at(-1);
    if (!r0) throw new Error("sysid excite: the observation carried no reading");
    const chunks = excitationChunks(
      r0.q,
      r0.gripper_width_m,
      {
        maxAccel: card.safety.joints.map((j) => j.max_acceleration),
        maxJerk: card.safety.joints.map((j) => j.max_jerk),
      },
      period,
      // a different sign pattern per episode: the held-out record is not the fitting one replayed
      { ...o, doublets: (o.doublets ?? 100) + e },
    );
    for (const c of chunks) {
      const res = await call<{ episode: { status: string; reason?: string } }>(
        g,
        "POST",
        "/v1/act",
        g.agentToken,
        c,
      );
      if (res.episode.status !== "running")
        throw new CodedError("RB_ERR_TWIN_INPUT", {
          tool: "sysid excite",
          path: `episode ${ep.id}`,
          reason: `the episode ended during the excitation (${res.episode.reason ?? res.episode.status})`,
        });
    }
    // let the last transient settle into the record
    await call(g, "POST", "/v1/observe", g.agentToken, { advance_s: 0.1, cameras: [] });
    await call(g, "POST", "/v1/finish", g.agentToken, {});
    let path: string | undefined;
    for (let tries = 0; tries < 200 && !path; tries++) {
      const s = await call<{ record_path?: string }>(
        g,
        "GET",
        `/v1/admin/episodes/${ep.id}`,
        g.operatorToken,
      );
      path = s.record_path;
      if (!path) await new Promise((r) => setTimeout(r, 50));
    }
    if (!path)
      throw new CodedError("RB_ERR_TWIN_INPUT", {
        tool: "sysid excite",
        path: `episode ${ep.id}`,
        reason: "the gateway reports no record for it (does the bench record?)",
      });
    log(`excitation episode ${ep.id}: ${chunks.length} chunks → ${path}`);
    records.push(path);
  }
  return records;
}

/**
 * One segment for a whole recorded episode: the reference of every tick since the episode start
 * (each accepted joint_position command interpolated from the reading it was planned from, the
 * last target held between commands) and the measured readings by tick. The gateway planned each
 * command from the bench's latest reading, measured `readingLagTicks` periods before the command
 * arrived (the bench's reading latency; the record holds readings by measurement time, so the fit
 * tries each lag: `fitTimeline`). Commands of other action types are refused (their joint rows
 * depend on IK: replay them with `segmentsOf`).
 */
export function timelineSegment(rec: RecordedEpisode, readingLagTicks: number): Segment {
  const robot = ROBOTS[rec.meta.robot as RobotId];
  if (!robot)
    throw new CodedError("RB_ERR_TWIN_INPUT", {
      tool: "sysid",
      path: rec.path,
      reason: `unknown robot ${rec.meta.robot}`,
    });
  const dt = rec.meta.control_period_s;
  if (rec.t.length === 0)
    throw new CodedError("RB_ERR_TWIN_INPUT", { tool: "sysid", path: rec.path, reason: "no joint states" });
  const lastT = rec.t[rec.t.length - 1]!;
  const count = Math.round(lastT / dt);
  const ref = new Float64Array(count * 7);
  const measured = new Float64Array(count * 7).fill(Number.NaN);
  // measured reading at time t is the state after tick round(t/dt) − 1
  for (let k = 0; k < rec.t.length; k++) {
    const i = Math.round(rec.t[k]! / dt) - 1;
    if (i < 0 || i >= count || Math.abs(rec.t[k]! - (i + 1) * dt) > dt / 4) continue;
    measured.set(rec.q[k]!.slice(0, 7), i * 7);
  }
  // the reading measured `readingLagTicks` before t (the first reading when there is none)
  let r = 0;
  const readingAt = (t: number): number => {
    const want = t - readingLagTicks * dt;
    while (r + 1 < rec.t.length && rec.t[r + 1]! <= want + dt / 4) r++;
    return r;
  };
  const startQ = rec.q[0]!.slice(0, 7);
  let held = Float64Array.from(startQ);
  let tick = 0;
  const fillHeld = (upTo: number) => {
    for (; tick < Math.min(upTo, count); tick++) ref.set(held, tick * 7);
  };
  for (const c of rec.commands) {
    const req = c.request as { type?: string; dt?: number; rows?: number[][] };
    if (req.type !== "joint_position" || !req.rows || typeof req.dt !== "number")
      throw new CodedError("RB_ERR_TWIN_INPUT", {
        tool: "sysid",
        path: rec.path,
        reason: `command at t=${c.t} is ${String(req.type)}: the timeline fit reads joint_position records (excitation)`,
      });
    const startTick = Math.round(c.t / dt);
    fillHeld(startTick);
    const rows = req.rows.map((row) => [...row]);
    for (const cl of c.clipped) rows[cl.row]![cl.column] = cl.applied;
    const k = readingAt(c.t);
    const traj = interpolateChunk(
      { q: rec.q[k]!.slice(0, 7), dq: rec.dq[k]!.slice(0, 7), gripperWidthM: rec.gripper[k]! },
      rows,
      req.dt,
      dt,
    );
    for (let i = 0; i < traj.count && tick < count; i++, tick++)
      ref.set(traj.q.subarray(i * 7, i * 7 + 7), tick * 7);
    held = traj.q.slice((traj.count - 1) * 7, traj.count * 7);
  }
  fillHeld(count);
  return {
    ref,
    count,
    startQ,
    startDq: new Array(7).fill(0),
    gripper: rec.gripper[0] ?? robot.gripper.maxWidthM,
    measured,
  };
}

export interface TimelineFit {
  kpPerJoint: number[];
  delayTicks: number;
  /** the reading latency the records fit best, control periods */
  readingLagTicks: number;
  /** per joint: the gain differs from the prior by more than the noise explains */
  identified: boolean[];
  /** per joint: gains whose squared error is within χ²₁(99.9 %) = 10.83 σ² of the best (the 99.9 % interval), 1/s */
  kpInterval: [number, number][];
  /** residual RMS per joint at the fit, rad (≈ the encoder noise when the model explains the rest) */
  rmsRad: number[];
  /** samples per joint */
  samples: number;
}

/**
 * Fit the servo (per-joint gain, command delay) and the reading latency to excitation records:
 * the latency by the least squared error at the prior gains over every delay, then the gains and
 * delay by `fitServo` on the timelines rebuilt with it. A gain counts as identified when its
 * squared-error reduction against the prior exceeds 10 σ² (a likelihood ratio of e⁵; σ² the
 * residual variance per sample): smaller reductions are what noise gives, and the prior stays.
 */
export function fitTimeline(
  recs: readonly RecordedEpisode[],
  base: ServoParams,
  dtS: number,
  opts: { maxDelayTicks?: number; maxLagTicks?: number; priorKp?: readonly number[] } = {},
): TimelineFit {
  const prior = [...(opts.priorKp ?? new Array<number>(7).fill(base.kpPerS))];
  const maxDelay = opts.maxDelayTicks ?? 12;
  let bestLag = 0;
  let bestE = Number.POSITIVE_INFINITY;
  for (let lag = 0; lag <= (opts.maxLagTicks ?? 4); lag++) {
    const segs = recs.map((r) => timelineSegment(r, lag));
    for (let d = 0; d <= maxDelay; d++) {
      const e = servoError(segs, base, { kpPerJoint: prior, delayTicks: d }, dtS).sse.reduce(
        (s, v) => s + v,
        0,
      );
      if (e < bestE) {
        bestE = e;
        bestLag = lag;
      }
    }
  }
  const segs = recs.map((r) => timelineSegment(r, bestLag));
  const fit = fitServo(segs, base, dtS, { maxDelayTicks: maxDelay, priorKp: prior, gate: false });
  const d = fit.delayTicks;
  const raw = fit.rawKp;
  const at = (kp: number[]) => servoError(segs, base, { kpPerJoint: kp, delayTicks: d }, dtS);
  const eFit = at(raw);
  const ePrior = at(prior);
  const n = eFit.n[0]!;
  const sigma2 = eFit.sse.map((s, j) => s / Math.max(1, eFit.n[j]!));
  const identified = raw.map((_, j) => fit.interior[j]! && ePrior.sse[j]! - eFit.sse[j]! > 10 * sigma2[j]!);
  const kp = raw.map((k, j) => (identified[j] ? k : prior[j]!));
  // the 99.9 % interval: scan kp outwards from the fit until the error rises by 10.83 σ²
  const kpInterval = raw.map((k, j): [number, number] => {
    const bound = (dir: 1 | -1): number => {
      let f = 1;
      for (let i = 0; i < 40; i++) {
        const next = f * (1 + 0.05 * (i + 1)) ** dir;
        const trial = [...raw];
        trial[j] = k * next;
        const e = at(trial).sse[j]!;
        if (e - eFit.sse[j]! > 10.83 * sigma2[j]!) return k * next;
        f = next;
      }
      return dir > 0 ? Number.POSITIVE_INFINITY : 0;
    };
    return [bound(-1), bound(1)];
  });
  return {
    kpPerJoint: kp,
    delayTicks: d,
    readingLagTicks: bestLag,
    identified,
    kpInterval,
    rmsRad: rmsPerJoint(at(kp)),
    samples: n,
  };
}
