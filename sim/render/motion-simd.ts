/**
 * WebAssembly SIMD kernel of Rasterizer.motionField's pass (rasterizer.ts motionTiles), the same
 * results as its JS path, bit for bit (motion-simd.test.ts compares the two): tile by tile (8 × 8
 * px), four pixels per step in f32x4 lanes, the JS path's 32-bit float operations in the same
 * order (WebAssembly has no fused multiply-add; each f32x4 operation rounds as Math.fround does),
 * so the per-pixel reach, the tiles' longest displacement, its vector, the one slot seen and the
 * least reach are the JS path's values. Four pixels of one slot (most of a frame) take that
 * slot's coefficients in all lanes; four of several slots are computed once per distinct slot
 * and merged lane by lane. The longest displacement is tracked per lane with its pixel index, so
 * that a tie goes to the first pixel in scan order as in the JS pass.
 *
 * Used for the frames the blur needs (tiles wanted, no dx/dy, no lens remap, 8 px tiles, a width
 * that is a multiple of 4; up to MAX_SLOTS colour-table slots); else the JS pass runs. The
 * module is emitted below from its instruction list (no toolchain, no binary in the repo);
 * opcodes: WebAssembly core spec §5.4, SIMD prefix 0xFD.
 */
import {
  align16,
  F32,
  F64,
  f64c,
  f32c,
  funcType,
  I32,
  i32c,
  inc,
  kernelModule,
  LITTLE_ENDIAN,
  loopWhile,
  mem,
  namedLocals,
  OP,
  PAGE,
  S,
  shuffle,
  simd,
  V128,
  vmem,
  type WasmApi,
  type WasmMemory,
  type WasmModule,
  wasm,
} from "./wasm.ts";

/** colour-table slots the kernel's coefficient area holds (more: the JS pass) */
export const MAX_SLOTS = 1024;
/** the tile edge the kernel summarises over, px */
export const MOTION_TILE = 8;

const v128c = (bytes: Uint8Array) => [...simd(S.const), ...bytes];
const f32x4c = (a: number) => v128c(new Uint8Array(new Float32Array([a, a, a, a]).buffer));
const i32x4c = (a: number, b: number, c: number, d: number) =>
  v128c(new Uint8Array(new Int32Array([a, b, c, d]).buffer));
const ZERO = i32x4c(0, 0, 0, 0);
const LANES = i32x4c(0, 1, 2, 3);

// parameters of `field`
const P = {
  iz: 0,
  sh: 1,
  m: 2,
  vf: 3,
  slots: 4,
  reach: 5,
  ow: 6,
  oh: 7,
  cols: 8,
  tx0: 9,
  tx1: 10,
  ty0: 11,
  ty1: 12,
  tSlot: 13,
  tL2: 14,
  tVx: 15,
  tVy: 16,
  tLeast: 17,
  m64: 18,
  lin: 19,
  mode: 20,
  need: 21,
  ready: 22,
  tp: 23,
} as const;
const NP = 24;
const I32_LOCALS = [
  "tx",
  "ty",
  "t",
  "x0",
  "y0",
  "x1",
  "y1",
  "y",
  "x",
  "i",
  "one",
  "cur",
  "cy",
  "count",
  "s",
  "d",
  "j",
  "bi",
  "li",
  "isLin",
  "ok",
  "b",
  "pa",
] as const;
const F32_LOCALS = ["best"] as const;
const F64_LOCALS = [
  "hv",
  "hw",
  "uc",
  "vc",
  "wc",
  "wmin",
  "wmax",
  "bound",
  "Z",
  "G",
  "Zm",
  "LX0",
  "LY0",
  "LXU",
  "LXV",
  "LXW",
  "LYU",
  "LYV",
  "LYW",
  "iZ",
  "iZm",
  "kx",
  "ky",
  "vax",
  "vbx2",
  "vcx",
  "vay",
  "vby2",
  "vcy",
  "cx",
  "cy2",
  "vl2",
  "vbest",
  "vbx",
  "vby",
] as const;
/** the six rows of a slot's coefficients (motionField's Mf): za, ua, va, dz, du, dv */
const ROWS = ["za", "ua", "va", "dz", "du", "dv"] as const;
const V128_LOCALS = [
  ...ROWS.map((r) => `${r}U`),
  ...ROWS.map((r) => `${r}W`),
  ...ROWS.map((r) => `${r}R`),
  ...ROWS.map((r) => r.toUpperCase()),
  "W",
  "U",
  "SL",
  "ZB",
  "MZ",
  "RR",
  "DDX",
  "DDY",
  "L2",
  "Q",
  "AX",
  "AY",
  "AL",
  "AQ",
  "LM",
  "BEST",
  "BX",
  "BY",
  "BI",
  "LEAST",
  "GT",
  "BX0",
  "BX1",
  "BY0",
  "BY1",
  "JVX",
  "JVY",
  "JWX",
  "JWY",
  "WMIN",
  "WMAX",
  "SV",
  "NEQ",
  "mU",
  "mX",
  "mA",
  "mT",
  "mL0",
  "mLU",
  "mLV",
  "mLW",
] as const;
const { L, g, st, p, decl } = namedLocals(P, [
  [I32, I32_LOCALS],
  [F32, F32_LOCALS],
  [F64, F64_LOCALS],
  [V128, V128_LOCALS],
]);

const f32x4 = (op: "add" | "sub" | "mul" | "div") =>
  simd({ add: S.f32x4Add, sub: S.f32x4Sub, mul: S.f32x4Mul, div: S.f32x4Div }[op]);

/**
 * The coefficients of slot `s` into the locals (u and w coefficients when the slot changes,
 * the row terms v · c_v + c_1 when it or the row changes)
 */
