/**
 * Bounded store of captured frames served from GET /v1/frames/:id. Frames are kept raw and
 * encoded on first fetch (then cached), so a call that captures many frames pays for encoding
 * only for the frames a client actually downloads. Old frames are evicted first-in, first-out
 * when the byte budget is exceeded.
 */
import { randomBytes } from "node:crypto";
import sharp from "sharp";
import type { Frame, ImageData } from "../../seam/types.ts";
import { encodeDepthPng16, encodeRgb, MIME, type RgbEncoding } from "./encode.ts";

export interface StoredImage {
  contentType: "image/jpeg" | "image/png";
  data: Buffer;
}

interface Entry {
  kind: "rgb" | "depth";
  frame: Frame;
  encoding: "jpeg" | "png";
  encoded?: Promise<StoredImage>;
  bytes: number;
}

export interface FrameStoreOptions {
  /** raw bytes kept before the oldest frames are evicted */
  maxBytes: number;
  /** JPEG quality 1–100 */
  jpegQuality: number;
}

export class FrameStore {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;
  private readonly prefix = randomBytes(4).toString("hex");
  private counter = 0;

  constructor(private readonly opts: FrameStoreOptions = { maxBytes: 512 * 1024 * 1024, jpegQuality: 90 }) {}

  /** Store a frame; returns ids of its rgb and (when present) depth images. */
  put(frame: Frame, encoding: "jpeg" | "png", withDepth: boolean): { rgb: string; depth?: string } {
    const rgb = this.add({ kind: "rgb", frame, encoding, bytes: frame.rgb.data.byteLength });
    if (withDepth && frame.depthMm) {
      const depth = this.add({ kind: "depth", frame, encoding: "png", bytes: frame.depthMm.data.byteLength });
      return { rgb, depth };
    }
    return { rgb };
  }

  /** Encoded image for an id, or undefined when unknown or evicted. */
  get(id: string): Promise<StoredImage> | undefined {
    const e = this.entries.get(id);
    if (!e) return undefined;
    e.encoded ??= encodeEntry(e, this.opts.jpegQuality);
    return e.encoded;
  }

  get size(): number {
    return this.entries.size;
  }

  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }

  private add(e: Entry): string {
    const id = `${this.prefix}-${(this.counter++).toString(36)}-${e.kind}`;
    this.entries.set(id, e);
    this.bytes += e.bytes;
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
    const d = e.frame.depthMm!;
    return { contentType: "image/png", data: await encodeDepthPng16(d.data, d.width, d.height) };
  }
  return encodeImage(e.frame.rgb, e.encoding, quality);
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
