/**
 * WebAssembly SIMD kernels of motion blur's colour gather (motion-blur.ts rgbPass) and depth
 * sweep (depthHoles), the same bytes and holes as their JS paths (motion-blur.test.ts compares
 * them): a tile (8 px wide) is one 8-lane step per row — the tile's samples are the same pixel
 * offsets for every pixel, so a row's 8 pixels' samples are 8 contiguous source pixels. Every
 * per-pixel quantity is 16 bits wide (i16x8 lanes): depth (mm, 0 read as 65535), reach
 * (MotionTiles.reach) and the thresholds; the colour comes from three planes of the source (R, G,
 * B bytes, split from the frame by `planes`), sums and the own-colour count in u16. Per sample
 * the JS path's tests — behind (depth > own + 10 mm): q's own reach ≥ the threshold, else the
 * sample's — as lane masks; the result round(sum / N) (half up; N odd, so never a tie) as
 * (2·sum + N) · ⌈2¹⁸ / 2N⌉ >> 18, exact for sums up to 255 · N (roundMagic, tested). The JS side
 * writes one record per tile (x, y, N, the sample offsets and thresholds) and calls a kernel once
 * per pass; tiles whose samples leave the image, or narrower than 8 px, stay in JS.
 * Emitted below from its instruction list (no toolchain, no binary in the repo); opcodes:
 * WebAssembly core spec §5.4, SIMD prefix 0xFD.
 */
import {
  I32,
  i32c,
  inc,
  PAGE,
  shuffle,
  simd,
  uleb,
  V128,
  vmem,
  type WasmApi,
  type WasmMemory,
  type WasmModule,
  wasm,
  LITTLE_ENDIAN,
  align16,
  loopWhile,
  funcType,
  kernelModule,
  mem,
  namedLocals,
  OP,
  S,
} from "../render/wasm.ts";

/** samples per pixel at most (motion-blur.ts MAX_SAMPLES) */
const MAX_SAMPLES = 9;
/**
 * A tile's record, i32 words: [0] its first pixel (y0 · w + x0), [1] N, [2] the reach up to which
 * a threshold counts untested ("sure"; −1: none), [3] its rows, [4] roundMagic(N), [5] the number
 * of samples tested (threshold above sure), then the N sample offsets (pixel index steps) from
 * REC_PO and their thresholds from REC_T.
 */
export const REC_WORDS = 32;
export const REC_PO = 8;
export const REC_T = REC_PO + MAX_SAMPLES;
const REC_SHIFT = 7; // log2(4 · REC_WORDS)

/** ⌈2¹⁸ / 2N⌉: floor((2s + N) · this / 2¹⁸) = round(s / N) for 0 ≤ s ≤ 255 · N (N odd ≤ 9) */
export const roundMagic = (ns: number) => Math.ceil(2 ** 18 / (2 * ns));

const lane = (op: number, align: number, offset: number, l: number) => [
  ...simd(op),
  align,
  ...uleb(offset),
  l,
];
const v128c = (bytes: number[]) => [...simd(S.const), ...bytes];
const ZERO = v128c(Array(16).fill(0));
const i16x8c = (a: number) => v128c([...new Uint8Array(new Uint16Array(8).fill(a).buffer)]);

// `gather(r, g, b, out, z, reach, recs, count, w)`
const P = { r: 0, g: 1, b: 2, out: 3, z: 4, reach: 5, recs: 6, count: 7, w: 8 } as const;
const NP = 9;
const I32_LOCALS = ["t", "rec", "q", "y", "k", "p", "ns", "rows", "sure", "tk", "pk"] as const;
const V128_LOCALS = [
  "ZQB",
  "RQ",
  "SR",
  "SG",
  "SB",
  "OWN",
  "CR",
  "CG",
  "CB",
  "CNT",
  "ZP",
  "MAG",
  "NV",
  "NT",
  "X",
  "RG",
] as const;
const { L, g, st, p, decl } = namedLocals(P, [
  [I32, I32_LOCALS],
  [V128, V128_LOCALS],
]);

/** base + index · 2^shift (i32) */
const addr = (base: number[], index: number[], shift: number) => [
  ...base,
  ...index,
  ...(shift > 0 ? [...i32c(shift), OP.i32Shl] : []),
  OP.i32Add,
];
/**
 * The record's fields into locals (`t`-th record): rec, q, ns, rows; `sure` and `magic` for the
 * gather only
 */
