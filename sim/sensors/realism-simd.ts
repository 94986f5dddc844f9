/**
 * WebAssembly kernels of the sensor realism pass (sim/sensors/realism.ts), same output bytes as
 * its JS path (realism.test.ts compares the two on random images and parameter sets):
 *
 * - `depth`: the smooth-pixel part of the depth pass, 8 pixels per SIMD step: for every pixel of
 *   a full 8-pixel group it writes the noisy, quantised depth of the smooth-surface path (or 0:
 *   below the minimum range, random dropout) and one bit "not smooth" per pixel, which the JS
 *   pass then visits with the whole per-pixel model (edges, occlusion shadow, thin runs). The
 *   arithmetic is the JS path's, the same IEEE double operations in the same order (wasm has no
 *   fused multiply-add).
 * - `rgb`: the RGB LUT pass, LUT indices built 8 at a time, scalar lookups.
 *
 * The module is emitted below from its instruction list (no toolchain, no binary in the repo).
 * Opcodes: WebAssembly core spec §5.4 (binary format, instructions), SIMD prefix 0xFD.
 */

import {
  f64c,
  I32,
  i32c,
  inc,
  lget,
  lset,
  PAGE,
  shuffle,
  simd,
  uleb,
  V128,
  vload,
  vmem,
  vstore,
  F64,
  align16,
  wasm,
  type KernelFn,
  type WasmApi,
  type WasmMemory,
  type WasmModule,
  funcType,
  kernelModule,
  namedLocals,
  OP,
  PAD_U16_PARAMS,
  padU16Body,
  S,
} from "../render/wasm.ts";

/** the Gaussian, uniform and RGB noise tables of realism.ts (doubled: length 2 · tableSize) */
export interface KernelTables {
  gauss: Float32Array;
  uniform16: Uint16Array;
  noiseBytes: Uint8Array;
  tableSize: number;
}

/** the per-frame integer thresholds and float coefficients the kernel tests and computes with */
export interface KernelParams {
  /** smooth needs d > limFloor */
  limFloor: number;
  /** smooth needs −kLoNeg ≤ neighbour − d ≤ kHi for all four neighbours */
  kHi: number;
  kLoNeg: number;
  /** d ≤ thrMin: no return (0 or below the minimum range) */
  thrMin: number;
  /** random dropout: uniform draw ≤ dropLe, when dropAny */
  dropLe: number;
  dropAny: boolean;
  /** σ(d) = a + b · d² (mm) */
  a: number;
  b: number;
}

/** the low 32 bits of each 64-bit lane of a, then of b */
const LOW_WORDS = [0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27];
/** 1.5 · 2⁵²: an integer n (|n| < 2⁵¹) plus this is exact, and n is its low 32 bits */
const MAGIC = 6755399441055744;

// parameters of `depth`, then its locals, by index
const P = {
  w: 0,
  h: 1,
  pwBytes: 2,
  srcRow0: 3,
  outOff: 4,
  flagOff: 5,
  flagStride: 6,
  rowsOff: 7,
  limFloor: 8,
  kHi: 9,
  kLoNeg: 10,
  thrMin: 11,
  dropLe: 12,
  dropAny: 13,
  a: 14,
  b: 15,
} as const;
const I32_LOCALS = ["y", "x", "sp", "op", "fp", "gp", "up", "rp"] as const;
const V128_LOCALS = [
  "vLim",
  "vKHi",
  "vKLo",
  "vThr",
  "vDropLe",
  "vDropAny",
  "vA",
  "vB",
  "vHalf",
  "vOne",
  "vMagic",
  "c",
  "n",
  "stepUp",
  "stepDown",
  "smooth",
  "below",
  "zero",
  "dd",
  "lo",
] as const;
const { L, decl } = namedLocals(P, [
  [I32, I32_LOCALS],
  [V128, V128_LOCALS],
]);

