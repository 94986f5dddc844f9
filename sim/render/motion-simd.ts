/**
 * WebAssembly SIMD kernel of Rasterizer.motionField's pixel pass (rasterizer.ts motionPixels), the
 * same results as its JS path, bit for bit (motion-simd.test.ts compares the two): two pixels per
 * step in f64x2 lanes, the JS path's IEEE double operations in the same order (WebAssembly has no
 * fused multiply-add; f32x4.demote_f64x2_zero rounds as Math.fround does), so the per-pixel l2px,
 * the tiles' longest displacement, its vector, the one slot seen and the least l2px are the JS
 * path's values. A pair of pixels of two slots reads each lane's coefficients from its slot (one
 * vector build when the pair of slots changes, and at a new row); the longest displacement per
 * tile is tracked per lane with its x, so that a tie goes to the first pixel as in the JS scan.
 *
 * Used for the frames the blur needs (tiles wanted, no dx/dy, no lens remap; up to MAX_SLOTS
 * colour-table slots); else the JS pass runs. The module is emitted below from its instruction
 * list (no toolchain, no binary in the repo); opcodes: WebAssembly core spec §5.4, SIMD prefix 0xFD.
 */
import {
  F64,
  I32,
  i32c,
  inc,
  PAGE,
  simd,
  uleb,
  V128,
  vmem,
  shuffle,
  wasm,
  type WasmApi,
  type WasmMemory,
  type WasmModule,
  LITTLE_ENDIAN,
  align16,
  loopWhile,
  funcType,
  kernelModule,
  mem,
  namedLocals,
  OP,
  S,
} from "./wasm.ts";

/** colour-table slots the kernel's coefficient area holds (more: the JS pass) */
export const MAX_SLOTS = 1024;

const lane = (op: number, l: number) => [...simd(op), l];
const v128c = (bytes: Uint8Array) => [...simd(S.const), ...bytes];
const f64x2c = (a: number, b: number) => v128c(new Uint8Array(new Float64Array([a, b]).buffer));

// parameters of `field`
const P = {
  iz: 0,
  sh: 1,
  m: 2,
  vf: 3,
  slots: 4,
  l2: 5,
  ow: 6,
  ts: 7,
  cols: 8,
  tx0: 9,
  tx1: 10,
  y0: 11,
  y1: 12,
  tSlot: 13,
  tL2: 14,
  tVx: 15,
  tVy: 16,
  tMin: 17,
} as const;
const NP = 18;
const I32_LOCALS = [
  "y",
  "tx",
  "x",
  "x1",
  "t",
  "one",
  "rowBase",
  "i",
  "s0",
  "s1",
  "v0",
  "v1",
  "c0",
  "c1",
  "k0",
  "k1",
  "count",
  "trow",
  "mA",
  "mB",
  "pick",
] as const;
const F64_LOCALS = ["l0", "l1", "least", "e0", "e1", "best"] as const;
/** the 12 per-pixel coefficients of a slot (M offsets), then the 6 row terms (M offsets of v's factor and the constant) */
const COEF = [0, 3, 4, 7, 8, 11, 12, 15, 16, 19, 20, 23] as const;
const ROWS = [
  [1, 2],
  [5, 6],
  [9, 10],
  [13, 14],
  [17, 18],
  [21, 22],
] as const;
const V128_LOCALS = [
  ...COEF.map((c) => `m${c}`),
  ...ROWS.map(([k]) => `r${k}`),
  "vY",
  "W32",
  "SL",
  "W",
  "U",
  "za",
  "zb",
  "ua",
  "va",
  "ub",
  "vb",
  "r",
  "ddx",
  "ddy",
  "fdx",
  "fdy",
  "LP",
  "VM",
  "LEAST",
  "BEST",
  "BX",
  "BY",
  "BU",
  "L2",
  "GT",
] as const;
const { L, g, st, p, decl } = namedLocals(P, [
  [I32, I32_LOCALS],
  [F64, F64_LOCALS],
  [V128, V128_LOCALS],
]);