function ensure(): number[] {
  const splat = (offset: number) => [...g("d"), ...vmem(S.load32Splat, offset)];
  return [
    ...g("s"),
    ...g("cur"),
    OP.i32Ne,
    OP.if,
    OP.void,
    ...g("s"),
    ...st("cur"),
    ...p("m"),
    ...g("s"),
    ...i32c(96),
    OP.i32Mul,
    OP.i32Add,
    ...st("d"),
    ...ROWS.flatMap((r, k) => [...splat(16 * k), ...st(`${r}U`), ...splat(16 * k + 12), ...st(`${r}W`)]),
    ...i32c(-1),
    ...st("cy"),
    OP.end,
    ...g("y"),
    ...g("cy"),
    OP.i32Ne,
    OP.if,
    OP.void,
    ...g("y"),
    ...st("cy"),
    ...ROWS.flatMap((r, k) => [
      ...splat(16 * k + 4),
      ...g("y"),
      OP.f32ConvertI32S,
      ...simd(S.f32x4Splat),
      ...f32x4("mul"),
      ...splat(16 * k + 8),
      ...f32x4("add"),
      ...st(`${r}R`),
    ]),
    OP.end,
  ];
}

/** the field of the four pixels (W, U) with the held coefficients: DDX, DDY, L2, Q (0 where not in front at both ends) */
function compute(): number[] {
  /** ((c_u · u) + row term) + (c_w · w) */
  const row = (r: (typeof ROWS)[number]) => [
    ...g(`${r}U`),
    ...g("U"),
    ...f32x4("mul"),
    ...g(`${r}R`),
    ...f32x4("add"),
    ...g(`${r}W`),
    ...g("W"),
    ...f32x4("mul"),
    ...f32x4("add"),
    ...st(r.toUpperCase()),
  ];
  /** ((d · za) − (a · dz)) · r, 0 where not MZ */
  const disp = (d: string, a: string) => [
    ...g(d),
    ...g("ZA"),
    ...f32x4("mul"),
    ...g(a),
    ...g("DZ"),
    ...f32x4("mul"),
    ...f32x4("sub"),
    ...g("RR"),
    ...f32x4("mul"),
    ...g("MZ"),
    ...simd(S.and),
  ];
  return [
    ...ROWS.flatMap(row),
    ...g("ZA"),
    ...g("DZ"),
    ...f32x4("add"),
    ...st("ZB"),
    // in front of the camera at both ends
    ...g("ZA"),
    ...ZERO,
    ...simd(S.f32x4Gt),
    ...g("ZB"),
    ...ZERO,
    ...simd(S.f32x4Gt),
    ...simd(S.and),
    ...st("MZ"),
    ...f32x4c(1),
    ...g("ZA"),
    ...g("ZB"),
    ...f32x4("mul"),
    ...f32x4("div"),
    ...st("RR"),
    ...disp("DU", "UA"),
    ...st("DDX"),
    ...disp("DV", "VA"),
    ...st("DDY"),
    ...lengthAndReach(),
  ];
}

/** L2 = DDX² + DDY², Q = min(65534, ⌊64 · √L2⌋) */
function lengthAndReach(): number[] {
  return [
    ...g("DDX"),
    ...g("DDX"),
    ...f32x4("mul"),
    ...g("DDY"),
    ...g("DDY"),
    ...f32x4("mul"),
    ...f32x4("add"),
    ...st("L2"),
    // reach = min(65534, ⌊64 · √l2⌋)
    ...g("L2"),
    ...simd(S.f32x4Sqrt),
    ...f32x4c(64),
    ...f32x4("mul"),
    ...simd(S.i32x4TruncSatF32x4U),
    ...i32x4c(65534, 65534, 65534, 65534),
    ...simd(S.i32x4MinU),
    ...st("Q"),
  ];
}

/** slot `s` is a moving slot: s < slots and vf[s] (vf[slots] is 0) */
const valid = [
  ...p("vf"),
  ...g("s"),
  ...p("slots"),
  ...g("s"),
  ...p("slots"),
  OP.i32LtU,
  OP.select,
  OP.i32Add,
  ...mem(OP.i32Load8U, 0),
];
/** one = slot === one ? one : one === −2 ? slot : −1 (the tile's one slot seen, −1: more than one) */
const oneStep = (slot: number[]) => [
  ...g("one"),
  ...slot,
  ...i32c(-1),
  ...g("one"),
  ...i32c(-2),
  OP.i32Eq,
  OP.select,
  ...slot,
  ...g("one"),
  OP.i32Eq,
  OP.select,
  ...st("one"),
];
const lane = (v: string, l: number) => [...g(v), ...simd(S.i32x4ExtractLane), l];

