/**
 * Offline verification: read a record.mcap alone, rebuild the task judge from the recorded task id,
 * instance and bench context, replay readings, events and the submission in the order the live
 * episode saw them, recompute result.json with the same function the gateway uses, and compare it
 * with the result the gateway recorded.
 */
import { createReadStream } from "node:fs";
import { McapStreamReader } from "@mcap/core";
import { ROBOTS } from "../../robots/franka/models.ts";
import { getTask as registryGetTask } from "../../tasks/registry.ts";
import type { TaskContext, TaskDefinition, TaskJudge } from "../../tasks/types.ts";
import type { EpisodeCounters } from "./result.ts";
import { canonicalJson } from "./provenance.ts";
import {
  type CommandMessage,
  decodeJointBatch,
  type EndMessage,
  type EventMessage,
  type InstanceMessage,
  type JointBatchMessage,
  type MetaMessage,
  type ObservationMessage,
  RECORD_FORMAT,
  type SubmissionMessage,
  TOPICS,
} from "./record-format.ts";
import { r6 } from "../time.ts";
import { computeResult, diffResults, type EpisodeResult, type ResultDifference } from "./result.ts";

/** Why a record cannot be graded. */
export type RecordErrorKind = "unreadable" | "not_a_record" | "incomplete" | "unknown_task";

export class RecordError extends Error {
  constructor(
    readonly kind: RecordErrorKind,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "RecordError";
  }
}

/** One decoded message of a record. */
export interface RecordMessage {
  topic: string;
  sequence: number;
  logTime: bigint;
  data: unknown;
}

export interface RecordContents {
  messages: RecordMessage[];
  /** the file ended with a valid footer */
  complete: boolean;
  /** bytes read */
  bytes: number;
  /** why reading stopped early (corrupt data), when it did */
  readError?: string;
}

/**
 * Read every message of a record in file order. Tolerant: a file cut off mid-record (crash) yields
 * everything up to the last complete chunk with `complete: false`; corrupt data stops reading
 * there with `readError`. Non-JSON channels are skipped.
 */
export async function readRecord(path: string): Promise<RecordContents> {
  const reader = new McapStreamReader({ validateCrcs: true });
  const topics = new Map<number, { topic: string; json: boolean }>();
  const messages: RecordMessage[] = [];
  const decoder = new TextDecoder();
  let bytes = 0;
  let readError: string | undefined;
  let sawMagic = false;
  try {
    for await (const chunk of createReadStream(path)) {
      const buf = chunk as Buffer;
      bytes += buf.byteLength;
      if (readError) continue;
      try {
        reader.append(buf);
        for (let rec = reader.nextRecord(); rec; rec = reader.nextRecord()) {
          if (rec.type === "Header") sawMagic = true;
          else if (rec.type === "Channel") {
            topics.set(rec.id, { topic: rec.topic, json: rec.messageEncoding === "json" });
          } else if (rec.type === "Message") {
            const ch = topics.get(rec.channelId);
            if (!ch?.json) continue;
            messages.push({
              topic: ch.topic,
              sequence: rec.sequence,
              logTime: rec.logTime,
              data: JSON.parse(decoder.decode(rec.data)),
            });
          }
        }
      } catch (e) {
        readError = (e as Error).message;
      }
    }
  } catch (e) {
    throw new RecordError("unreadable", `cannot read ${path}: ${(e as Error).message}`, { path });
  }
  if (!sawMagic) {
    throw new RecordError(
      "not_a_record",
      `${path} is not an MCAP file${readError ? ` (${readError})` : ""} (${bytes} bytes)`,
      { path, bytes },
    );
  }
  return { messages, complete: reader.done(), bytes, ...(readError ? { readError } : {}) };
}

export interface ReplayOptions {
  /** task lookup; default the task registry (tests add their own tasks) */
  getTask?: (id: string) => TaskDefinition | undefined;
  /**
   * grade a record whose episode did not end inside it (crash, truncation) up to its last complete
   * message instead of refusing it; the result is marked `recovered` with outcome `incomplete`
   */
  recover?: boolean;
}

/** What a replay found, before it is compared with the recorded result. */
export interface ReplayState {
  meta: MetaMessage;
  judge: TaskJudge;
  readings: number;
  events: number;
  commands: number;
  observations: number;
  /** episode seconds of the last replayed reading */
  lastReadingT: number;
  refusals: number;
  clippedEntries: number;
  end?: EndMessage;
  recorded?: EpisodeResult;
  notes: string[];
}