const readRecord = (gl: typeof g, sl: typeof st, recs: number[], withGather: boolean) => [
  ...recs,
  ...gl("t"),
  ...i32c(REC_SHIFT),
  OP.i32Shl,
  OP.i32Add,
  ...sl("rec"),
  ...gl("rec"),
  ...mem(OP.i32Load, 2, 0),
  ...sl("q"),
  ...gl("rec"),
  ...mem(OP.i32Load, 2, 4),
  ...sl("ns"),
  ...gl("rec"),
  ...mem(OP.i32Load, 2, 12),
  ...sl("rows"),
  ...(withGather ? [...gl("rec"), ...mem(OP.i32Load, 2, 8), ...sl("sure")] : []),
];
/** the k-th sample's pixel (q + offset) into `p`, its threshold into `tk` */
const readSample = (gl: typeof g, sl: typeof st) => [
  ...gl("q"),
  ...gl("rec"),
  ...gl("k"),
  ...i32c(2),
  OP.i32Shl,
  OP.i32Add,
  ...sl("pk"),
  ...gl("pk"),
  ...mem(OP.i32Load, 2, 4 * REC_PO),
  OP.i32Add,
  ...sl("p"),
  ...gl("pk"),
  ...mem(OP.i32Load, 2, 4 * REC_T),
  ...sl("tk"),
];
/** 8 depths (u16) loaded from `at` into local `v` (get / set by `gl`, `sl`), 0 read as 65535: v | (v == 0) */
const depthInto = (gl: typeof g, sl: typeof st, at: number[], v: string) => [
  ...at,
  ...vmem(S.load, 0),
  ...sl(v),
  ...gl(v),
  ...gl(v),
  ...ZERO,
  ...simd(S.i16x8Eq),
  ...simd(S.or),
  ...sl(v),
];

