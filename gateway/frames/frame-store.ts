/**
 * Bounded store of captured frames served from GET /v1/frames/:id. Frames are kept raw and
 * encoded on first fetch (then cached), so a call that captures many frames pays for encoding
 * only for the frames a client actually downloads.
 *
 * Memory: raw and encoded bytes count against `maxBytes`. The HTTP layer reserves the bytes a
 * capture will need before it captures (`reserve`); when they do not fit, the call is refused
 * (503 RB_ERR_OVER_CAPACITY) instead of growing past the budget. Retention: a frame stays
 * fetchable for at least `minRetentionMs` after it was stored (until the episode ends); only
 * older frames are evicted, oldest first, to make room. A put without a reservation (no HTTP
 * layer) still keeps the budget by evicting oldest first, fresh or not.
 */
import { randomBytes } from "node:crypto";
import sharp from "sharp";
import type { Frame, ImageData } from "../../seam/types.ts";
import { encodeDepthPng16, encodeRgb, MIME, type RgbEncoding } from "./encode.ts";

export interface StoredImage {
  contentType: "image/jpeg" | "image/png" | "video/mp4";
  data: Buffer;
}

interface Entry {
  kind: "rgb" | "depth" | "video";
  /** the raw frame (rgb, depth); a video is stored encoded */
  frame?: Frame;
  encoding: "jpeg" | "png";
  encoded?: Promise<StoredImage>;
  bytes: number;
  /** wall-clock ms of the put */
  atMs: number;
}

export interface FrameStoreOptions {
  /** raw + encoded bytes kept (and reserved) at most */
  maxBytes: number;
  /** JPEG quality 1–100 */
  jpegQuality: number;
  /** a stored frame is not evicted for this long, ms */
  minRetentionMs: number;
  /** wall clock, ms (tests pass their own) */
  nowMs?: () => number;
}

export const FRAME_STORE_DEFAULTS: FrameStoreOptions = {
  maxBytes: 512 * 1024 * 1024,
  jpegQuality: 90,
  minRetentionMs: 10_000,
};

export class FrameStore {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;
  private reserved = 0;
  private readonly prefix = randomBytes(4).toString("hex");
  private counter = 0;
  private generation = 0;
  private readonly opts: FrameStoreOptions;
  private readonly now: () => number;

  constructor(opts: Partial<FrameStoreOptions> = {}) {
    this.opts = { ...FRAME_STORE_DEFAULTS, ...opts };
    this.now = opts.nowMs ?? Date.now;
  }

  /** Store a frame; returns ids of its rgb and (when present) depth images. */
  put(frame: Frame, encoding: "jpeg" | "png", withDepth: boolean): { rgb: string; depth?: string } {
    const rgb = this.add({
      kind: "rgb",
      frame,
      encoding,
      bytes: frame.rgb.data.byteLength,
      atMs: this.now(),
    });
    if (withDepth && frame.depthMm) {
      const depth = this.add({
        kind: "depth",
        frame,
        encoding: "png",
        bytes: frame.depthMm.data.byteLength,
        atMs: this.now(),
      });
      return { rgb, depth };
    }
    return { rgb };
  }

  /**
   * Store an already encoded file (the video of an act call) beside the frames: served from the
   * same GET /v1/frames/:id, counted in the same byte budget, evicted by the same rules.
   */
  putEncoded(data: Buffer, contentType: "video/mp4"): string {
    return this.add({
      kind: "video",
      // (no encoding of its own: `encoded` is the file as stored)
      encoding: "png",
      encoded: Promise.resolve({ contentType, data }),
      bytes: data.byteLength,
      atMs: this.now(),
    });
  }

  /** Encoded image for an id, or undefined when unknown or evicted. */
  get(id: string): Promise<StoredImage> | undefined {
    const e = this.entries.get(id);
    if (!e) return undefined;
    if (!e.encoded) {
      const gen = this.generation;
      e.encoded = encodeEntry(e, this.opts.jpegQuality);
      // the encoded copy counts too, while the entry is still kept
      e.encoded.then(
        (img) => {
          if (gen !== this.generation || this.entries.get(id) !== e) return;
          e.bytes += img.data.byteLength;
          this.bytes += img.data.byteLength;
        },
        () => {},
      );
    }
    return e.encoded;
  }

  get size(): number {
    return this.entries.size;
  }

  /** Bytes held (raw and encoded) and reserved for captures under way. */
  get usage(): { bytes: number; reserved: number; maxBytes: number } {
    return { bytes: this.bytes, reserved: this.reserved, maxBytes: this.opts.maxBytes };
  }

  /**
   * Reserve room for a capture of about `bytes` (evicting frames past their retention, oldest
   * first). Returns the release function, or undefined when the room is not there: then the
   * caller refuses the capture. Release after the captured frames are stored.
   */
  reserve(bytes: number): (() => void) | undefined {
    const fits = () => this.bytes + this.reserved + bytes <= this.opts.maxBytes;
    if (!fits()) {
      const cutoff = this.now() - this.opts.minRetentionMs;
      for (const [k, old] of this.entries) {
        if (fits() || old.atMs > cutoff) break;
        this.entries.delete(k);
        this.bytes -= old.bytes;
      }
    }
    if (!fits()) return undefined;
    this.reserved += bytes;
    const gen = this.generation;
    let released = false;
    return () => {
      if (released || gen !== this.generation) return;
      released = true;
      this.reserved -= bytes;
    };
  }

  clear(): void {
    this.entries.clear();
    this.bytes = 0;
    this.reserved = 0;
    this.generation++;
  }

  private add(e: Entry): string {
    const id = `${this.prefix}-${(this.counter++).toString(36)}-${e.kind}`;
    this.entries.set(id, e);
    this.bytes += e.bytes;
    // reserved bytes are about to become entries: they do not push out other frames here
    for (const [k, old] of this.entries) {
      if (this.bytes <= this.opts.maxBytes || k === id) break;
      this.entries.delete(k);
      this.bytes -= old.bytes;
    }
    return id;
  }
}

async function encodeEntry(e: Entry, quality: number): Promise<StoredImage> {
  if (e.kind === "depth") {
    const d = e.frame!.depthMm!;
    return { contentType: "image/png", data: await encodeDepthPng16(d.data, d.width, d.height) };
  }
  return encodeImage(e.frame!.rgb, e.encoding, quality);
}

/** Encode an RGB image (raw or already encoded) to the requested format. */
export async function encodeImage(img: ImageData, encoding: RgbEncoding, quality = 90): Promise<StoredImage> {
  const contentType = MIME[encoding] as StoredImage["contentType"];
  if (img.kind === "encoded" && img.format === encoding) return { contentType, data: Buffer.from(img.data) };
  if (img.kind === "raw") {
    return {
      contentType,
      data: await encodeRgb(img.data, img.width, img.height, encoding, { jpegQuality: quality }),
    };
  }
  const input = sharp(img.data);
  const data = encoding === "jpeg" ? await input.jpeg({ quality }).toBuffer() : await input.png().toBuffer();
  return { contentType, data };
}
