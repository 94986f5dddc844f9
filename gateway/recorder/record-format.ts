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
import type { EpisodeCounters } from "../episode/episode.ts";
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
 * /joint_states: every reading the episode fed the judge, batched. Arrays are parallel; `q`/`dq`
 * rows have one entry per arm joint.
 */
export interface JointBatchMessage {
  /** episode seconds of each sample */
  t: number[];
  /** rad */
  q: number[][];
  /** rad/s */
  dq: number[][];
  /** N·m, when the backend measures torques */
  tau?: number[][];
  /** m */
  gripper_width_m: number[];
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

/** /observations */
export interface ObservationMessage {
  t: number;
  observation_id: string;
  cameras: string[];
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
}

const obj = (title: string, description: string, properties: Record<string, unknown> = {}) => ({
  title,
  description,
  type: "object",
  properties,
});
const numArr = { type: "array", items: { type: "number" } };
const numMat = { type: "array", items: numArr };

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
  jointBatch: obj("robot_gateway.JointStateBatch", "every measured reading, batched", {
    t: numArr,
    q: numMat,
    dq: numMat,
    tau: numMat,
    gripper_width_m: numArr,
  }),
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
  }),
  submission: obj("robot_gateway.Submission", "the agent's answer and evidence", {
    t: { type: "number" },
    answer: {},
    evidence: { type: "array", items: { type: "string" } },
  }),
  end: obj("robot_gateway.EpisodeEnd", "end reason and counters"),
  result: obj("robot_gateway.Result", "result.json"),
} as const;