/** a · b + c (f64x2, locals by name or code) in the JS path's order: (a·b) + c */
const vmul = (a: number[], b: number[]) => [...a, ...b, ...simd(S.f64x2Mul)];
const vadd = (a: number[], b: number[]) => [...a, ...b, ...simd(S.f64x2Add)];
const vsub = (a: number[], b: number[]) => [...a, ...b, ...simd(S.f64x2Sub)];

/** each lane's 12 coefficients and 6 row terms from its slot (lane 0: c0, lane 1: c1) */
function rebuild(): number[] {
  const out = [
    ...p("m"),
    ...g("c0"),
    ...i32c(192),
    OP.i32Mul,
    OP.i32Add,
    ...st("mA"),
    ...p("m"),
    ...g("c1"),
    ...i32c(192),
    OP.i32Mul,
    OP.i32Add,
    ...st("mB"),
  ];
  const pair = (k: number) => [
    ...g("mA"),
    ...vmem(S.load64Splat, 8 * k),
    ...g("mB"),
    ...mem(OP.f64Load, 3, 8 * k),
    ...lane(S.f64x2ReplaceLane, 1),
  ];
  for (const c of COEF) out.push(...pair(c), ...st(`m${c}`));
  // the row terms M[k]·v + M[k + 1], as the JS path hoists them per row
  for (const [k, k1] of ROWS) out.push(...vadd(vmul(pair(k), g("vY")), pair(k1)), ...st(`r${k}`));
  return out;
}

const zero = v128c(new Uint8Array(16));
/** i = rowBase + x; the address of pixel i in a 4-byte-per-pixel area */
const at4 = (param: keyof typeof P) => [...p(param), ...g("i"), ...i32c(2), OP.i32Shl, OP.i32Add];
const at8 = (param: keyof typeof P) => [...p(param), ...g("i"), ...i32c(3), OP.i32Shl, OP.i32Add];
// one = slot === one ? one : one === −2 ? slot : −1 (the tile's one slot seen, −1: more than one)
const oneStep = (s: string) => [
  ...g("one"),
  ...g(s),
  ...i32c(-1),
  ...g("one"),
  ...i32c(-2),
  OP.i32Eq,
  OP.select,
  ...g(s),
  ...g("one"),
  OP.i32Eq,
  OP.select,
  ...st("one"),
];
// valid: slot < slots and moving (vf[slots] is 0: slots past the table read it)
const valid = (s: string, v: string) => [
  ...p("vf"),
  ...g(s),
  ...p("slots"),
  ...g(s),
  ...p("slots"),
  OP.i32LtU,
  OP.select,
  OP.i32Add,
  ...mem(OP.i32Load8U, 0),
  ...st(v),
];
/** the slots of the pixels whose words and 1/z (f32) are on the stack: word >>> 8 where 1/z > 0, else 0 */
const slotsOf = (w32: string) => [
  ...i32c(8),
  ...simd(S.i32x4ShrU),
  ...g(w32),
  ...zero,
  ...simd(S.f32x4Gt),
  ...simd(S.and),
];
/** rebuild the lanes' coefficients when the lanes' slots (c0, c1) are not those held (k0, k1) */
const ensure = () => [
  ...g("c0"),
  ...g("k0"),
  OP.i32Ne,
  ...g("c1"),
  ...g("k1"),
  OP.i32Ne,
  OP.i32Or,
  OP.if,
  OP.void,
  ...rebuild(),
  ...g("c0"),
  ...st("k0"),
  ...g("c1"),
  ...st("k1"),
  OP.end,
];

/**
 * The field of two pixels in the lanes (their coefficients held): `w` leaves their 1/z (f64x2),
 * `u` their x (f64x2), `vm` the lanes that count by their slot (i64x2 masks; null: both);
 * l2px stored at pixel i + `di` (one: lane 0 alone). Updates LEAST, BEST, BX, BY, BU.
 */
