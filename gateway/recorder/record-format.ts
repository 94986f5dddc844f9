/**
 * The episode record (record.mcap): topics, message shapes and their JSON schemas. One place, read
 * by the recorder (writer) and by replay/grade (reader). All channels are JSON-encoded; camera frames
 * and the log use Foxglove's own schemas (foxglove.CompressedImage, foxglove.Log,
 * foxglove.JointStates) so Foxglove shows them without plugins; the rest are `robot_gateway.*`.
 *
 * Times: `t` fields are episode seconds as the live task judge saw them (full double precision);
 * MCAP log times are the episode start's wall clock plus episode seconds, in nanoseconds.
 * Messages carry a global MCAP `sequence` that is the order in which the gateway saw them; replay
 * follows that order.
 */
import type { Setting, TaskBudgets } from "../../tasks/types.ts";
import type { EndReason } from "../api/schemas.ts";
import type { RealtimeStatus } from "../episode/view.ts";
import type { EpisodeCounters } from "./result.ts";
import type { Provenance } from "./provenance.ts";

export const RECORD_FORMAT = "robot-gateway/record@1";

export const TOPICS = {
  meta: "/episode/meta",
  instance: "/operator/instance",
  commands: "/commands",
  jointStates: "/joint_states",
  jointStatesPreview: "/joint_states/preview",
  events: "/events",
  safety: "/safety",
  log: "/log",
  observations: "/observations",
  submission: "/submission",
  end: "/episode/end",
  result: "/result",
  /** a shadow bench's twin divergence, per chunk and per trial (compose/twin/observer.ts) */
  twinDivergence: "/twin/divergence",
} as const;

/** camera topic for a camera name */
export const cameraTopic = (name: string): string => `/camera/${name}`;

/** /episode/meta: everything needed to rebuild the task judge offline, plus provenance. */
export interface MetaMessage {
  format: typeof RECORD_FORMAT;
  episode_id: string;
  task: string;
  level: string;
  setting: Setting;
  seed: number;
  /** the task card the agent saw */
  task_card: { title: string; instruction: string; budgets: TaskBudgets; hides_success: boolean };
  /** robot model id (robots/franka/models.ts ROBOTS key) */
  robot: string;
  joint_names: string[];
  /** flange → tool transform, row-major 4×4 */
  tool_from_flange: number[];
  /** TaskContext.bench: backend-independent bench data the task needs */
  task_bench: Record<string, unknown>;
  backend: string;
  control_period_s: number;
  /** backend seconds at episode t = 0 */
  t0_backend_s: number;
  /** wall-clock ISO time of the start */
  started_at: string;
  provenance?: Provenance;
  /** joint-state batching of this record, s */
  joint_batch_s: number;
  /**
   * realtime setting: the pacing the task card stated (drive "stepped" | "streamed", S, margin,
   * horizon, tolerance, gap)
   */
  realtime?: Record<string, number | string>;
}

/**
 * /twin/divergence: what the shadow twin predicted against what the bench did (compose/twin/divergence.ts
 * DivergenceSummary, NaN as null). One message per chunk (`scope: "chunk"`, at the chunk's end)
 * and one for the whole trial at the end (`scope: "trial"`).
 */
export interface TwinDivergenceMessage {
  scope: "chunk" | "trial";
  /** episode seconds */
  t: number;
  /** chunk index since the episode start (chunk scope) */
  chunk?: number;
  kind?: "execute" | "hold";
  divergence: Record<string, unknown>;
}

/** /operator/instance: the hidden instance parameters (operator-only; never shown to the agent). */
export interface InstanceMessage {
  instance: Record<string, unknown>;
}

/** /commands: one act request exactly as sent, with clipping and the pre-check verdict. */
export interface CommandMessage {
  /** episode seconds when the command arrived */
  t: number;
  request: unknown;
  clipped: { row: number; column: number; requested: number; applied: number }[];
  accepted: boolean;
}

/**
 * /joint_states: every reading the episode fed the judge, batched. The numbers travel as base64 of
 * little-endian float64 arrays (exact, and ~3× cheaper to write than decimal JSON at full
 * precision); `t_first`/`t_last` stay readable. Decode with `decodeJointBatch`. For plots, Foxglove
 * reads /joint_states/preview (foxglove.JointStates, the last sample of each batch).
 */
export interface JointBatchMessage {
  encoding: "f64le-base64";
  /** samples in the batch */
  n: number;
  /** arm joints per sample */
  dof: number;
  /** episode seconds of the first and last sample */
  t_first: number;
  t_last: number;
  /** n episode seconds */
  t: string;
  /** n × dof joint positions, rad, row-major */
  q: string;
  /** n × dof joint velocities, rad/s */
  dq: string;
  /** n × dof measured torques, N·m, when the backend has them */
  tau?: string;
  /** n gripper openings, m */
  gripper_width_m: string;
}