/** four pixels x … x + 3 of row y */
function quad(): number[] {
  const zeroAll = ["DDX", "DDY", "L2", "Q"].flatMap((v) => [...ZERO, ...st(v)]);
  /** lane j's slot, when no lane before it has that slot and it moves: its field merged into AX … AQ */
  const laneStep = (j: number) => {
    const dup = Array.from({ length: j }, (_, k) => [...lane("SL", k), ...g("s"), OP.i32Eq]).flatMap(
      (c, k) => (k === 0 ? c : [...c, OP.i32Or]),
    );
    return [
      ...lane("SL", j),
      ...st("s"),
      ...oneStep(g("s")),
      ...(j === 0 ? [...i32c(0)] : dup),
      OP.i32Eqz,
      OP.if,
      OP.void,
      ...valid,
      OP.if,
      OP.void,
      ...ensure(),
      ...compute(),
      ...g("SL"),
      ...g("s"),
      ...simd(S.i32x4Splat),
      ...simd(S.i32x4Eq),
      ...st("LM"),
      ...g("count"),
      ...g("LM"),
      ...simd(S.i32x4Bitmask),
      OP.i32Popcnt,
      OP.i32Add,
      ...st("count"),
      ...[
        ["DDX", "AX"],
        ["DDY", "AY"],
        ["L2", "AL"],
        ["Q", "AQ"],
      ].flatMap(([v, a]) => [...g(v!), ...g(a!), ...g("LM"), ...simd(S.bitselect), ...st(a!)]),
      OP.end,
      OP.end,
    ];
  };
  return [
    ...g("y"),
    ...p("ow"),
    OP.i32Mul,
    ...g("x"),
    OP.i32Add,
    ...st("i"),
    ...p("iz"),
    ...g("i"),
    ...i32c(2),
    OP.i32Shl,
    OP.i32Add,
    ...vmem(S.load, 0),
    ...st("W"),
    // slots: word >>> 8 where 1/z > 0, else 0
    ...p("sh"),
    ...g("i"),
    ...i32c(2),
    OP.i32Shl,
    OP.i32Add,
    ...vmem(S.load, 0),
    ...i32c(8),
    ...simd(S.i32x4ShrU),
    ...g("W"),
    ...ZERO,
    ...simd(S.f32x4Gt),
    ...simd(S.and),
    ...st("SL"),
    ...g("x"),
    ...simd(S.i32x4Splat),
    ...LANES,
    ...simd(S.i32x4Add),
    ...simd(S.f32x4ConvertI32x4S),
    ...st("U"),
    ...lane("SL", 0),
    ...st("s"),
    ...g("SL"),
    ...g("s"),
    ...simd(S.i32x4Splat),
    ...simd(S.i32x4Eq),
    ...simd(S.i32x4AllTrue),
    OP.if,
    OP.void,
    // one slot in the four lanes
    ...oneStep(g("s")),
    ...valid,
    OP.if,
    OP.void,
    ...ensure(),
    ...compute(),
    ...g("count"),
    ...i32c(4),
    OP.i32Add,
    ...st("count"),
    OP.else,
    ...zeroAll,
    OP.end,
    OP.else,
    // several: each distinct moving slot once, merged by lane
    ...["AX", "AY", "AL", "AQ"].flatMap((v) => [...ZERO, ...st(v)]),
    ...laneStep(0),
    ...laneStep(1),
    ...laneStep(2),
    ...laneStep(3),
    ...g("AX"),
    ...st("DDX"),
    ...g("AY"),
    ...st("DDY"),
    ...g("AL"),
    ...st("L2"),
    ...g("AQ"),
    ...st("Q"),
    OP.end,
    ...track(),
  ];
}

/** the four pixels' (i) results DDX, DDY, L2, Q: reach (u16) stored, the tile's least, its longest (strictly longer only) */
function track(): number[] {
  const sel = (v: string, old: string) => [...g(v), ...g(old), ...g("GT"), ...simd(S.bitselect), ...st(old)];
  return [
    ...p("reach"),
    ...g("i"),
    ...i32c(1),
    OP.i32Shl,
    OP.i32Add,
    ...g("Q"),
    ...g("Q"),
    ...simd(S.i16x8NarrowI32x4U),
    ...simd(S.store64Lane),
    0,
    0,
    0,
    ...g("LEAST"),
    ...g("Q"),
    ...simd(S.i32x4MinU),
    ...st("LEAST"),
    ...g("L2"),
    ...g("BEST"),
    ...simd(S.f32x4Gt),
    ...st("GT"),
    ...sel("L2", "BEST"),
    ...sel("DDX", "BX"),
    ...sel("DDY", "BY"),
    ...g("i"),
    ...simd(S.i32x4Splat),
    ...LANES,
    ...simd(S.i32x4Add),
    ...g("BI"),
    ...g("GT"),
    ...simd(S.bitselect),
    ...st("BI"),
  ];
}

/** the tile's half extent in u, px (its 8 columns' centres about its centre) */
const HU = 3.5;

/**
 * The model of rasterizer.ts tileModel for slot s (its f64 maps at m64 + 192 s) over the tile
 * (wmin, wmax set): the displacement and its derivatives into LX0 … LYW, ok = 1 when the
 * remainder's bound is within the tolerance (lin: f64 [0]) and the surface stays in front
 */