function fieldPair(w: number[], u: number[], vm: number[] | null, di: number, one: boolean): number[] {
  const lin = (a: string, r: string, b: string) => vadd(vadd(vmul(g(a), g("U")), g(r)), vmul(g(b), g("W")));
  const sel = (v: number[], old: string) => [...v, ...g(old), ...g("GT"), ...simd(S.bitselect), ...st(old)];
  const gt0 = (v: string) => [...g(v), ...zero, ...simd(S.f64x2Gt)];
  return [
    ...u,
    ...st("U"),
    ...w,
    ...st("W"),
    // za = (a8·u + rc) + a11·w, and likewise: the JS path's expression order
    ...lin("m8", "r9", "m11"),
    ...st("za"),
    ...lin("m20", "r21", "m23"),
    ...st("zb"),
    // the lanes that count: a moving slot, in front of the camera at both ends (NaN: not)
    ...gt0("za"),
    ...gt0("zb"),
    ...simd(S.and),
    ...(vm === null ? [] : [...vm, ...simd(S.and)]),
    ...st("VM"),
    ...lin("m0", "r1", "m3"),
    ...st("ua"),
    ...lin("m4", "r5", "m7"),
    ...st("va"),
    ...lin("m12", "r13", "m15"),
    ...st("ub"),
    ...lin("m16", "r17", "m19"),
    ...st("vb"),
    ...f64x2c(1, 1),
    ...vmul(g("za"), g("zb")),
    ...simd(S.f64x2Div),
    ...st("r"),
    ...vmul(vsub(vmul(g("ub"), g("za")), vmul(g("ua"), g("zb"))), g("r")),
    ...st("ddx"),
    ...vmul(vsub(vmul(g("vb"), g("za")), vmul(g("va"), g("zb"))), g("r")),
    ...st("ddy"),
    // the squared length of the 32-bit displacement (Math.fround: f32 demote rounds to nearest even)
    ...g("ddx"),
    ...simd(S.f32x4DemoteF64x2Zero),
    ...simd(S.f64x2PromoteLowF32x4),
    ...st("fdx"),
    ...g("ddy"),
    ...simd(S.f32x4DemoteF64x2Zero),
    ...simd(S.f64x2PromoteLowF32x4),
    ...st("fdy"),
    ...vadd(vmul(g("fdx"), g("fdx")), vmul(g("fdy"), g("fdy"))),
    ...g("VM"),
    ...simd(S.and),
    ...st("LP"),
    ...at8("l2"),
    ...g("LP"),
    ...(one ? [...simd(S.store64Lane), 3, ...uleb(8 * di), 0] : [...simd(S.store), 3, ...uleb(8 * di)]),
    // least: 0 where a lane did not count, else LP where LP < least (f64x2.pmin(a, b) = b < a ? b : a,
    // the JS path's `if (lp < least) least = lp`: a NaN never taken)
    ...g("LEAST"),
    ...g("VM"),
    ...simd(S.and),
    ...g("LP"),
    ...simd(S.f64x2Pmin),
    ...st("LEAST"),
    // the longest displacement per lane, strictly longer only (the first one kept), with its x
    ...vadd(vmul(g("ddx"), g("ddx")), vmul(g("ddy"), g("ddy"))),
    ...g("VM"),
    ...simd(S.and),
    ...st("L2"),
    ...g("L2"),
    ...g("BEST"),
    ...simd(S.f64x2Gt),
    ...st("GT"),
    // BEST = BEST < L2 ? L2 : BEST (pmax), the lanes where GT
    ...g("BEST"),
    ...g("L2"),
    ...simd(S.f64x2Pmax),
    ...st("BEST"),
    ...sel(g("ddx"), "BX"),
    ...sel(g("ddy"), "BY"),
    ...sel(g("U"), "BU"),
  ];
}

const splatX = (plus: number[] | null) => [
  ...g("x"),
  OP.f64ConvertI32S,
  ...simd(S.f64x2Splat),
  ...(plus === null ? [] : [...plus, ...simd(S.f64x2Add)]),
];

/**
 * One step: pixels x, x + 1 of row y (dup: pixel x alone, in both lanes — the same pixel twice
 * changes no maximum, minimum or slot; it is counted and stored once).
 */