/** Rebuild the judge from the record and feed it the recorded stream in the live order. */
export function replayRecord(contents: RecordContents, opts: ReplayOptions = {}): ReplayState {
  const msgs = [...contents.messages].sort((a, b) => a.sequence - b.sequence);
  const metaMsg = msgs.find((m) => m.topic === TOPICS.meta);
  const meta = metaMsg?.data as MetaMessage | undefined;
  if (!meta || meta.format !== RECORD_FORMAT) {
    throw new RecordError("not_a_record", `no ${TOPICS.meta} message of format ${RECORD_FORMAT}`);
  }
  const task = (opts.getTask ?? registryGetTask)(meta.task);
  if (!task)
    throw new RecordError("unknown_task", `task "${meta.task}" is not registered`, { task: meta.task });
  const robot = ROBOTS[meta.robot as keyof typeof ROBOTS];
  if (!robot) throw new RecordError("not_a_record", `unknown robot "${meta.robot}"`);
  const ctx: TaskContext = {
    robot,
    toolFromFlange: Float64Array.from(meta.tool_from_flange),
    bench: meta.task_bench,
  };
  const instanceMsg = msgs.find((m) => m.topic === TOPICS.instance)?.data as InstanceMessage | undefined;
  if (!instanceMsg) throw new RecordError("not_a_record", `no ${TOPICS.instance} message`);
  const notes: string[] = [];
  const resampled = task.sampleInstance(meta.seed, ctx);
  if (canonicalJson(resampled) !== canonicalJson(instanceMsg.instance)) {
    notes.push(
      `the recorded instance differs from task.sampleInstance(seed ${meta.seed}) today; grading with the recorded instance`,
    );
  }
  const judge = task.createJudge(instanceMsg.instance, ctx);
  const st: ReplayState = {
    meta,
    judge,
    readings: 0,
    events: 0,
    commands: 0,
    observations: 0,
    lastReadingT: 0,
    refusals: 0,
    clippedEntries: 0,
    notes,
  };
  const observationIds = new Set<string>();
  for (const m of msgs) {
    switch (m.topic) {
      case TOPICS.jointStates: {
        const b = decodeJointBatch(m.data as JointBatchMessage);
        for (let i = 0; i < b.n; i++) {
          // a fresh object per reading, as live: a judge may keep what it is given
          const q = Array.from(b.q.subarray(i * b.dof, (i + 1) * b.dof));
          judge.onReading({ t: r6(b.t[i]!), q, gripperWidthM: b.gripperWidthM[i]! });
          st.readings++;
          st.lastReadingT = b.t[i]!;
        }
        break;
      }
      case TOPICS.events: {
        const e = m.data as EventMessage;
        st.events++;
        if (e.type !== "fault") judge.onEvent({ type: e.type, t: r6(e.t), data: e.data });
        break;
      }
      case TOPICS.commands: {
        const c = m.data as CommandMessage;
        st.commands++;
        if (c.accepted) st.clippedEntries += c.clipped.length;
        else st.refusals++;
        break;
      }
      case TOPICS.observations: {
        const o = m.data as ObservationMessage;
        observationIds.add(o.observation_id);
        judge.onObservation?.(o.observation_id, o.t);
        st.observations++;
        break;
      }
      case TOPICS.submission: {
        const s = m.data as SubmissionMessage;
        judge.onSubmit?.(s.answer, s.evidence, observationIds);
        break;
      }
      case TOPICS.end:
        st.end = m.data as EndMessage;
        break;
      case TOPICS.result:
        st.recorded = m.data as EpisodeResult;
        break;
    }
  }
  return st;
}

export interface GradeReport {
  path: string;
  /** graded a truncated record up to its last complete message (`recover`); nothing to compare with */
  recovered: boolean;
  /** recomputed and recorded results agree on every deterministic field */
  agree: boolean;
  recomputed: EpisodeResult;
  recorded: EpisodeResult;
  differences: ResultDifference[];
  notes: string[];
  stats: { readings: number; events: number; commands: number; observations: number; bytes: number };
}

/** Recompute the result from the stream of an ended, replayed episode. */
export function recomputeResult(st: ReplayState): EpisodeResult {
  const end = st.end;
  if (!end) throw new RecordError("incomplete", "the record has no /episode/end message");
  const counters: EpisodeCounters = {
    ...end.counters,
    refusals: st.refusals,
    clippedEntries: st.clippedEntries,
  };
  return computeResult({
    episodeId: st.meta.episode_id,
    task: st.meta.task,
    level: st.meta.level,
    setting: st.meta.setting,
    seed: st.meta.seed,
    end: { reason: end.reason, ...(end.detail ? { detail: end.detail } : {}), tS: end.t },
    status: st.judge.status(),
    score: st.judge.score(),
    budgets: st.meta.task_card.budgets,
    counters,
    wall: { startedAt: end.started_at, endedAt: end.ended_at },
    ...(st.meta.provenance ? { provenance: st.meta.provenance } : {}),
  });
}