function model(): number[] {
  const M = (k: number) => [...g("b"), ...mem(OP.f64Load, 3, 64 + 8 * (k - 8))];
  const absM = (k: number) => [...M(k), OP.f64Abs];
  const mul = (a: number[], b: number[]) => [...a, ...b, OP.f64Mul];
  const add = (a: number[], b: number[]) => [...a, ...b, OP.f64Add];
  /** the pair (m_k, m_k+4) (x and y rows) of the end at b */
  const P = (k: number) => [...g("b"), ...vmem(S.load, 16 * k)];
  const f64x2 = (op: "add" | "sub" | "mul") =>
    simd({ add: S.f64x2Add, sub: S.f64x2Sub, mul: S.f64x2Mul }[op]);
  const splat = (v: number[]) => [...v, ...simd(S.f64x2Splat)];
  const vmul = (a: number[], b: number[]) => [...a, ...b, ...f64x2("mul")];
  const vadd = (a: number[], b: number[]) => [...a, ...b, ...f64x2("add")];
  const acc = (dst: string, term: number[]) => [...g(dst), ...term, ...f64x2("add"), ...st(dst)];
  const end = (e: number) => {
    const sign = splat(f64c(e === 0 ? -1 : 1));
    /** sign · ((m_k − X · m_z) · (1/Z)), x and y */
    const deriv = (k: number, kz: number) => [
      ...sign,
      ...P(k),
      ...g("mX"),
      ...splat(M(kz)),
      ...f64x2("mul"),
      ...f64x2("sub"),
      ...splat(g("iZ")),
      ...f64x2("mul"),
      ...f64x2("mul"),
    ];
    return [
      ...p("m64"),
      ...g("s"),
      ...i32c(192),
      OP.i32Mul,
      OP.i32Add,
      ...i32c(96 * e),
      OP.i32Add,
      ...st("b"),
      // Z = ((m8 · uc + m9 · vc) + m10) + m11 · wc; G likewise of |m| and the half extents
      ...add(add(add(mul(M(8), g("uc")), mul(M(9), g("vc"))), M(10)), mul(M(11), g("wc"))),
      ...st("Z"),
      ...add(add(mul(absM(8), f64c(HU)), mul(absM(9), g("hv"))), mul(absM(11), g("hw"))),
      ...st("G"),
      ...g("Z"),
      ...g("G"),
      OP.f64Sub,
      ...st("Zm"),
      ...g("ok"),
      ...g("Zm"),
      ...f64c(0),
      OP.f64Gt,
      OP.i32And,
      ...st("ok"),
      ...f64c(1),
      ...g("Z"),
      OP.f64Div,
      ...st("iZ"),
      ...f64c(1),
      ...g("Zm"),
      OP.f64Div,
      ...st("iZm"),
      // x and y in the lanes: U, X = U · (1/Z), A
      ...vadd(
        vadd(vadd(vmul(P(0), splat(g("uc"))), vmul(P(1), splat(g("vc")))), P(2)),
        vmul(P(3), splat(g("wc"))),
      ),
      ...st("mU"),
      ...g("mU"),
      ...splat(g("iZ")),
      ...f64x2("mul"),
      ...st("mX"),
      ...vadd(
        vadd(
          vmul([...P(0), ...simd(S.f64x2Abs)], splat(f64c(HU))),
          vmul([...P(1), ...simd(S.f64x2Abs)], splat(g("hv"))),
        ),
        vmul([...P(3), ...simd(S.f64x2Abs)], splat(g("hw"))),
      ),
      ...st("mA"),
      // the remainder's bound, x then y: (G · (A + ((|U| + A) · (1/Zm)) · G)) · ((1/Zm) · (1/Zm))
      ...splat(g("G")),
      ...g("mA"),
      ...g("mU"),
      ...simd(S.f64x2Abs),
      ...g("mA"),
      ...f64x2("add"),
      ...splat(g("iZm")),
      ...f64x2("mul"),
      ...splat(g("G")),
      ...f64x2("mul"),
      ...f64x2("add"),
      ...f64x2("mul"),
      ...splat([...g("iZm"), ...g("iZm"), OP.f64Mul]),
      ...f64x2("mul"),
      ...st("mT"),
      ...g("bound"),
      ...g("mT"),
      ...simd(S.f64x2ExtractLane),
      0,
      OP.f64Add,
      ...g("mT"),
      ...simd(S.f64x2ExtractLane),
      1,
      OP.f64Add,
      ...st("bound"),
      ...acc("mL0", [...sign, ...g("mX"), ...f64x2("mul")]),
      ...acc("mLU", deriv(0, 8)),
      ...acc("mLV", deriv(1, 9)),
      ...acc("mLW", deriv(3, 11)),
    ];
  };
  const lanes = (v: string, x: string, y: string) => [
    ...g(v),
    ...simd(S.f64x2ExtractLane),
    0,
    ...st(x),
    ...g(v),
    ...simd(S.f64x2ExtractLane),
    1,
    ...st(y),
  ];
  return [
    ...g("y1"),
    ...g("y0"),
    OP.i32Sub,
    ...i32c(1),
    OP.i32Sub,
    OP.f64ConvertI32S,
    ...f64c(2),
    OP.f64Div,
    ...st("hv"),
    ...g("wmax"),
    ...g("wmin"),
    OP.f64Sub,
    ...f64c(2),
    OP.f64Div,
    ...st("hw"),
    ...g("x0"),
    OP.f64ConvertI32S,
    ...f64c(HU),
    OP.f64Add,
    ...st("uc"),
    ...g("y0"),
    OP.f64ConvertI32S,
    ...g("hv"),
    OP.f64Add,
    ...st("vc"),
    ...g("wmin"),
    ...g("wmax"),
    OP.f64Add,
    ...f64c(2),
    OP.f64Div,
    ...st("wc"),
    ...f64c(0),
    ...st("bound"),
    ...["mL0", "mLU", "mLV", "mLW"].flatMap((v) => [...ZERO, ...st(v)]),
    ...i32c(1),
    ...st("ok"),
    ...end(0),
    ...end(1),
    ...lanes("mL0", "LX0", "LY0"),
    ...lanes("mLU", "LXU", "LYU"),
    ...lanes("mLV", "LXV", "LYV"),
    ...lanes("mLW", "LXW", "LYW"),
    ...g("ok"),
    ...g("bound"),
    ...p("lin"),
    ...mem(OP.f64Load, 3, 0),
    OP.f64Le,
    OP.i32And,
    ...st("ok"),
  ];
}

/**
 * A full tile (8 px wide) of one moving slot whose linear model is within the tolerance: its
 * pixels from the model (rasterizer.ts motionTiles' linear branch), lin = 1; else lin = 0
 */
/** body(c) over the two quads (c = 0, 1) of row y of the tile at x0, W loaded and i set */
const quads = (body: (c: number) => number[]) =>
  [0, 1].flatMap((c) => [
    ...g("y"),
    ...p("ow"),
    OP.i32Mul,
    ...g("x0"),
    OP.i32Add,
    ...i32c(4 * c),
    OP.i32Add,
    ...st("i"),
    ...p("iz"),
    ...g("i"),
    ...i32c(2),
    OP.i32Shl,
    OP.i32Add,
    ...vmem(S.load, 0),
    ...st("W"),
    ...body(c),
  ]);

