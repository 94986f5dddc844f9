/**
 * Bounded store of captured frames served from GET /v1/frames/:id. Frames are kept raw and
 * encoded on first fetch; the encoded copy then replaces the raw one (a frame is served in the
 * one encoding its call asked for), so a call that captures many frames pays for encoding only
 * for the frames a client actually downloads, and a fetched frame shrinks to its encoded size.
 *
 * Memory: every byte the frames of the API hold is counted against `maxBytes`, and counted
 * before it is allocated:
 * - captures: the HTTP layer reserves the bytes a capture will render (`reserve`) before it
 *   captures; when they do not fit, the call is refused (503 RB_ERR_OVER_CAPACITY). The frames
 *   a call stores are taken out of the reservations under way, so they are not counted twice;
 * - encodes (on fetch): each reserves a bound of its output from a headroom of
 *   `encodeHeadroomBytes` inside the budget that captures cannot take; further fetches wait
 *   their turn (FIFO) instead of allocating;
 * - other holders of the same images (the recorder's queue, `hold`): an image buffer is counted
 *   once while anyone holds it (reference counted by buffer), also after the store evicted it;
 * - garbage: captures leave `gcSlackBytes` of the budget for evicted images not yet collected.
 * Retention: a frame stays fetchable for at least `minRetentionMs` after it was stored (until
 * the episode ends); only older frames are evicted, oldest first, to make room. A put beyond
 * the reservations (no HTTP layer) still keeps the budget by evicting oldest first, fresh or not.
 */
import { randomBytes } from "node:crypto";
import sharp from "sharp";
import type { Frame, ImageData } from "../../seam/types.ts";
import { GatewayError } from "../errors.ts";
import { encodeDepthPng16, encodeRgb, MIME, type RgbEncoding } from "./encode.ts";

export interface StoredImage {
  contentType: "image/jpeg" | "image/png" | "video/mp4";
  data: Buffer;
}

/** A raw image the store (or another holder) keeps: counted once, by buffer. */
type RawView = Uint8Array | Uint16Array;

interface Entry {
  kind: "rgb" | "depth" | "video";
  /** the raw image until it is encoded (then undefined); a video is stored encoded */
  rgb?: ImageData;
  depth?: { width: number; height: number; data: Uint16Array };
  encoding: "jpeg" | "png";
  encoded?: Promise<StoredImage>;
  /** bytes of the encoded copy once it replaced the raw image */
  encodedBytes: number;
  /** wall-clock ms of the put */
  atMs: number;
}

export interface FrameStoreOptions {
  /** raw + encoded + reserved bytes kept at most */
  maxBytes: number;
  /** JPEG quality 1–100 */
  jpegQuality: number;
  /** a stored frame is not evicted for this long, ms */
  minRetentionMs: number;
  /** part of `maxBytes` that only encodes (on fetch) may use, bytes (at most maxBytes / 8) */
  encodeHeadroomBytes: number;
  /**
   * part of `maxBytes` captures leave for evicted images the garbage collector has not freed yet,
   * bytes (at most maxBytes / 8). V8 collects unreferenced buffers once memory outside its heap
   * grew by its soft limit (64 MiB) since the last collection, so about that much can be dead
   * but still allocated while old frames are evicted to make room.
   */
  gcSlackBytes: number;
  /** wall clock, ms (tests pass their own) */
  nowMs?: () => number;
}

export const FRAME_STORE_DEFAULTS: FrameStoreOptions = {
  maxBytes: 512 * 1024 * 1024,
  jpegQuality: 90,
  minRetentionMs: 10_000,
  encodeHeadroomBytes: 16 * 1024 * 1024,
  gcSlackBytes: 64 * 1024 * 1024,
};

/** Bytes an encode of a raw image of `rawBytes` may allocate at most (its output, with slack). */
export function encodeBoundBytes(rawBytes: number): number {
  return rawBytes + Math.ceil(rawBytes / 8) + 4096;
}