/** A decoded /joint_states batch. */
export interface JointBatch {
  t: Float64Array;
  q: Float64Array;
  dq: Float64Array;
  tau?: Float64Array;
  gripperWidthM: Float64Array;
  n: number;
  dof: number;
}

const LITTLE_ENDIAN = new Uint8Array(new Float64Array([1]).buffer)[7] === 0x3f;

/** base64 of the first `count` values as little-endian float64 */
export function f64ToBase64(a: Float64Array, count: number): string {
  if (LITTLE_ENDIAN) return Buffer.from(a.buffer, a.byteOffset, count * 8).toString("base64");
  const out = Buffer.allocUnsafe(count * 8);
  for (let i = 0; i < count; i++) out.writeDoubleLE(a[i]!, i * 8);
  return out.toString("base64");
}

const B64 = new TextEncoder().encode("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");

/** The samples of an open /joint_states batch (arrays may be longer than n rows). */
export interface JointBatchArrays {
  n: number;
  t: Float64Array;
  q: Float64Array;
  dq: Float64Array;
  tau?: Float64Array | undefined;
  gripper: Float64Array;
}

/**
 * A /joint_states batch as the UTF-8 bytes of `JSON.stringify` of its JointBatchMessage (the
 * same bytes), written into `scratch` without the message object, its base64 strings or the
 * JSON string (the recorder's largest allocation per batch). Returns a view of `scratch`, or
 * of a new buffer when `scratch` is too small; null on a big-endian machine or for a non-finite
 * time (then use the message).
 */
export function jointBatchJsonBytes(
  b: JointBatchArrays,
  dof: number,
  scratch: Uint8Array,
): Uint8Array | null {
  const n = b.n;
  // JSON writes a non-finite number as null: those (never an episode time) take the message way
  if (!LITTLE_ENDIAN || !Number.isFinite(b.t[0]!) || !Number.isFinite(b.t[n - 1]!)) return null;
  const tFirst = String(b.t[0]!);
  const tLast = String(b.t[n - 1]!);
  const need =
    180 + tFirst.length + tLast.length + 3 * base64Length(n) + (b.tau ? 3 : 2) * base64Length(n * dof);
  const out = scratch.length >= need ? scratch : new Uint8Array(need);
  // the key order of batchMessage's object literal (JSON.stringify keeps it)
  let o = writeAscii(
    out,
    0,
    `{"encoding":"f64le-base64","n":${n},"dof":${dof},"t_first":${tFirst},"t_last":${tLast},"t":"`,
  );
  o = writeBase64(out, o, b.t, n);
  o = writeAscii(out, o, '","q":"');
  o = writeBase64(out, o, b.q, n * dof);
  o = writeAscii(out, o, '","dq":"');
  o = writeBase64(out, o, b.dq, n * dof);
  if (b.tau) {
    o = writeAscii(out, o, '","tau":"');
    o = writeBase64(out, o, b.tau, n * dof);
  }
  o = writeAscii(out, o, '","gripper_width_m":"');
  o = writeBase64(out, o, b.gripper, n);
  o = writeAscii(out, o, '"}');
  return out.subarray(0, o);
}

/** characters of the padded base64 of `values` float64 */
function base64Length(values: number): number {
  return Math.ceil((values * 8) / 3) * 4;
}

/** ASCII `str` into `out` at `o`; returns the end */
function writeAscii(out: Uint8Array, o: number, str: string): number {
  for (let i = 0; i < str.length; i++) out[o++] = str.charCodeAt(i);
  return o;
}

/** base64 (padded) of the first `values` float64 of `a` as stored (little-endian here) into `out` at `o`; returns the end */
function writeBase64(out: Uint8Array, o: number, a: Float64Array, values: number): number {
  const src = new Uint8Array(a.buffer, a.byteOffset, values * 8);
  const len = src.length;
  let i = 0;
  for (; i + 2 < len; i += 3) {
    const x = (src[i]! << 16) | (src[i + 1]! << 8) | src[i + 2]!;
    out[o++] = B64[x >> 18]!;
    out[o++] = B64[(x >> 12) & 63]!;
    out[o++] = B64[(x >> 6) & 63]!;
    out[o++] = B64[x & 63]!;
  }
  if (i < len) {
    const x = (src[i]! << 16) | (i + 1 < len ? src[i + 1]! << 8 : 0);
    out[o++] = B64[x >> 18]!;
    out[o++] = B64[(x >> 12) & 63]!;
    out[o++] = i + 1 < len ? B64[(x >> 6) & 63]! : 61;
    out[o++] = 61;
  }
  return o;
}

export function base64ToF64(s: string): Float64Array {
  const b = Buffer.from(s, "base64");
  const out = new Float64Array(b.byteLength / 8);
  for (let i = 0; i < out.length; i++) out[i] = b.readDoubleLE(i * 8);
  return out;
}