function pairBody(dup: boolean): number[] {
  const slotOf = (l: number) => [...g("SL"), ...lane(S.i32x4ExtractLane, l)];
  const mask = (v: string) => [...i32c(0), ...g(v), OP.i32Sub, OP.i64ExtendI32S];
  const w32 = dup
    ? [...at4("iz"), ...mem(OP.f32Load, 2), ...simd(S.f32x4Splat)]
    : [...at4("iz"), ...vmem(S.load64Zero, 0)];
  return [
    ...g("rowBase"),
    ...g("x"),
    OP.i32Add,
    ...st("i"),
    ...w32,
    ...st("W32"),
    ...at4("sh"),
    ...(dup ? [...mem(OP.i32Load, 2), ...simd(S.i32x4Splat)] : vmem(S.load64Zero, 0)),
    ...slotsOf("W32"),
    ...st("SL"),
    ...slotOf(0),
    ...st("s0"),
    ...(dup ? [...g("s0"), ...st("s1")] : [...slotOf(1), ...st("s1")]),
    ...oneStep("s0"),
    ...(dup ? [] : oneStep("s1")),
    ...valid("s0", "v0"),
    ...(dup ? [...g("v0"), ...st("v1")] : valid("s1", "v1")),
    ...g("count"),
    ...g("v0"),
    OP.i32Add,
    ...(dup ? [] : [...g("v1"), OP.i32Add]),
    ...st("count"),
    ...g("v0"),
    ...g("v1"),
    OP.i32Or,
    OP.i32Eqz,
    OP.if,
    OP.void,
    // neither pixel of a moving slot: no motion, the tile's least is 0
    ...at8("l2"),
    ...zero,
    ...(dup ? [...simd(S.store64Lane), 3, 0, 0] : [...simd(S.store), 3, 0]),
    ...zero,
    ...st("LEAST"),
    OP.else,
    // the lanes' slots (an invalid lane takes the other's: its result is masked)
    ...g("s0"),
    ...g("s1"),
    ...g("v0"),
    OP.select,
    ...st("c0"),
    ...g("s1"),
    ...g("s0"),
    ...g("v1"),
    OP.select,
    ...st("c1"),
    ...ensure(),
    ...fieldPair(
      [...g("W32"), ...simd(S.f64x2PromoteLowF32x4)],
      splatX(dup ? null : f64x2c(0, 1)),
      dup ? null : [...mask("v0"), ...simd(S.i64x2Splat), ...mask("v1"), ...lane(S.i64x2ReplaceLane, 1)],
      0,
      dup,
    ),
    OP.end,
  ];
}

/**
 * Four pixels x … x + 3: where all four show one slot (most of a frame), the slot and flag work
 * once (a moving slot: its coefficients in both lanes; else no motion); else two pairBody steps.
 */
function quadBody(): number[] {
  return [
    ...g("rowBase"),
    ...g("x"),
    OP.i32Add,
    ...st("i"),
    ...at4("iz"),
    ...vmem(S.load, 0),
    ...st("W32"),
    ...at4("sh"),
    ...vmem(S.load, 0),
    ...slotsOf("W32"),
    ...st("SL"),
    ...g("SL"),
    ...lane(S.i32x4ExtractLane, 0),
    ...st("s0"),
    ...valid("s0", "v0"),
    ...g("SL"),
    ...g("s0"),
    ...simd(S.i32x4Splat),
    ...simd(S.i32x4Eq),
    ...simd(S.i32x4AllTrue),
    OP.if,
    OP.void,
    ...oneStep("s0"),
    ...g("v0"),
    OP.i32Eqz,
    OP.if,
    OP.void,
    // one slot that does not move: no motion, the tile's least is 0
    ...at8("l2"),
    ...zero,
    ...simd(S.store),
    3,
    0,
    ...at8("l2"),
    ...zero,
    ...simd(S.store),
    3,
    16,
    ...zero,
    ...st("LEAST"),
    OP.else,
    ...g("count"),
    ...i32c(4),
    OP.i32Add,
    ...st("count"),
    ...g("s0"),
    ...st("c0"),
    ...g("s0"),
    ...st("c1"),
    ...ensure(),
    ...fieldPair([...g("W32"), ...simd(S.f64x2PromoteLowF32x4)], splatX(f64x2c(0, 1)), null, 0, false),
    ...fieldPair(
      [
        ...g("W32"),
        ...g("W32"),
        ...shuffle([8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7]),
        ...simd(S.f64x2PromoteLowF32x4),
      ],
      splatX(f64x2c(2, 3)),
      null,
      2,
      false,
    ),
    OP.end,
    OP.else,
    ...pairBody(false),
    ...inc(L.x!, 2),
    ...pairBody(false),
    ...inc(L.x!, -2),
    OP.end,
  ];
}