export class FrameStore {
  private readonly entries = new Map<string, Entry>();
  /** raw buffers held by entries or holders, with their reference counts */
  private readonly raw = new Map<RawView, { bytes: number; refs: number }>();
  /** raw (counted once) + encoded bytes held, plus holders' extra bytes */
  private bytes = 0;
  /** outstanding capture reservations, and the part of them already stored (now in `bytes`) */
  private readonly reservations = new Set<{ bytes: number; used: number }>();
  private reservedTotal = 0;
  private reservedUsed = 0;
  /** encode bounds of the encodes under way */
  private encoding = 0;
  private readonly encodeQueue: { id: string; bound: number; go: () => void; fail: (e: Error) => void }[] =
    [];
  private readonly prefix = randomBytes(4).toString("hex");
  private counter = 0;
  private generation = 0;
  private readonly opts: FrameStoreOptions;
  private readonly now: () => number;

  constructor(opts: Partial<FrameStoreOptions> = {}) {
    this.opts = { ...FRAME_STORE_DEFAULTS, ...opts };
    // at most an eighth of the budget: the rest is for frames
    this.opts.encodeHeadroomBytes = Math.min(this.opts.encodeHeadroomBytes, Math.floor(this.opts.maxBytes / 8));
    this.opts.gcSlackBytes = Math.min(this.opts.gcSlackBytes, Math.floor(this.opts.maxBytes / 8));
    this.now = opts.nowMs ?? Date.now;
  }

  /** Store a frame; returns ids of its rgb and (when present) depth images. */
  put(frame: Frame, encoding: "jpeg" | "png", withDepth: boolean): { rgb: string; depth?: string } {
    const rgb = this.add({ kind: "rgb", rgb: frame.rgb, encoding, encodedBytes: 0, atMs: this.now() });
    if (withDepth && frame.depthMm) {
      const depth = this.add({
        kind: "depth",
        depth: frame.depthMm,
        encoding: "png",
        encodedBytes: 0,
        atMs: this.now(),
      });
      return { rgb, depth };
    }
    return { rgb };
  }

  /**
   * Store an already encoded file (the video of an act call) beside the frames: served from the
   * same GET /v1/frames/:id, counted in the same byte budget (out of the reservation of the call
   * under way, like its frames), evicted by the same rules.
   */
  putEncoded(data: Buffer, contentType: "video/mp4"): string {
    this.count(data.byteLength);
    return this.add({
      kind: "video",
      // (no encoding of its own: `encoded` is the file as stored)
      encoding: "png",
      encoded: Promise.resolve({ contentType, data }),
      encodedBytes: data.byteLength,
      atMs: this.now(),
    });
  }

  /**
   * Encoded image for an id, or undefined when unknown or evicted. The encode waits for room in
   * the encode headroom; it rejects with RB_ERR_OVER_CAPACITY only when it can never fit.
   */
  get(id: string): Promise<StoredImage> | undefined {
    const e = this.entries.get(id);
    if (!e) return undefined;
    if (!e.encoded) {
      const p = this.encodeEntry(id, e);
      e.encoded = p;
      // a failed encode is not cached: the next fetch tries again
      p.catch(() => {
        if (e.encoded === p) e.encoded = undefined;
      });
    }
    return e.encoded;
  }

  get size(): number {
    return this.entries.size;
  }

  /**
   * Bytes held (raw, encoded and holders'), reserved for captures under way (not yet stored) and
   * reserved by encodes under way. `bytes + reserved + encoding` never exceeds `maxBytes` while
   * every capture reserves what it stores.
   */
  get usage(): { bytes: number; reserved: number; maxBytes: number; encoding: number; waitingEncodes: number } {
    return {
      bytes: this.bytes,
      reserved: this.unconsumed(),
      maxBytes: this.opts.maxBytes,
      encoding: this.encoding,
      waitingEncodes: this.encodeQueue.length,
    };
  }

