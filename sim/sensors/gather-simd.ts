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
 * (2·sum + N) · ⌈2¹⁸ / 2N⌉ >> 18, exact for sums up to 255 · N (roundMagic, tested).
 * The per-tile set-up is in the module too (`classify`, `plan`, `zranges`: the JS path's
 * classify, samplesOf, leastIn and depth-range skip, the same doubles and roundings), one record
 * per tile (its pixel, N, the sample offsets and thresholds); the pixel kernels run over the
 * records, one call per pass. The images they read are padded by PAD px repeating the edge
 * pixels, so a sample outside the image reads the pixel the JS path clamps it to: every tile of a
 * frame whose width is a multiple of 8 px is the kernel's (other widths: the JS path).
 * Emitted below from its instruction list (no toolchain, no binary in the repo); opcodes:
 * WebAssembly core spec §5.4, SIMD prefix 0xFD.
 */
import {
  F64,
  f32c,
  f64c,
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
  memoryCopy,
  namedLocals,
  PAD_U16_PARAMS,
  padU16Body,
  OP,
  S,
} from "../render/wasm.ts";

/** samples per pixel at most (motion-blur.ts MAX_SAMPLES) */
const MAX_SAMPLES = 9;
/** the padded images' border, px: a sample reaches at most half the longest smear (32 px) from its pixel */
const PAD = 16;
/**
 * A tile's record, i32 words: [0] its first pixel ((y0 + PAD) · pw + x0 + PAD), [1] N, [2] the reach up to which
 * a threshold counts untested ("sure"; −1: none), [3] its rows, [4] roundMagic(N), [5] the number
 * of samples tested (threshold above sure), [6] its first pixel in the frame (y0 · w + x0; [0] is
 * in the padded images), then the N sample offsets (index steps in the padded images) from
 * REC_PO and their thresholds from REC_T.
 */
const REC_WORDS = 32;
const REC_PO = 8;
const REC_T = REC_PO + MAX_SAMPLES;
/** the record's words after the thresholds: the samples' reach in px (max |offset|), the tile's index */
const REC_LO = REC_T + MAX_SAMPLES;
const REC_TILE = REC_LO + 1;
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

// `gather(r, g, b, out, z, reach, recs, count, pw, w)`
const P = { r: 0, g: 1, b: 2, out: 3, z: 4, reach: 5, recs: 6, count: 7, pw: 8, w: 9 } as const;
const NP = 10;
const I32_LOCALS = ["t", "rec", "q", "qo", "y", "k", "p", "ns", "rows", "sure", "tk", "pk"] as const;
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
  ...gl("rec"),
  ...mem(OP.i32Load, 2, 24),
  ...sl("qo"),
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
    ...g("qo"),
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
    ...p("pw"),
    OP.i32Add,
    ...st("q"),
    ...g("qo"),
    ...p("w"),
    OP.i32Add,
    ...st("qo"),
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

