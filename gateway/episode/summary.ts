/** The operator's view of an episode (GET /v1/admin/episodes). */
import { r6 } from "../time.ts";
import type { EpisodeView } from "./view.ts";

export function episodeSummary(ep: EpisodeView) {
  const c = ep.config;
  return {
    id: ep.id,
    task: c.task.id,
    seed: c.seed,
    setting: c.setting,
    level: c.level,
    status: ep.isEnded ? ("ended" as const) : ("running" as const),
    ...(ep.endReason ? { reason: ep.endReason } : {}),
    ...(ep.endDetail ? { detail: ep.endDetail } : {}),
    t: r6(ep.t()),
    steps: ep.counters.steps,
    resets_used: ep.counters.resetsUsed,
    started_at: ep.startedAt.toISOString(),
    ...(ep.result ? { result: { ...ep.result } as Record<string, unknown> } : {}),
    ...(ep.recordPath ? { record_path: ep.recordPath } : {}),
  };
}