  /**
   * Reserve room for a capture of about `bytes` (evicting frames past their retention, oldest
   * first). Returns the release function, or undefined when the room is not there: then the
   * caller refuses the capture. Frames stored meanwhile are taken out of the reservation; release
   * after the call's frames are stored.
   */
  reserve(bytes: number): (() => void) | undefined {
    // captures may not take the encode headroom nor the room left for garbage
    const room = this.opts.maxBytes - this.opts.encodeHeadroomBytes - this.opts.gcSlackBytes;
    const fits = () =>
      this.bytes + this.unconsumed() + bytes <= room && this.held() + bytes <= this.opts.maxBytes;
    if (!fits()) {
      this.evict(fits, true);
      this.wakeEncodes();
    }
    if (!fits()) return undefined;
    const r = { bytes, used: 0 };
    this.reservations.add(r);
    this.reservedTotal += bytes;
    const gen = this.generation;
    let released = false;
    return () => {
      if (released || gen !== this.generation) return;
      released = true;
      this.reservations.delete(r);
      this.reservedTotal -= r.bytes;
      this.reservedUsed -= r.used;
      this.wakeEncodes();
    };
  }

  /**
   * Count images another part of the gateway keeps (e.g. the recorder until it has written them),
   * plus `extraBytes` it allocates for them (encoded copies). An image the store also holds is
   * counted once. It always succeeds (the images exist): it is taken out of the reservations under
   * way, then frames past their retention make room. Returns the release function.
   */
  hold(images: readonly RawView[], extraBytes = 0): () => void {
    const gen = this.generation;
    for (const v of images) this.ref(v);
    this.count(extraBytes);
    const fits = () => this.held() <= this.opts.maxBytes;
    if (!fits()) this.evict(fits, true);
    let released = false;
    return () => {
      if (released || gen !== this.generation) return;
      released = true;
      for (const v of images) this.unref(v);
      this.bytes -= extraBytes;
      this.wakeEncodes();
    };
  }

  clear(): void {
    this.entries.clear();
    this.raw.clear();
    this.reservations.clear();
    this.bytes = 0;
    this.reservedTotal = 0;
    this.reservedUsed = 0;
    this.encoding = 0;
    this.generation++;
    const waiting = this.encodeQueue.splice(0);
    for (const w of waiting) w.fail(new GatewayError("RB_ERR_FRAME_NOT_FOUND", { id: "(episode ended)" }));
  }

  /** counted bytes: held, reserved and not yet stored, encoding */
  private held(): number {
    return this.bytes + this.unconsumed() + this.encoding;
  }

  /** reserved bytes not yet stored */
  private unconsumed(): number {
    return this.reservedTotal - this.reservedUsed;
  }

  /** Newly held bytes, taken out of the reservations under way first. */
  private count(n: number): void {
    if (n <= 0) return;
    this.bytes += n;
    // the oldest reservation under way is the call storing (calls store in the order they run)
    let left = n;
    for (const r of this.reservations) {
      if (left === 0) break;
      const take = Math.min(left, r.bytes - r.used);
      r.used += take;
      this.reservedUsed += take;
      left -= take;
    }
  }

  private ref(v: RawView): void {
    const r = this.raw.get(v);
    if (r) {
      r.refs++;
      return;
    }
    this.raw.set(v, { bytes: v.byteLength, refs: 1 });
    this.count(v.byteLength);
  }

  private unref(v: RawView): void {
    const r = this.raw.get(v);
    if (!r) return;
    if (--r.refs > 0) return;
    this.raw.delete(v);
    this.bytes -= r.bytes;
  }

  /** Drop an entry's memory (raw reference or encoded copy). */
  private drop(e: Entry): void {
    const v = e.rgb?.data ?? e.depth?.data;
    if (v) this.unref(v);
    this.bytes -= e.encodedBytes;
    e.rgb = undefined;
    e.depth = undefined;
    e.encodedBytes = 0;
  }