/** pixels 2·pair, 2·pair + 1: d + (a + b·d·d)·g + 0.5, floored, + 1.5·2⁵² (the integer in the low 32 bits) */
function noisePair(pair: number, withBase: boolean): number[] {
  return [
    ...lget(L.sp),
    ...vmem(S.load16x4U, 4 * pair),
    ...simd(S.f64x2ConvertLowI32x4S),
    ...lset(L.dd),
    ...lget(L.dd),
    ...lget(L.vB),
    ...lget(L.dd),
    ...simd(S.f64x2Mul),
    ...lget(L.dd),
    ...simd(S.f64x2Mul),
    // a + σ: without a base term (the default, a = 0) the add is left out: 0 + x is x
    ...(withBase ? [...lget(L.vA), ...simd(S.f64x2Add)] : []),
    ...lget(L.gp),
    ...vmem(S.load64Splat, 8 * pair),
    ...simd(S.f64x2PromoteLowF32x4),
    ...simd(S.f64x2Mul),
    ...simd(S.f64x2Add),
    ...lget(L.vHalf),
    ...simd(S.f64x2Add),
    ...simd(S.f64x2Floor),
    ...lget(L.vMagic),
    ...simd(S.f64x2Add),
  ];
}

/** four pixels from 4·quad on, as i32x4 (the low words of two noisePair results) */
function noiseQuad(quad: number, withBase: boolean): number[] {
  return [...noisePair(2 * quad, withBase), ...noisePair(2 * quad + 1, withBase), ...shuffle(LOW_WORDS)];
}

function splat16(param: number, into: number): number[] {
  return [...lget(param), ...simd(S.i16x8Splat), ...lset(into)];
}

/** the body of `depth`: rows y = 0 … h−1, groups x = 0, 8, … while x + 8 ≤ w */
function depthBody(withBase: boolean): number[] {
  // the largest step up and the largest step down to a neighbour (saturating differences)
  const neighbour = (addr: number[], offset: number, first: boolean) => [
    ...addr,
    ...vload(offset),
    ...lset(L.n),
    ...lget(L.n),
    ...lget(L.c),
    ...simd(S.i16x8SubSatU),
    ...(first ? [] : [...lget(L.stepUp), ...simd(S.i16x8MaxU)]),
    ...lset(L.stepUp),
    ...lget(L.c),
    ...lget(L.n),
    ...simd(S.i16x8SubSatU),
    ...(first ? [] : [...lget(L.stepDown), ...simd(S.i16x8MaxU)]),
    ...lset(L.stepDown),
  ];
  const pixels = [
    ...lget(L.sp),
    ...vload(0),
    ...lset(L.c),
    ...neighbour([...lget(L.sp), ...i32c(2), OP.i32Sub], 0, true),
    ...neighbour(lget(L.sp), 2, false),
    ...neighbour([...lget(L.sp), ...lget(P.pwBytes), OP.i32Sub], 0, false),
    ...neighbour([...lget(L.sp), ...lget(P.pwBytes), OP.i32Add], 0, false),
    // smooth: d > lim and every neighbour within the step
    ...lget(L.c),
    ...lget(L.vLim),
    ...simd(S.i16x8GtU),
    ...lget(L.stepUp),
    ...lget(L.vKHi),
    ...simd(S.i16x8LeU),
    ...simd(S.and),
    ...lget(L.stepDown),
    ...lget(L.vKLo),
    ...simd(S.i16x8LeU),
    ...simd(S.and),
    ...lset(L.smooth),
    ...lget(L.c),
    ...lget(L.vThr),
    ...simd(S.i16x8LeU),
    ...lset(L.below),
    // the "visit" bits: neither smooth nor without return
    ...lget(L.fp),
    ...lget(L.smooth),
    ...lget(L.below),
    ...simd(S.or),
    ...simd(S.not),
    ...simd(S.i16x8Bitmask),
    OP.i32Store8,
    0,
    0,
    // a group with no return at all (background, below the minimum range): zeros, no noise
    ...lget(L.below),
    ...simd(S.i16x8AllTrue),
    OP.if,
    OP.void,
    ...lget(L.op),
    ...simd(S.const),
    ...new Array(16).fill(0),
    ...vstore(0),
    OP.else,
    // zero: random dropout or no return
    ...lget(L.up),
    ...vload(0),
    ...lget(L.vDropLe),
    ...simd(S.i16x8LeU),
    ...lget(L.vDropAny),
    ...simd(S.and),
    ...lget(L.below),
    ...simd(S.or),
    ...lset(L.zero),
    ...noiseQuad(0, withBase),
    ...lset(L.lo),
    // saturate to 0…65535, at least 1 mm, 0 where zero
    ...lget(L.op),
    ...lget(L.lo),
    ...noiseQuad(1, withBase),
    ...simd(S.i16x8NarrowI32x4U),
    ...lget(L.vOne),
    ...simd(S.i16x8MaxU),
    ...lget(L.zero),
    ...simd(S.andnot),
    ...vstore(0),
    OP.end,
  ];
  const row = [
    ...lget(P.srcRow0),
    ...lget(L.y),
    ...lget(P.pwBytes),
    OP.i32Mul,
    OP.i32Add,
    ...lset(L.sp),
    ...lget(P.outOff),
    ...lget(L.y),
    ...lget(P.w),
    OP.i32Mul,
    ...i32c(1),
    OP.i32Shl,
    OP.i32Add,
    ...lset(L.op),
    ...lget(P.flagOff),
    ...lget(L.y),
    ...lget(P.flagStride),
    OP.i32Mul,
    OP.i32Add,
    ...lset(L.fp),
    ...lget(P.rowsOff),
    ...lget(L.y),
    ...i32c(3),
    OP.i32Shl,
    OP.i32Add,
    ...lset(L.rp),
    ...lget(L.rp),
    OP.i32Load,
    2,
    0,
    ...lset(L.gp),
    ...lget(L.rp),
    OP.i32Load,
    2,
    4,
    ...lset(L.up),
    ...i32c(0),
    ...lset(L.x),
    OP.block,
    OP.void,
    OP.loop,
    OP.void,
    ...lget(L.x),
    ...i32c(8),
    OP.i32Add,
    ...lget(P.w),
    OP.i32GtU,
    OP.brIf,
    1,
    ...pixels,
    ...inc(L.sp, 16),
    ...inc(L.op, 16),
    ...inc(L.gp, 32),
    ...inc(L.up, 16),
    ...inc(L.fp, 1),
    ...inc(L.x, 8),
    OP.br,
    0,
    OP.end,
    OP.end,
  ];
  return [
    ...splat16(P.limFloor, L.vLim),
    ...splat16(P.kHi, L.vKHi),
    ...splat16(P.kLoNeg, L.vKLo),
    ...splat16(P.thrMin, L.vThr),
    ...splat16(P.dropLe, L.vDropLe),
    ...splat16(P.dropAny, L.vDropAny),
    ...lget(P.a),
    ...simd(S.f64x2Splat),
    ...lset(L.vA),
    ...lget(P.b),
    ...simd(S.f64x2Splat),
    ...lset(L.vB),
    ...f64c(0.5),
    ...simd(S.f64x2Splat),
    ...lset(L.vHalf),
    ...f64c(MAGIC),
    ...simd(S.f64x2Splat),
    ...lset(L.vMagic),
    ...i32c(1),
    ...simd(S.i16x8Splat),
    ...lset(L.vOne),
    ...i32c(0),
    ...lset(L.y),
    OP.block,
    OP.void,
    OP.loop,
    OP.void,
    ...lget(L.y),
    ...lget(P.h),
    OP.i32GeU,
    OP.brIf,
    1,
    ...row,
    ...inc(L.y, 1),
    OP.br,
    0,
    OP.end,
    OP.end,
    OP.end,
  ];
}

