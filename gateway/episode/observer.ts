/**
 * Listeners of the episode stream (recorder, dashboards). Every method is optional; `onReading`
 * runs in the control loop and must stay allocation-light.
 */
import type { Frame, JointReading, SensorEvent } from "../../seam/types.ts";
import type { ActRequest } from "../api/schemas.ts";
import type { ClipEntry } from "../safety/precheck.ts";
import type { Episode, SafetyEventDto } from "./episode.ts";

export interface EpisodeObserver {
  onStart?(ep: Episode): void;
  /** a chunk as sent, with its clipped entries and whether the pre-check accepted it */
  onCommand?(ep: Episode, req: ActRequest, clipped: readonly ClipEntry[], accepted: boolean): void;
  onReading?(ep: Episode, r: JointReading): void;
  onEvent?(ep: Episode, e: SensorEvent): void;
  onSafety?(ep: Episode, e: SafetyEventDto): void;
  onObservation?(ep: Episode, id: string, r: JointReading, frames: readonly Frame[]): void;
  /** frames captured during an act (the video of the execution) */
  onFrames?(ep: Episode, frames: readonly Frame[]): void;
  /** the agent exported an instrument's readings; `id` is the observation id it may cite */
  onInstrumentRead?(ep: Episode, id: string, name: string, t: number): void;
  onSubmit?(ep: Episode, answer: unknown, evidence: readonly string[]): void;
  onEnd?(ep: Episode): void;
}
