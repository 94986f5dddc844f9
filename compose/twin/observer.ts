/**
 * The shadow twin's episode observer. During the episode every chunk's divergence goes onto the
 * record's own channel `/twin/divergence` (robot_gateway.TwinDivergence; the record is the
 * operator's, never the agent's); at the end the trial's divergence follows on that channel, its
 * headline goes into result.json (`twin_divergence`), and the trial and every chunk are written
 * beside the record, `<recordsDir>/<episode-id>/twin-divergence.json`; the trial summary is
 * printed on stderr. Nothing of it reaches the agent: the divergence is not a sensor event and no
 * agent response carries it (isolation: nothing the agent can read holds results before the end).
 *
 * Order: this observer must come BEFORE the episode's recorder in the observer list, so that its
 * onEnd writes the trial message and the result field while the recorder is still open.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { EpisodeObserver } from "../../gateway/episode/observer.ts";
import type { EpisodeView } from "../../gateway/episode/view.ts";
import type { McapRecorder } from "../../gateway/recorder/mcap-recorder.ts";
import { SCHEMAS, TOPICS, type TwinDivergenceMessage } from "../../gateway/recorder/record-format.ts";
import { type DivergenceSummary, divergenceJson, formatDivergence } from "./divergence.ts";
import type { ShadowBackend } from "./shadow-backend.ts";

export const TWIN_DIVERGENCE_FILE = "twin-divergence.json";

export function shadowObserver(
  shadow: ShadowBackend,
  recordsDir: string,
  opts: { recorder?: McapRecorder; quiet?: boolean } = {},
): EpisodeObserver {
  let unsubscribe: (() => void) | undefined;
  let episode: EpisodeView | undefined;
  const rec = opts.recorder;
  const record = (m: TwinDivergenceMessage) =>
    rec?.recordJson(TOPICS.twinDivergence, SCHEMAS.twinDivergence, m.t, m);
  return {
    onStart(ep) {
      episode = ep;
      unsubscribe = shadow.onDivergence((c) => {
        const { chunk, kind, ...summary } = c;
        record({
          scope: "chunk",
          t: episode?.t() ?? 0,
          chunk,
          kind,
          divergence: divergenceJson(summary) as Record<string, unknown>,
        });
      });
    },
    onEnd(ep) {
      unsubscribe?.();
      unsubscribe = undefined;
      const trial = shadow.trialDivergence();
      const t = ep.endT ?? ep.t();
      record({ scope: "trial", t, divergence: divergenceJson(trial) as Record<string, unknown> });
      rec?.addToResult({ twin_divergence: divergenceHeadline(divergenceJson(trial) as DivergenceJson) });
      const dir = join(recordsDir, ep.id);
      mkdirSync(dir, { recursive: true });
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
      if (!opts.quiet) console.error(formatDivergence(`twin divergence, episode ${ep.id}`, trial));
    },
  };
}

/** The headline figures of a trial's divergence (result.json `twin_divergence`, run reports). */
export function divergenceHeadline(t: DivergenceJson): Record<string, number | null> {
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

/** The headline figures of the twin-divergence.json beside a record (null when there is none). */
export function twinDivergenceBeside(recordPath: string): Record<string, number | null> | null {
  const p = join(dirname(recordPath), TWIN_DIVERGENCE_FILE);
  if (!existsSync(p)) return null;
  const d = JSON.parse(readFileSync(p, "utf8")) as { trial: DivergenceJson };
  return divergenceHeadline(d.trial);
}

/** DivergenceSummary after divergenceJson (NaN → null). */
export type DivergenceJson = Omit<DivergenceSummary, "joint"> & {
  joint: { rmsRad: (number | null)[]; maxRad: (number | null)[] };
};