export function decodeJointBatch(m: JointBatchMessage): JointBatch {
  if (m.encoding !== "f64le-base64") throw new Error(`unknown /joint_states encoding ${String(m.encoding)}`);
  const b: JointBatch = {
    n: m.n,
    dof: m.dof,
    t: base64ToF64(m.t),
    q: base64ToF64(m.q),
    dq: base64ToF64(m.dq),
    gripperWidthM: base64ToF64(m.gripper_width_m),
  };
  if (m.tau) b.tau = base64ToF64(m.tau);
  if (b.t.length !== m.n || b.q.length !== m.n * m.dof || b.gripperWidthM.length !== m.n) {
    throw new Error(`malformed /joint_states batch: n=${m.n} dof=${m.dof}`);
  }
  return b;
}

/** /events: a sensor event (backend event with episode seconds). */
export interface EventMessage {
  type: string;
  /** episode seconds, full precision */
  t: number;
  data: Record<string, unknown>;
}

/** /safety: a safety event as the episode reported it. */
export interface SafetyMessage {
  t: number;
  kind: string;
  message: string;
  details: Record<string, unknown>;
}

/** /observations: camera observations and instrument exports, each an id the agent may cite */
export interface ObservationMessage {
  /** episode time at which the id was issued (exactly what the judge was told) */
  t: number;
  observation_id: string;
  cameras: string[];
  /** set when the observation is an instrument export (GET /v1/instruments/:name) */
  instrument?: string;
}

/** /submission */
export interface SubmissionMessage {
  t: number;
  answer: unknown;
  evidence: string[];
}

/** /episode/end: how the gateway ended the episode and its counters. */
export interface EndMessage {
  reason: EndReason;
  detail?: string;
  /** episode seconds */
  t: number;
  counters: EpisodeCounters;
  started_at: string;
  ended_at: string;
  /** realtime setting: steps committed, rows left queued, late steps and the time stood still */
  realtime?: RealtimeStatus;
}

const obj = (title: string, description: string, properties: Record<string, unknown> = {}) => ({
  title,
  description,
  type: "object",
  properties,
});

/** JSON schemas of the robot_gateway.* messages (kept loose: the TS interfaces above are the contract). */
export const SCHEMAS = {
  meta: obj("robot_gateway.EpisodeMeta", "task, level, setting, seed, bench context and provenance"),
  instance: obj("robot_gateway.TaskInstance", "hidden task instance parameters (operator only)", {
    instance: { type: "object" },
  }),
  command: obj("robot_gateway.Command", "an act request as sent, its clipped entries and verdict", {
    t: { type: "number" },
    request: { type: "object" },
    clipped: { type: "array" },
    accepted: { type: "boolean" },
  }),
  jointBatch: obj(
    "robot_gateway.JointStateBatch",
    "every measured reading, batched; arrays are base64 of little-endian float64 (row-major n × dof)",
    {
      encoding: { type: "string", const: "f64le-base64" },
      n: { type: "integer" },
      dof: { type: "integer" },
      t_first: { type: "number" },
      t_last: { type: "number" },
      t: { type: "string", contentEncoding: "base64" },
      q: { type: "string", contentEncoding: "base64" },
      dq: { type: "string", contentEncoding: "base64" },
      tau: { type: "string", contentEncoding: "base64" },
      gripper_width_m: { type: "string", contentEncoding: "base64" },
    },
  ),
  event: obj("robot_gateway.SensorEvent", "sensor event", {
    type: { type: "string" },
    t: { type: "number" },
    data: { type: "object" },
  }),
  safety: obj("robot_gateway.SafetyEvent", "safety event", {
    t: { type: "number" },
    kind: { type: "string" },
    message: { type: "string" },
    details: { type: "object" },
  }),
  observation: obj("robot_gateway.Observation", "an observation id the agent may cite", {
    t: { type: "number" },
    observation_id: { type: "string" },
    cameras: { type: "array", items: { type: "string" } },
    instrument: { type: "string" },
  }),
  submission: obj("robot_gateway.Submission", "the agent's answer and evidence", {
    t: { type: "number" },
    answer: {},
    evidence: { type: "array", items: { type: "string" } },
  }),
  end: obj("robot_gateway.EpisodeEnd", "end reason and counters"),
  result: obj("robot_gateway.Result", "result.json"),
  twinDivergence: obj("robot_gateway.TwinDivergence", "shadow twin divergence, per chunk and per trial", {
    scope: { type: "string", enum: ["chunk", "trial"] },
    t: { type: "number" },
    chunk: { type: "integer" },
    kind: { type: "string", enum: ["execute", "hold"] },
    divergence: {
      type: "object",
      properties: {
        samples: { type: "integer" },
        joint: {
          type: "object",
          properties: {
            rmsRad: { type: "array", items: { type: ["number", "null"] } },
            maxRad: { type: "array", items: { type: ["number", "null"] } },
          },
        },
        toolMm: { type: "object" },
        contacts: { type: "object" },
        progress: { type: ["object", "null"] },
        images: { type: "array" },
      },
    },
  }),
} as const;
