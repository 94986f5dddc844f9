/**
 * The shadow twin's episode observer: at the end of every episode on a shadow bench it writes the
 * trial's divergence and every chunk's beside the record, `<recordsDir>/<episode-id>/twin-divergence.json`
 * (the per-chunk figures are also in the record as `twin_divergence` instrument events), and prints
 * the trial summary on stderr.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
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
