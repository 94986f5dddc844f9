/**
 * Listeners of the episode stream (recorder, dashboards). Every method is optional; `onReading`
 * runs in the control loop and must stay allocation-light. Observers see a read-only view of the
 * episode; what they may do to it goes through the context handed to `onStart`.
 */
import type { Frame, JointReading, SensorEvent } from "../../seam/types.ts";
import type { ActRequest } from "../api/schemas.ts";
import type { ClipEntry } from "../safety/precheck.ts";
import type { StopCause } from "./stop.ts";
import type { EpisodeView, SafetyEventDto } from "./view.ts";

/** What an observer may ask of the episode it observes. */
export interface ObserverContext {
  /**
   * The observer failed in a way that must stop the robot (e.g. a storage error: what is not
   * recorded must not be acknowledged). Goes through the one stop path; the episode then ends as
   * `fault` with the cause's code.
   */
  fault(cause: StopCause): void;
  /** announce where this episode's record is written (operator summary, `run`) */
  recordAt(path: string): void;
}

export interface EpisodeObserver {
  onStart?(ep: EpisodeView, ctx: ObserverContext): void;
  /** a chunk as sent, with its clipped entries and whether the pre-check accepted it */
  onCommand?(ep: EpisodeView, req: ActRequest, clipped: readonly ClipEntry[], accepted: boolean): void;
  onReading?(ep: EpisodeView, r: JointReading): void;
  onEvent?(ep: EpisodeView, e: SensorEvent): void;
  onSafety?(ep: EpisodeView, e: SafetyEventDto): void;
  onObservation?(ep: EpisodeView, id: string, r: JointReading, frames: readonly Frame[]): void;
  /** frames captured during an act (the video of the execution) */
  onFrames?(ep: EpisodeView, frames: readonly Frame[]): void;
  /** the agent exported an instrument's readings; `id` is the observation id it may cite */
  onInstrumentRead?(ep: EpisodeView, id: string, name: string, t: number): void;
  onSubmit?(ep: EpisodeView, answer: unknown, evidence: readonly string[]): void;
  onEnd?(ep: EpisodeView): void;
  /**
   * Make everything seen so far durable. Awaited after a chunk, an advancing observe and the
   * end, before the response that acknowledges it is sent.
   */
  flush?(): Promise<void>;
}
