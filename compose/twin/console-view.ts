/**
 * The shadow twin as the operator console sees it (gateway/bench.ts `TwinView`): the twin's
 * render of the bench's cameras, the bench's own frames without the comparison (so watching
 * never adds frames to the trial's image divergence), and the divergence figures of the last
 * chunk and of the trial so far.
 */
import type { TwinDivergenceFigures, TwinView } from "../../gateway/bench.ts";
import type { DivergenceSummary } from "./divergence.ts";
import type { ShadowBackend } from "./shadow-backend.ts";

const num = (v: number): number | null => (Number.isFinite(v) ? v : null);

function meanFinite(v: readonly number[]): number | null {
  const f = v.filter((x) => Number.isFinite(x));
  return f.length ? f.reduce((a, b) => a + b, 0) / f.length : null;
}

/** A divergence summary as the console's JSON figures. */
export function divergenceFigures(s: DivergenceSummary): TwinDivergenceFigures {
  const cams = [...new Set(s.images.map((i) => i.camera))];
  return {
    samples: s.samples,
    joint_rms_rad: s.joint.rmsRad.map((v) => num(v) ?? 0),
    joint_max_rad: s.joint.maxRad.map((v) => num(v) ?? 0),
    tool_mm: { rms: num(s.toolMm.rms) ?? 0, max: num(s.toolMm.max) ?? 0, final: num(s.toolMm.final) ?? 0 },
    contacts: {
      real: s.contacts.real.length,
      twin: s.contacts.twin.length,
      matched: s.contacts.matched.length,
      predicted_not_seen: s.contacts.predictedNotSeen.length,
      seen_not_predicted: s.contacts.seenNotPredicted.length,
    },
    progress: s.progress,
    images: cams.map((camera) => {
      const im = s.images.filter((i) => i.camera === camera);
      return {
        camera,
        frames: im.length,
        wire_iou: meanFinite(im.map((i) => i.wireIoU)),
        arm_iou: meanFinite(im.map((i) => i.armIoU)),
        mean_abs_rgb: meanFinite(im.map((i) => i.meanAbsRgb)),
      };
    }),
  };
}

export function twinConsoleView(shadow: ShadowBackend): TwinView {
  return {
    captureBench: (cameras, opts) => shadow.primary.capture(cameras, opts),
    captureTwin: (cameras) => shadow.twin.renderNow(cameras, false),
    divergence: () => {
      const chunks = shadow.chunkDivergence();
      const last = chunks.at(-1);
      return {
        chunks: chunks.length,
        chunk: last ? { chunk: last.chunk, kind: last.kind, ...divergenceFigures(last) } : null,
        trial: divergenceFigures(shadow.trialDivergence()),
      };
    },
  };
}