function gatherBody(): number[] {
  const plane = (c: "r" | "g" | "b", index: string) => [
    ...p(c),
    ...g(index),
    OP.i32Add,
    ...vmem(S.load8x8U, 0),
  ];
  const add = (sum: string, v: number[]) => [...g(sum), ...v, ...simd(S.i16x8Add), ...st(sum)];
  const sample = [
    ...readSample(g, st),
    ...plane("r", "p"),
    ...st("CR"),
    ...plane("g", "p"),
    ...st("CG"),
    ...plane("b", "p"),
    ...st("CB"),
    // within the tile's guarantee (or a plain box average) it counts; else the tests
    ...g("tk"),
    ...g("sure"),
    OP.i32LeS,
    OP.if,
    OP.void,
    ...add("SR", g("CR")),
    ...add("SG", g("CG")),
    ...add("SB", g("CB")),
    OP.else,
    ...depthInto(g, st, addr(p("z"), g("p"), 1), "ZP"),
    // behind q (farther by more than 10 mm): q's reach; else the sample's own
    ...g("RQ"),
    ...addr(p("reach"), g("p"), 1),
    ...vmem(S.load, 0),
    ...g("ZP"),
    ...g("ZQB"),
    ...simd(S.i16x8GtU),
    ...simd(S.bitselect),
    ...g("tk"),
    ...simd(S.i16x8Splat),
    ...simd(S.i16x8GeU),
    ...st("CNT"),
    ...add("SR", [...g("CR"), ...g("CNT"), ...simd(S.and)]),
    ...add("SG", [...g("CG"), ...g("CNT"), ...simd(S.and)]),
    ...add("SB", [...g("CB"), ...g("CNT"), ...simd(S.and)]),
    // the samples that count (CNT is −1 where it does); own colour for the others
    ...g("OWN"),
    ...g("CNT"),
    ...simd(S.i16x8Sub),
    ...st("OWN"),
    OP.end,
    ...inc(L.k!, 1),
  ];
  /** round((sum + own · own colour) / N) of one channel's 8 pixels, as u16 lanes */
  const result = (sum: string, c: "r" | "g" | "b") => [
    ...g(sum),
    ...g("OWN"),
    ...plane(c, "q"),
    ...simd(S.i16x8Mul),
    ...simd(S.i16x8Add),
    ...st("X"),
    ...g("X"),
    ...g("X"),
    ...simd(S.i16x8Add),
    ...g("NV"),
    ...simd(S.i16x8Add),
    ...st("X"),
    ...g("X"),
    ...g("MAG"),
    ...simd(S.i32x4ExtmulLowI16x8U),
    ...i32c(18),
    ...simd(S.i32x4ShrU),
    ...g("X"),
    ...g("MAG"),
    ...simd(S.i32x4ExtmulHighI16x8U),
    ...i32c(18),
    ...simd(S.i32x4ShrU),
    ...simd(S.i16x8NarrowI32x4U),
  ];
  const row = [
    ...depthInto(g, st, addr(p("z"), g("q"), 1), "X"),
    ...g("X"),
    ...i16x8c(10),
    ...simd(S.i16x8AddSatU),
    ...st("ZQB"),
    ...addr(p("reach"), g("q"), 1),
    ...vmem(S.load, 0),
    ...st("RQ"),
    ...ZERO,
    ...st("SR"),
    ...ZERO,
    ...st("SG"),
    ...ZERO,
    ...st("SB"),
    ...ZERO,
    ...st("OWN"),
    ...i32c(0),
    ...st("k"),
    ...loopWhile([...g("k"), ...g("ns"), OP.i32GeS], sample),
    // own = the tested samples that did not count: N − the untested ones − the ones that counted
    ...g("NT"),
    ...g("OWN"),
    ...simd(S.i16x8Sub),
    ...st("OWN"),
    // the three channels' bytes, interleaved back to RGB: 16 bytes, then 8
    ...result("SR", "r"),
    ...result("SG", "g"),
    ...simd(S.i8x16NarrowI16x8U),
    ...st("RG"),
    ...result("SB", "b"),
    ...st("X"),
    ...g("X"),
    ...g("X"),
    ...simd(S.i8x16NarrowI16x8U),
    ...st("CB"),
    ...p("out"),
    ...g("q"),
    ...i32c(3),
    OP.i32Mul,
    OP.i32Add,
    ...st("pk"),
    ...g("pk"),
    ...g("RG"),
    ...g("CB"),
    ...shuffle([0, 8, 16, 1, 9, 17, 2, 10, 18, 3, 11, 19, 4, 12, 20, 5]),
    ...vmem(S.store, 0),
    ...g("pk"),
    ...g("RG"),
    ...g("CB"),
    ...shuffle([13, 21, 6, 14, 22, 7, 15, 23, 0, 0, 0, 0, 0, 0, 0, 0]),
    ...lane(S.store64Lane, 0, 16, 0),
    ...g("q"),
    ...p("w"),
    OP.i32Add,
    ...st("q"),
    ...inc(L.y!, 1),
  ];
  const tile = [
    ...readRecord(g, st, p("recs"), true),
    ...g("rec"),
    ...mem(OP.i32Load, 2, 16),
    ...simd(S.i16x8Splat),
    ...st("MAG"),
    ...g("ns"),
    ...simd(S.i16x8Splat),
    ...st("NV"),
    ...g("rec"),
    ...mem(OP.i32Load, 2, 20),
    ...simd(S.i16x8Splat),
    ...st("NT"),
    ...i32c(0),
    ...st("y"),
    ...loopWhile([...g("y"), ...g("rows"), OP.i32GeS], row),
    ...inc(L.t!, 1),
  ];
  return [...loopWhile([...g("t"), ...p("count"), OP.i32GeS], tile), OP.end];
}

// `holes(z, reach, recs, count, w, edge, out)` → the holes written at out (i32 indices)
const H = { z: 0, reach: 1, recs: 2, count: 3, w: 4, edge: 5, out: 6 } as const;
const HNP = 7;
const H_I32 = ["t", "rec", "q", "y", "k", "p", "ns", "rows", "tk", "pk", "found", "bits"] as const;
const H_V128 = ["ZQ", "ZQE", "RQ", "HOLE", "ZP", "FAR", "EDGE"] as const;
const {
  L: HL,
  g: hg,
  st: hs,
  p: hp,
  decl: hdecl,
} = namedLocals(H, [
  [I32, H_I32],
  [V128, H_V128],
]);

/**
 * The depth sweep over the records (motion-blur.ts depthHoles): a pixel has no return when for
 * any sample the depth steps by more than the edge step and the farther surface's side moved over
 * it (farther sample: q's own reach ≥ the threshold; nearer: the sample's). The JS path stops at
 * the first such sample; whether one exists is the same.
 */
