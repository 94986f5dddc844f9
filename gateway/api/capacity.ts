/**
 * Admission for calls that capture frames (observe, act with frames): at most
 * `maxConcurrentCaptures` at once, and only when the frame store can reserve the bytes the
 * capture will need. Over capacity is a 503 RB_ERR_OVER_CAPACITY with Retry-After, answered
 * before anything moves or is captured.
 */
import type { CameraDescription } from "../../seam/types.ts";
import { GatewayError } from "../errors.ts";
import type { FrameStore } from "../frames/frame-store.ts";

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