/**
 * The result of a record whose episode did not end inside it, up to its last complete message:
 * outcome `incomplete` (a cut-off record proves no success, and no fault of the agent), end reason
 * `aborted` with a detail saying so, and `recovered` naming where the record stops. Counters the
 * stream carries (refusals, clipped entries, accepted chunks as steps) are counted from it.
 */
export function recoverResult(
  st: ReplayState,
  contents: RecordContents,
  acceptedChunks: number,
): EpisodeResult {
  const m = st.meta;
  const tS = st.lastReadingT;
  const startedMs = Date.parse(m.started_at);
  const endedAt = new Date(
    (Number.isFinite(startedMs) ? startedMs : 0) + Math.round(tS * 1000),
  ).toISOString();
  const status = st.judge.status();
  const r = computeResult({
    episodeId: m.episode_id,
    task: m.task,
    level: m.level,
    setting: m.setting,
    seed: m.seed,
    end: {
      reason: "aborted",
      detail: `recovered: the record ends at t=${tS.toFixed(3)} s before the episode did (${contents.complete ? "no end message" : "file cut off"})`,
      tS,
    },
    status,
    score: st.judge.score(),
    budgets: m.task_card.budgets,
    counters: {
      steps: acceptedChunks,
      resetsUsed: 0,
      refusals: st.refusals,
      clippedEntries: st.clippedEntries,
      safetyStops: 0,
      framesServed: 0,
    },
    wall: { startedAt: m.started_at, endedAt },
    ...(m.provenance ? { provenance: m.provenance } : {}),
  });
  return {
    ...r,
    outcome: "incomplete",
    success: false,
    recovered: {
      last_reading_t: tS,
      readings: st.readings,
      file_complete: contents.complete,
      judge_state: status.state,
    },
  };
}

/**
 * Grade a record: read, replay, recompute, compare. Throws RecordError when the file is not a
 * readable record, or when the episode did not end inside it (crash, truncation) unless
 * `opts.recover` asks for the recovered, `incomplete` result.
 */
export async function gradeRecord(path: string, opts: ReplayOptions = {}): Promise<GradeReport> {
  const contents = await readRecord(path);
  const st = replayRecord(contents, opts);
  if ((!st.end || !st.recorded) && opts.recover) {
    const accepted = contents.messages.filter(
      (m) => m.topic === TOPICS.commands && (m.data as CommandMessage).accepted,
    ).length;
    const recomputed = recoverResult(st, contents, accepted);
    const notes = [
      ...st.notes,
      `recovered: the episode did not end inside the record; graded its ${st.readings} readings up to t=${st.lastReadingT.toFixed(3)} s, outcome incomplete`,
      ...(contents.readError ? [`reading stopped early: ${contents.readError}`] : []),
    ];
    return {
      path,
      recovered: true,
      agree: false,
      recomputed,
      recorded: recomputed,
      differences: [],
      notes,
      stats: {
        readings: st.readings,
        events: st.events,
        commands: st.commands,
        observations: st.observations,
        bytes: contents.bytes,
      },
    };
  }
  if (!st.end || !st.recorded) {
    const score = st.judge.score();
    throw new RecordError(
      "incomplete",
      `${path}: the episode did not end inside the record (${contents.complete ? "no end message" : "file truncated"}` +
        `${contents.readError ? `, ${contents.readError}` : ""}; grade --recover grades it up to its last complete message); replayed ${st.readings} readings up to t=${st.lastReadingT.toFixed(3)} s, partial progress ${score.progress}`,
      {
        path,
        complete: contents.complete,
        readings: st.readings,
        last_reading_t: st.lastReadingT,
        partial_progress: score.progress,
        status: st.judge.status(),
      },
    );
  }
  const notes = [...st.notes];
  if (!contents.complete) notes.push("the file has no footer (not closed cleanly); graded what it holds");
  if (contents.readError) notes.push(`reading stopped early: ${contents.readError}`);
  const recomputed = recomputeResult(st);
  const differences = diffResults(st.recorded, recomputed);
  return {
    path,
    recovered: false,
    agree: differences.length === 0,
    recomputed,
    recorded: st.recorded,
    differences,
    notes,
    stats: {
      readings: st.readings,
      events: st.events,
      commands: st.commands,
      observations: st.observations,
      bytes: contents.bytes,
    },
  };
}