/** the table size of realism.ts the fixed memory layout below is built for */
export const KERNEL_TABLE_SIZE = 1 << 16;
/**
 * Fixed memory layout (bytes): the Gaussian table reversed (f32), the uniform table reversed and
 * split into even and odd entries (u16), the RGB noise bytes (doubled, as in realism.ts), the RGB
 * LUT of the frame (3 × 64 K), then the per-frame areas.
 */
const MEM = (() => {
  const T = KERNEL_TABLE_SIZE;
  const gauss = 0;
  const ue = gauss + 4 * 2 * T;
  const uo = ue + 2 * T;
  const noise = uo + 2 * T;
  const lut = noise + 2 * T;
  return { gauss, ue, uo, noise, lut, frame: lut + 3 * 65536 };
})();

/** bytes 0–7 of a (noise) and b (pixels) interleaved: u16 lane l = pixel byte l · 256 + noise byte l */
const INTERLEAVE_LO = [0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23];
const INTERLEAVE_HI = [8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31];

/**
 * `rgb(pp, np, rounds)`: RGB bytes in place at pp, 48 per round (channels 0 1 2 repeating from
 * pp), noise bytes from np: byte q = LUT[channel · 64 K + value · 256 + noise] as in realism.ts's
 * rgbBytes. The LUT indices are built 8 at a time (a byte interleave of noise and pixel bytes);
 * the lookups themselves are scalar (WebAssembly has no gather).
 */