function linearTile(): number[] {
  const scan = () => [
    ...g("NEQ"),
    ...p("sh"),
    ...g("i"),
    ...i32c(2),
    OP.i32Shl,
    OP.i32Add,
    ...vmem(S.load, 0),
    ...i32c(8),
    ...simd(S.i32x4ShrU),
    ...g("W"),
    ...ZERO,
    ...simd(S.f32x4Gt),
    ...simd(S.and),
    ...g("SV"),
    ...simd(S.i32x4Ne),
    ...simd(S.or),
    ...st("NEQ"),
    ...g("WMIN"),
    ...g("W"),
    ...simd(S.f32x4Min),
    ...st("WMIN"),
    ...g("WMAX"),
    ...g("W"),
    ...simd(S.f32x4Max),
    ...st("WMAX"),
  ];
  /** a horizontal min / max of v (f32x4) as f64 */
  const reduce = (v: string, op: number) => [
    ...[8, 4].flatMap((b) => [
      ...g(v),
      ...g(v),
      ...g(v),
      ...shuffle(Array.from({ length: 16 }, (_, k) => (k + b) % 16)),
      ...simd(op),
      ...st(v),
    ]),
    ...g(v),
    ...simd(S.f32x4ExtractLane),
    0,
    OP.f64PromoteF32,
  ];
  /** fr(k + lu · (j − 3.5)) for column j of component c (k: its row-0 constant kx / ky) */
  const base = (j: number, c: 0 | 1) => [
    ...g("pa"),
    ...g(c === 0 ? "kx" : "ky"),
    ...g(c === 0 ? "LXU" : "LYU"),
    ...f64c(j - HU),
    OP.f64Mul,
    OP.f64Add,
    OP.f32DemoteF64,
    ...mem(OP.f32Store, 2, 32 * c + 4 * j),
  ];
  /** k = (l0 − lv · hv) − lw · wc */
  const constant = (c: 0 | 1) => {
    const [l0, lv, lw] = c === 0 ? ["LX0", "LXV", "LXW"] : ["LY0", "LYV", "LYW"];
    return [
      ...g(l0),
      ...g(lv),
      ...g("hv"),
      OP.f64Mul,
      OP.f64Sub,
      ...g(lw),
      ...g("wc"),
      OP.f64Mul,
      OP.f64Sub,
      ...st(c === 0 ? "kx" : "ky"),
    ];
  };
  return [
    ...i32c(0),
    ...st("isLin"),
    ...g("x1"),
    ...g("x0"),
    OP.i32Sub,
    ...i32c(8),
    OP.i32Eq,
    OP.if,
    OP.void,
    // the slot of the tile's first pixel, moving; every pixel of it; 1/z's range
    ...g("y0"),
    ...p("ow"),
    OP.i32Mul,
    ...g("x0"),
    OP.i32Add,
    ...st("i"),
    ...p("sh"),
    ...g("i"),
    ...i32c(2),
    OP.i32Shl,
    OP.i32Add,
    ...mem(OP.i32Load, 2),
    ...i32c(8),
    OP.i32ShrU,
    ...i32c(0),
    ...p("iz"),
    ...g("i"),
    ...i32c(2),
    OP.i32Shl,
    OP.i32Add,
    ...mem(OP.f32Load, 2),
    ...f32c(0),
    OP.f32Gt,
    OP.select,
    ...st("s"),
    ...valid,
    OP.if,
    OP.void,
    ...g("s"),
    ...simd(S.i32x4Splat),
    ...st("SV"),
    ...ZERO,
    ...st("NEQ"),
    ...f32x4c(Number.POSITIVE_INFINITY),
    ...st("WMIN"),
    ...f32x4c(Number.NEGATIVE_INFINITY),
    ...st("WMAX"),
    ...g("y0"),
    ...st("y"),
    ...loopWhile([...g("y"), ...g("y1"), OP.i32GeS], [...quads(scan), ...inc(L.y!, 1)]),
    ...g("NEQ"),
    ...simd(S.anyTrue),
    OP.i32Eqz,
    OP.if,
    OP.void,
    ...reduce("WMIN", S.f32x4Min),
    ...st("wmin"),
    ...reduce("WMAX", S.f32x4Max),
    ...st("wmax"),
    ...model(),
    ...g("ok"),
    OP.if,
    OP.void,
    // the tile's parameters for the fill: the first row's bases, then the v and 1/z steps
    ...g("t"),
    ...i32c(LIN_BYTES),
    OP.i32Mul,
    ...p("tp"),
    OP.i32Add,
    ...st("pa"),
    ...constant(0),
    ...constant(1),
    ...[0, 1, 2, 3, 4, 5, 6, 7].flatMap((j) => [...base(j, 0), ...base(j, 1)]),
    ...(["LXV", "LYV", "LXW", "LYW"] as const).flatMap((v, k) => [
      ...g("pa"),
      ...g(v),
      OP.f32DemoteF64,
      ...mem(OP.f32Store, 2, 64 + 4 * k),
    ]),
    ...summary(),
    ...g("count"),
    ...g("y1"),
    ...g("y0"),
    OP.i32Sub,
    ...i32c(3),
    OP.i32Shl,
    OP.i32Add,
    ...st("count"),
    ...i32c(1),
    ...st("isLin"),
    // the linear tiles counted at lin + 8
    ...p("lin"),
    ...p("lin"),
    ...mem(OP.i32Load, 2, 8),
    ...i32c(1),
    OP.i32Add,
    ...mem(OP.i32Store, 2, 8),
    OP.end,
    OP.end,
    OP.end,
    OP.end,
  ];
}

/** bytes of a linear tile's parameters: 16 f32 bases (x: 8 columns, y: 8), the v and 1/z steps (x, y) */
const LIN_BYTES = 80;

/**
 * A linear tile's record (rasterizer.ts motionTiles' linear branch): its slot; its longest
 * displacement at the corners of its box in (u, v, 1/z) (the first longest of the 8 in order);
 * its least reach from leastOf's bound; not ready (its reach written by a fill)
 */
