/**
 * The digital twin of a real bench: the same bench file with its backend swapped for the
 * simulator, which builds its scene from the real bench's calibration file (same cameras —
 * intrinsics, extrinsics, resolution — same wire, board, tool and calibration boards). The
 * safety profile, task and robot stay as the real bench has them.
 */
import { CodedError } from "../seam/errors.ts";
import { type BenchConfig, parseBenchConfig } from "./bench-config.ts";

/** A sim bench config built from a real bench's config; its calibration file is required. */
export function twinBenchConfig(real: BenchConfig): BenchConfig {
  if (!real.calibration)
    throw new CodedError("RB_ERR_CALIB_BAD_INPUT", {
      what: `bench "${real.name}"`,
      reason:
        "a twin is built from the bench's calibration file and this bench names none (add `calibration: FILE`)",
    });
  return parseBenchConfig(
    { ...structuredClone(real), name: `${real.name}-twin`, backend: { type: "sim", scene: "buzzwire" } },
    `twin of ${real.name}`,
  );
}