function rgbBody(): number[] {
  const pp = 0;
  const np = 1;
  const rounds = 2;
  const [pv, nv, lo, hi] = [3, 4, 5, 6];
  const lookups = (v: number, idx: number, first: number) =>
    Array.from({ length: 8 }, (_, l) => {
      const q = 16 * v + first + l;
      return [
        ...lget(pp),
        ...lget(idx),
        ...simd(0x19), // i16x8.extract_lane_u
        l,
        0x2d, // i32.load8_u
        0,
        ...uleb(MEM.lut + (q % 3) * 65536),
        OP.i32Store8,
        0,
        ...uleb(q),
      ];
    }).flat();
  const round = [0, 1, 2].flatMap((v) => [
    ...lget(pp),
    ...vload(16 * v),
    ...lset(pv),
    ...lget(np),
    ...vload(16 * v),
    ...lset(nv),
    ...lget(nv),
    ...lget(pv),
    ...shuffle(INTERLEAVE_LO),
    ...lset(lo),
    ...lget(nv),
    ...lget(pv),
    ...shuffle(INTERLEAVE_HI),
    ...lset(hi),
    ...lookups(v, lo, 0),
    ...lookups(v, hi, 8),
  ]);
  return [
    OP.block,
    OP.void,
    OP.loop,
    OP.void,
    ...lget(rounds),
    0x45, // i32.eqz
    OP.brIf,
    1,
    ...round,
    ...inc(pp, 48),
    ...inc(np, 48),
    ...inc(rounds, -1),
    OP.br,
    0,
    OP.end,
    OP.end,
    OP.end,
  ];
}

/**
 * The module: memory 0 exported as "mem"; `depth` (σ = a + b·d²) and `depthNoBase` (a = 0: the
 * add of a left out, 0 + x being x, so the same bytes one operation cheaper), same parameters;
 * `rgb` (three i32).
 */
export function kernelModuleBytes(): Uint8Array {
  const depthType = funcType([...Array(14).fill(I32), F64, F64], []);
  const rgbType = funcType([I32, I32, I32], []);
  const padType = funcType(PAD_U16_PARAMS, []);
  return kernelModule(
    [depthType, rgbType, padType],
    [
      { name: "depth", type: 0, body: [...decl, ...depthBody(true)] },
      { name: "depthNoBase", type: 0, body: [...decl, ...depthBody(false)] },
      { name: "rgb", type: 1, body: [...uleb(1), ...uleb(4), V128, ...rgbBody()] },
      { name: "pad", type: 2, body: padU16Body() },
    ],
  );
}

/**
 * The compiled kernel, its memory and the views the JS pass uses. The memory holds the Gaussian
 * table reversed (a row is scanned right to left, the kernel reads left to right), the uniform
 * table reversed and split into even and odd entries (the dropout draw of a pixel is every second
 * entry), then per frame: per-row table addresses, the padded clean depth, the output, the bits.
 */
export class RealismKernel {
  private readonly memory: WasmMemory;
  private readonly fn: KernelFn;
  private readonly fnNoBase: KernelFn;
  private readonly rgbFn: KernelFn;
  private readonly padFn: KernelFn;
  readonly gOffset = MEM.gauss;
  readonly ueOffset = MEM.ue;
  readonly uoOffset = MEM.uo;
  readonly noiseOffset = MEM.noise;
  private readonly rowsOffset = MEM.frame;
  /** the LUT of the frame (copied in when another one is used) */
  private lut: Uint8Array;
  private lutIn: Uint8Array | null = null;
  /** the RGB bytes of the frame */
  rgb = new Uint8Array(0);
  rgbOffset = 0;
  private key = "";
  src = new Uint16Array(0);
  out = new Uint16Array(0);
  /** the "visit" bits, 32 pixels per word (little-endian: pixel x of a row is bit x mod 32 of word x / 32) */
  visit = new Int32Array(0);
  rows = new Int32Array(0);
  flagStride = 0;
  private srcOffset = 0;
  private outOffset = 0;
  private flagOffset = 0;
  readonly tableSize: number;

