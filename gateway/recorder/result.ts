/**
 * result.json: ONE function computes it from the episode stream's outcome (end reason, the task
 * judge's status and score, counters, timing). The live gateway calls it when an episode ends and
 * `robot-gateway grade` calls it after replaying a record through a fresh judge, so the two can be
 * compared field by field.
 */
import type { Setting, TaskBudgets, TaskScore, TaskStatus } from "../../tasks/types.ts";
import type { EndReason } from "../api/schemas.ts";
import { r6 } from "../time.ts";
import type { Provenance } from "./provenance.ts";

export const RESULT_FORMAT = "robot-gateway/result@1";

/**
 * - `success`: the task's success rule holds at the end (and the episode did not end on a task failure)
 * - `failed`: a task failure (e.g. wire contact), a safety stop, or the judge's failed status
 * - `incomplete`: finished, submitted, time or step limit without success
 * - `fault`: a device or backend fault ended it (not the agent's doing)
 * - `aborted`: an operator aborted it (not the agent's doing)
 */
export type Outcome = "success" | "failed" | "incomplete" | "fault" | "aborted";

/** Counters that go into result.json. */
export interface EpisodeCounters {
  steps: number;
  resetsUsed: number;
  refusals: number;
  clippedEntries: number;
  safetyStops: number;
  framesServed: number;
}

/** Everything the result is computed from; live and offline fill it from the same stream. */
export interface ResultInput {
  episodeId: string;
  task: string;
  level: string;
  setting: Setting;
  seed: number;
  end: {
    reason: EndReason;
    detail?: string;
    /** episode seconds at the end */
    tS: number;
  };
  /** the judge's status and score after the last reading/event/submission */
  status: TaskStatus;
  score: TaskScore;
  budgets: TaskBudgets;
  counters: EpisodeCounters;
  /** wall-clock ISO times of the episode's start and end */
  wall: { startedAt: string; endedAt: string };
  provenance?: Provenance;
}

/** result.json (snake_case, JSON-safe). */
export interface EpisodeResult {
  format: typeof RESULT_FORMAT;
  episode_id: string;
  task: string;
  level: string;
  setting: Setting;
  seed: number;
  outcome: Outcome;
  success: boolean;
  end_reason: EndReason;
  end_detail?: string;
  /** the judge's failure reason when its status is failed */
  failure_reason?: string;
  /** 0…1 continuous progress from the task's scorer */
  progress: number;
  /** progress quantised to the task's checkpoints, 0…1 */
  progress_quantised?: number;
  /** stage name → episode seconds at which it was reached (null: not reached) */
  stages: Record<string, number | null>;
  /** 0…1, for tasks that grade the procedure */
  process_score?: number;
  score_details?: Record<string, unknown>;
  timing: {
    /** episode seconds at the end */
    episode_s: number;
    /** wall-clock seconds from start to end */
    wall_s: number;
    started_at: string;
    ended_at: string;
  };
  budgets_used: {
    steps: number;
    max_steps: number;
    resets: number;
    max_resets: number;
    frames: number;
    episode_s: number;
    time_limit_s: number;
  };
  counters: { refusals: number; clipped_entries: number; safety_stops: number };
  software?: { name: string; version: string };
  /**
   * a shadow bench: the trial's twin divergence headline (joint/tool/contact/progress figures;
   * the full summary is on the record's /twin/divergence channel). Written at the end only.
   */
  twin_divergence?: Record<string, number | null>;
  bench?: string;
  config_hashes?: { bench_sha256: string; safety_limits_sha256: string };
  /**
   * set only by `grade --recover` on a record that ends before the episode did (the gateway
   * crashed): graded up to the last complete message, outcome `incomplete`, never a success
   */
  recovered?: {
    /** episode seconds of the last recorded reading */
    last_reading_t: number;
    readings: number;
    /** the file ended with a valid MCAP footer (false: cut off) */
    file_complete: boolean;
    /** the judge's own status at that point, for the operator (not the outcome) */
    judge_state: string;
  };
}

export function outcomeOf(reason: EndReason, status: TaskStatus): { outcome: Outcome; success: boolean } {
  const success = reason === "success" || (reason !== "task_failed" && status.state === "success");
  if (success) return { outcome: "success", success };
  if (reason === "fault") return { outcome: "fault", success };
  if (reason === "aborted") return { outcome: "aborted", success };
  if (reason === "task_failed" || reason === "safety_stop" || status.state === "failed") {
    return { outcome: "failed", success };
  }
  return { outcome: "incomplete", success };
}