  /** Evict oldest first until `enough()`; `pastRetentionOnly`: never a frame younger than the retention. */
  private evict(enough: () => boolean, pastRetentionOnly: boolean, keep?: string): void {
    const cutoff = this.now() - this.opts.minRetentionMs;
    for (const [k, old] of this.entries) {
      if (enough()) break;
      if (k === keep) continue;
      if (pastRetentionOnly && old.atMs > cutoff) break;
      this.entries.delete(k);
      this.drop(old);
    }
  }

  private add(e: Entry): string {
    const id = `${this.prefix}-${(this.counter++).toString(36)}-${e.kind}`;
    this.entries.set(id, e);
    const v = e.rgb?.data ?? e.depth?.data;
    if (v) this.ref(v);
    // beyond the reservations: room from frames past their retention, then from the oldest
    const fits = () => this.held() <= this.opts.maxBytes;
    if (!fits()) this.evict(fits, true, id);
    if (!fits()) this.evict(fits, false, id);
    this.wakeEncodes();
    return id;
  }

  private async encodeEntry(id: string, e: Entry): Promise<StoredImage> {
    const rawBytes = e.rgb?.data.byteLength ?? e.depth?.data.byteLength ?? 0;
    const bound = encodeBoundBytes(rawBytes);
    const gen = this.generation;
    await this.encodeSlot(id, bound);
    try {
      if (this.entries.get(id) !== e || (!e.rgb && !e.depth)) {
        throw new GatewayError("RB_ERR_FRAME_NOT_FOUND", { id });
      }
      const img = e.depth
        ? {
            contentType: "image/png" as const,
            data: await encodeDepthPng16(e.depth.data, e.depth.width, e.depth.height),
          }
        : await encodeImage(e.rgb!, e.encoding, this.opts.jpegQuality);
      if (gen === this.generation && this.entries.get(id) === e) {
        // the encoded copy replaces the raw image
        this.drop(e);
        e.encodedBytes = img.data.byteLength;
        this.bytes += img.data.byteLength;
      }
      return img;
    } finally {
      if (gen === this.generation) {
        this.encoding -= bound;
        this.wakeEncodes();
      }
    }
  }

  /** Wait until an encode of `bound` bytes fits (FIFO); rejects when no room can come. */
  private encodeSlot(id: string, bound: number): Promise<void> {
    return new Promise((go, fail) => {
      this.encodeQueue.push({ id, bound, go, fail });
      this.wakeEncodes();
    });
  }

  /**
   * Start the waiting encodes that fit, in order: within the headroom (one larger encode may run
   * alone) and within the budget. When nothing runs and the budget has no room even after frames
   * past their retention are evicted, the first waiter is refused (RB_ERR_OVER_CAPACITY).
   */
  private wakeEncodes(): void {
    for (;;) {
      const next = this.encodeQueue[0];
      if (!next) return;
      if (this.encoding > 0 && this.encoding + next.bound > this.opts.encodeHeadroomBytes) return;
      const fits = () => this.held() + next.bound <= this.opts.maxBytes;
      if (!fits()) {
        if (this.encoding > 0) return; // the encodes under way shrink the store when they end
        this.evict(fits, true, next.id);
        if (!fits()) {
          this.encodeQueue.shift();
          next.fail(
            new GatewayError("RB_ERR_OVER_CAPACITY", {
              resource: "frame encoding",
              reason: `${next.bound} bytes to encode one image; ${this.opts.maxBytes - this.held()} of ${this.opts.maxBytes} free`,
              retry_after_s: 1,
            }),
          );
          continue;
        }
      }
      this.encodeQueue.shift();
      this.encoding += next.bound;
      next.go();
    }
  }
}

/** Encode an RGB image (raw or already encoded) to the requested format. */
export async function encodeImage(img: ImageData, encoding: RgbEncoding, quality = 90): Promise<StoredImage> {
  const contentType = MIME[encoding] as StoredImage["contentType"];
  if (img.kind === "encoded" && img.format === encoding) {
    // the camera's own bytes, not a copy
    return { contentType, data: Buffer.from(img.data.buffer, img.data.byteOffset, img.data.byteLength) };
  }
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