function holesBody(): number[] {
  const sample = [
    ...readSample(hg, hs),
    ...depthInto(hg, hs, addr(hp("z"), hg("p"), 1), "ZP"),
    // farther by more than the edge step, or nearer by more
    ...hg("ZP"),
    ...hg("ZQE"),
    ...simd(S.i16x8GtU),
    ...hs("FAR"),
    ...hg("HOLE"),
    ...hg("FAR"),
    ...hg("ZQ"),
    ...hg("ZP"),
    ...hg("EDGE"),
    ...simd(S.i16x8AddSatU),
    ...simd(S.i16x8GtU),
    ...simd(S.or),
    // farther: q's reach; nearer: the sample's
    ...hg("RQ"),
    ...addr(hp("reach"), hg("p"), 1),
    ...vmem(S.load, 0),
    ...hg("FAR"),
    ...simd(S.bitselect),
    ...hg("tk"),
    ...simd(S.i16x8Splat),
    ...simd(S.i16x8GeU),
    ...simd(S.and),
    ...simd(S.or),
    ...hs("HOLE"),
    ...inc(HL.k!, 1),
  ];
  /** lane l a hole: out[found++] = q + l */
  const emit = (l: number) => [
    ...hg("bits"),
    ...i32c(1 << l),
    OP.i32And,
    OP.if,
    OP.void,
    ...addr(hp("out"), hg("found"), 2),
    ...hg("q"),
    ...i32c(l),
    OP.i32Add,
    ...mem(OP.i32Store, 2),
    ...inc(HL.found!, 1),
    OP.end,
  ];
  const row = [
    ...depthInto(hg, hs, addr(hp("z"), hg("q"), 1), "ZQ"),
    ...hg("ZQ"),
    ...hg("EDGE"),
    ...simd(S.i16x8AddSatU),
    ...hs("ZQE"),
    ...addr(hp("reach"), hg("q"), 1),
    ...vmem(S.load, 0),
    ...hs("RQ"),
    ...ZERO,
    ...hs("HOLE"),
    ...i32c(0),
    ...hs("k"),
    ...loopWhile([...hg("k"), ...hg("ns"), OP.i32GeS], sample),
    ...hg("HOLE"),
    ...simd(S.i16x8Bitmask),
    ...hs("bits"),
    ...hg("bits"),
    OP.if,
    OP.void,
    ...[0, 1, 2, 3, 4, 5, 6, 7].flatMap(emit),
    OP.end,
    ...hg("q"),
    ...hp("w"),
    OP.i32Add,
    ...hs("q"),
    ...inc(HL.y!, 1),
  ];
  const tile = [
    ...readRecord(hg, hs, hp("recs"), false),
    ...i32c(0),
    ...hs("y"),
    ...loopWhile([...hg("y"), ...hg("rows"), OP.i32GeS], row),
    ...inc(HL.t!, 1),
  ];
  return [
    ...hp("edge"),
    ...simd(S.i16x8Splat),
    ...hs("EDGE"),
    ...loopWhile([...hg("t"), ...hp("count"), OP.i32GeS], tile),
    ...hg("found"),
    OP.end,
  ];
}

// `planes(out, r, g, b, i0, i1)`: pixels i0 … i1 − 1 of the RGB frame at out into three planes
// (16 a step: the last step may write up to 15 bytes past i1 into each plane's slack)
const D = { out: 0, r: 1, g: 2, b: 3, i0: 4, i1: 5 } as const;
const DNP = 6;
const {
  g: dg,
  st: ds,
  p: dp,
  decl: ddecl,
} = namedLocals(D, [
  [I32, ["i", "src"] as const],
  [V128, ["V0", "V1", "V2"] as const],
]);

function planesBody(): number[] {
  /** bytes of one channel: 16 of V0 ‖ V1 at `first`, then the rest from V2 at `second` */
  const channel = (dst: "r" | "g" | "b", first: number[], second: number[]) => [
    ...dp(dst),
    ...dg("i"),
    OP.i32Add,
    ...dg("V0"),
    ...dg("V1"),
    ...shuffle([...first, ...Array(16 - first.length).fill(0)]),
    ...dg("V2"),
    ...shuffle([...first.map((_, j) => j), ...second]),
    ...vmem(S.store, 0),
  ];
  const step = [
    ...dp("out"),
    ...dg("i"),
    ...i32c(3),
    OP.i32Mul,
    OP.i32Add,
    ...ds("src"),
    ...dg("src"),
    ...vmem(S.load, 0),
    ...ds("V0"),
    ...dg("src"),
    ...vmem(S.load, 16),
    ...ds("V1"),
    ...dg("src"),
    ...vmem(S.load, 32),
    ...ds("V2"),
    ...channel("r", [0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30], [17, 20, 23, 26, 29]),
    ...channel("g", [1, 4, 7, 10, 13, 16, 19, 22, 25, 28, 31], [18, 21, 24, 27, 30]),
    ...channel("b", [2, 5, 8, 11, 14, 17, 20, 23, 26, 29], [16, 19, 22, 25, 28, 31]),
    ...dg("i"),
    ...i32c(16),
    OP.i32Add,
    ...ds("i"),
  ];
  return [...dp("i0"), ...ds("i"), ...loopWhile([...dg("i"), ...dp("i1"), OP.i32GeS], step), OP.end];
}