/** The one result function (live and offline). Pure. */
export function computeResult(input: ResultInput): EpisodeResult {
  const { outcome, success } = outcomeOf(input.end.reason, input.status);
  const s = input.score;
  const c = input.counters;
  const wallS = (Date.parse(input.wall.endedAt) - Date.parse(input.wall.startedAt)) / 1000;
  const episodeS = r6(input.end.tS);
  const out: EpisodeResult = {
    format: RESULT_FORMAT,
    episode_id: input.episodeId,
    task: input.task,
    level: input.level,
    setting: input.setting,
    seed: input.seed,
    outcome,
    success,
    end_reason: input.end.reason,
    ...(input.end.detail ? { end_detail: input.end.detail } : {}),
    ...(input.status.state === "failed" ? { failure_reason: input.status.reason } : {}),
    progress: s.progress,
    ...(s.progressQuantised !== undefined ? { progress_quantised: s.progressQuantised } : {}),
    // episode seconds like every other time in the API (the judge's stage times carry the float
    // noise of the backend clock minus the episode start, which differs between episodes)
    stages: Object.fromEntries(Object.entries(s.stages).map(([k, v]) => [k, v === null ? null : r6(v)])),
    ...(s.processScore !== undefined ? { process_score: s.processScore } : {}),
    ...(s.details ? { score_details: s.details } : {}),
    timing: {
      episode_s: episodeS,
      wall_s: Number.isFinite(wallS) ? r6(wallS) : 0,
      started_at: input.wall.startedAt,
      ended_at: input.wall.endedAt,
    },
    budgets_used: {
      steps: c.steps,
      max_steps: input.budgets.maxSteps,
      resets: c.resetsUsed,
      max_resets: input.budgets.resets,
      frames: c.framesServed,
      episode_s: episodeS,
      time_limit_s: input.budgets.timeLimitS,
    },
    counters: { refusals: c.refusals, clipped_entries: c.clippedEntries, safety_stops: c.safetyStops },
  };
  const p = input.provenance;
  if (p) {
    out.software = { ...p.software };
    out.bench = p.bench;
    out.config_hashes = {
      bench_sha256: p.configHashes.benchSha256,
      safety_limits_sha256: p.configHashes.safetyLimitsSha256,
    };
  }
  // JSON-safe: drop undefined, turn typed arrays in score details into arrays
  return JSON.parse(JSON.stringify(out)) as EpisodeResult;
}

/**
 * Fields that a replay must reproduce exactly. Wall times, the episode id and free-text end details
 * are excluded; counters the stream cannot recompute (steps, resets, frames, safety stops) are
 * carried over from the record and therefore agree by construction.
 */
export function deterministicView(r: EpisodeResult): Record<string, unknown> {
  return {
    task: r.task,
    level: r.level,
    setting: r.setting,
    seed: r.seed,
    outcome: r.outcome,
    success: r.success,
    end_reason: r.end_reason,
    failure_reason: r.failure_reason,
    progress: r.progress,
    progress_quantised: r.progress_quantised,
    stages: r.stages,
    process_score: r.process_score,
    score_details: r.score_details,
    episode_s: r.timing.episode_s,
    refusals: r.counters.refusals,
    clipped_entries: r.counters.clipped_entries,
    software: r.software,
    config_hashes: r.config_hashes,
  };
}

export interface ResultDifference {
  path: string;
  recorded: unknown;
  recomputed: unknown;
}

/** Differences between the deterministic views of a recorded and a recomputed result. */
export function diffResults(recorded: EpisodeResult, recomputed: EpisodeResult): ResultDifference[] {
  const out: ResultDifference[] = [];
  walk(deterministicView(recorded), deterministicView(recomputed), "", out);
  return out;
}

function walk(a: unknown, b: unknown, path: string, out: ResultDifference[]): void {
  if (a === b) return;
  if (a && b && typeof a === "object" && typeof b === "object" && !Array.isArray(a) === !Array.isArray(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of [...keys].sort()) {
      walk(
        (a as Record<string, unknown>)[k],
        (b as Record<string, unknown>)[k],
        path ? `${path}.${k}` : k,
        out,
      );
    }
    return;
  }
  if (typeof a === "number" && typeof b === "number" && Number.isNaN(a) && Number.isNaN(b)) return;
  out.push({ path, recorded: a, recomputed: b });
}
