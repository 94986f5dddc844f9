/**
 * The live adapter of result.json: the result of an ended episode, read from its read-only view
 * through the one result function (`computeResult`, shared with offline grading).
 */
import type { EndReason } from "../api/schemas.ts";
import type { Provenance } from "../recorder/provenance.ts";
import { computeResult, type EpisodeResult } from "../recorder/result.ts";
import type { EpisodeView } from "./view.ts";

/**
 * Call it when the end reason is set (pass the end explicitly from the episode's own end), or
 * from an observer's `onEnd`.
 */
export function episodeResult(
  ep: EpisodeView,
  end?: { reason: EndReason; detail?: string; tS: number },
  provenance?: Provenance,
): EpisodeResult {
  const c = ep.config;
  const reason = end?.reason ?? ep.endReason;
  if (!reason) throw new Error(`episodeResult: episode ${ep.id} has not ended`);
  const detail = end ? end.detail : ep.endDetail;
  return computeResult({
    episodeId: ep.id,
    task: c.task.id,
    level: c.level,
    setting: c.setting,
    seed: c.seed,
    end: { reason, ...(detail ? { detail } : {}), tS: end?.tS ?? ep.t() },
    status: c.judge.status(),
    score: c.judge.score(),
    budgets: c.budgets,
    counters: { ...ep.counters },
    wall: { startedAt: ep.startedAt.toISOString(), endedAt: new Date().toISOString() },
    ...(provenance ? { provenance } : {}),
  });
}
