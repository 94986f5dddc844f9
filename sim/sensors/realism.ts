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
 * Cost: per frame one pass over the RGB bytes (a 3 × 64 K LUT per flicker step, noise bytes read
 * at random segment offsets) and one over the depth pixels (Gaussian and uniform tables read at
 * random row offsets); both run in the WebAssembly module of realism-simd.ts where it can give
 * these bytes (the smooth depth pixels 8 at a time; edges, shadow and thin runs stay in the JS
 * pass below, which is also the whole path without it). No allocation after the first frame of a
 * size. bench/sensor-realism.ts measures it; docs/sensor-realism.md has the figures.
 */
import { z } from "zod";
import type { Rgb, Scene } from "../render/scene.ts";
import { type FrameMotion, MotionBlur } from "./motion-blur.ts";
import { LITTLE_ENDIAN } from "../render/wasm.ts";
import { createRealismKernel, type RealismKernel, type KernelParams } from "./realism-simd.ts";

export type { FrameMotion } from "./motion-blur.ts";

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
      /** motion blur: what moves during the exposure smears along its image motion (false: an instant) */
      motionBlur: z.boolean().default(true),
      /** colour exposure time, ms (centred on the frame's stamp); an estimate of a D435's RGB
       * auto exposure indoors at 30 fps, see docs/sensor-realism.md */
      exposureMs: z.number().min(0).max(100).default(15),
    })
    .default({ readNoiseDn: 2, shotGain: 0.25, exposureFlicker: 0.02, motionBlur: true, exposureMs: 15 }),
  depth: z
    .strictObject({
      /** σ(z) = baseMm + quadMmPerM2 · z², z in m: a stereo camera's RMS error is
       * z² · subpixel / (focal length px · baseline); D435 at 848×480: 0.08 · 1 m² / (424 px · 50 mm) */
      baseMm: z.number().min(0).default(0),
      quadMmPerM2: z.number().min(0).default(3.8),
      /** nearer than this there is no depth (the stereo matcher's disparity search ends), mm */
      minRangeMm: z.number().min(0).default(170),
      /** stereo baseline, mm: the occlusion shadow left of a near object is f·B·(1/z_near − 1/z_far) px wide */
      baselineMm: z.number().min(0).default(50),
      /** a pixel next to a depth step larger than this, on the far side, has no return, mm */
      edgeStepMm: z.number().positive().default(25),
      /** focal length of the depth imager, px: sizes `thinMaxPx` in the depth image's pixels */
      imagerFxPx: z.number().positive().default(424),
      /** a structure at most this many depth-imager pixels wide (in a row or a column) is thin */
      thinMaxPx: z.number().min(0).default(2),
      /** …when it stands this far in front of both sides, mm */
      thinStepMm: z.number().positive().default(15),
      /** probability that a thin-structure pixel has no return */
      thinDropout: z.number().min(0).max(1).default(0.5),
      /** probability that a thin-structure pixel reports the depth behind it (the matching window
       * is dominated by the background); thinDropout + thinBackground ≤ 1, the rest keep their depth */
      thinBackground: z.number().min(0).max(1).default(0.4),
      /** random dropout of any pixel */
      dropout: z.number().min(0).max(1).default(0.005),
      /** quantisation step, mm */
      quantMm: z.number().int().min(1).default(1),
      /** infrared (stereo) exposure time, ms: the D435's default manual depth exposure, 8500 µs;
       * with `rgb.motionBlur`, the band a depth edge sweeps during it has no return */
      exposureMs: z.number().min(0).max(100).default(8.5),
    })
    .refine((d) => d.thinDropout + d.thinBackground <= 1, {
      message: "depth.thinDropout + depth.thinBackground must be at most 1",
    })
    .default({
      baseMm: 0,
      quadMmPerM2: 3.8,
      minRangeMm: 170,
      baselineMm: 50,
      edgeStepMm: 25,
      imagerFxPx: 424,
      thinMaxPx: 2,
      thinStepMm: 15,
      thinDropout: 0.5,
      thinBackground: 0.4,
      dropout: 0.005,
      quantMm: 1,
      exposureMs: 8.5,
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

/**
 * Standard-normal samples, the same for every seed (Box–Muller on hashed uniforms). The table is
 * stored twice in a row (length 2 · TABLE_SIZE), so a row of draws read from a random start
 * offset below TABLE_SIZE never wraps.
 */
let gaussTable: Float32Array | null = null;
function gaussians(): Float32Array {
  if (gaussTable) return gaussTable;
  const t = new Float32Array(2 * TABLE_SIZE);
  for (let i = 0; i < TABLE_SIZE; i += 2) {
    const u1 = (hash32(i * 2 + 1) + 1) / 4294967297;
    const u2 = hash32(i * 2 + 2) / 4294967296;
    const r = Math.sqrt(-2 * Math.log(u1));
    t[i] = r * Math.cos(2 * Math.PI * u2);
    t[i + 1] = r * Math.sin(2 * Math.PI * u2);
  }
  t.copyWithin(TABLE_SIZE, 0, TABLE_SIZE);
  gaussTable = t;
  return t;
}

/** Uniform 16-bit draws (depth dropout decisions), stored twice like the Gaussian table. */
let uniformTable: Uint16Array | null = null;
function uniforms16(): Uint16Array {
  if (uniformTable) return uniformTable;
  const t = new Uint16Array(2 * TABLE_SIZE);
  for (let i = 0; i < TABLE_SIZE; i++) t[i] = hash32(i ^ 0x0d3e7) >>> 16;
  t.copyWithin(TABLE_SIZE, 0, TABLE_SIZE);
  uniformTable = t;
  return t;
}

const FLICKER_STEP = 0.005;

/**
 * Uniform random bytes (the noise-quantile index of each RGB sample), stored twice like the
 * Gaussian table and read as 32-bit words (four samples per load) from word-aligned offsets.
 */
let byteTable: Uint8Array | null = null;
function noiseBytes(): Uint8Array {
  if (byteTable) return byteTable;
  byteTable = new Uint8Array(2 * TABLE_SIZE);
  for (let i = 0; i < TABLE_SIZE; i++) byteTable[i] = hash32(i ^ 0xb17e5) & 255;
  byteTable.copyWithin(TABLE_SIZE, 0, TABLE_SIZE);
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
  /** per-frame scratch of the depth pass (sized on the first frame of a size) */
  private clean = new Uint16Array(0);
  private thinMark = new Uint8Array(0);
  private thinBg = new Uint16Array(0);
  /** originals of the colours this realism changed, by scene object id */
  private readonly originals = new Map<string, Rgb>();
  private originalLight: readonly [number, number, number] | null = null;
  private originalBackground: Rgb | null = null;
  /** motion blur's scratch (sim/sensors/motion-blur.ts) */
  private readonly blur = new MotionBlur();
  /** false: JS only, motion blur's passes too (the WebAssembly kernels give the same bytes; tests compare) */
  simd = true;
  /** the depth kernel's thresholds for these parameters (null: the JS pass only) */
  private kernelParams: KernelParams | null | undefined;

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

  /**
   * Build every RGB LUT a frame can ask for (all flicker steps the Gaussian table reaches), so
   * that no frame pays for one: built on first use, each new step cost its frame ≈ 1–1.5 ms (11
   * of 200 frames of the bench did, the tail above 2 ms). The sim backend calls it when it builds
   * a bench (≈ 40 steps × 196 KB at the default 2 % flicker). Returns the number of LUTs.
   */
  prepare(): number {
    const top = Math.round((this.params.rgb.exposureFlicker * maxAbsGauss()) / FLICKER_STEP);
    for (let b = -top; b <= top; b++) this.rgbLut(b);
    return this.luts.size;
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

  /**
   * Half the exposure motion blur spans (the longer of the colour and infrared exposures), in
   * control periods (rounded up with `ceil`); 0 with blur off.
   */
  exposureHalfTicks(dtS: number, ceil = true): number {
    const p = this.params;
    const ms = p.rgb.motionBlur ? Math.max(p.rgb.exposureMs, p.depth.exposureMs) : 0;
    const t = ms / 2 / 1000 / dtS;
    return ceil ? Math.ceil(t) : t;
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
   * noise (RGB); minimum range, distance-dependent noise, holes at depth edges (and the stereo
   * occlusion shadow), thin structures lost or showing the depth behind them, random dropout and
   * quantisation (depth, mm, 0 = no return). `fxPx` is the camera's focal length in pixels.
   * With `motion` (the frame's image motion over an interval, Rasterizer.motionField) and
   * `rgb.motionBlur` on, first motion blur over the colour exposure and, after the depth effects,
   * no return where a depth edge swept during the infrared exposure (motion-blur.ts); without
   * motion the bytes are those of the still frame.
   * Runs once per rendered frame: no allocation after the first frame of a size.
   */
  processFrame(
    step: number,
    cameraIndex: number,
    width: number,
    height: number,
    rgb: Uint8Array,
    depthMm: Uint16Array | null,
    fxPx: number,
    motion: FrameMotion | null = null,
  ): void {
    if (width > MAX_WIDTH_PX)
      throw new Error(`sensor realism handles images up to ${MAX_WIDTH_PX} px wide, not ${width}`);
    const key = mix(this.seed, step, cameraIndex);
    const p = this.params;
    // motion blur first: the sensor integrates the moving image, then reads it out with noise
    let holes = 0;
    if (motion && p.rgb.motionBlur && motion.intervalMs > 0) {
      const b = this.blur;
      b.simd = this.simd;
      const moved = b.apply(
        width,
        height,
        rgb,
        motion,
        p.rgb.exposureMs / motion.intervalMs,
        depthMm ? p.depth.exposureMs / motion.intervalMs : 0,
        p.depth.edgeStepMm,
      );
      if (moved) holes = b.holeCount;
    }
    this.processStill(key, width, height, rgb, depthMm, fxPx);
    if (depthMm && holes > 0) {
      const list = this.blur.holes;
      for (let k = 0; k < holes; k++) depthMm[list[k]!] = 0;
    }
  }

  /** processFrame's still-image effects (every effect but motion blur) */
  private processStill(
    key: number,
    width: number,
    height: number,
    rgb: Uint8Array,
    depthMm: Uint16Array | null,
    fxPx: number,
  ): void {
    const p = this.params;
    // ---- RGB: output = LUT[channel][value · 256 + noise byte] (exposure, WB, shot + read noise,
    // rounding and clamping in one load); the flicker is quantised to 0.5 % steps, one LUT each
    const bucket = Math.round((p.rgb.exposureFlicker * this.g[key & TABLE_MASK]!) / FLICKER_STEP);
    const n = width * height;
    const d = p.depth;
    // the thin width in this camera's pixels (the depth imager's pixels scaled by the focal lengths)
    const T = Math.max(0, Math.floor((d.thinMaxPx * fxPx) / d.imagerFxPx + 0.5));
    const pad = Math.max(1, T);
    const kernel = this.simd && LITTLE_ENDIAN && rgb.length === 3 * n ? realismKernel() : null;
    kernel?.layout(width, height, pad);
    if (kernel) rgbNoiseKernel(kernel, rgb, this.rgbLut(bucket), key);
    else rgbNoise(rgb, this.rgbLut(bucket), key);
    if (!depthMm) return;
    const padded = (width + 2 * pad) * (height + 2 * pad);
    if (this.thinMark.length !== n) {
      this.thinMark = new Uint8Array(n);
      this.thinBg = new Uint16Array(n);
    }
    const dKey = hash32(key ^ 0xd3b7);
    if (this.kernelParams === undefined) this.kernelParams = kernelParams(d);
    const kp = this.kernelParams;
    if (kp && kernel) {
      // the smooth pixels 8 at a time in WebAssembly, the rest in the JS pass below (same bytes)
      kernel.padFrom(depthMm, width, height, pad);
      const rows = kernel.rows;
      for (let y = 0; y < height; y++) {
        const [og, ou] = rowOffsets(dKey, y);
        rows[2 * y] = kernel.gOffset + 4 * (2 * TABLE_SIZE - og - width);
        const base = 2 * TABLE_SIZE - ou - 2 * width;
        rows[2 * y + 1] = (base & 1) === 0 ? kernel.ueOffset + base : kernel.uoOffset + base - 1;
      }
      kernel.run(width, height, pad, kp);
      depthPass(
        kernel.src,
        kernel.out,
        this.thinMark,
        this.thinBg,
        kernel.visit,
        kernel.flagStride >> 2,
        width,
        height,
        pad,
        T,
        fxPx,
        d,
        dKey,
      );
      depthMm.set(kernel.out);
      return;
    }
    if (this.clean.length !== padded) this.clean = new Uint16Array(padded);
    padCopy(depthMm, this.clean, width, height, pad);
    depthPass(this.clean, depthMm, this.thinMark, this.thinBg, null, 0, width, height, pad, T, fxPx, d, dKey);
  }
}

/** the Gaussian and uniform table offsets of row y (one draw of each per pixel, from the right) */
function rowOffsets(dKey: number, y: number): [number, number] {
  return [
    hash32(dKey ^ Math.imul(y + 1, 0x3c6ef372)) & TABLE_MASK,
    hash32(dKey ^ Math.imul(y + 1, 0x165667b1)) & TABLE_MASK,
  ];
}

/** whether the WebAssembly SIMD kernels run here (Node 20 has WebAssembly SIMD) */
export function simdAvailable(): boolean {
  return realismKernel() !== null;
}

let kernel: RealismKernel | null | undefined;
/** the WebAssembly kernel over this module's tables (null: no WebAssembly SIMD here) */
function realismKernel(): RealismKernel | null {
  if (kernel === undefined)
    kernel = createRealismKernel({
      gauss: gaussians(),
      uniform16: uniforms16(),
      noiseBytes: noiseBytes(),
      tableSize: TABLE_SIZE,
    });
  return kernel;
}

/**
 * The kernel's integer form of the JS path's tests, or null where the kernel cannot give the JS
 * path's bytes (a quantisation step other than 1 mm; steps so large that every pixel is "edge";
 * noise that could leave the 32-bit range the JS path's `| 0` wraps in).
 */
function kernelParams(p: DepthParams): KernelParams | null {
  if (p.quantMm !== 1) return null;
  const lim = Math.min(p.edgeStepMm, p.thinStepMm);
  if (lim >= 65535) return null;
  const lim2 = 2 * lim;
  // the neighbour test of the JS path is `(n − d + lim) >>> 0 <= 2·lim`; the integer steps
  // n − d it passes, found by evaluating it, must be one interval around 0
  const pass = (k: number) => (k + lim) >>> 0 <= lim2;
  let kHi = 0;
  while (kHi < 65535 && pass(kHi + 1)) kHi++;
  let kLoNeg = 0;
  while (kLoNeg < 65535 && pass(-(kLoNeg + 1))) kLoNeg++;
  for (let k = -65535; k <= 65535; k += k < -kLoNeg - 2 || k > kHi + 2 ? 997 : 1)
    if (pass(k) !== (k >= -kLoNeg && k <= kHi)) return null;
  const a = p.baseMm;
  const b = p.quadMmPerM2 * 1e-6;
  if (65536 + (a + b * 65535 * 65535) * maxAbsGauss() >= 2 ** 31) return null;
  const dropU = Math.round(p.dropout * 65536);
  return {
    limFloor: Math.floor(lim),
    kHi,
    kLoNeg,
    thrMin: Math.min(65535, Math.max(0, Math.ceil(p.minRangeMm) - 1)),
    dropLe: Math.max(0, dropU - 1),
    dropAny: dropU > 0,
    a,
    b,
  };
}

let gaussMax = 0;
function maxAbsGauss(): number {
  if (gaussMax === 0) for (const v of gaussians()) gaussMax = Math.max(gaussMax, Math.abs(v));
  return gaussMax;
}

/**
 * The clean depth image with a border of `pad` pixels that repeat the edge pixels (so that
 * outside the image counts as "the same depth": no steps, no thin runs at the border), and the
 * neighbour reads of the depth pass need no bounds tests.
 */
function padCopy(src: Uint16Array, dst: Uint16Array, w: number, h: number, pad: number): void {
  const pw = w + 2 * pad;
  for (let y = 0; y < h; y++) {
    const o = (y + pad) * pw + pad;
    dst.set(src.subarray(y * w, y * w + w), o);
    dst.fill(src[y * w]!, o - pad, o);
    dst.fill(src[y * w + w - 1]!, o + w, o + w + pad);
  }
  for (let k = 0; k < pad; k++) {
    dst.copyWithin(k * pw, pad * pw, pad * pw + pw);
    dst.copyWithin((pad + h + k) * pw, (pad + h - 1) * pw, (pad + h) * pw);
  }
}

/** rgbNoise's bytes with the whole 48-byte rounds of each segment in the WebAssembly kernel */
function rgbNoiseKernel(k: RealismKernel, rgb: Uint8Array, lut: Uint8Array, key: number): void {
  const nb = noiseBytes();
  const buf = k.rgb;
  buf.set(rgb);
  k.useLut(lut);
  const len = rgb.length;
  for (let seg = 0, s0 = 0; s0 < len; seg++, s0 += RGB_SEGMENT) {
    const o = segmentOffset(key, seg);
    const s1 = Math.min(len, s0 + RGB_SEGMENT);
    const rounds = Math.floor((s1 - s0) / 48);
    if (rounds > 0) k.rgbRounds(s0, o, rounds);
    rgbBytes(buf, nb, lut, s0 + 48 * rounds, s1, o + 48 * rounds);
  }
  rgb.set(buf);
}

/** the noise-table offset of RGB segment `seg` (word aligned) */
function segmentOffset(key: number, seg: number): number {
  return hash32(key ^ Math.imul(seg + 1, 0x27d4eb2d)) & TABLE_MASK & ~3;
}

/** widest image: a row of depth draws (two uniforms per pixel) must fit the doubled table */
const MAX_WIDTH_PX = TABLE_SIZE / 2;

/** bytes per RGB segment that shares one random offset into the noise table (a multiple of 12) */
const RGB_SEGMENT = 3072;

/**
 * RGB in place: byte i of a segment takes the noise byte at (segment offset + i) of the noise
 * table through its channel's LUT. Four bytes per load on word-aligned little-endian buffers
 * (the same output as the byte loop, which handles everything else). The per-segment loops are
 * functions of their own: V8 optimises them far better than the same loop nested in the caller.
 */
function rgbNoise(rgb: Uint8Array, lut: Uint8Array, key: number): void {
  const nb = noiseBytes();
  const len = rgb.length;
  const words = LITTLE_ENDIAN && rgb.byteOffset % 4 === 0;
  const px = words ? new Int32Array(rgb.buffer, rgb.byteOffset, len >>> 2) : null;
  const nz = words ? new Int32Array(nb.buffer, nb.byteOffset, nb.length >>> 2) : null;
  for (let seg = 0, s0 = 0; s0 < len; seg++, s0 += RGB_SEGMENT) {
    const o = segmentOffset(key, seg);
    const s1 = Math.min(len, s0 + RGB_SEGMENT);
    // 12 bytes = 3 words = 4 pixels per round
    const whole = px && nz ? Math.floor((s1 - s0) / 12) : 0;
    if (px && nz && whole > 0) rgbWords(px, nz, lut, s0 >>> 2, o >>> 2, whole);
    rgbBytes(rgb, nb, lut, s0 + 12 * whole, s1, o + 12 * whole);
  }
}

/** `rounds` × 3 words from word k on (noise words from m): channels 0 1 2 0 | 1 2 0 1 | 2 0 1 2 */
function rgbWords(
  px: Int32Array,
  nz: Int32Array,
  lut: Uint8Array,
  k: number,
  m: number,
  rounds: number,
): void {
  for (const end = k + 3 * rounds; k < end; k += 3, m += 3) {
    const p0 = px[k]!;
    const n0 = nz[m]!;
    px[k] =
      lut[((p0 << 8) & 0xff00) | (n0 & 255)]! |
      (lut[65536 | (p0 & 0xff00) | ((n0 >>> 8) & 255)]! << 8) |
      (lut[131072 | ((p0 >>> 8) & 0xff00) | ((n0 >>> 16) & 255)]! << 16) |
      (lut[((p0 >>> 16) & 0xff00) | (n0 >>> 24)]! << 24);
    const p1 = px[k + 1]!;
    const n1 = nz[m + 1]!;
    px[k + 1] =
      lut[65536 | ((p1 << 8) & 0xff00) | (n1 & 255)]! |
      (lut[131072 | (p1 & 0xff00) | ((n1 >>> 8) & 255)]! << 8) |
      (lut[((p1 >>> 8) & 0xff00) | ((n1 >>> 16) & 255)]! << 16) |
      (lut[65536 | ((p1 >>> 16) & 0xff00) | (n1 >>> 24)]! << 24);
    const p2 = px[k + 2]!;
    const n2 = nz[m + 2]!;
    px[k + 2] =
      lut[131072 | ((p2 << 8) & 0xff00) | (n2 & 255)]! |
      (lut[(p2 & 0xff00) | ((n2 >>> 8) & 255)]! << 8) |
      (lut[65536 | ((p2 >>> 8) & 0xff00) | ((n2 >>> 16) & 255)]! << 16) |
      (lut[131072 | ((p2 >>> 16) & 0xff00) | (n2 >>> 24)]! << 24);
  }
}

/** bytes [i, end) one at a time, noise from j on; i − (segment start) is a multiple of 3 at a round's start */
function rgbBytes(rgb: Uint8Array, nb: Uint8Array, lut: Uint8Array, i: number, end: number, j: number): void {
  for (let c = 0; i < end; i++, j++) {
    rgb[i] = lut[(c << 16) | (rgb[i]! << 8) | nb[j]!]!;
    c = c === 2 ? 0 : c + 1;
  }
}

type DepthParams = RealismParams["depth"];

/**
 * Depth in one pass over the pixels, reading the clean image `src` and writing `out`; rows are
 * scanned right to left so that the occlusion shadow left of a near object and the thin runs
 * found at their first pixel are marked ahead of the scan (`mark`, `bg`: cleared as consumed).
 * Per pixel, judged on the clean image: no return below the minimum range, on the far side of a
 * 4-neighbour step (and across the occlusion shadow), on a thin structure with probability
 * thinDropout (or the background's depth with probability thinBackground), and at random
 * (dropout); otherwise noise σ = a + b·z² and quantisation.
 */
function depthPass(
  src: Uint16Array,
  out: Uint16Array,
  mark: Uint8Array,
  bg: Uint16Array,
  visit: Int32Array | null,
  visitStride: number,
  w: number,
  h: number,
  pad: number,
  T: number,
  fxPx: number,
  p: DepthParams,
  dKey: number,
): void {
  const g = gaussians();
  const u = uniforms16();
  const holeU = Math.round(p.thinDropout * 65536);
  const bgU = Math.round((p.thinDropout + p.thinBackground) * 65536);
  const dropU = Math.round(p.dropout * 65536);
  const pw = w + 2 * pad;
  // every number the loop uses is a local of this function: passed as arguments to a row
  // function (as before) they arrive boxed, and V8 re-checks and unboxes them on every pixel
  const a = p.baseMm;
  const b = p.quadMmPerM2 * 1e-6;
  const q = p.quantMm;
  const q1 = q === 1;
  const minR = p.minRangeMm;
  const edge = p.edgeStepMm;
  const thin = p.thinStepMm;
  // disparity px × depth mm
  const fB = fxPx * p.baselineMm;
  // neighbours closer than this to d (in both directions) can make no edge and no thin run
  const lim = Math.min(edge, thin);
  const lim2 = 2 * lim;
  for (let y = 0; y < h; y++) {
    // r: the row's first pixel in `out`, `mark`, `bg`; sr: the same pixel in the padded `src`
    // (row stride pw); og, ou: this row's offsets into the Gaussian and uniform tables
    const r = y * w;
    const sr = (y + pad) * pw + pad;
    const [og0, ou0] = rowOffsets(dKey, y);
    // occlusion shadow: pixels left to blank, and the occluder's depth
    let shadow = 0;
    let occluder = 0;
    // with `visit` (the kernel's bits, 32 pixels a word: 1 = not a smooth pixel; the pixels right
    // of the last full group of 8 are set here), the pixels with neither bit, mark nor shadow are
    // done already: the scan jumps to the next one that is not; marks set their pixel's bit
    const vr = y * visitStride;
    if (visit) for (let x = w & ~7; x < w; x++) visit[vr + (x >> 5)]! |= 1 << (x & 31);
    for (let x = w - 1; x >= 0; x--) {
      if (visit && shadow === 0) {
        let k = x >> 5;
        // bits 0 … x mod 32 (2 << 31 is 0 in 32-bit arithmetic: all bits)
        let bits = visit[vr + k]! & ((2 << (x & 31)) - 1);
        while (bits === 0 && k > 0) bits = visit[vr + --k]!;
        if (bits === 0) break;
        x = 32 * k + 31 - Math.clz32(bits);
      }
      if (shadow > 0) {
        // inside the occlusion shadow: an unmarked pixel with a return, no step to its right and
        // farther than the occluder by more than the step is a hole (what the whole body below
        // does with it), in a loop of its own; the first other pixel goes through the body
        for (let j = sr + x, t = r + x, cr = src[j + 1]!; mark[t] === 0; j--, t--) {
          const c = src[j]!;
          if (c === 0 || c < minR || (cr !== 0 && c - cr > edge) || !(c - occluder > edge)) break;
          out[t] = 0;
          x--;
          if (--shadow === 0 || x < 0) break;
          cr = c;
        }
        if (x < 0) break;
        // the shadow ended: back to the jump to the next pixel to visit, from this one
        if (shadow === 0) {
          x++;
          continue;
        }
      }
      const og = og0 + w - 1 - x;
      const ou = ou0 + 2 * (w - 1 - x);
      const i = r + x;
      const si = sr + x;
      const R = src[si + 1]!;
      const L = src[si - 1]!;
      let d = src[si]!;
      const m = mark[i]!;
      if (m !== 0) mark[i] = 0;
      if (d === 0 || d < minR) {
        out[i] = 0;
        shadow = 0;
        continue;
      }
      const U = src[si - pw]!;
      const D = src[si + pw]!;
      // the common case, a smooth surface: every neighbour within `lim` (so none is 0 as d > lim),
      // nothing marked, no shadow running: noise only (no branches on the four tests)
      if (
        (m | shadow) === 0 &&
        d > lim &&
        (((R - d + lim) >>> 0 <= lim2 ? 1 : 0) &
          ((L - d + lim) >>> 0 <= lim2 ? 1 : 0) &
          ((U - d + lim) >>> 0 <= lim2 ? 1 : 0) &
          ((D - d + lim) >>> 0 <= lim2 ? 1 : 0)) ===
          1
      ) {
        if (u[ou + 1]! < dropU) {
          out[i] = 0;
          continue;
        }
        const v = d + (a + b * d * d) * g[og]!;
        // quantise() inlined for the 1 mm default: its q ≠ 1 branch, never taken, left the
        // result's type open (a float clamp and store per pixel)
        if (q1) {
          const qv = (v + 0.5) | 0;
          out[i] = qv < 1 ? 1 : Math.min(qv, 65535);
        } else out[i] = quantise(v, q);
        continue;
      }
      const rStep = R !== 0 && d - R > edge;
      let hole = rStep || (L !== 0 && d - L > edge) || (U !== 0 && d - U > edge) || (D !== 0 && d - D > edge);
      if (rStep) {
        // the right imager cannot see this far stretch behind the near object's left edge
        shadow = Math.round(fB / R - fB / d) - 1;
        occluder = R;
      } else if (shadow > 0) {
        if (d - occluder > edge) {
          hole = true;
          shadow--;
        } else shadow = 0;
      }
      let isThin = m !== 0;
      let behind = isThin ? bg[i]! : 0;
      if (!hole && T > 0) {
        // a thin run starts here (seen from the right, or from above): its far side within T px
        if (!isThin && (R === 0 || R - d > thin)) {
          for (let k = 1; k <= T; k++) {
            const v = src[si - k]!;
            if (v === 0 || v - d > thin) {
              isThin = true;
              behind = R === 0 ? v : v === 0 ? R : Math.min(v, R);
              for (let j = 1; j < k; j++) {
                mark[i - j] = 1;
                bg[i - j] = behind;
                if (visit) visit[vr + ((x - j) >> 5)]! |= 1 << ((x - j) & 31);
              }
              break;
            }
            if (d - v > thin) break;
          }
        }
        if (U === 0 || U - d > thin) {
          for (let k = 1; k <= T; k++) {
            const v = src[si + k * pw]!;
            if (v === 0 || v - d > thin) {
              const bv = U === 0 ? v : v === 0 ? U : Math.min(v, U);
              if (!isThin) {
                isThin = true;
                behind = bv;
              }
              for (let j = 1; j < k; j++) {
                const t = i + j * w;
                if (mark[t] === 0) {
                  mark[t] = 1;
                  bg[t] = bv;
                  if (visit) visit[(y + j) * visitStride + (x >> 5)]! |= 1 << (x & 31);
                }
              }
              break;
            }
            if (d - v > thin) break;
          }
        }
      }
      if (!hole && isThin) {
        const t = u[ou]!;
        if (t < holeU) hole = true;
        else if (t < bgU) {
          if (behind === 0) hole = true;
          else d = behind;
        }
      }
      if (hole || u[ou + 1]! < dropU) {
        out[i] = 0;
        continue;
      }
      out[i] = quantise(d + (a + b * d * d) * g[og]!, q);
    }
  }
}

/** round half up by truncation (Math.round costs 5× here) to the step q; v < 0.5 clamps to 1 mm */
function quantise(v: number, q: number): number {
  const qv = q === 1 ? (v + 0.5) | 0 : ((v / q + 0.5) | 0) * q;
  return qv < 1 ? 1 : Math.min(qv, 65535);
}
