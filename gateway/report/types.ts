/**
 * The data contract of a run report (`robot-gateway run`): one record per trial, taken from the
 * episode's result.json as the gateway computed it, plus what the run itself saw (who ended the
 * episode, the agent's exit). report.json is exactly a `RunReport`; every other file is rendered
 * from it.
 */
import type { EndReason } from "../api/schemas.ts";
import type { Outcome } from "../recorder/result.ts";

export const RUN_REPORT_FORMAT = "robot-gateway/run-report@1";

/** `error`: the trial produced no episode result (e.g. the episode could not be started). */
export type TrialOutcome = Outcome | "error";

export interface TrialRecord {
  /** 1-based trial number (also ROBOT_GATEWAY_TRIAL) */
  trial: number;
  /** episode seed (the run's base seed + trial index) */
  seed: number;
  /** the gateway's episode id; null when no episode was started */
  episode_id: string | null;
  outcome: TrialOutcome;
  success: boolean;
  /** the episode's end reason (result.json end_reason); null when there is no result */
  end_reason: EndReason | null;
  /** the episode's end detail (result.json end_detail) */
  end_detail?: string;
  /**
   * who ended the episode: `episode` (the agent's finish/submit, a task rule, a limit, a safety
   * stop) or `run` (the agent exited or timed out while the episode was still running)
   */
  ended_by: "episode" | "run";
  /** why the run ended the episode, or why the trial has no result */
  run_note?: string;
  /** continuous progress 0…1 (result.json progress) */
  progress: number;
  /** progress quantised to the task's checkpoints, 0…1 (null: the task has none) */
  progress_quantised: number | null;
  /** episode seconds at the end */
  episode_s: number;
  /** wall-clock seconds from the episode's start to its result */
  wall_s: number;
  /** the episode's record (MCAP) path on the gateway host; null when not recorded */
  record_path: string | null;
  /** where a farm ran the trial (robot-gateway farm): its stable id, the worker and the attempt */
  farm?: { trial_id: string; worker: string; host: string; attempt: number };
  /** shadow benches: the twin's divergence of this trial (compose/twin/, twin-divergence.json) */
  twin_divergence?: Record<string, number | null>;
  agent: {
    /** the agent's exit code (null: killed by a signal or still running when stopped) */
    exit_code: number | null;
    /** the signal that ended the agent, if any */
    signal: string | null;
    /** the agent's stdout and stderr, relative to the report folder */
    log: string;
  };
}

export interface RunSummary {
  trials: number;
  successes: number;
  /** mean continuous progress, 0…1 */
  mean_progress: number;
  /** mean quantised progress, 0…1 (null when no trial has one) */
  mean_progress_quantised: number | null;
  /** trial count per outcome */
  outcomes: Partial<Record<TrialOutcome, number>>;
}

export interface RunReport {
  format: typeof RUN_REPORT_FORMAT;
  task: string;
  level: string | null;
  /** bench name (in-process gateway) or the gateway URL (a running gateway) */
  bench: string;
  /** the agent command, as given */
  agent: string;
  /** seed of trial 1 */
  seed_base: number;
  /** the random run secret the trial seeds were derived from (absent when --seed was given) */
  seed_secret?: string;
  /** how the agents were confined */
  sandbox?: "bubblewrap" | "none";
  /** wall-clock ISO times */
  started_at: string;
  ended_at: string;
  trials: TrialRecord[];
  summary: RunSummary;
}

/** Summary figures of a list of trials (pure). */
export function summarize(trials: readonly TrialRecord[]): RunSummary {
  const n = trials.length;
  const outcomes: Partial<Record<TrialOutcome, number>> = {};
  for (const t of trials) outcomes[t.outcome] = (outcomes[t.outcome] ?? 0) + 1;
  const quantised = trials.map((t) => t.progress_quantised).filter((p): p is number => p !== null);
  const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
  return {
    trials: n,
    successes: trials.filter((t) => t.success).length,
    mean_progress: mean(trials.map((t) => t.progress)),
    // a trial without a result counts as 0 when others have quantised scores
    mean_progress_quantised: quantised.length ? mean(trials.map((t) => t.progress_quantised ?? 0)) : null,
    outcomes,
  };
}
