/**
 * The shadow twin's episode observer: at the end of every episode on a shadow bench it writes the
 * trial's divergence and every chunk's beside the record, `<recordsDir>/<episode-id>/twin-divergence.json`
 * (the per-chunk figures are also in the record as `twin_divergence` instrument events), and prints
 * the trial summary on stderr.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { EpisodeObserver } from "../../gateway/episode/observer.ts";
import { divergenceJson, formatDivergence } from "./divergence.ts";
import type { ShadowBackend } from "./shadow-backend.ts";

export const TWIN_DIVERGENCE_FILE = "twin-divergence.json";

export function shadowObserver(shadow: ShadowBackend, recordsDir: string, quiet = false): EpisodeObserver {
  return {
    onEnd(ep) {
      const dir = join(recordsDir, ep.id);
      mkdirSync(dir, { recursive: true });
      const trial = shadow.trialDivergence();
      writeFileSync(
        join(dir, TWIN_DIVERGENCE_FILE),
        `${JSON.stringify(
          {
            episode: ep.id,
            trial: divergenceJson(trial),
            chunks: shadow.chunkDivergence().map((c) => divergenceJson(c)),
          },
          null,
          1,
        )}\n`,
      );
      if (!quiet) console.error(formatDivergence(`twin divergence, episode ${ep.id}`, trial));
    },
  };
}

/** The headline figures of the twin-divergence.json beside a record (null when there is none). */
export function twinDivergenceBeside(recordPath: string): Record<string, number | null> | null {
  const p = join(dirname(recordPath), TWIN_DIVERGENCE_FILE);
  if (!existsSync(p)) return null;
  const d = JSON.parse(readFileSync(p, "utf8")) as { trial: DivergenceJson };
  const t = d.trial;
  const max = (v: (number | null)[]) => Math.max(...v.map((x) => x ?? 0));
  return {
    samples: t.samples,
    joint_rms_max_rad: max(t.joint.rmsRad),
    joint_max_rad: max(t.joint.maxRad),
    tool_rms_mm: t.toolMm.rms,
    tool_max_mm: t.toolMm.max,
    contacts_real: t.contacts.real.length,
    contacts_twin: t.contacts.twin.length,
    contacts_matched: t.contacts.matched.length,
    predicted_not_seen: t.contacts.predictedNotSeen.length,
    seen_not_predicted: t.contacts.seenNotPredicted.length,
    progress_diff: t.progress?.diff ?? null,
  };
}

interface DivergenceJson {
  samples: number;
  joint: { rmsRad: (number | null)[]; maxRad: (number | null)[] };
  toolMm: { rms: number; max: number };
  contacts: {
    real: number[];
    twin: number[];
    matched: unknown[];
    predictedNotSeen: number[];
    seenNotPredicted: number[];
  };
  progress: { diff: number } | null;
}
