/**
 * Admission for calls that capture frames (observe, act with frames, over HTTP or /v1/stream): at most
 * `maxConcurrentCaptures` at once, and only when the frame store can reserve the bytes the
 * capture will need. Over capacity is a 503 RB_ERR_OVER_CAPACITY with Retry-After, answered
 * before anything moves or is captured.
 */
import type { CameraDescription } from "../../seam/types.ts";
import { GatewayError } from "../errors.ts";
import type { FrameStore } from "../frames/frame-store.ts";
import type { Gateway } from "../gateway.ts";
import type { ActRequest } from "./schemas.ts";

export const RETRY_AFTER_S = 1;

/**
 * Bytes a capture of one frame of `camera` may allocate before it is stored and recorded: the
 * RGB image (3 B/px), a 16-bit depth plane (a renderer draws it for a camera with depth, asked
 * for or not; 2 B/px) and the recorder's encoded copies of the RGB image (JPEG, base64, JSON:
 * at most 1.5 B/px). An upper bound: a real camera's images arrive encoded and are smaller.
 */
export function frameBytes(camera: CameraDescription, depth: boolean): number {
  const px = camera.width * camera.height;
  return px * 3 + (camera.depth || depth ? px * 2 : 0) + Math.ceil(px * 1.5);
}

export class CaptureAdmission {
  private inFlight = 0;

  constructor(
    private readonly frames: FrameStore,
    readonly maxConcurrentCaptures = 16,
  ) {}

  /** Admit a capture of about `bytes`; the returned function ends it (call it in finally). */
  admit(bytes: number): () => void {
    if (this.inFlight >= this.maxConcurrentCaptures) {
      throw new GatewayError("RB_ERR_OVER_CAPACITY", {
        resource: "concurrent captures",
        reason: `${this.inFlight} calls with frames are under way; at most ${this.maxConcurrentCaptures}`,
        retry_after_s: RETRY_AFTER_S,
      });
    }
    const release = this.frames.reserve(bytes);
    if (!release) {
      const u = this.frames.usage;
      throw new GatewayError("RB_ERR_OVER_CAPACITY", {
        resource: "frame memory",
        reason: `${bytes} bytes needed; ${u.bytes + u.reserved} of ${u.maxBytes} held by frames younger than their retention`,
        retry_after_s: RETRY_AFTER_S,
      });
    }
    this.inFlight++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.inFlight--;
      release();
    };
  }
}

/**
 * Bytes a call will capture: `count` frames of each camera asked for (undefined: every camera,
 * []: none). A camera named explicitly with depth asked for must have depth (RB_ERR_NO_DEPTH);
 * with cameras omitted, depth comes from the cameras that have it. Unknown names are left to
 * the episode (RB_ERR_UNKNOWN_CAMERA).
 */
export function captureBytes(
  gw: Gateway,
  cameras: readonly string[] | undefined,
  depth: boolean,
  count: number,
): number {
  const all = gw.bench.backend.describe().cameras;
  const chosen = cameras === undefined ? all : all.filter((c) => cameras.includes(c.name));
  if (depth && cameras !== undefined) {
    const without = chosen.find((c) => !c.depth);
    if (without) {
      const withDepth = all.filter((c) => c.depth).map((c) => c.name);
      throw new GatewayError("RB_ERR_NO_DEPTH", {
        camera: without.name,
        cameras: withDepth.join(", ") || "none",
      });
    }
  }
  // a call over the frame budget is refused by the episode (RB_ERR_TOO_MANY_FRAMES): reserve nothing
  if (chosen.length * count > gw.requireEpisode().config.budgets.maxFramesPerCall) return 0;
  return chosen.reduce((sum, c) => sum + frameBytes(c, depth), 0) * count;
}

/** Bytes an act's `frames` will capture: every k control periods over the chunk, plus the first, and room for its video. */
export function actCaptureBytes(gw: Gateway, body: Pick<ActRequest, "frames" | "rows" | "dt">): number {
  const f = body.frames;
  if (!f) return 0;
  // as the episode counts them
  const period = gw.bench.backend.describe().controlPeriodS;
  const everyTicks = Math.max(1, Math.round(1 / (f.fps * period)));
  const rows = Array.isArray(body.rows) ? body.rows.length : 0;
  const perCamera = Math.floor((rows * body.dt) / period / everyTicks) + 1;
  const count = Number.isFinite(perCamera) ? perCamera : 1;
  const bytes = captureBytes(gw, f.cameras, f.depth, count);
  // the video's room: at most the raw RGB of its frames (H.264 is far smaller; the stored file
  // then counts its own size)
  return f.video && bytes > 0 ? bytes + captureBytes(gw, f.cameras, false, count) : bytes;
}
