/**
 * Sensor realism for the simulator: post-processing of the rasterizer's RGB + depth and of the
 * joint readings, so that the sim's sensors look like a consumer RGB-D camera and a real arm's
 * encoders rather than a noiseless oracle. The model and its parameters: docs/sensor-realism.md.
 *
 * Determinism: every random draw is a pure function of (bench seed, control step, camera) — no
 * PRNG state is carried between frames — so the same seed and the same commands give the same
 * frames and readings, a capture repeated at the same instant gives the same frame (as a real
 * camera's latest frame would), and snapshots need no extra state beside the reading history.
 *
 * Cost: per frame one pass over the RGB bytes (three 256-entry LUTs, a table of Gaussian
 * samples read at random row offsets) and two over the depth pixels; no allocation after the
 * first frame of a size. bench/sensor-realism.ts measures it.
 */
import { z } from "zod";
import type { Rgb, Scene } from "../render/scene.ts";

const range = z.tuple([z.number(), z.number()]);

/** Parameters; every field has a default resembling a RealSense-D435-class camera at 30 fps. */
export const RealismSchema = z.strictObject({
  rgb: z
    .strictObject({
      /** sensor read noise, DN (8-bit) standard deviation */
      readNoiseDn: z.number().min(0).default(2),
      /** shot noise: variance per DN of signal (σ² = read² + shotGain · value) */
      shotGain: z.number().min(0).default(0.25),
      /** per-frame auto-exposure flicker, relative standard deviation */
      exposureFlicker: z.number().min(0).default(0.02),
      /** motion blur is not modelled (always false; the key exists so a file can say so) */
      motionBlur: z.literal(false).default(false),
    })
    .default({ readNoiseDn: 2, shotGain: 0.25, exposureFlicker: 0.02, motionBlur: false }),
  depth: z
    .strictObject({
      /** σ(z) = baseMm + quadMmPerM2 · z², z in m (stereo error grows with z²) */
      baseMm: z.number().min(0).default(0.5),
      quadMmPerM2: z.number().min(0).default(1.5),
      /** a pixel next to a depth step larger than this, on the far side, has no return, mm */
      edgeStepMm: z.number().positive().default(25),
      /** structures at most 2 px wide standing this far in front of both sides are thin, mm */
      thinStepMm: z.number().positive().default(15),
      /** probability that a thin-structure pixel has no return */
      thinDropout: z.number().min(0).max(1).default(0.6),
      /** random dropout of any pixel */
      dropout: z.number().min(0).max(1).default(0.005),
      /** quantisation step, mm */
      quantMm: z.number().int().min(1).default(1),
    })
    .default({
      baseMm: 0.5,
      quadMmPerM2: 1.5,
      edgeStepMm: 25,
      thinStepMm: 15,
      thinDropout: 0.6,
      dropout: 0.005,
      quantMm: 1,
    }),
  timing: z
    .strictObject({
      /** exposure → delivery latency of a frame, ms */
      frameLatencyMs: z.number().min(0).default(35),
      /** uniform jitter ± this on the frame latency, ms */
      frameJitterMs: z.number().min(0).default(5),
      /** measurement → delivery latency of a joint reading, ms */
      readingLatencyMs: z.number().min(0).default(2),
      /** joint encoder noise, rad standard deviation */
      jointNoiseRad: z.number().min(0).default(5e-5),
    })
    .default({ frameLatencyMs: 35, frameJitterMs: 5, readingLatencyMs: 2, jointNoiseRad: 5e-5 }),
  /** domain randomisation per seed (lighting, exposure, white balance, wire/board colours); false = off */
  domain: z
    .union([
      z.literal(false),
      z.strictObject({
        /** exposure gain range per seed */
        exposure: range.default([0.85, 1.15]),
        /** white-balance gain range per channel per seed */
        whiteBalance: range.default([0.93, 1.07]),
        /** relative colour jitter of the wire per channel */
        wireColour: z.number().min(0).max(1).default(0.12),
        /** relative colour jitter of board, table and background per channel */
        sceneColour: z.number().min(0).max(1).default(0.08),
        /** light direction jitter (added to the unit vector, per component) */
        lightDir: z.number().min(0).default(0.35),
      }),
    ])
    .default({
      exposure: [0.85, 1.15],
      whiteBalance: [0.93, 1.07],
      wireColour: 0.12,
      sceneColour: 0.08,
      lightDir: 0.35,
    }),
});
export type RealismParams = z.infer<typeof RealismSchema>;
export type RealismInput = z.input<typeof RealismSchema>;

/** The defaults (a consumer RGB-D camera, domain randomisation on). */
export const DEFAULT_REALISM: RealismParams = RealismSchema.parse({});

const TABLE_BITS = 16;
const TABLE_SIZE = 1 << TABLE_BITS;
const TABLE_MASK = TABLE_SIZE - 1;