// `holes(z, reach, recs, count, pw, w, edge, out)` → the holes written at out (i32 pixel indices)
const H = { z: 0, reach: 1, recs: 2, count: 3, pw: 4, w: 5, edge: 6, out: 7 } as const;
const HNP = 8;
const H_I32 = ["t", "rec", "q", "qo", "y", "k", "p", "ns", "rows", "tk", "pk", "found", "bits"] as const;
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
  /** lane l a hole: out[found++] = qo + l */
  const emit = (l: number) => [
    ...hg("bits"),
    ...i32c(1 << l),
    OP.i32And,
    OP.if,
    OP.void,
    ...addr(hp("out"), hg("found"), 2),
    ...hg("qo"),
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
    ...hp("pw"),
    OP.i32Add,
    ...hs("q"),
    ...hg("qo"),
    ...hp("w"),
    OP.i32Add,
    ...hs("qo"),
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

// `planes(out, r, g, b, w, h, y0, y1)`: rows y0 … y1 − 1 of the w × h RGB frame at out into three
// padded planes ((w + 2 PAD) × (h + 2 PAD) bytes, the border repeating the edge pixels, as
// padU16Body pads depth); 16 px a step (a step past the row's end writes into its right border,
// filled after it, and reads up to 24 bytes past the row: the frame's area has that slack)
const D = { out: 0, r: 1, g: 2, b: 3, w: 4, h: 5, y0: 6, y1: 7 } as const;
const DNP = 8;
const {
  L: DL,
  g: dg,
  st: ds,
  p: dp,
  decl: ddecl,
} = namedLocals(D, [
  [I32, ["y", "x", "src", "row", "pw", "k"] as const],
  [V128, ["V0", "V1", "V2"] as const],
]);

function planesBody(): number[] {
  const planes = ["r", "g", "b"] as const;
  /** bytes of one channel: 16 of V0 ‖ V1 at `first`, then the rest from V2 at `second` */
  const channel = (dst: "r" | "g" | "b", first: number[], second: number[]) => [
    ...dp(dst),
    ...dg("row"),
    OP.i32Add,
    ...dg("x"),
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
    ...dg("y"),
    ...dp("w"),
    OP.i32Mul,
    ...dg("x"),
    OP.i32Add,
    ...i32c(PAD),
    OP.i32Sub,
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
    ...inc(DL.x!, 16),
  ];
  /** the row's left and right borders of one plane: its first and last byte, 16 times each */
  const sides = (c: "r" | "g" | "b") => [
    ...dp(c),
    ...dg("row"),
    OP.i32Add,
    ...dp(c),
    ...dg("row"),
    OP.i32Add,
    ...mem(OP.i32Load8U, 0, PAD),
    ...simd(S.i8x16Splat),
    ...vmem(S.store, 0),
    ...dp(c),
    ...dg("row"),
    OP.i32Add,
    ...dp("w"),
    OP.i32Add,
    ...i32c(PAD),
    OP.i32Add,
    ...dp(c),
    ...dg("row"),
    OP.i32Add,
    ...dp("w"),
    OP.i32Add,
    ...i32c(PAD - 1),
    OP.i32Add,
    ...mem(OP.i32Load8U, 0),
    ...simd(S.i8x16Splat),
    ...vmem(S.store, 0),
  ];
  const row = [
    // row = (y + PAD) · pw: the padded row's start (its left border)
    ...dg("y"),
    ...i32c(PAD),
    OP.i32Add,
    ...dg("pw"),
    OP.i32Mul,
    ...ds("row"),
    ...i32c(PAD),
    ...ds("x"),
    ...loopWhile([...dg("x"), ...dp("w"), ...i32c(PAD), OP.i32Add, OP.i32GeS], step),
    ...planes.flatMap(sides),
    ...inc(DL.y!, 1),
  ];
  /** the border rows of each plane: `to` + k for k = 0 … PAD − 1 copies of padded row `from` */
  const border = (to: number[], from: number[]) => [
    ...i32c(0),
    ...ds("k"),
    ...loopWhile(
      [...dg("k"), ...i32c(PAD), OP.i32GeS],
      [
        ...planes.flatMap((c) => [
          ...dp(c),
          ...to,
          ...dg("k"),
          OP.i32Add,
          ...dg("pw"),
          OP.i32Mul,
          OP.i32Add,
          ...dp(c),
          ...from,
          ...dg("pw"),
          OP.i32Mul,
          OP.i32Add,
          ...dg("pw"),
          ...memoryCopy,
        ]),
        ...inc(DL.k!, 1),
      ],
    ),
  ];
  return [
    ...dp("w"),
    ...i32c(2 * PAD),
    OP.i32Add,
    ...ds("pw"),
    ...dp("y0"),
    ...ds("y"),
    ...loopWhile([...dg("y"), ...dp("y1"), OP.i32GeS], row),
    ...dp("y0"),
    OP.i32Eqz,
    OP.if,
    OP.void,
    ...border(i32c(0), i32c(PAD)),
    OP.end,
    ...dp("y1"),
    ...dp("h"),
    OP.i32Eq,
    OP.if,
    OP.void,
    ...border([...dp("h"), ...i32c(PAD), OP.i32Add], [...dp("h"), ...i32c(PAD - 1), OP.i32Add]),
    OP.end,
    OP.end,
  ];
}

/** the stats a `plan` call leaves at its `stats` address: [0] pixels visited (colour), [1] tiles skipped or box-averaged */
const STATS = 2;
/** colour-table slots the kernel's smooth flags hold (more: the JS path) */
export const MAX_SMOOTH = 4096;

// `classify(l2, vx, vy, slot, smooth, slots, nbx, nby, tw, th, r, prm)` → 1 when any tile has
// something to do (motion-blur.ts classify: per tile the longest displacement in its (2r + 1)²
// neighbourhood, or (0, 0) where the neighbourhood is one smooth surface or moves less than ½ px;
// prm: f64 [2] the exposure's squared share)
const C = {
  l2: 0,
  vx: 1,
  vy: 2,
  slot: 3,
  smooth: 4,
  slots: 5,
  nbx: 6,
  nby: 7,
  tw: 8,
  th: 9,
  r: 10,
  prm: 11,
  hIdx: 12,
  hSame: 13,
} as const;
const {
  L: CL,
  g: cg,
  st: cs,
  p: cp,
  decl: cdecl,
} = namedLocals(C, [
  [I32, ["tx", "ty", "t", "u", "j", "k", "j0", "j1", "k0", "k1", "one", "uniform", "moved", "bi"] as const],
  [F64, ["best", "l", "scale2"] as const],
]);
/** min(a, b) / max(a, b) of two i32 expressions (signed) */
const imin = (a: number[], b: number[]) => [...a, ...b, ...a, ...b, OP.i32LtS, OP.select];
const imax = (a: number[], b: number[]) => [...a, ...b, ...a, ...b, OP.i32GtS, OP.select];
/** for (v = from; v < to; v++) body, with `gl`, `sl` and the local's index */
const upTo = (
  gl: typeof g,
  sl: typeof st,
  index: number,
  v: string,
  from: number[],
  to: number[],
  body: number[],
) => [...from, ...sl(v), ...loopWhile([...gl(v), ...to, OP.i32GeS], [...body, ...inc(index, 1)])];

function classifyBody(): number[] {
  const at4 = (base: keyof typeof C, index: string) => [
    ...cp(base),
    ...cg(index),
    ...i32c(2),
    OP.i32Shl,
    OP.i32Add,
  ];
  /** l = l2[u]; when longer than best (strictly): best = l, bi = u */
  const longer = [
    ...at4("l2", "u"),
    ...mem(OP.f32Load, 2),
    OP.f64PromoteF32,
    ...cs("l"),
    ...cg("l"),
    ...cg("best"),
    OP.f64Gt,
    OP.if,
    OP.void,
    ...cg("l"),
    ...cs("best"),
    ...cg("u"),
    ...cs("bi"),
    OP.end,
  ];
  const tileIndex = [...cg("ty"), ...cp("tw"), OP.i32Mul, ...cg("tx"), OP.i32Add, ...cs("t")];
  // rows: per tile, along its row (k within r of it) the first longest tile (hIdx, −1: none
  // longer than 0) and the one slot the tiles share (hSame, −3: several)
  const row = [
    ...tileIndex,
    ...f64c(0),
    ...cs("best"),
    ...i32c(-1),
    ...cs("bi"),
    ...imax(i32c(0), [...cg("tx"), ...cp("r"), OP.i32Sub]),
    ...cs("k0"),
    ...imin([...cp("tw"), ...i32c(1), OP.i32Sub], [...cg("tx"), ...cp("r"), OP.i32Add]),
    ...cs("k1"),
    ...cg("ty"),
    ...cp("tw"),
    OP.i32Mul,
    ...cg("k0"),
    OP.i32Add,
    ...cs("u"),
    ...at4("slot", "u"),
    ...mem(OP.i32Load, 2),
    ...cs("one"),
    ...upTo(
      cg,
      cs,
      CL.k!,
      "k",
      cg("k0"),
      [...cg("k1"), ...i32c(1), OP.i32Add],
      [
        ...cg("ty"),
        ...cp("tw"),
        OP.i32Mul,
        ...cg("k"),
        OP.i32Add,
        ...cs("u"),
        ...i32c(-3),
        ...cg("one"),
        ...at4("slot", "u"),
        ...mem(OP.i32Load, 2),
        ...cg("one"),
        OP.i32Ne,
        OP.select,
        ...cs("one"),
        ...longer,
      ],
    ),
    ...at4("hIdx", "t"),
    ...cg("bi"),
    ...mem(OP.i32Store, 2),
    ...at4("hSame", "t"),
    ...cg("one"),
    ...mem(OP.i32Store, 2),
  ];
  const store = (dst: keyof typeof C, src: keyof typeof C) => [
    ...at4(dst, "t"),
    ...at4(src, "bi"),
    ...mem(OP.f32Load, 2),
    ...mem(OP.f32Store, 2),
  ];
  // columns: over the rows within r, the first longest of the rows' longest (rows in order: the
  // first in row-major order, as a scan of the whole neighbourhood finds it), and whether every
  // row's tiles are the tile's own slot
  const tile = [
    ...tileIndex,
    ...f64c(0),
    ...cs("best"),
    ...i32c(-1),
    ...cs("bi"),
    ...at4("slot", "t"),
    ...mem(OP.i32Load, 2),
    ...cs("one"),
    // one smooth surface in the tile (slot < slots: an index into smooth)
    ...cg("one"),
    ...cp("slots"),
    OP.i32LtU,
    OP.if,
    I32,
    ...cp("smooth"),
    ...cg("one"),
    OP.i32Add,
    ...mem(OP.i32Load8U, 0),
    ...i32c(1),
    OP.i32Eq,
    OP.else,
    ...i32c(0),
    OP.end,
    ...cs("uniform"),
    ...imin([...cp("th"), ...i32c(1), OP.i32Sub], [...cg("ty"), ...cp("r"), OP.i32Add]),
    ...cs("j1"),
    ...upTo(
      cg,
      cs,
      CL.j!,
      "j",
      imax(i32c(0), [...cg("ty"), ...cp("r"), OP.i32Sub]),
      [...cg("j1"), ...i32c(1), OP.i32Add],
      [
        ...cg("j"),
        ...cp("tw"),
        OP.i32Mul,
        ...cg("tx"),
        OP.i32Add,
        ...cs("j0"),
        ...at4("hSame", "j0"),
        ...mem(OP.i32Load, 2),
        ...cg("one"),
        OP.i32Ne,
        OP.if,
        OP.void,
        ...i32c(0),
        ...cs("uniform"),
        OP.end,
        ...at4("hIdx", "j0"),
        ...mem(OP.i32Load, 2),
        ...cs("u"),
        ...cg("u"),
        ...i32c(0),
        OP.i32GeS,
        OP.if,
        OP.void,
        ...longer,
        OP.end,
      ],
    ),
    ...cg("uniform"),
    ...cg("best"),
    ...cg("scale2"),
    OP.f64Mul,
    ...f64c(0.25),
    OP.f64Lt,
    OP.i32Or,
    OP.if,
    OP.void,
    ...at4("nbx", "t"),
    ...f32c(0),
    ...mem(OP.f32Store, 2),
    ...at4("nby", "t"),
    ...f32c(0),
    ...mem(OP.f32Store, 2),
    OP.else,
    ...i32c(1),
    ...cs("moved"),
    ...store("nbx", "vx"),
    ...store("nby", "vy"),
    OP.end,
  ];
  return [
    ...cp("prm"),
    ...mem(OP.f64Load, 3, 16),
    ...cs("scale2"),
    ...upTo(cg, cs, CL.ty!, "ty", i32c(0), cp("th"), upTo(cg, cs, CL.tx!, "tx", i32c(0), cp("tw"), row)),
    ...upTo(cg, cs, CL.ty!, "ty", i32c(0), cp("th"), upTo(cg, cs, CL.tx!, "tx", i32c(0), cp("tw"), tile)),
    ...cg("moved"),
    OP.end,
  ];
}

// `zranges(z, pw, tw, ty0, ty1, zlo, zhi)`: per tile of tile rows ty0 … ty1 − 1 the least and
// greatest depth of its 8 × 8 px in the padded depth (0 read as 65535; rows past the image repeat
// its last row), as motion-blur.ts depthRange
const Z = { z: 0, pw: 1, tw: 2, ty0: 3, ty1: 4, zlo: 5, zhi: 6 } as const;
const {
  L: ZL,
  g: zg,
  st: zs,
  p: zp,
  decl: zdecl,
} = namedLocals(Z, [
  [I32, ["ty", "tx", "y", "a"] as const],
  [V128, ["V", "MN", "MX"] as const],
]);

function zrangesBody(): number[] {
  const reduce = (v: "MN" | "MX", op: number) =>
    [
      [8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7],
      [4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3],
      [2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1],
    ].flatMap((lanes) => [...zg(v), ...zg(v), ...zg(v), ...shuffle(lanes), ...simd(op), ...zs(v)]);
  const out = (base: keyof typeof Z, v: "MN" | "MX") => [
    ...zp(base),
    ...zg("ty"),
    ...zp("tw"),
    OP.i32Mul,
    ...zg("tx"),
    OP.i32Add,
    ...i32c(2),
    OP.i32Shl,
    OP.i32Add,
    ...zg(v),
    ...simd(S.i16x8ExtractLaneU),
    0,
    ...mem(OP.i32Store, 2),
  ];
  const row = [
    ...zg("a"),
    ...vmem(S.load, 0),
    ...zs("V"),
    ...zg("V"),
    ...zg("V"),
    ...ZERO,
    ...simd(S.i16x8Eq),
    ...simd(S.or),
    ...zs("V"),
    ...zg("MN"),
    ...zg("V"),
    ...simd(S.i16x8MinU),
    ...zs("MN"),
    ...zg("MX"),
    ...zg("V"),
    ...simd(S.i16x8MaxU),
    ...zs("MX"),
    ...zg("a"),
    ...zp("pw"),
    ...i32c(1),
    OP.i32Shl,
    OP.i32Add,
    ...zs("a"),
  ];
  const tile = [
    // a = z + 2 · ((8 ty + PAD) · pw + 8 tx + PAD)
    ...zp("z"),
    ...zg("ty"),
    ...i32c(3),
    OP.i32Shl,
    ...i32c(PAD),
    OP.i32Add,
    ...zp("pw"),
    OP.i32Mul,
    ...zg("tx"),
    ...i32c(3),
    OP.i32Shl,
    OP.i32Add,
    ...i32c(PAD),
    OP.i32Add,
    ...i32c(1),
    OP.i32Shl,
    OP.i32Add,
    ...zs("a"),
    ...i16x8c(65535),
    ...zs("MN"),
    ...ZERO,
    ...zs("MX"),
    ...upTo(zg, zs, ZL.y!, "y", i32c(0), i32c(8), row),
    ...reduce("MN", S.i16x8MinU),
    ...reduce("MX", S.i16x8MaxU),
    ...out("zlo", "MN"),
    ...out("zhi", "MX"),
  ];
  return [
    ...upTo(zg, zs, ZL.ty!, "ty", zp("ty0"), zp("ty1"), upTo(zg, zs, ZL.tx!, "tx", i32c(0), zp("tw"), tile)),
    OP.end,
  ];
}

// `plan(depth, fast, nbx, nby, least, zlo, zhi, recs, tw, th, w, h, pw, prm, stats)` → records
// written: motion-blur.ts's per-tile set-up of rgbPass (depth 0) or depthHoles (depth 1) — the
// samples (samplesOf), the guarantee (leastIn) or the depth-range skip — the same doubles and
// roundings; prm: f64 [0] the exposure's share, [1] the edge step
const Q = {
  depth: 0,
  fast: 1,
  nbx: 2,
  nby: 3,
  least: 4,
  zlo: 5,
  zhi: 6,
  recs: 7,
  tw: 8,
  th: 9,
  w: 10,
  h: 11,
  pw: 12,
  prm: 13,
  stats: 14,
} as const;
const QNP = 15;
const {
  L: QL,
  g: qg,
  st: qs,
  p: qp,
  decl: qdecl,
} = namedLocals(Q, [
  [
    I32,
    [
      "ty",
      "tx",
      "t",
      "ns",
      "k",
      "lo",
      "x0",
      "y0",
      "x1",
      "y1",
      "o",
      "count",
      "visited",
      "fastc",
      "j",
      "kk",
      "j0",
      "j1",
      "k0",
      "k1",
      "sure",
      "tested",
      "ox",
      "oy",
      "lv",
      "hv",
      "v",
      "thr",
    ] as const,
  ],
  [F64, ["sc", "edge", "vx", "vy", "l", "half", "s", "a", "r", "tt"] as const],
]);

function planBody(): number[] {
  const at4 = (base: keyof typeof Q, index: number[]) => [
    ...qp(base),
    ...index,
    ...i32c(2),
    OP.i32Shl,
    OP.i32Add,
  ];
  /** sign(s) · round(|s · v|) as JS's Math.round: floor, + 1 where the fraction is ≥ ½ */
  const offset = (v: "vx" | "vy", dst: "ox" | "oy") => [
    ...qg("s"),
    ...qg(v),
    OP.f64Mul,
    OP.f64Abs,
    ...qs("a"),
    ...qg("a"),
    OP.f64Floor,
    ...qs("r"),
    ...qg("r"),
    ...f64c(1),
    OP.f64Add,
    ...qg("r"),
    ...qg("a"),
    ...qg("r"),
    OP.f64Sub,
    ...f64c(0.5),
    OP.f64Ge,
    OP.select,
    OP.i32TruncF64S,
    ...qs(dst),
    ...i32c(0),
    ...qg(dst),
    OP.i32Sub,
    ...qg(dst),
    ...qg("s"),
    ...f64c(0),
    OP.f64Lt,
    OP.select,
    ...qs(dst),
  ];
  const iabs = (v: "ox" | "oy") => [
    ...i32c(0),
    ...qg(v),
    OP.i32Sub,
    ...qg(v),
    ...qg(v),
    ...i32c(0),
    OP.i32LtS,
    OP.select,
  ];
  const sample = [
    // s = (k − half) / (ns − 1)
    ...qg("k"),
    OP.f64ConvertI32S,
    ...qg("half"),
    OP.f64Sub,
    ...qg("ns"),
    ...i32c(1),
    OP.i32Sub,
    OP.f64ConvertI32S,
    OP.f64Div,
    ...qs("s"),
    ...offset("vx", "ox"),
    ...offset("vy", "oy"),
    // t = max(0, |s| · l − ½); thr = t = 0 ? 0 : min(65535, ⌈128 t / sc⌉)
    ...qg("s"),
    OP.f64Abs,
    ...qg("l"),
    OP.f64Mul,
    ...f64c(0.5),
    OP.f64Sub,
    ...qs("tt"),
    ...qg("tt"),
    ...f64c(0),
    OP.f64Gt,
    OP.if,
    I32,
    ...f64c(128),
    ...qg("tt"),
    OP.f64Mul,
    ...qg("sc"),
    OP.f64Div,
    OP.f64Ceil,
    ...qs("a"),
    ...f64c(65535),
    ...qg("a"),
    ...qg("a"),
    ...f64c(65535),
    OP.f64Ge,
    OP.select,
    OP.i32TruncF64S,
    OP.else,
    ...i32c(0),
    OP.end,
    ...qs("thr"),
    ...qg("o"),
    ...qg("k"),
    ...i32c(2),
    OP.i32Shl,
    OP.i32Add,
    ...qs("v"),
    ...qg("v"),
    ...qg("oy"),
    ...qp("pw"),
    OP.i32Mul,
    ...qg("ox"),
    OP.i32Add,
    ...mem(OP.i32Store, 2, 4 * REC_PO),
    ...qg("v"),
    ...qg("thr"),
    ...mem(OP.i32Store, 2, 4 * REC_T),
    // lo = max(|ox|, |oy|) of the first sample
    ...qg("k"),
    OP.i32Eqz,
    OP.if,
    OP.void,
    ...imax(iabs("ox"), iabs("oy")),
    ...qs("lo"),
    OP.end,
  ];
  /** j0, j1, k0, k1: the tiles that hold pixels x0 − lo … x1 − 1 + lo, y0 − lo … y1 − 1 + lo */
  const ranges = [
    ...imax(i32c(0), [...qg("x0"), ...qg("lo"), OP.i32Sub, ...i32c(3), OP.i32ShrS]),
    ...qs("k0"),
    ...imin(
      [...qp("tw"), ...i32c(1), OP.i32Sub],
      [...qg("x1"), ...i32c(1), OP.i32Sub, ...qg("lo"), OP.i32Add, ...i32c(3), OP.i32ShrS],
    ),
    ...qs("k1"),
    ...imax(i32c(0), [...qg("y0"), ...qg("lo"), OP.i32Sub, ...i32c(3), OP.i32ShrS]),
    ...qs("j0"),
    ...imin(
      [...qp("th"), ...i32c(1), OP.i32Sub],
      [...qg("y1"), ...i32c(1), OP.i32Sub, ...qg("lo"), OP.i32Add, ...i32c(3), OP.i32ShrS],
    ),
    ...qs("j1"),
  ];
  /** body over the tiles of `ranges`, `v` = tile index */
  const overRange = (body: number[]) =>
    upTo(
      qg,
      qs,
      QL.j!,
      "j",
      qg("j0"),
      [...qg("j1"), ...i32c(1), OP.i32Add],
      upTo(
        qg,
        qs,
        QL.kk!,
        "kk",
        qg("k0"),
        [...qg("k1"), ...i32c(1), OP.i32Add],
        [...qg("j"), ...qp("tw"), OP.i32Mul, ...qg("kk"), OP.i32Add, ...qs("v"), ...body],
      ),
    );
  const lowest = (base: keyof typeof Q, dst: "lv") => [
    ...at4(base, qg("v")),
    ...mem(OP.i32Load, 2),
    ...qs("thr"),
    ...qg("thr"),
    ...qg(dst),
    ...qg("thr"),
    ...qg(dst),
    OP.i32LtS,
    OP.select,
    ...qs(dst),
  ];
  const highest = (base: keyof typeof Q, dst: "hv") => [
    ...at4(base, qg("v")),
    ...mem(OP.i32Load, 2),
    ...qs("thr"),
    ...qg("thr"),
    ...qg(dst),
    ...qg("thr"),
    ...qg(dst),
    OP.i32GtS,
    OP.select,
    ...qs(dst),
  ];
  const field = (word: number, value: number[]) => [...qg("o"), ...value, ...mem(OP.i32Store, 2, 4 * word)];
  const common = [
    ...field(0, [
      ...qg("y0"),
      ...i32c(PAD),
      OP.i32Add,
      ...qp("pw"),
      OP.i32Mul,
      ...qg("x0"),
      OP.i32Add,
      ...i32c(PAD),
      OP.i32Add,
    ]),
    ...field(1, qg("ns")),
    ...field(3, [...qg("y1"), ...qg("y0"), OP.i32Sub]),
    ...field(6, [...qg("y0"), ...qp("w"), OP.i32Mul, ...qg("x0"), OP.i32Add]),
    ...field(REC_LO, qg("lo")),
    ...field(REC_TILE, qg("t")),
    ...inc(QL.count!, 1),
  ];
  const colour = [
    ...qg("visited"),
    ...qg("x1"),
    ...qg("x0"),
    OP.i32Sub,
    ...qg("y1"),
    ...qg("y0"),
    OP.i32Sub,
    OP.i32Mul,
    OP.i32Add,
    ...qs("visited"),
    ...i32c(-1),
    ...qs("sure"),
    ...qp("fast"),
    OP.if,
    OP.void,
    ...i32c(65535),
    ...qs("lv"),
    ...overRange(lowest("least", "lv")),
    ...qg("lv"),
    ...qs("sure"),
    OP.end,
    // every sample within the guarantee: a plain box average (thr[0] is the largest threshold)
    ...qg("sure"),
    ...qg("o"),
    ...mem(OP.i32Load, 2, 4 * REC_T),
    OP.i32GeS,
    OP.if,
    OP.void,
    ...i32c(65535),
    ...qs("sure"),
    ...inc(QL.fastc!, 1),
    OP.end,
    ...i32c(0),
    ...qs("tested"),
    ...upTo(qg, qs, QL.k!, "k", i32c(0), qg("ns"), [
      ...qg("tested"),
      ...qg("o"),
      ...qg("k"),
      ...i32c(2),
      OP.i32Shl,
      OP.i32Add,
      ...mem(OP.i32Load, 2, 4 * REC_T),
      ...qg("sure"),
      OP.i32GtS,
      OP.i32Add,
      ...qs("tested"),
    ]),
    ...field(2, qg("sure")),
    ...field(4, [
      ...i32c(2 ** 18 - 1),
      ...qg("ns"),
      ...i32c(1),
      OP.i32Shl,
      OP.i32Add,
      ...qg("ns"),
      ...i32c(1),
      OP.i32Shl,
      OP.i32DivU,
    ]),
    ...field(5, qg("tested")),
    ...common,
  ];
  const depth = [
    // no two depths the samples can pair differ by more than the edge step: skipped
    ...i32c(0),
    ...qs("tested"),
    ...qp("fast"),
    OP.if,
    OP.void,
    ...i32c(65535),
    ...qs("lv"),
    ...i32c(0),
    ...qs("hv"),
    ...overRange([...lowest("zlo", "lv"), ...highest("zhi", "hv")]),
    ...qg("hv"),
    ...qg("lv"),
    OP.i32Sub,
    OP.f64ConvertI32S,
    ...qg("edge"),
    OP.f64Le,
    ...qs("tested"),
    OP.end,
    ...qg("tested"),
    OP.if,
    OP.void,
    ...inc(QL.fastc!, 1),
    OP.else,
    ...common,
    OP.end,
  ];
  const tile = [
    ...qg("ty"),
    ...qp("tw"),
    OP.i32Mul,
    ...qg("tx"),
    OP.i32Add,
    ...qs("t"),
    ...at4("nbx", qg("t")),
    ...mem(OP.f32Load, 2),
    ...f32c(0),
    OP.f32Eq,
    ...at4("nby", qg("t")),
    ...mem(OP.f32Load, 2),
    ...f32c(0),
    OP.f32Eq,
    OP.i32And,
    OP.i32Eqz,
    OP.if,
    OP.void,
    ...at4("nbx", qg("t")),
    ...mem(OP.f32Load, 2),
    OP.f64PromoteF32,
    ...qg("sc"),
    OP.f64Mul,
    ...qs("vx"),
    ...at4("nby", qg("t")),
    ...mem(OP.f32Load, 2),
    OP.f64PromoteF32,
    ...qg("sc"),
    OP.f64Mul,
    ...qs("vy"),
    ...qg("vx"),
    ...qg("vx"),
    OP.f64Mul,
    ...qg("vy"),
    ...qg("vy"),
    OP.f64Mul,
    OP.f64Add,
    OP.f64Sqrt,
    ...qs("l"),
    ...qg("l"),
    ...f64c(0.5),
    OP.f64Ge,
    OP.if,
    OP.void,
    // longer than 32 px: shortened to it
    ...qg("l"),
    ...f64c(32),
    OP.f64Gt,
    OP.if,
    OP.void,
    ...f64c(32),
    ...qg("l"),
    OP.f64Div,
    ...qs("a"),
    ...qg("vx"),
    ...qg("a"),
    OP.f64Mul,
    ...qs("vx"),
    ...qg("vy"),
    ...qg("a"),
    OP.f64Mul,
    ...qs("vy"),
    ...f64c(32),
    ...qs("l"),
    OP.end,
    // N = min(9, 2 ⌈l / 2⌉ + 1), half = (N − 1) / 2
    ...imin(i32c(MAX_SAMPLES), [
      ...qg("l"),
      ...f64c(2),
      OP.f64Div,
      OP.f64Ceil,
      OP.i32TruncF64S,
      ...i32c(1),
      OP.i32Shl,
      ...i32c(1),
      OP.i32Add,
    ]),
    ...qs("ns"),
    ...qg("ns"),
    ...i32c(1),
    OP.i32Sub,
    OP.f64ConvertI32S,
    ...f64c(2),
    OP.f64Div,
    ...qs("half"),
    ...qg("tx"),
    ...i32c(3),
    OP.i32Shl,
    ...qs("x0"),
    ...qg("ty"),
    ...i32c(3),
    OP.i32Shl,
    ...qs("y0"),
    ...imin(qp("w"), [...qg("x0"), ...i32c(8), OP.i32Add]),
    ...qs("x1"),
    ...imin(qp("h"), [...qg("y0"), ...i32c(8), OP.i32Add]),
    ...qs("y1"),
    ...qp("recs"),
    ...qg("count"),
    ...i32c(REC_SHIFT),
    OP.i32Shl,
    OP.i32Add,
    ...qs("o"),
    ...upTo(qg, qs, QL.k!, "k", i32c(0), qg("ns"), sample),
    ...ranges,
    ...qp("depth"),
    OP.if,
    OP.void,
    ...depth,
    OP.else,
    ...colour,
    OP.end,
    OP.end,
    OP.end,
  ];
  return [
    ...qp("prm"),
    ...mem(OP.f64Load, 3, 0),
    ...qs("sc"),
    ...qp("prm"),
    ...mem(OP.f64Load, 3, 8),
    ...qs("edge"),
    ...upTo(qg, qs, QL.ty!, "ty", i32c(0), qp("th"), upTo(qg, qs, QL.tx!, "tx", i32c(0), qp("tw"), tile)),
    ...qp("stats"),
    ...qg("visited"),
    ...mem(OP.i32Store, 2, 0),
    ...qp("stats"),
    ...qg("fastc"),
    ...mem(OP.i32Store, 2, 4),
    ...qg("count"),
    OP.end,
  ];
}

// `need(recs, count, colour, tw, th, out)`: out[tile] = 1 for every tile a record's tested
// samples read the reach of (the record's tile ± its samples' reach; colour records without a
// tested sample read none)
const N = { recs: 0, count: 1, colour: 2, tw: 3, th: 4, out: 5 } as const;
const {
  L: NL,
  g: ng,
  st: ns_,
  p: np,
  decl: ndecl,
} = namedLocals(N, [[I32, ["r", "rec", "t", "lo", "tx", "ty", "j", "k", "j1", "k0", "k1"] as const]]);

function needBody(): number[] {
  const word = (w: number) => [...ng("rec"), ...mem(OP.i32Load, 2, 4 * w)];
  const imin2 = (a: number[], b: number[]) => [...a, ...b, ...a, ...b, OP.i32LtS, OP.select];
  const imax2 = (a: number[], b: number[]) => [...a, ...b, ...a, ...b, OP.i32GtS, OP.select];
  /** the tiles of pixels x0 − lo … x0 + 7 + lo (tile coordinate t of x0 = 8 t) */
  const lowT = (t: string) =>
    imax2(i32c(0), [...ng(t), ...i32c(3), OP.i32Shl, ...ng("lo"), OP.i32Sub, ...i32c(3), OP.i32ShrS]);
  const highT = (t: string, n: "tw" | "th") =>
    imin2(
      [...np(n), ...i32c(1), OP.i32Sub],
      [
        ...ng(t),
        ...i32c(3),
        OP.i32Shl,
        ...i32c(7),
        OP.i32Add,
        ...ng("lo"),
        OP.i32Add,
        ...i32c(3),
        OP.i32ShrS,
      ],
    );
  const mark = [
    ...word(REC_TILE),
    ...ns_("t"),
    ...word(REC_LO),
    ...ns_("lo"),
    ...ng("t"),
    ...np("tw"),
    OP.i32DivU,
    ...ns_("ty"),
    ...ng("t"),
    ...ng("ty"),
    ...np("tw"),
    OP.i32Mul,
    OP.i32Sub,
    ...ns_("tx"),
    ...highT("ty", "th"),
    ...ns_("j1"),
    ...lowT("tx"),
    ...ns_("k0"),
    ...highT("tx", "tw"),
    ...ns_("k1"),
    ...lowT("ty"),
    ...ns_("j"),
    ...loopWhile(
      [...ng("j"), ...ng("j1"), OP.i32GtS],
      [
        ...ng("k0"),
        ...ns_("k"),
        ...loopWhile(
          [...ng("k"), ...ng("k1"), OP.i32GtS],
          [
            ...np("out"),
            ...ng("j"),
            ...np("tw"),
            OP.i32Mul,
            OP.i32Add,
            ...ng("k"),
            OP.i32Add,
            ...i32c(1),
            ...mem(OP.i32Store8, 0),
            ...inc(NL.k!, 1),
          ],
        ),
        ...inc(NL.j!, 1),
      ],
    ),
  ];
  return [
    ...loopWhile(
      [...ng("r"), ...np("count"), OP.i32GeS],
      [
        ...np("recs"),
        ...ng("r"),
        ...i32c(REC_SHIFT),
        OP.i32Shl,
        OP.i32Add,
        ...ns_("rec"),
        // a colour record with no tested sample reads no reach
        ...np("colour"),
        ...word(5),
        OP.i32Eqz,
        OP.i32And,
        OP.i32Eqz,
        OP.if,
        OP.void,
        ...mark,
        OP.end,
        ...inc(NL.r!, 1),
      ],
    ),
    OP.end,
  ];
}

export function gatherModuleBytes(): Uint8Array {
  return kernelModule(
    [
      funcType(Array(NP).fill(I32), []),
      funcType(Array(HNP).fill(I32), [I32]),
      funcType(Array(DNP).fill(I32), []),
      funcType(PAD_U16_PARAMS, []),
      funcType(Array(Object.keys(C).length).fill(I32), [I32]),
      funcType(Array(Object.keys(Z).length).fill(I32), []),
      funcType(Array(QNP).fill(I32), [I32]),
      funcType(Array(Object.keys(N).length).fill(I32), []),
    ],
    [
      { name: "gather", type: 0, body: [...decl, ...gatherBody()] },
      { name: "holes", type: 1, body: [...hdecl, ...holesBody()] },
      { name: "planes", type: 2, body: [...ddecl, ...planesBody()] },
      { name: "pad", type: 3, body: padU16Body() },
      { name: "classify", type: 4, body: [...cdecl, ...classifyBody()] },
      { name: "zranges", type: 5, body: [...zdecl, ...zrangesBody()] },
      { name: "plan", type: 6, body: [...qdecl, ...planBody()] },
      { name: "need", type: 7, body: [...ndecl, ...needBody()] },
    ],
  );
}

type Fn = (...args: number[]) => number;

/**
 * The gather kernel and its memory: the frame (the output, tiles written over it) and, padded by
 * PAD px repeating the edge pixels (so that a sample outside the image reads the nearest edge
 * pixel, as the JS path clamps it), its three colour planes (the source), the clean depth and the
 * reach; the tile records and the holes found. Sized per image size (views change only then).
 */
export class GatherKernel {
  private readonly memory: WasmMemory;
  private readonly gatherFn: Fn;
  private readonly holesFn: Fn;
  private readonly planesFn: Fn;
  private readonly padFn: Fn;
  private readonly classifyFn: Fn;
  private readonly zrangesFn: Fn;
  private readonly planFn: Fn;
  private readonly needFn: Fn;
  private w = -1;
  private h = -1;
  private nt = 0;
  /** the motion field's tile summaries (MotionTiles l2, vx, vy, slot, least), copied in per frame */
  tL2 = new Float32Array(0);
  tVx = new Float32Array(0);
  tVy = new Float32Array(0);
  tSlot = new Int32Array(0);
  tLeast = new Int32Array(0);
  /** per colour-table slot: 1 = smooth (FrameMotion.smooth), up to MAX_SMOOTH slots */
  smooth = new Uint8Array(0);
  /** classify's result: per tile the neighbourhood's longest displacement, (0, 0) to skip */
  nbx = new Float32Array(0);
  nby = new Float32Array(0);
  /** plan's inputs (f64: share, edge step, squared share) and its stats (see STATS) */
  prm = new Float64Array(0);
  stats = new Int32Array(0);
  /** the padded images' row length, px */
  pw = 0;
  /** the frame: the output, copied in before `planes` */
  out = new Uint8Array(0);
  /** w × h u16 staging of depth and reach (`padDepth`, `padReach` pad it into their areas) */
  stage = new Uint16Array(0);
  /** the tile records (REC_WORDS each): colour from 0, depth from REC_WORDS · nt */
  recs = new Int32Array(0);
  /** per tile: 1 = a record's tested samples read its reach (markNeed) */
  need = new Uint8Array(0);
  /** the depth sweep's holes (pixel indices) */
  holes = new Int32Array(0);
  private off = {
    r: 0,
    g: 0,
    b: 0,
    out: 0,
    z: 0,
    reach: 0,
    stage: 0,
    recs: 0,
    need: 0,
    holes: 0,
    tL2: 0,
    tVx: 0,
    tVy: 0,
    tSlot: 0,
    tLeast: 0,
    smooth: 0,
    nbx: 0,
    nby: 0,
    zlo: 0,
    zhi: 0,
    hIdx: 0,
    hSame: 0,
    prm: 0,
    stats: 0,
  };

  constructor(module: WasmModule) {
    const inst = new (wasm as WasmApi).Instance(module, {});
    this.memory = inst.exports.mem as WasmMemory;
    this.gatherFn = inst.exports.gather as Fn;
    this.holesFn = inst.exports.holes as Fn;
    this.planesFn = inst.exports.planes as Fn;
    this.padFn = inst.exports.pad as Fn;
    this.classifyFn = inst.exports.classify as Fn;
    this.zrangesFn = inst.exports.zranges as Fn;
    this.planFn = inst.exports.plan as Fn;
    this.needFn = inst.exports.need as Fn;
  }

  /** size the areas for w × h images (nt tiles) */
  layout(w: number, h: number, nt: number): void {
    if (w === this.w && h === this.h && nt === this.nt) return;
    const n = w * h;
    const pw = w + 2 * PAD;
    const pn = pw * (h + 2 * PAD);
    let at = 0;
    const take = (bytes: number) => {
      const o = at;
      at = align16(at + bytes);
      return o;
    };
    this.off = {
      r: take(pn + 16),
      g: take(pn + 16),
      b: take(pn + 16),
      // planes' 16-px steps read up to 24 bytes past a row
      out: take(3 * n + 48),
      z: take(2 * pn + 16),
      reach: take(2 * pn + 16),
      stage: take(2 * n),
      // colour records, then depth records
      recs: take(2 * 4 * REC_WORDS * nt),
      need: take(nt),
      holes: take(4 * n),
      tL2: take(4 * nt),
      tVx: take(4 * nt),
      tVy: take(4 * nt),
      tSlot: take(4 * nt),
      tLeast: take(4 * nt),
      smooth: take(MAX_SMOOTH),
      nbx: take(4 * nt),
      nby: take(4 * nt),
      zlo: take(4 * nt),
      zhi: take(4 * nt),
      hIdx: take(4 * nt),
      hSame: take(4 * nt),
      prm: take(8 * 3),
      stats: take(4 * STATS),
    };
    const have = this.memory.buffer.byteLength;
    if (at > have) this.memory.grow(Math.ceil((at - have) / PAGE));
    const b = this.memory.buffer;
    const o = this.off;
    this.out = new Uint8Array(b, o.out, 3 * n);
    this.stage = new Uint16Array(b, o.stage, n);
    this.recs = new Int32Array(b, o.recs, 2 * REC_WORDS * nt);
    this.need = new Uint8Array(b, o.need, nt);
    this.holes = new Int32Array(b, o.holes, n);
    this.tL2 = new Float32Array(b, o.tL2, nt);
    this.tVx = new Float32Array(b, o.tVx, nt);
    this.tVy = new Float32Array(b, o.tVy, nt);
    this.tSlot = new Int32Array(b, o.tSlot, nt);
    this.tLeast = new Int32Array(b, o.tLeast, nt);
    this.smooth = new Uint8Array(b, o.smooth, MAX_SMOOTH);
    this.nbx = new Float32Array(b, o.nbx, nt);
    this.nby = new Float32Array(b, o.nby, nt);
    this.prm = new Float64Array(b, o.prm, 3);
    this.stats = new Int32Array(b, o.stats, STATS);
    this.w = w;
    this.h = h;
    this.pw = pw;
    this.nt = nt;
  }

  /**
   * classify over the tile summaries (tL2 … smooth set; prm[2] the squared exposure share) into
   * nbx, nby: 1 when any tile has something to do
   */
  classify(slots: number, tw: number, th: number, r: number): number {
    const o = this.off;
    return this.classifyFn(
      o.tL2,
      o.tVx,
      o.tVy,
      o.tSlot,
      o.smooth,
      slots,
      o.nbx,
      o.nby,
      tw,
      th,
      r,
      o.prm,
      o.hIdx,
      o.hSame,
    );
  }

  /** the least and greatest depth of the tiles of tile rows ty0 … ty1 − 1 (padded depth set) */
  zranges(tw: number, ty0: number, ty1: number): void {
    const o = this.off;
    this.zrangesFn(o.z, this.pw, tw, ty0, ty1, o.zlo, o.zhi);
  }

  /**
   * the records of a pass (depth false: colour; prm[0] its share, prm[1] the edge step) over the
   * tiles nbx, nby mark; returns their number (stats: pixels visited, tiles box-averaged / skipped)
   */
  plan(depth: boolean, fast: number, tw: number, th: number): number {
    const o = this.off;
    return this.planFn(
      depth ? 1 : 0,
      fast,
      o.nbx,
      o.nby,
      o.tLeast,
      o.zlo,
      o.zhi,
      this.recsOf(depth),
      tw,
      th,
      this.w,
      this.h,
      this.pw,
      o.prm,
      o.stats,
    );
  }

  /** the records' address of a pass */
  private recsOf(depth: boolean): number {
    return this.off.recs + (depth ? 4 * REC_WORDS * this.nt : 0);
  }

  /** need: the tiles the first `count` records of a pass read the reach of (need cleared before) */
  markNeed(depth: boolean, count: number, tw: number, th: number): void {
    this.needFn(this.recsOf(depth), count, depth ? 0 : 1, tw, th, this.off.need);
  }

  /** the colour planes of rows y0 … y1 − 1 from `out` (padded; the border rows too where they touch it) */
  planes(y0: number, y1: number): void {
    const o = this.off;
    this.planesFn(o.out, o.r, o.g, o.b, this.w, this.h, y0, y1);
  }

  /** rows y0 … y1 − 1 of `stage` into the padded depth */
  padDepth(y0: number, y1: number): void {
    this.padFn(this.off.stage, this.off.z, this.w, this.h, PAD, y0, y1);
  }

  /** rows y0 … y1 − 1 of `stage` into the padded reach */
  padReach(y0: number, y1: number): void {
    this.padFn(this.off.stage, this.off.reach, this.w, this.h, PAD, y0, y1);
  }

  /** the colour gather of the first `count` records (tiles 8 px wide) into `out` */
  gatherTiles(count: number): void {
    const o = this.off;
    this.gatherFn(o.r, o.g, o.b, o.out, o.z, o.reach, this.recsOf(false), count, this.pw, this.w);
  }

  /** the depth sweep of the first `count` records: their holes into `holes`, returns their number */
  holesTiles(count: number, edge: number): number {
    const o = this.off;
    return this.holesFn(o.z, o.reach, this.recsOf(true), count, this.pw, this.w, edge, o.holes);
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