function summary(): number[] {
  const at = (param: keyof typeof P, shift: number) => [
    ...p(param),
    ...g("t"),
    ...i32c(shift),
    OP.i32Shl,
    OP.i32Add,
  ];
  /** ((l0 ± a) ± b) ± c (the corner's signs: k's bits 0, 1, 2) */
  const vertex = (k: number) => {
    const pm = (v: string, bit: number) => [...g(v), ...(k & bit ? [] : [OP.f64Neg]), OP.f64Add];
    const comp = (l0: string, a: string, b: string, c: string) => [
      ...g(l0),
      ...pm(a, 1),
      ...pm(b, 2),
      ...pm(c, 4),
    ];
    return [
      ...comp("LX0", "vax", "vbx2", "vcx"),
      ...st("cx"),
      ...comp("LY0", "vay", "vby2", "vcy"),
      ...st("cy2"),
      ...g("cx"),
      ...g("cx"),
      OP.f64Mul,
      ...g("cy2"),
      ...g("cy2"),
      OP.f64Mul,
      OP.f64Add,
      ...st("vl2"),
      ...g("vl2"),
      ...g("vbest"),
      OP.f64Gt,
      OP.if,
      OP.void,
      ...g("vl2"),
      ...st("vbest"),
      ...g("cx"),
      ...st("vbx"),
      ...g("cy2"),
      ...st("vby"),
      OP.end,
    ];
  };
  const times = (a: string, b: number[], dst: string) => [...g(a), ...b, OP.f64Mul, ...st(dst)];
  const sumAbs = (a: string, b: string) => [...g(a), OP.f64Abs, ...g(b), OP.f64Abs, OP.f64Add];
  return [
    ...f64c(0),
    ...st("vbest"),
    ...f64c(0),
    ...st("vbx"),
    ...f64c(0),
    ...st("vby"),
    ...times("LXU", f64c(HU), "vax"),
    ...times("LXV", g("hv"), "vbx2"),
    ...times("LXW", g("hw"), "vcx"),
    ...times("LYU", f64c(HU), "vay"),
    ...times("LYV", g("hv"), "vby2"),
    ...times("LYW", g("hw"), "vcy"),
    ...[0, 1, 2, 3, 4, 5, 6, 7].flatMap(vertex),
    ...at("tSlot", 2),
    ...g("s"),
    ...mem(OP.i32Store, 2),
    ...at("tL2", 2),
    ...g("vbest"),
    OP.f32DemoteF64,
    ...mem(OP.f32Store, 2),
    ...at("tVx", 2),
    ...g("vbx"),
    OP.f32DemoteF64,
    ...mem(OP.f32Store, 2),
    ...at("tVy", 2),
    ...g("vby"),
    OP.f32DemoteF64,
    ...mem(OP.f32Store, 2),
    // m = √(x0² + y0²) − ((|∂x/∂u| + |∂y/∂u|) · 3.5 + (… v) · hv + (… 1/z) · hw) − 1/1024
    ...g("LX0"),
    ...g("LX0"),
    OP.f64Mul,
    ...g("LY0"),
    ...g("LY0"),
    OP.f64Mul,
    OP.f64Add,
    OP.f64Sqrt,
    ...sumAbs("LXU", "LYU"),
    ...f64c(HU),
    OP.f64Mul,
    ...sumAbs("LXV", "LYV"),
    ...g("hv"),
    OP.f64Mul,
    OP.f64Add,
    ...sumAbs("LXW", "LYW"),
    ...g("hw"),
    OP.f64Mul,
    OP.f64Add,
    OP.f64Sub,
    ...f64c(1 / 1024),
    OP.f64Sub,
    ...st("cx"),
    // least = m > 0 ? min(65534, ⌊64 m⌋) : 0
    ...at("tLeast", 2),
    ...g("cx"),
    ...f64c(0),
    OP.f64Gt,
    OP.if,
    I32,
    ...g("cx"),
    ...f64c(64),
    OP.f64Mul,
    OP.f64Floor,
    ...st("cy2"),
    ...g("cy2"),
    ...f64c(65534),
    ...g("cy2"),
    ...f64c(65534),
    OP.f64Lt,
    OP.select,
    OP.i32TruncF64S,
    OP.else,
    ...i32c(0),
    OP.end,
    ...mem(OP.i32Store, 2),
    ...p("ready"),
    ...g("t"),
    OP.i32Add,
    ...i32c(0),
    ...mem(OP.i32Store8, 0),
  ];
}

/** the tile's record from its lanes: the longest (ties: the smaller pixel index), the least reach */
function tileEnd(): number[] {
  const at = (param: keyof typeof P) => [...p(param), ...g("t"), ...i32c(2), OP.i32Shl, OP.i32Add];
  const f32lane = (v: string, l: number) => [...g(v), ...simd(S.f32x4ExtractLane), l];
  const take = (l: number) => [
    // lane l when longer, or as long at a smaller index
    ...f32lane("BEST", l),
    ...g("best"),
    OP.f32Gt,
    ...f32lane("BEST", l),
    ...g("best"),
    OP.f32Eq,
    ...lane("BI", l),
    ...g("bi"),
    OP.i32LtS,
    OP.i32And,
    OP.i32Or,
    OP.if,
    OP.void,
    ...f32lane("BEST", l),
    ...st("best"),
    ...lane("BI", l),
    ...st("bi"),
    ...i32c(l),
    ...st("li"),
    OP.end,
  ];
  /** lane `li` of v (f32x4) */
  const pick = (v: string) => [
    ...f32lane(v, 3),
    ...f32lane(v, 2),
    ...g("li"),
    ...i32c(3),
    OP.i32Eq,
    OP.select,
    ...f32lane(v, 1),
    ...f32lane(v, 0),
    ...g("li"),
    ...i32c(1),
    OP.i32Eq,
    OP.select,
    ...g("li"),
    ...i32c(2),
    OP.i32GeS,
    OP.select,
  ];
  const hmin = [8, 4].flatMap((b) => [
    ...g("LEAST"),
    ...g("LEAST"),
    ...g("LEAST"),
    ...shuffle(Array.from({ length: 16 }, (_, k) => (k + b) % 16)),
    ...simd(S.i32x4MinU),
    ...st("LEAST"),
  ]);
  return [
    ...f32lane("BEST", 0),
    ...st("best"),
    ...lane("BI", 0),
    ...st("bi"),
    ...i32c(0),
    ...st("li"),
    ...take(1),
    ...take(2),
    ...take(3),
    ...at("tSlot"),
    ...g("one"),
    ...mem(OP.i32Store, 2),
    ...at("tL2"),
    ...g("best"),
    ...mem(OP.f32Store, 2),
    ...at("tVx"),
    ...pick("BX"),
    ...mem(OP.f32Store, 2),
    ...at("tVy"),
    ...pick("BY"),
    ...mem(OP.f32Store, 2),
    ...hmin,
    ...at("tLeast"),
    ...lane("LEAST", 0),
    ...mem(OP.i32Store, 2),
  ];
}