/** 32-bit integer hash (lowbias32), the source of every draw. */
function hash32(x: number): number {
  let h = x >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d) >>> 0;
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b) >>> 0;
  h ^= h >>> 16;
  return h >>> 0;
}

/** uniform in [0, 1) from a key */
function u01(key: number): number {
  return hash32(key) / 4294967296;
}

function mix(...parts: number[]): number {
  let h = 0x811c9dc5;
  for (const p of parts) h = hash32(h ^ Math.imul(p | 0, 0x9e3779b1));
  return h;
}

/** Standard-normal samples, the same for every seed (Box–Muller on hashed uniforms). */
let gaussTable: Float32Array | null = null;
function gaussians(): Float32Array {
  if (gaussTable) return gaussTable;
  const t = new Float32Array(TABLE_SIZE);
  for (let i = 0; i < TABLE_SIZE; i += 2) {
    const u1 = (hash32(i * 2 + 1) + 1) / 4294967297;
    const u2 = hash32(i * 2 + 2) / 4294967296;
    const r = Math.sqrt(-2 * Math.log(u1));
    t[i] = r * Math.cos(2 * Math.PI * u2);
    t[i + 1] = r * Math.sin(2 * Math.PI * u2);
  }
  gaussTable = t;
  return t;
}

const FLICKER_STEP = 0.005;

/** Uniform random bytes (the noise-quantile index of each RGB sample). */
let byteTable: Uint8Array | null = null;
function noiseBytes(): Uint8Array {
  if (byteTable) return byteTable;
  byteTable = new Uint8Array(TABLE_SIZE);
  for (let i = 0; i < TABLE_SIZE; i++) byteTable[i] = hash32(i ^ 0xb17e5) & 255;
  return byteTable;
}

/** z_k = Φ⁻¹((k + ½) / 256): a noise byte k is a standard-normal sample at that quantile. */
let quantiles: Float64Array | null = null;
function normalQuantiles(): Float64Array {
  if (quantiles) return quantiles;
  quantiles = new Float64Array(256);
  for (let k = 0; k < 256; k++) quantiles[k] = -upperTail((k + 0.5) / 256);
  return quantiles;
}

/** Inverse of the standard normal upper tail: t with P(N > t) = p (Acklam-free bisection). */
function upperTail(p: number): number {
  if (p <= 0) return Number.POSITIVE_INFINITY;
  if (p >= 1) return Number.NEGATIVE_INFINITY;
  let lo = -10;
  let hi = 10;
  for (let k = 0; k < 60; k++) {
    const m = (lo + hi) / 2;
    // P(N > m) = erfc(m/√2)/2
    if (0.5 * erfc(m / Math.SQRT2) > p) lo = m;
    else hi = m;
  }
  return (lo + hi) / 2;
}