  constructor(module: WasmModule, tables: KernelTables) {
    const inst = new (wasm as WasmApi).Instance(module, {});
    this.memory = inst.exports.mem as WasmMemory;
    this.fn = inst.exports.depth as KernelFn;
    this.fnNoBase = inst.exports.depthNoBase as KernelFn;
    this.rgbFn = inst.exports.rgb as KernelFn;
    this.padFn = inst.exports.pad as KernelFn;
    const T = tables.tableSize;
    if (T !== KERNEL_TABLE_SIZE)
      throw new Error(`the kernel's layout is built for tables of ${KERNEL_TABLE_SIZE}, not ${T}`);
    this.tableSize = T;
    this.reserve(this.rowsOffset);
    const buf = this.memory.buffer;
    new Uint8Array(buf, this.noiseOffset, 2 * T).set(tables.noiseBytes);
    this.lut = new Uint8Array(buf, MEM.lut, 3 * 65536);
    const g = new Float32Array(buf, this.gOffset, 2 * T);
    for (let j = 0; j < 2 * T; j++) g[j] = tables.gauss[2 * T - 1 - j]!;
    const ue = new Uint16Array(buf, this.ueOffset, T);
    const uo = new Uint16Array(buf, this.uoOffset, T);
    for (let j = 0; j < T; j++) {
      ue[j] = tables.uniform16[2 * T - 1 - 2 * j]!;
      uo[j] = tables.uniform16[2 * T - 2 - 2 * j]!;
    }
  }

  private reserve(bytes: number): void {
    const have = this.memory.buffer.byteLength;
    if (bytes > have) this.memory.grow(Math.ceil((bytes - have) / PAGE));
  }

  /** size the per-frame areas for a w × h image with `pad` border pixels (views change only then) */
  layout(w: number, h: number, pad: number): void {
    const key = `${w}x${h}+${pad}`;
    if (key === this.key) return;
    const pw = w + 2 * pad;
    const padded = pw * (h + 2 * pad);
    this.flagStride = (((w + 7) >> 3) + 3) & ~3;
    this.srcOffset = align16(this.rowsOffset + 8 * h);
    this.outOffset = align16(this.srcOffset + 2 * padded);
    this.flagOffset = align16(this.outOffset + 2 * w * h);
    this.rgbOffset = align16(this.flagOffset + this.flagStride * h);
    this.reserve(this.rgbOffset + 3 * w * h);
    const buf = this.memory.buffer;
    this.rgb = new Uint8Array(buf, this.rgbOffset, 3 * w * h);
    this.lut = new Uint8Array(buf, MEM.lut, 3 * 65536);
    this.rows = new Int32Array(buf, this.rowsOffset, 2 * h);
    this.src = new Uint16Array(buf, this.srcOffset, padded);
    this.out = new Uint16Array(buf, this.outOffset, w * h);
    this.visit = new Int32Array(buf, this.flagOffset, (this.flagStride * h) >> 2);
    this.key = key;
  }

  /** the clean depth image into `src` with its border of `pad` pixels (staged through `out`) */
  padFrom(depth: Uint16Array, w: number, h: number, pad: number): void {
    this.out.set(depth);
    this.padFn(this.outOffset, this.srcOffset, w, h, pad, 0, h);
  }

  /** use this LUT for the next rgb() calls */
  useLut(lut: Uint8Array): void {
    if (lut === this.lutIn) return;
    this.lut.set(lut);
    this.lutIn = lut;
  }

  /** RGB bytes [start, start + 48 · rounds) of the frame, noise bytes from noise-table index j on */
  rgbRounds(start: number, j: number, rounds: number): void {
    this.rgbFn(this.rgbOffset + start, this.noiseOffset + j, rounds);
  }

  /** run the kernel over the laid-out frame (`rows` filled: Gaussian and uniform byte addresses per row) */
  run(w: number, h: number, pad: number, k: KernelParams): void {
    const pw = w + 2 * pad;
    (k.a === 0 ? this.fnNoBase : this.fn)(
      w,
      h,
      2 * pw,
      this.srcOffset + 2 * (pad * pw + pad),
      this.outOffset,
      this.flagOffset,
      this.flagStride,
      this.rowsOffset,
      k.limFloor,
      k.kHi,
      k.kLoNeg,
      k.thrMin,
      k.dropLe,
      k.dropAny ? -1 : 0,
      k.a,
      k.b,
    );
  }
}

let compiled: WasmModule | null | undefined;

/** the kernel over these tables, or null where WebAssembly SIMD is not available */
export function createRealismKernel(tables: KernelTables): RealismKernel | null {
  if (compiled === undefined) {
    const bytes = kernelModuleBytes();
    compiled = wasm?.validate(bytes) ? new wasm.Module(bytes) : null;
  }
  return compiled ? new RealismKernel(compiled, tables) : null;
}