/** the tile's results of this row into its record (the JS path's per-tile update) */
function tileEnd(): number[] {
  const at = (param: keyof typeof P, shift: number) => [
    ...p(param),
    ...g("t"),
    ...i32c(shift),
    OP.i32Shl,
    OP.i32Add,
  ];
  const ex = (v: string, l: number) => [...g(v), ...lane(S.f64x2ExtractLane, l)];
  const pick = (v: string) => [...ex(v, 1), ...ex(v, 0), ...g("pick"), OP.select];
  return [
    ...at("tSlot", 2),
    ...g("one"),
    ...mem(OP.i32Store, 2),
    ...ex("LEAST", 0),
    ...st("l0"),
    ...ex("LEAST", 1),
    ...st("l1"),
    ...g("l1"),
    ...g("l0"),
    ...g("l1"),
    ...g("l0"),
    OP.f64Lt,
    OP.select,
    ...st("least"),
    ...g("least"),
    ...at("tMin", 3),
    ...mem(OP.f64Load, 3),
    OP.f64Lt,
    OP.if,
    OP.void,
    ...at("tMin", 3),
    ...g("least"),
    ...mem(OP.f64Store, 3),
    OP.end,
    // lane 1 when longer, or as long and at a smaller x
    ...ex("BEST", 0),
    ...st("e0"),
    ...ex("BEST", 1),
    ...st("e1"),
    ...g("e1"),
    ...g("e0"),
    OP.f64Gt,
    ...g("e1"),
    ...g("e0"),
    OP.f64Eq,
    ...ex("BU", 1),
    ...ex("BU", 0),
    OP.f64Lt,
    OP.i32And,
    OP.i32Or,
    ...st("pick"),
    ...pick("BEST"),
    ...st("best"),
    ...g("best"),
    ...at("tL2", 2),
    ...mem(OP.f32Load, 2),
    OP.f64PromoteF32,
    OP.f64Gt,
    OP.if,
    OP.void,
    ...at("tL2", 2),
    ...g("best"),
    OP.f32DemoteF64,
    ...mem(OP.f32Store, 2),
    ...at("tVx", 2),
    ...pick("BX"),
    OP.f32DemoteF64,
    ...mem(OP.f32Store, 2),
    ...at("tVy", 2),
    ...pick("BY"),
    OP.f32DemoteF64,
    ...mem(OP.f32Store, 2),
    OP.end,
  ];
}