function erfc(x: number): number {
  // Numerical Recipes erfcc, |error| < 1.2e-7
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const r =
    t *
    Math.exp(
      -z * z -
        1.26551223 +
        t *
          (1.00002368 +
            t *
              (0.37409196 +
                t *
                  (0.09678418 +
                    t *
                      (-0.18628806 +
                        t *
                          (0.27886807 +
                            t * (-1.13520398 + t * (1.48851973 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return x >= 0 ? r : 2 - r;
}

/**
 * The realism of one simulated bench for one seed. The backend calls `randomiseScene` after
 * building a scene, `processFrame` on every rendered image, and uses the latencies.
 */
export class SensorRealism {
  private readonly g = gaussians();
  private readonly gain: [number, number, number];
  /** RGB LUTs by flicker bucket: 3 × 256 input values × 256 noise quantiles */
  private readonly luts = new Map<number, Uint8Array>();
  private holeMask = new Uint8Array(0);
  private readonly thinT: number;
  private readonly dropT: number;
  /** originals of the colours this realism changed, by scene object id */
  private readonly originals = new Map<string, Rgb>();
  private originalLight: readonly [number, number, number] | null = null;
  private originalBackground: Rgb | null = null;

  constructor(
    readonly params: RealismParams,
    readonly seed: number,
  ) {
    const d = params.domain;
    const s = (k: number, lo: number, hi: number) => lo + (hi - lo) * u01(mix(seed, 0x5eed, k));
    if (d) {
      const e = s(1, d.exposure[0], d.exposure[1]);
      this.gain = [
        e * s(2, d.whiteBalance[0], d.whiteBalance[1]),
        e * s(3, d.whiteBalance[0], d.whiteBalance[1]),
        e * s(4, d.whiteBalance[0], d.whiteBalance[1]),
      ];
    } else this.gain = [1, 1, 1];
    this.thinT = upperTail(params.depth.thinDropout);
    this.dropT = upperTail(params.depth.dropout);
  }

  private rgbLut(bucket: number): Uint8Array {
    let lut = this.luts.get(bucket);
    if (lut) return lut;
    lut = new Uint8Array(3 * 65536);
    const z = normalQuantiles();
    const f = 1 + bucket * FLICKER_STEP;
    const read2 = this.params.rgb.readNoiseDn ** 2;
    const shot = this.params.rgb.shotGain;
    for (let c = 0; c < 3; c++) {
      const gc = this.gain[c]! * f;
      for (let v = 0; v < 256; v++) {
        const m = v * gc;
        const sd = Math.sqrt(read2 + shot * Math.min(255, m));
        const row = (c << 16) | (v << 8);
        for (let k = 0; k < 256; k++) {
          const x = m + sd * z[k]!;
          lut[row | k] = x < 0 ? 0 : x > 255 ? 255 : (x + 0.5) | 0;
        }
      }
    }
    this.luts.set(bucket, lut);
    return lut;
  }

  /** the per-seed RGB gains (exposure × white balance), for records */
  get rgbGains(): readonly number[] {
    return this.gain;
  }

  /** frame latency at this control step, in control periods (latency ± jitter, rounded) */
  frameLagTicks(step: number, cameraIndex: number, dtS: number): number {
    const t = this.params.timing;
    const jitter = (2 * u01(mix(this.seed, 0xf4a3, step, cameraIndex)) - 1) * t.frameJitterMs;
    return Math.max(0, Math.round((t.frameLatencyMs + jitter) / 1000 / dtS));
  }

  /** the largest frame latency, control periods */
  maxFrameLagTicks(dtS: number): number {
    const t = this.params.timing;
    return Math.ceil((t.frameLatencyMs + t.frameJitterMs) / 1000 / dtS);
  }

  readingLagTicks(dtS: number): number {
    return Math.round(this.params.timing.readingLatencyMs / 1000 / dtS);
  }

  /** encoder noise on joint j at control step `step`, rad */
  jointNoise(step: number, j: number): number {
    const s = this.params.timing.jointNoiseRad;
    if (s === 0) return 0;
    return s * this.g[mix(this.seed, 0x1017, step, j) & TABLE_MASK]!;
  }

  /**
   * Domain randomisation of a render scene (idempotent per seed: colours are derived from the
   * scene's own colours seen the first time). Off when `domain` is false.
   */
  randomiseScene(scene: Scene): void {
    const d = this.params.domain;
    if (!d) return;
    const jitter = (c: Rgb, amount: number, key: number): Rgb => {
      const f = (k: number) => 1 + amount * (2 * u01(mix(this.seed, 0xc010, key, k)) - 1);
      return [
        Math.min(255, Math.round(c[0] * f(0))),
        Math.min(255, Math.round(c[1] * f(1))),
        Math.min(255, Math.round(c[2] * f(2))),
      ];
    };
    const targets: Record<string, [number, number]> = {
      wire: [d.wireColour, 1],
      board: [d.sceneColour, 2],
      table: [d.sceneColour, 3],
    };
    for (const o of scene.objects) {
      const tgt = targets[o.id];
      if (!tgt) continue;
      const orig = this.originals.get(o.id) ?? o.color;
      this.originals.set(o.id, orig);
      o.color = jitter(orig, tgt[0], tgt[1]);
    }
    this.originalBackground ??= scene.background;
    scene.background = jitter(this.originalBackground, d.sceneColour, 4);
    this.originalLight ??= [scene.lightDir[0], scene.lightDir[1], scene.lightDir[2]];
    const l = this.originalLight;
    const n = Math.hypot(l[0], l[1], l[2]) || 1;
    const dj = (k: number) => d.lightDir * (2 * u01(mix(this.seed, 0x1197, k)) - 1);
    scene.lightDir = [l[0] / n + dj(0), l[1] / n + dj(1), Math.max(0.2, l[2] / n + dj(2))];
  }

  /**
   * Add camera effects to a rendered image in place: exposure and white balance, shot and read
   * noise (RGB); distance-dependent noise, holes at depth edges and on thin structures, random
   * dropout and quantisation (depth, mm, 0 = no return).
   */
  processFrame(
    step: number,
    cameraIndex: number,
    width: number,
    height: number,
    rgb: Uint8Array,
    depthMm: Uint16Array | null,
  ): void {
    const key = mix(this.seed, step, cameraIndex);
    const g = this.g;
    const p = this.params;
    // ---- RGB: output = LUT[channel][value · 256 + noise byte] (exposure, WB, shot + read noise,
    // rounding and clamping in one load); the flicker is quantised to 0.5 % steps, one LUT each
    const bucket = Math.round((p.rgb.exposureFlicker * g[key & TABLE_MASK]!) / FLICKER_STEP);
    const lut = this.rgbLut(bucket);
    const bytes = noiseBytes();
    const rowBytes = width * 3;
    for (let y = 0; y < height; y++) {
      let o = hash32(key ^ Math.imul(y + 1, 0x27d4eb2d)) & TABLE_MASK;
      const base = y * rowBytes;
      for (let i = base, end = base + rowBytes; i < end; i += 3) {
        rgb[i] = lut[(rgb[i]! << 8) | bytes[o]!]!;
        rgb[i + 1] = lut[65536 | (rgb[i + 1]! << 8) | bytes[(o + 1) & TABLE_MASK]!]!;
        rgb[i + 2] = lut[131072 | (rgb[i + 2]! << 8) | bytes[(o + 2) & TABLE_MASK]!]!;
        o = (o + 3) & TABLE_MASK;
      }
    }
    if (!depthMm) return;
    const n = width * height;
    if (this.holeMask.length !== n) this.holeMask = new Uint8Array(n);
    const dKey = hash32(key ^ 0xd3b7);
    const d = p.depth;
    depthHoles(
      depthMm,
      this.holeMask,
      width,
      height,
      g,
      dKey,
      d.edgeStepMm,
      d.thinStepMm,
      this.thinT,
      this.dropT,
    );
    depthNoise(depthMm, this.holeMask, width, height, g, dKey, d.baseMm, d.quadMmPerM2 * 1e-6, d.quantMm);
  }
}

/** Pass 1: which pixels have no return, judged on the clean image (edges, thin structures, dropout). */
function depthHoles(
  depthMm: Uint16Array,
  hole: Uint8Array,
  width: number,
  height: number,
  g: Float32Array,
  dKey: number,
  edge: number,
  thin: number,
  thinT: number,
  dropT: number,
): void {
  for (let y = 0; y < height; y++) {
    const r = y * width;
    let o = hash32(dKey ^ Math.imul(y + 1, 0x165667b1)) & TABLE_MASK;
    for (let x = 0; x < width; x++) {
      o = (o + 2) & TABLE_MASK;
      const i = r + x;
      const d = depthMm[i]!;
      if (d === 0) {
        hole[i] = 1;
        continue;
      }
      let h = 0;
      // the far side of a step has no return (the stereo occlusion shadow)
      if (x + 1 < width) {
        const v = depthMm[i + 1]!;
        if (v !== 0 && d - v > edge) h = 1;
      }
      if (x > 0) {
        const v = depthMm[i - 1]!;
        if (v !== 0 && d - v > edge) h = 1;
      }
      if (y + 1 < height) {
        const v = depthMm[i + width]!;
        if (v !== 0 && d - v > edge) h = 1;
      }
      if (y > 0) {
        const v = depthMm[i - width]!;
        if (v !== 0 && d - v > edge) h = 1;
      }
      // a thin structure: both sides two pixels away are much farther (or empty)
      if (h === 0 && x >= 2 && x + 2 < width) {
        const a = depthMm[i - 2]!;
        const b = depthMm[i + 2]!;
        if ((a === 0 || a - d > thin) && (b === 0 || b - d > thin) && g[o]! > thinT) h = 1;
      }
      if (h === 0 && y >= 2 && y + 2 < height) {
        const a = depthMm[i - 2 * width]!;
        const b = depthMm[i + 2 * width]!;
        if ((a === 0 || a - d > thin) && (b === 0 || b - d > thin) && g[(o + 7) & TABLE_MASK]! > thinT) h = 1;
      }
      if (h === 0 && g[(o + 1) & TABLE_MASK]! > dropT) h = 1;
      hole[i] = h;
    }
  }
}

/** Pass 2: noise σ = a + b·d² (d in mm, b per mm), quantisation to `q` mm, holes as 0. */
function depthNoise(
  depthMm: Uint16Array,
  hole: Uint8Array,
  width: number,
  height: number,
  g: Float32Array,
  dKey: number,
  a: number,
  b: number,
  q: number,
): void {
  for (let y = 0; y < height; y++) {
    const r = y * width;
    let o = hash32(dKey ^ Math.imul(y + 1, 0x3c6ef372)) & TABLE_MASK;
    for (let x = 0; x < width; x++) {
      o = (o + 1) & TABLE_MASK;
      const i = r + x;
      if (hole[i] === 1) {
        depthMm[i] = 0;
        continue;
      }
      const d = depthMm[i]!;
      const v = d + (a + b * d * d) * g[o]!;
      // round half up by truncation (Math.round costs 5× here); v < 0.5 clamps to 1 mm
      const qv = q === 1 ? (v + 0.5) | 0 : ((v / q + 0.5) | 0) * q;
      depthMm[i] = qv < 1 ? 1 : Math.min(qv, 65535);
    }
  }
}