/** `field(...)` → the number of pixels of moving slots (motionTiles' return) */
/**
 * A linear tile's reach (mode 1): the model's values from its parameters (LIN_BYTES at tp) per
 * pixel, as pass 0 would have written them; then ready
 */
function fillTile(): number[] {
  const evalQuad = (c: number) => [
    ...g(c === 0 ? "BX0" : "BX1"),
    ...g("JWX"),
    ...g("W"),
    ...f32x4("mul"),
    ...f32x4("add"),
    ...st("DDX"),
    ...g(c === 0 ? "BY0" : "BY1"),
    ...g("JWY"),
    ...g("W"),
    ...f32x4("mul"),
    ...f32x4("add"),
    ...st("DDY"),
    ...lengthAndReach(),
    ...p("reach"),
    ...g("i"),
    ...i32c(1),
    OP.i32Shl,
    OP.i32Add,
    ...g("Q"),
    ...g("Q"),
    ...simd(S.i16x8NarrowI32x4U),
    ...simd(S.store64Lane),
    0,
    0,
    0,
  ];
  const step = (v: string, j: string) => [...g(v), ...g(j), ...f32x4("add"), ...st(v)];
  return [
    ...g("t"),
    ...i32c(LIN_BYTES),
    OP.i32Mul,
    ...p("tp"),
    OP.i32Add,
    ...st("pa"),
    ...(["BX0", "BX1", "BY0", "BY1"] as const).flatMap((v, k) => [
      ...g("pa"),
      ...vmem(S.load, 16 * k),
      ...st(v),
    ]),
    ...(["JVX", "JVY", "JWX", "JWY"] as const).flatMap((v, k) => [
      ...g("pa"),
      ...vmem(S.load32Splat, 64 + 4 * k),
      ...st(v),
    ]),
    ...g("y0"),
    ...st("y"),
    ...loopWhile(
      [...g("y"), ...g("y1"), OP.i32GeS],
      [
        ...quads(evalQuad),
        ...step("BX0", "JVX"),
        ...step("BX1", "JVX"),
        ...step("BY0", "JVY"),
        ...step("BY1", "JVY"),
        ...inc(L.y!, 1),
      ],
    ),
    ...p("ready"),
    ...g("t"),
    OP.i32Add,
    ...i32c(1),
    ...mem(OP.i32Store8, 0),
  ];
}

/**
 * `field(...)` → the number of pixels of moving slots (motionTiles' return). mode 0: the pass
 * (linear tiles: their record and parameters, not ready); mode 1: the reach of the tiles marked in
 * `need` that are not ready
 */
function fieldBody(): number[] {
  const min = (a: number[], b: number[]) => [...a, ...b, ...a, ...b, OP.i32LtS, OP.select];
  const rows = [
    ...g("x0"),
    ...st("x"),
    ...loopWhile([...g("x"), ...g("x1"), OP.i32GeS], [...quad(), ...inc(L.x!, 4)]),
    ...inc(L.y!, 1),
  ];
  const tile = [
    ...g("ty"),
    ...p("cols"),
    OP.i32Mul,
    ...g("tx"),
    OP.i32Add,
    ...st("t"),
    ...g("tx"),
    ...i32c(3),
    OP.i32Shl,
    ...st("x0"),
    ...min(p("ow"), [...g("x0"), ...i32c(8), OP.i32Add]),
    ...st("x1"),
    ...g("ty"),
    ...i32c(3),
    OP.i32Shl,
    ...st("y0"),
    ...min(p("oh"), [...g("y0"), ...i32c(8), OP.i32Add]),
    ...st("y1"),
    ...p("mode"),
    OP.if,
    OP.void,
    // fill: needed and not ready
    ...p("need"),
    ...g("t"),
    OP.i32Add,
    ...mem(OP.i32Load8U, 0),
    ...p("ready"),
    ...g("t"),
    OP.i32Add,
    ...mem(OP.i32Load8U, 0),
    OP.i32Eqz,
    OP.i32And,
    OP.if,
    OP.void,
    ...fillTile(),
    OP.end,
    OP.else,
    ...i32c(-2),
    ...st("one"),
    ...ZERO,
    ...st("BEST"),
    ...ZERO,
    ...st("BX"),
    ...ZERO,
    ...st("BY"),
    ...ZERO,
    ...st("BI"),
    ...i32x4c(65535, 65535, 65535, 65535),
    ...st("LEAST"),
    ...linearTile(),
    ...g("isLin"),
    OP.i32Eqz,
    OP.if,
    OP.void,
    ...g("y0"),
    ...st("y"),
    ...loopWhile([...g("y"), ...g("y1"), OP.i32GeS], rows),
    ...tileEnd(),
    OP.end,
    OP.end,
    ...inc(L.tx!, 1),
  ];
  return [
    ...i32c(-1),
    ...st("cur"),
    ...p("ty0"),
    ...st("ty"),
    ...loopWhile(
      [...g("ty"), ...p("ty1"), OP.i32GeS],
      [...p("tx0"), ...st("tx"), ...loopWhile([...g("tx"), ...p("tx1"), OP.i32GeS], tile), ...inc(L.ty!, 1)],
    ),
    ...g("count"),
    OP.end,
  ];
}