/** `field(...)` → the number of pixels of moving slots (motionPixels' return) */
function fieldBody(): number[] {
  const tile = [
    ...g("tx"),
    ...p("ts"),
    OP.i32Mul,
    ...st("x"),
    // x1 = min(ow, x + ts)
    ...p("ow"),
    ...g("x"),
    ...p("ts"),
    OP.i32Add,
    ...p("ow"),
    ...g("x"),
    ...p("ts"),
    OP.i32Add,
    OP.i32LtU,
    OP.select,
    ...st("x1"),
    ...g("trow"),
    ...g("tx"),
    OP.i32Add,
    ...st("t"),
    ...p("tSlot"),
    ...g("t"),
    ...i32c(2),
    OP.i32Shl,
    OP.i32Add,
    ...mem(OP.i32Load, 2),
    ...st("one"),
    ...p("tL2"),
    ...g("t"),
    ...i32c(2),
    OP.i32Shl,
    OP.i32Add,
    ...mem(OP.f32Load, 2),
    OP.f64PromoteF32,
    ...simd(S.f64x2Splat),
    ...st("BEST"),
    ...f64x2c(Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY),
    ...st("LEAST"),
    // fours while x + 4 ≤ x1, a pair, then the odd pixel left
    ...loopWhile([...g("x"), ...i32c(4), OP.i32Add, ...g("x1"), OP.i32GtU], [...quadBody(), ...inc(L.x!, 4)]),
    ...loopWhile(
      [...g("x"), ...i32c(2), OP.i32Add, ...g("x1"), OP.i32GtU],
      [...pairBody(false), ...inc(L.x!, 2)],
    ),
    ...g("x"),
    ...g("x1"),
    OP.i32LtU,
    OP.if,
    OP.void,
    ...pairBody(true),
    OP.end,
    ...tileEnd(),
    ...inc(L.tx!, 1),
  ];
  const row = [
    ...g("y"),
    ...p("ow"),
    OP.i32Mul,
    ...st("rowBase"),
    ...g("y"),
    ...p("ts"),
    OP.i32DivU,
    ...p("cols"),
    OP.i32Mul,
    ...st("trow"),
    ...g("y"),
    OP.f64ConvertI32S,
    ...simd(S.f64x2Splat),
    ...st("vY"),
    // a new row: the row terms are stale
    ...i32c(-1),
    ...st("k0"),
    ...p("tx0"),
    ...st("tx"),
    ...loopWhile([...g("tx"), ...p("tx1"), OP.i32GeU], tile),
    ...inc(L.y!, 1),
  ];
  return [
    ...p("y0"),
    ...st("y"),
    ...loopWhile([...g("y"), ...p("y1"), OP.i32GeU], row),
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
 * render writes them where the kernel reads them), the slots' coefficients and flags, the l2px
 * it writes and the tiles' records. Sized once in the constructor (memory never grows after it:
 * the views stay valid).
 */
export class MotionKernel {
  private readonly fn: FieldFn;
  readonly invZ: Float32Array;
  readonly shade: Uint32Array;
  /** per slot 24 numbers (motionField's M) */
  readonly M: Float64Array;
  /** per slot: 1 = moving; index `slots` must be 0 */
  readonly flags: Uint8Array;
  readonly l2px: Float64Array;
  readonly tSlot: Int32Array;
  readonly tL2: Float32Array;
  readonly tVx: Float32Array;
  readonly tVy: Float32Array;
  readonly tMin: Float64Array;
  private readonly off: Record<
    "iz" | "sh" | "m" | "vf" | "l2" | "tSlot" | "tL2" | "tVx" | "tVy" | "tMin",
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
      m: take(192 * MAX_SLOTS),
      vf: take(MAX_SLOTS + 1),
      iz: take(4 * pixels + 8),
      sh: take(4 * pixels + 8),
      l2: take(8 * pixels + 16),
      tSlot: take(4 * tiles),
      tL2: take(4 * tiles),
      tVx: take(4 * tiles),
      tVy: take(4 * tiles),
      tMin: take(8 * tiles),
    };
    const have = memory.buffer.byteLength;
    if (at > have) memory.grow(Math.ceil((at - have) / PAGE));
    const b = memory.buffer;
    const o = this.off;
    this.M = new Float64Array(b, o.m, 24 * MAX_SLOTS);
    this.flags = new Uint8Array(b, o.vf, MAX_SLOTS + 1);
    this.invZ = new Float32Array(b, o.iz, pixels);
    this.shade = new Uint32Array(b, o.sh, pixels);
    this.l2px = new Float64Array(b, o.l2, pixels);
    this.tSlot = new Int32Array(b, o.tSlot, tiles);
    this.tL2 = new Float32Array(b, o.tL2, tiles);
    this.tVx = new Float32Array(b, o.tVx, tiles);
    this.tVy = new Float32Array(b, o.tVy, tiles);
    this.tMin = new Float64Array(b, o.tMin, tiles);
  }

  /** the pixel pass over rows y0…y1 − 1, tiles tx0…tx1 − 1 (M, flags and the tiles' records set) */
  run(
    slots: number,
    ow: number,
    ts: number,
    cols: number,
    tx0: number,
    tx1: number,
    y0: number,
    y1: number,
  ): number {
    const o = this.off;
    return this.fn(
      o.iz,
      o.sh,
      o.m,
      o.vf,
      slots,
      o.l2,
      ow,
      ts,
      cols,
      tx0,
      tx1,
      y0,
      y1,
      o.tSlot,
      o.tL2,
      o.tVx,
      o.tVy,
      o.tMin,
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
