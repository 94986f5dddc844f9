/**
 * The API edge of an episode: how readings, sensor events, frame references and the status leave
 * in responses (snake_case, episode seconds rounded to 1 µs). Pure; the shapes are typed by the
 * API schemas, the one source of truth.
 */
import type { z } from "zod";
import type { Pose } from "../../robots/math.ts";
import type { JointReading, SensorEvent } from "../../seam/types.ts";
import type { EpisodeStatusSchema, FrameRefSchema, ReadingDto, SensorEventSchema } from "../api/schemas.ts";
import { r6 } from "../time.ts";
import type { EpisodeView } from "./view.ts";

export type EventDto = z.infer<typeof SensorEventSchema>;
export type FrameRefDto = z.infer<typeof FrameRefSchema>;
export type EpisodeStatusDto = z.infer<typeof EpisodeStatusSchema>;

/**
 * A reading in episode time (`t0`: backend seconds at the episode's start), with the tool pose
 * at its q when given (FK, base frame) and the effort: measured torques, or none (the gateway
 * has no dynamics model to estimate them).
 */
export function readingDto(r: JointReading, t0: number, tool?: Pose): ReadingDto {
  const out: ReadingDto = {
    t: r6(r.t - t0),
    q: r.q.map(r6),
    dq: r.dq.map(r6),
    gripper_width_m: r6(r.gripperWidthM),
  };
  const tau = r.tau ? r.tau.map(r6) : null;
  if (tau) out.tau = tau;
  if (tool) {
    out.tool = {
      xyz: [r6(tool.xyz[0]), r6(tool.xyz[1]), r6(tool.xyz[2])],
      quat_xyzw: [r6(tool.quat_xyzw[0]), r6(tool.quat_xyzw[1]), r6(tool.quat_xyzw[2]), r6(tool.quat_xyzw[3])],
    };
  }
  out.effort = tau ? { source: "measured", tau } : { source: "none", tau: null };
  return out;
}

/** A sensor event at episode time `t`. */
export function eventDto(e: SensorEvent, t: number): EventDto {
  const { type, t: _t, ...data } = e;
  return { type, t: r6(t), data };
}

/** Where a stored frame can be fetched, with the reading at its exposure when known. */
export function frameRefDto(
  camera: string,
  t: number,
  ids: { rgb: string; depth?: string },
  reading?: ReadingDto,
): FrameRefDto {
  const ref: FrameRefDto = { camera, t: r6(t), rgb: `/v1/frames/${ids.rgb}` };
  if (ids.depth) ref.depth = `/v1/frames/${ids.depth}`;
  if (reading) ref.reading = reading;
  return ref;
}

export function statusDto(ep: EpisodeView): EpisodeStatusDto {
  const s: EpisodeStatusDto = { id: ep.id, status: ep.isEnded ? "ended" : "running" };
  if (ep.endReason) {
    s.reason = ep.endReason;
    if (ep.endDetail) s.detail = ep.endDetail;
  }
  const rt = ep.realtimeStatus?.();
  if (rt) s.realtime = rt;
  return s;
}