export function motionModuleBytes(): Uint8Array {
  return kernelModule(
    [funcType(Array(NP).fill(I32), [I32])],
    [{ name: "field", type: 0, body: [...decl, ...fieldBody()] }],
  );
}

type FieldFn = (...args: number[]) => number;

/**
 * The kernel of one Rasterizer: its memory holds the rasterizer's 1/z and word buffers (so a
 * render writes them where the kernel reads them), the slots' coefficients and flags, the reach
 * it writes and the tiles' records. Sized once in the constructor (memory never grows after it:
 * the views stay valid).
 */
export class MotionKernel {
  private readonly fn: FieldFn;
  readonly invZ: Float32Array;
  readonly shade: Uint32Array;
  /** per slot 24 numbers (motionField's Mf: rows za, ua, va, dz, du, dv × u, v, 1, 1/z) */
  readonly M: Float32Array;
  /** per slot: 1 = moving; index `slots` must be 0 */
  readonly flags: Uint8Array;
  readonly reach: Uint16Array;
  readonly tSlot: Int32Array;
  readonly tL2: Float32Array;
  readonly tVx: Float32Array;
  readonly tVy: Float32Array;
  readonly tLeast: Int32Array;
  /** per slot 24 numbers (motionField's M, f64), per end: the u and v rows' coefficients in pairs
   * (u₀, v₀, u₁, v₁, u₂, v₂, u₃, v₃), then the z row; for the linear tiles */
  readonly M64: Float64Array;
  /** [0] the linear model's tolerance, px (then the kernel's scratch) */
  readonly lin: Float64Array;
  /** [2]: the tiles the last run took from the linear model */
  readonly linCount: Int32Array;
  /** per tile: 1 = its reach is written (mode 0 clears it for linear tiles; set it to 1 before) */
  readonly ready: Uint8Array;
  /** per tile: 1 = a fill (mode 1) writes its reach */
  readonly need: Uint8Array;
  private readonly off: Record<
    | "iz"
    | "sh"
    | "m"
    | "vf"
    | "reach"
    | "tSlot"
    | "tL2"
    | "tVx"
    | "tVy"
    | "tLeast"
    | "m64"
    | "lin"
    | "need"
    | "ready"
    | "tp",
    number
  >;

  /** `pixels`: of the image drawn (and of the output: no remap); `tiles`: the most tiles a field has */
  constructor(module: WasmModule, pixels: number, tiles: number) {
    const inst = new (wasm as WasmApi).Instance(module, {});
    const memory = inst.exports.mem as WasmMemory;
    this.fn = inst.exports.field as FieldFn;
    let at = 0;
    const take = (bytes: number) => {
      const o = at;
      at = align16(at + bytes);
      return o;
    };
    this.off = {
      m: take(96 * MAX_SLOTS),
      vf: take(MAX_SLOTS + 1),
      iz: take(4 * pixels + 16),
      sh: take(4 * pixels + 16),
      reach: take(2 * pixels + 16),
      tSlot: take(4 * tiles),
      tL2: take(4 * tiles),
      tVx: take(4 * tiles),
      tVy: take(4 * tiles),
      tLeast: take(4 * tiles),
      m64: take(192 * MAX_SLOTS),
      lin: take(16),
      need: take(tiles),
      ready: take(tiles),
      tp: take(LIN_BYTES * tiles),
    };
    const have = memory.buffer.byteLength;
    if (at > have) memory.grow(Math.ceil((at - have) / PAGE));
    const b = memory.buffer;
    const o = this.off;
    this.M = new Float32Array(b, o.m, 24 * MAX_SLOTS);
    this.flags = new Uint8Array(b, o.vf, MAX_SLOTS + 1);
    this.invZ = new Float32Array(b, o.iz, pixels);
    this.shade = new Uint32Array(b, o.sh, pixels);
    this.reach = new Uint16Array(b, o.reach, pixels);
    this.tSlot = new Int32Array(b, o.tSlot, tiles);
    this.tL2 = new Float32Array(b, o.tL2, tiles);
    this.tVx = new Float32Array(b, o.tVx, tiles);
    this.tVy = new Float32Array(b, o.tVy, tiles);
    this.tLeast = new Int32Array(b, o.tLeast, tiles);
    this.M64 = new Float64Array(b, o.m64, 24 * MAX_SLOTS);
    this.lin = new Float64Array(b, o.lin, 1);
    this.linCount = new Int32Array(b, o.lin, 4);
    this.need = new Uint8Array(b, o.need, tiles);
    this.ready = new Uint8Array(b, o.ready, tiles);
  }

  /**
   * mode 0: the pass over tiles tx0 … tx1 − 1, ty0 … ty1 − 1 of 8 px (M, M64, lin[0], flags
   * set; ready 1); mode 1: the reach of those tiles marked in `need` and not ready
   */
  run(
    mode: number,
    slots: number,
    ow: number,
    oh: number,
    cols: number,
    tx0: number,
    tx1: number,
    ty0: number,
    ty1: number,
  ): number {
    const o = this.off;
    return this.fn(
      o.iz,
      o.sh,
      o.m,
      o.vf,
      slots,
      o.reach,
      ow,
      oh,
      cols,
      tx0,
      tx1,
      ty0,
      ty1,
      o.tSlot,
      o.tL2,
      o.tVx,
      o.tVy,
      o.tLeast,
      o.m64,
      o.lin,
      mode,
      o.need,
      o.ready,
      o.tp,
    );
  }
}

let compiled: WasmModule | null | undefined;

/** a kernel for images of `pixels` px and up to `tiles` tiles, or null where WebAssembly SIMD is not available */
export function createMotionKernel(pixels: number, tiles: number): MotionKernel | null {
  if (!LITTLE_ENDIAN) return null;
  if (compiled === undefined) {
    const bytes = motionModuleBytes();
    compiled = wasm?.validate(bytes) ? new wasm.Module(bytes) : null;
  }
  return compiled ? new MotionKernel(compiled, pixels, tiles) : null;
}
