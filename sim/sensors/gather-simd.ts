/**
 * WebAssembly SIMD kernels of motion blur's colour gather (motion-blur.ts rgbPass) and depth
 * sweep (depthHoles, `holes` below), the same bytes and holes as their JS paths
 * (motion-blur.test.ts compares them): one tile at a time, 4 pixels of a row
 * per step (the tile's samples are the same pixel offsets for every pixel, so the 4 pixels'
 * samples are 4 contiguous source pixels). Per sample the JS path's tests — behind
 * (depth > own + 10 mm, 0 read as 65535): q's own reach ≥ the threshold, else the sample's —
 * in i32x4 / f64x2 lanes (the same double products and compares), the sums in i32, the result
 * (sum · 1/N + 0.5) truncated in f64 as `| 0` does. Only for tiles whose samples stay inside the
 * image and whose width is a multiple of 4; the JS path does the others.
 * Emitted below from its instruction list (no toolchain, no binary in the repo); opcodes:
 * WebAssembly core spec §5.4, SIMD prefix 0xFD.
 */
import {
  F64,
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

const lane = (op: number, align: number, offset: number, l: number) => [
  ...simd(op),
  align,
  ...uleb(offset),
  l,
];
const v128c = (bytes: number[]) => [...simd(S.const), ...bytes];
const i32x4c = (a: number) => v128c([...new Uint8Array(new Int32Array([a, a, a, a]).buffer)]);
const f64x2c = (a: number) => v128c([...new Uint8Array(new Float64Array([a, a]).buffer)]);
const Z = 16; // a shuffle index into the zero vector
/** bytes c, c + 3, c + 6, c + 9 of a vector of 4 RGB pixels as i32x4 (zero-extended) */
const channel = (c: number) => [c, Z, Z, Z, c + 3, Z, Z, Z, c + 6, Z, Z, Z, c + 9, Z, Z, Z];
/** two i64x2 masks (lanes 0–1 of a, of b) as one i32x4 mask */
const LOW_WORDS = [0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27];

const P = {
  src: 0,
  out: 1,
  z: 2,
  l2: 3,
  w: 4,
  x0: 5,
  y0: 6,
  x1: 7,
  y1: 8,
  ns: 9,
  po: 10,
  thr: 11,
  /** sure, q2, 1/N (f64 each): doubles as arguments would be boxed per call */
  prm: 12,
  fast: 13,
} as const;
const NP = 14;
const PARAM_TYPES = Array(NP).fill(I32);
const I32_LOCALS = ["y", "x", "q", "k", "p", "pa"] as const;
const F64_LOCALS = ["t", "sure"] as const;
const V128_LOCALS = [
  "ZQB",
  "RQA",
  "RQB",
  "SR",
  "SG",
  "SB",
  "OWN",
  "V",
  "CNT",
  "T",
  "Q2",
  "INV",
  "HALF",
  "ZERO",
  "BIG",
  "ZP",
  "OR",
  "OG",
  "OB",
] as const;
const { L, g, st, p, decl } = namedLocals(P, [
  [I32, I32_LOCALS],
  [F64, F64_LOCALS],
  [V128, V128_LOCALS],
]);

/** base + index · 2^shift */
const addr = (base: number[], index: string, shift: number) => [
  ...base,
  ...g(index),
  ...i32c(shift),
  OP.i32Shl,
  OP.i32Add,
];
/** the 3 bytes of each of 4 pixels from pixel `index` of `base` (RGB), as 16 bytes */
const rgb4 = (base: keyof typeof P, index: string) => [
  ...p(base),
  ...g(index),
  ...i32c(3),
  OP.i32Mul,
  OP.i32Add,
  ...vmem(S.load, 0),
];
const ch = (v: string, c: number) => [...g(v), ...g("ZERO"), ...shuffle(channel(c))];
/** depth of 4 pixels as i32x4, 0 read as 65535 */
const depth4 = (index: string) => [
  ...addr(p("z"), index, 1),
  ...vmem(S.load16x4U, 0),
  ...st("ZP"),
  ...g("BIG"),
  ...g("ZP"),
  ...g("ZP"),
  ...g("ZERO"),
  ...simd(S.i32x4Eq),
  ...simd(S.bitselect),
];
/** l2px · q2 of 4 pixels into two f64x2 locals */
const reach4 = (index: string, aLocal: string, bLocal: string) => {
  const half = (off: number, local: string) => [
    ...addr(p("l2"), index, 3),
    ...vmem(S.load, off),
    ...g("Q2"),
    ...simd(S.f64x2Mul),
    ...st(local),
  ];
  return [...half(0, aLocal), ...half(16, bLocal)];
};

function gatherBody(): number[] {
  const acc = (sum: string, c: number, masked: boolean) => [
    ...g(sum),
    ...ch("V", c),
    ...(masked ? [...g("CNT"), ...simd(S.and)] : []),
    ...simd(S.i32x4Add),
    ...st(sum),
  ];
  const sample = [
    // p = q + po[k]; t = thr2[k]
    ...g("q"),
    ...addr(p("po"), "k", 2),
    ...mem(OP.i32Load, 2),
    OP.i32Add,
    ...st("p"),
    ...addr(p("thr"), "k", 3),
    ...mem(OP.f64Load, 3),
    ...st("t"),
    ...rgb4("src", "p"),
    ...st("V"),
    // within the tile's guarantee (or a plain box average) it counts; else the tests
    ...p("fast"),
    ...g("t"),
    ...g("sure"),
    OP.f64Le,
    OP.i32Or,
    OP.if,
    OP.void,
    ...acc("SR", 0, false),
    ...acc("SG", 1, false),
    ...acc("SB", 2, false),
    OP.else,
    ...g("t"),
    ...simd(S.f64x2Splat),
    ...st("T"),
    // behind q: q's reach; else the sample's own
    ...g("RQA"),
    ...g("T"),
    ...simd(S.f64x2Ge),
    ...g("RQB"),
    ...g("T"),
    ...simd(S.f64x2Ge),
    ...shuffle(LOW_WORDS),
    ...(() => {
      const half = (off: number) => [
        ...addr(p("l2"), "p", 3),
        ...vmem(S.load, off),
        ...g("Q2"),
        ...simd(S.f64x2Mul),
        ...g("T"),
        ...simd(S.f64x2Ge),
      ];
      return [...half(0), ...half(16), ...shuffle(LOW_WORDS)];
    })(),
    ...depth4("p"),
    ...g("ZQB"),
    ...simd(S.i32x4GtS),
    ...simd(S.bitselect),
    ...st("CNT"),
    ...acc("SR", 0, true),
    ...acc("SG", 1, true),
    ...acc("SB", 2, true),
    // own += 1 where the sample does not count
    ...g("OWN"),
    ...g("CNT"),
    ...simd(S.not),
    ...simd(S.i32x4Sub),
    ...st("OWN"),
    OP.end,
    ...inc(L.k!, 1),
  ];
  /** (sum + own · own colour) · 1/N + 0.5, truncated, for the channel's 4 pixels (i32x4) */
  const result = (sum: string, own: string) => {
    const tot = [...g(sum), ...g("OWN"), ...g(own), ...simd(S.i32x4Mul), ...simd(S.i32x4Add), ...st("V")];
    const half = (hi: boolean) => [
      ...g("V"),
      ...(hi ? [...g("V"), ...shuffle([8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7])] : []),
      ...simd(S.f64x2ConvertLowI32x4S),
      ...g("INV"),
      ...simd(S.f64x2Mul),
      ...g("HALF"),
      ...simd(S.f64x2Add),
      ...simd(S.i32x4TruncSatF64x2SZero),
    ];
    return [
      ...tot,
      ...half(false),
      ...half(true),
      ...shuffle([0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23]),
    ];
  };
  const step = [
    // q = y · w + x
    ...g("y"),
    ...p("w"),
    OP.i32Mul,
    ...g("x"),
    OP.i32Add,
    ...st("q"),
    ...depth4("q"),
    ...i32x4c(10),
    ...simd(S.i32x4Add),
    ...st("ZQB"),
    ...reach4("q", "RQA", "RQB"),
    ...i32x4c(0),
    ...st("SR"),
    ...i32x4c(0),
    ...st("SG"),
    ...i32x4c(0),
    ...st("SB"),
    ...i32x4c(0),
    ...st("OWN"),
    ...i32c(0),
    ...st("k"),
    ...loopWhile([...g("k"), ...p("ns"), OP.i32GeS], sample),
    // q's own colour, then the pixels' bytes, interleaved back to RGB
    ...rgb4("src", "q"),
    ...st("V"),
    ...ch("V", 0),
    ...st("OR"),
    ...ch("V", 1),
    ...st("OG"),
    ...ch("V", 2),
    ...st("OB"),
    ...result("SR", "OR"),
    ...st("OR"),
    ...result("SG", "OG"),
    ...st("OG"),
    ...result("SB", "OB"),
    ...st("OB"),
    // out address: out + 3q
    ...p("out"),
    ...g("q"),
    ...i32c(3),
    OP.i32Mul,
    OP.i32Add,
    ...st("pa"),
    ...g("OR"),
    ...g("OG"),
    ...shuffle([0, 16, 0, 4, 20, 0, 8, 24, 0, 12, 28, 0, 0, 0, 0, 0]),
    ...g("OB"),
    ...shuffle([0, 1, 16, 3, 4, 20, 6, 7, 24, 9, 10, 28, 12, 13, 14, 15]),
    ...st("V"),
    ...g("pa"),
    ...g("V"),
    ...lane(S.store64Lane, 0, 0, 0),
    ...g("pa"),
    ...g("V"),
    ...lane(S.store32Lane, 0, 8, 2),
    ...inc(L.x!, 4),
  ];
  const row = [
    ...p("x0"),
    ...st("x"),
    ...loopWhile([...g("x"), ...p("x1"), OP.i32GeS], step),
    ...inc(L.y!, 1),
  ];
  return [
    ...i32x4c(0),
    ...st("ZERO"),
    ...i32x4c(65535),
    ...st("BIG"),
    ...p("prm"),
    ...mem(OP.f64Load, 3, 0),
    ...st("sure"),
    ...p("prm"),
    ...vmem(S.load64Splat, 8),
    ...st("Q2"),
    ...p("prm"),
    ...vmem(S.load64Splat, 16),
    ...st("INV"),
    ...f64x2c(0.5),
    ...st("HALF"),
    ...p("y0"),
    ...st("y"),
    ...loopWhile([...g("y"), ...p("y1"), OP.i32GeS], row),
    OP.end,
  ];
}

// `holes(z, l2, w, x0, y0, x1, y1, ns, po, thr, prm, out)` → the holes written at out (i32 indices)
const H = { z: 0, l2: 1, w: 2, x0: 3, y0: 4, x1: 5, y1: 6, ns: 7, po: 8, thr: 9, prm: 10, out: 11 } as const;
const HNP = 12;
const H_I32 = ["y", "x", "q", "k", "p", "count", "bits", "edge"] as const;
const H_V128 = ["ZQ", "RQA", "RQB", "HOLE", "STEP", "T", "Q2", "EDGE", "ZERO", "BIG", "ZP"] as const;
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
 * The depth sweep of one tile (motion-blur.ts depthHoles): a pixel has no return when for any
 * sample the depth steps by more than the edge step and the farther surface's side moved over
 * it (behind: q's own reach ≥ the threshold; in front: the sample's). The JS path stops at the
 * first such sample; whether one exists is the same.
 */
function holesBody(): number[] {
  const addrH = (base: keyof typeof H, index: string, shift: number) => [
    ...hp(base),
    ...hg(index),
    ...i32c(shift),
    OP.i32Shl,
    OP.i32Add,
  ];
  const depthOf = (index: string) => [
    ...addrH("z", index, 1),
    ...vmem(S.load16x4U, 0),
    ...hs("ZP"),
    ...hg("BIG"),
    ...hg("ZP"),
    ...hg("ZP"),
    ...hg("ZERO"),
    ...simd(S.i32x4Eq),
    ...simd(S.bitselect),
  ];
  const reachGe = (index: string) => {
    const half = (off: number) => [
      ...addrH("l2", index, 3),
      ...vmem(S.load, off),
      ...hg("Q2"),
      ...simd(S.f64x2Mul),
      ...hg("T"),
      ...simd(S.f64x2Ge),
    ];
    return [...half(0), ...half(16), ...shuffle(LOW_WORDS)];
  };
  const sample = [
    ...hg("q"),
    ...addrH("po", "k", 2),
    ...mem(OP.i32Load, 2),
    OP.i32Add,
    ...hs("p"),
    ...addrH("thr", "k", 3),
    ...mem(OP.f64Load, 3),
    ...simd(S.f64x2Splat),
    ...hs("T"),
    // step = zp − zq; far: |step| > edge
    ...depthOf("p"),
    ...hg("ZQ"),
    ...simd(S.i32x4Sub),
    ...hs("STEP"),
    // farther (step > 0): q's own reach; nearer: the sample's
    ...hg("RQA"),
    ...hg("T"),
    ...simd(S.f64x2Ge),
    ...hg("RQB"),
    ...hg("T"),
    ...simd(S.f64x2Ge),
    ...shuffle(LOW_WORDS),
    ...reachGe("p"),
    ...hg("STEP"),
    ...hg("ZERO"),
    ...simd(S.i32x4GtS),
    ...simd(S.bitselect),
    ...hg("STEP"),
    ...hg("EDGE"),
    ...simd(S.i32x4GtS),
    ...hg("STEP"),
    ...simd(S.i32x4Neg),
    ...hg("EDGE"),
    ...simd(S.i32x4GtS),
    ...simd(S.or),
    ...simd(S.and),
    ...hg("HOLE"),
    ...simd(S.or),
    ...hs("HOLE"),
    ...inc(HL.k!, 1),
  ];
  /** lane l a hole: out[count++] = q + l */
  const emit = (l: number) => [
    ...hg("bits"),
    ...i32c(1 << l),
    OP.i32And,
    OP.if,
    OP.void,
    ...addrH("out", "count", 2),
    ...hg("q"),
    ...i32c(l),
    OP.i32Add,
    ...mem(OP.i32Store, 2),
    ...inc(HL.count!, 1),
    OP.end,
  ];
  const step = [
    ...hg("y"),
    ...hp("w"),
    OP.i32Mul,
    ...hg("x"),
    OP.i32Add,
    ...hs("q"),
    ...depthOf("q"),
    ...hs("ZQ"),
    ...addrH("l2", "q", 3),
    ...vmem(S.load, 0),
    ...hg("Q2"),
    ...simd(S.f64x2Mul),
    ...hs("RQA"),
    ...addrH("l2", "q", 3),
    ...vmem(S.load, 16),
    ...hg("Q2"),
    ...simd(S.f64x2Mul),
    ...hs("RQB"),
    ...i32x4c(0),
    ...hs("HOLE"),
    ...i32c(0),
    ...hs("k"),
    ...loopWhile([...hg("k"), ...hp("ns"), OP.i32GeS], sample),
    ...hg("HOLE"),
    ...simd(S.i32x4Bitmask),
    ...hs("bits"),
    ...hg("bits"),
    OP.if,
    OP.void,
    ...emit(0),
    ...emit(1),
    ...emit(2),
    ...emit(3),
    OP.end,
    ...inc(HL.x!, 4),
  ];
  const row = [
    ...hp("x0"),
    ...hs("x"),
    ...loopWhile([...hg("x"), ...hp("x1"), OP.i32GeS], step),
    ...inc(HL.y!, 1),
  ];
  return [
    ...i32x4c(0),
    ...hs("ZERO"),
    ...i32x4c(65535),
    ...hs("BIG"),
    ...hp("prm"),
    ...vmem(S.load64Splat, 8),
    ...hs("Q2"),
    // the edge step as an integer (prm[3]: floor(edge), an integer step exceeds edge iff it exceeds that)
    ...hp("prm"),
    ...mem(OP.i32Load, 2, 24),
    ...simd(S.i32x4Splat),
    ...hs("EDGE"),
    ...hp("y0"),
    ...hs("y"),
    ...loopWhile([...hg("y"), ...hp("y1"), OP.i32GeS], row),
    ...hg("count"),
    OP.end,
  ];
}

export function gatherModuleBytes(): Uint8Array {
  return kernelModule(
    [funcType(PARAM_TYPES, []), funcType(Array(HNP).fill(I32), [I32])],
    [
      { name: "gather", type: 0, body: [...decl, ...gatherBody()] },
      { name: "holes", type: 1, body: [...hdecl, ...holesBody()] },
    ],
  );
}

type GatherFn = (...args: number[]) => void;

/**
 * The gather kernel and its memory: the frame's source colours, the output (a copy of the
 * source that the tiles are written into), the clean depth, l2px, and the tile's sample offsets
 * and thresholds. Sized per image size (views change only then).
 */
export class GatherKernel {
  private readonly memory: WasmMemory;
  private readonly fn: GatherFn;
  private readonly holesFn: (...args: number[]) => number;
  private key = -1;
  src = new Uint8Array(0);
  out = new Uint8Array(0);
  z = new Uint16Array(0);
  l2 = new Float64Array(0);
  po = new Int32Array(0);
  thr = new Float64Array(0);
  /** the tile's sure, q2 and 1/N (gather) / q2 (depth sweep) */
  prm = new Float64Array(0);
  /** the depth sweep's edge step, floored (an integer step exceeds the edge iff it exceeds this) */
  edge = new Int32Array(0);
  /** the depth sweep's holes of the last tile (pixel indices, in scan order) */
  holes = new Int32Array(0);
  private off = { src: 0, out: 0, z: 0, l2: 0, po: 0, thr: 0, prm: 0, holes: 0 };

  constructor(module: WasmModule) {
    const inst = new (wasm as WasmApi).Instance(module, {});
    this.memory = inst.exports.mem as WasmMemory;
    this.fn = inst.exports.gather as GatherFn;
    this.holesFn = inst.exports.holes as (...args: number[]) => number;
  }

  /** size the areas for images of n px */
  layout(n: number): void {
    if (n === this.key) return;
    let at = 0;
    const take = (bytes: number) => {
      const o = at;
      at = align16(at + bytes);
      return o;
    };
    // 16-byte loads of 4 RGB pixels read 4 bytes past the 12 used: slack after each area
    this.off = {
      l2: take(8 * n + 32),
      src: take(3 * n + 16),
      out: take(3 * n + 16),
      z: take(2 * n + 16),
      po: take(4 * MAX_SAMPLES),
      thr: take(8 * MAX_SAMPLES),
      prm: take(8 * 4),
      holes: take(4 * 64),
    };
    const have = this.memory.buffer.byteLength;
    if (at > have) this.memory.grow(Math.ceil((at - have) / PAGE));
    const b = this.memory.buffer;
    const o = this.off;
    this.l2 = new Float64Array(b, o.l2, n);
    this.src = new Uint8Array(b, o.src, 3 * n);
    this.out = new Uint8Array(b, o.out, 3 * n);
    this.z = new Uint16Array(b, o.z, n);
    this.po = new Int32Array(b, o.po, MAX_SAMPLES);
    this.thr = new Float64Array(b, o.thr, MAX_SAMPLES);
    this.prm = new Float64Array(b, o.prm, 3);
    this.edge = new Int32Array(b, o.prm + 24, 1);
    this.holes = new Int32Array(b, o.holes, 64);
    this.key = n;
  }

  /**
   * one tile (po, thr and prm set): pixels x0…x1 − 1 (x1 − x0 a multiple of 4) of rows
   * y0…y1 − 1 into `out`; fast: 1 = every sample counts (a plain box average)
   */
  tile(w: number, x0: number, y0: number, x1: number, y1: number, ns: number, fast: number): void {
    const o = this.off;
    this.fn(o.src, o.out, o.z, o.l2, w, x0, y0, x1, y1, ns, o.po, o.thr, o.prm, fast);
  }

  /**
   * the depth sweep of one tile of at most 64 px (po, thr, prm[1] = q2 and edge set; x1 − x0 a
   * multiple of 4): its holes into `holes`, returns their number
   */
  holesTile(w: number, x0: number, y0: number, x1: number, y1: number, ns: number): number {
    const o = this.off;
    return this.holesFn(o.z, o.l2, w, x0, y0, x1, y1, ns, o.po, o.thr, o.prm, o.holes);
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