export function gatherModuleBytes(): Uint8Array {
  return kernelModule(
    [
      funcType(Array(NP).fill(I32), []),
      funcType(Array(HNP).fill(I32), [I32]),
      funcType(Array(DNP).fill(I32), []),
    ],
    [
      { name: "gather", type: 0, body: [...decl, ...gatherBody()] },
      { name: "holes", type: 1, body: [...hdecl, ...holesBody()] },
      { name: "planes", type: 2, body: [...ddecl, ...planesBody()] },
    ],
  );
}

type Fn = (...args: number[]) => number;

/**
 * The gather kernel and its memory: the frame (the output, tiles written over it) and its three
 * colour planes (the source), the clean depth, the reach, the tile records and the holes found.
 * Sized per image size (views change only then).
 */
export class GatherKernel {
  private readonly memory: WasmMemory;
  private readonly gatherFn: Fn;
  private readonly holesFn: Fn;
  private readonly planesFn: Fn;
  private key = -1;
  out = new Uint8Array(0);
  z = new Uint16Array(0);
  reach = new Uint16Array(0);
  /** the tile records (REC_WORDS each) */
  recs = new Int32Array(0);
  /** the depth sweep's holes (pixel indices) */
  holes = new Int32Array(0);
  private off = { r: 0, g: 0, b: 0, out: 0, z: 0, reach: 0, recs: 0, holes: 0 };

  constructor(module: WasmModule) {
    const inst = new (wasm as WasmApi).Instance(module, {});
    this.memory = inst.exports.mem as WasmMemory;
    this.gatherFn = inst.exports.gather as Fn;
    this.holesFn = inst.exports.holes as Fn;
    this.planesFn = inst.exports.planes as Fn;
  }

  /** size the areas for images of n px in nt tiles */
  layout(n: number, nt: number): void {
    if (n === this.key && this.recs.length >= nt * REC_WORDS) return;
    let at = 0;
    const take = (bytes: number) => {
      const o = at;
      at = align16(at + bytes);
      return o;
    };
    // slack: planes' last 16-px step writes past the end, reads 48 bytes of the frame
    this.off = {
      r: take(n + 16),
      g: take(n + 16),
      b: take(n + 16),
      out: take(3 * n + 48),
      z: take(2 * n + 16),
      reach: take(2 * n + 16),
      recs: take(4 * REC_WORDS * nt),
      holes: take(4 * n),
    };
    const have = this.memory.buffer.byteLength;
    if (at > have) this.memory.grow(Math.ceil((at - have) / PAGE));
    const b = this.memory.buffer;
    const o = this.off;
    this.out = new Uint8Array(b, o.out, 3 * n);
    this.z = new Uint16Array(b, o.z, n);
    this.reach = new Uint16Array(b, o.reach, n);
    this.recs = new Int32Array(b, o.recs, REC_WORDS * nt);
    this.holes = new Int32Array(b, o.holes, n);
    this.key = n;
  }

  /** the colour planes of pixels i0 … i1 − 1 from `out` */
  planes(i0: number, i1: number): void {
    const o = this.off;
    this.planesFn(o.out, o.r, o.g, o.b, i0, i1);
  }

  /** the colour gather of the first `count` records (tiles 8 px wide) into `out` */
  gatherTiles(count: number, w: number): void {
    const o = this.off;
    this.gatherFn(o.r, o.g, o.b, o.out, o.z, o.reach, o.recs, count, w);
  }

  /** the depth sweep of the first `count` records: their holes into `holes`, returns their number */
  holesTiles(count: number, w: number, edge: number): number {
    const o = this.off;
    return this.holesFn(o.z, o.reach, o.recs, count, w, edge, o.holes);
  }
}

let compiled: WasmModule | null | undefined;

/** the gather kernel, or null where WebAssembly SIMD is not available */
export function createGatherKernel(): GatherKernel | null {
  if (!LITTLE_ENDIAN) return null;
  if (compiled === undefined) {
    const bytes = gatherModuleBytes();
    compiled = wasm?.validate(bytes) ? new wasm.Module(bytes) : null;
  }
  return compiled ? new GatherKernel(compiled) : null;
}
