/**
 * act's `frames.video`: the frames captured during a chunk, encoded as one MP4 per camera and
 * stored beside the stills (same GET /v1/frames/:id, agent token, same byte budget). The
 * availability check runs before the chunk (a gateway without ffmpeg refuses with
 * RB_ERR_VIDEO_UNAVAILABLE and nothing moves); an encode that fails after the chunk ran is
 * reported in `video_error` (RB_ERR_VIDEO_ENCODE) beside the unchanged rest of the response.
 *
 * Not recorded: the episode's record already holds every captured frame (the recorder's
 * onFrames), from which the same video can be made again.
 */
import type { Frame } from "../../seam/types.ts";
import { GatewayError } from "../errors.ts";
import type { FrameStore } from "../frames/frame-store.ts";
import { captureRate, VIDEO_FORMAT, VideoEncodeError, type VideoEncoder } from "../frames/video.ts";
import { r6 } from "../time.ts";
import type { ErrorResponseSchema, SpecDto, VideoRefSchema } from "./schemas.ts";
import type { z } from "zod";

type VideoRef = z.infer<typeof VideoRefSchema>;
type ErrorBody = z.infer<typeof ErrorResponseSchema>["error"];

/** The spec's `video` entry. */
export async function videoSpec(encoder: VideoEncoder): Promise<SpecDto["video"]> {
  const a = await encoder.availability();
  return { available: a.available, ...VIDEO_FORMAT, ...(a.available ? {} : { reason: a.reason }) };
}

/** Refuse frames.video up front when this gateway cannot make video. */
export async function assertVideoAvailable(encoder: VideoEncoder): Promise<void> {
  const a = await encoder.availability();
  if (!a.available)
    throw new GatewayError("RB_ERR_VIDEO_UNAVAILABLE", { reason: a.reason, ffmpeg: a.ffmpeg });
}

/**
 * Encode the frames of each camera (in the order the cameras first appear) captured every
 * `everyTicks` control periods; `t0` is the episode start in backend seconds.
 */
export async function makeVideos(
  encoder: VideoEncoder,
  store: FrameStore,
  frames: readonly Frame[],
  timing: { everyTicks: number; controlPeriodS: number; t0: number },
): Promise<{ videos: VideoRef[]; video_error?: ErrorBody }> {
  const byCamera = new Map<string, Frame[]>();
  for (const f of frames) {
    let list = byCamera.get(f.camera);
    if (!list) byCamera.set(f.camera, (list = []));
    list.push(f);
  }
  const rate = captureRate(timing.everyTicks, timing.controlPeriodS);
  const fps = rate.num / rate.den;
  const videos: VideoRef[] = [];
  for (const [camera, list] of byCamera) {
    try {
      const v = await encoder.encode(list, rate);
      const id = store.putEncoded(v.data, VIDEO_FORMAT.content_type);
      videos.push({
        camera,
        url: `/v1/frames/${id}`,
        ...VIDEO_FORMAT,
        width: v.width,
        height: v.height,
        fps: r6(fps),
        frames: v.frames,
        duration_s: r6(v.frames / fps),
        t_start: r6(list[0]!.t - timing.t0),
        bytes: v.data.byteLength,
      });
    } catch (e) {
      const reason = e instanceof VideoEncodeError ? e.reason : e instanceof Error ? e.message : String(e);
      const stderr = e instanceof VideoEncodeError ? e.stderr : "";
      const err = new GatewayError("RB_ERR_VIDEO_ENCODE", { camera, reason, ...(stderr ? { stderr } : {}) });
      return { videos, video_error: err.toBody().error };
    }
  }
  return { videos };
}
