/**
 * A minimal WebAssembly binary writer for the kernels emitted from TypeScript at load (no
 * toolchain, no binary in the repo): sim/sensors/realism-simd.ts, sim/sensors/gather-simd.ts,
 * sim/render/motion-simd.ts.
 * Binary format: WebAssembly core spec §5 (LEB128 integers, sections, instructions; SIMD prefix 0xFD).
 */

export function uleb(n: number): number[] {
  const out: number[] = [];
  let v = n >>> 0;
  do {
    let byte = v & 0x7f;
    v >>>= 7;
    if (v !== 0) byte |= 0x80;
    out.push(byte);
  } while (v !== 0);
  return out;
}

export function sleb(n: number): number[] {
  const out: number[] = [];
  let v = n | 0;
  for (;;) {
    const byte = v & 0x7f;
    v >>= 7;
    if ((v === 0 && (byte & 0x40) === 0) || (v === -1 && (byte & 0x40) !== 0)) {
      out.push(byte);
      return out;
    }
    out.push(byte | 0x80);
  }
}

export const I32 = 0x7f;
export const F32 = 0x7d;
export const F64 = 0x7c;
export const V128 = 0x7b;

export const lget = (i: number) => [0x20, ...uleb(i)];
export const lset = (i: number) => [0x21, ...uleb(i)];
export const i32c = (n: number) => [0x41, ...sleb(n)];
export const f32c = (x: number) => [0x43, ...new Uint8Array(new Float32Array([x]).buffer)];
export const f64c = (x: number) => [0x44, ...new Uint8Array(new Float64Array([x]).buffer)];
/** a SIMD instruction (prefix 0xFD, opcode as unsigned LEB128) */
export const simd = (op: number) => [0xfd, ...uleb(op)];
export const vmem = (op: number, offset: number) => [0xfd, ...uleb(op), 0, ...uleb(offset)];
export const vload = (offset: number) => vmem(0x00, offset);
export const vstore = (offset: number) => [0xfd, 0x0b, 0, ...uleb(offset)];
export const shuffle = (lanes: number[]) => [0xfd, 0x0d, ...lanes];

/** the core opcodes the kernels use, by name (core spec §5.4) */
export const OP = {
  block: 0x02,
  loop: 0x03,
  if: 0x04,
  else: 0x05,
  end: 0x0b,
  br: 0x0c,
  brIf: 0x0d,
  select: 0x1b,
  ltee: 0x22,
  i32Load: 0x28,
  f32Load: 0x2a,
  f64Load: 0x2b,
  i32Load8U: 0x2d,
  i32Store: 0x36,
  f32Store: 0x38,
  f64Store: 0x39,
  i32Store8: 0x3a,
  void: 0x40,
  i32Eqz: 0x45,
  i32Eq: 0x46,
  i32Ne: 0x47,
  i32LtS: 0x48,
  i32LtU: 0x49,
  i32GtS: 0x4a,
  i32GtU: 0x4b,
  i32LeS: 0x4c,
  i32GeS: 0x4e,
  i32GeU: 0x4f,
  f32Eq: 0x5b,
  f32Gt: 0x5e,
  f64Eq: 0x61,
  f64Lt: 0x63,
  f64Gt: 0x64,
  f64Le: 0x65,
  f64Ge: 0x66,
  i32Add: 0x6a,
  i32Sub: 0x6b,
  i32Popcnt: 0x69,
  i32Mul: 0x6c,
  i32DivU: 0x6e,
  i32And: 0x71,
  i32Or: 0x72,
  i32Shl: 0x74,
  i32ShrS: 0x75,
  i32ShrU: 0x76,
  f64Abs: 0x99,
  f64Neg: 0x9a,
  f64Ceil: 0x9b,
  f64Floor: 0x9c,
  f64Sqrt: 0x9f,
  f64Add: 0xa0,
  f64Sub: 0xa1,
  f64Mul: 0xa2,
  f64Div: 0xa3,
  i32TruncF64S: 0xaa,
  i64ExtendI32S: 0xac,
  f32DemoteF64: 0xb6,
  f32ConvertI32S: 0xb2,
  f64ConvertI32S: 0xb7,
  f64PromoteF32: 0xbb,
} as const;

/** the SIMD opcodes the kernels use, by name (after the prefix 0xFD, see `simd`) */
export const S = {
  load: 0x00,
  load8x8U: 0x02,
  load16x4U: 0x04,
  load32Splat: 0x09,
  load64Splat: 0x0a,
  store: 0x0b,
  const: 0x0c,
  i8x16Splat: 0x0f,
  i16x8Splat: 0x10,
  i32x4Splat: 0x11,
  i64x2Splat: 0x12,
  f32x4Splat: 0x13,
  f64x2Splat: 0x14,
  i16x8ExtractLaneU: 0x19,
  i32x4ExtractLane: 0x1b,
  f32x4ExtractLane: 0x1f,
  i64x2ReplaceLane: 0x1e,
  f64x2ExtractLane: 0x21,
  f64x2ReplaceLane: 0x22,
  i16x8Eq: 0x2d,
  i16x8GtU: 0x32,
  i16x8LeU: 0x34,
  i16x8GeU: 0x36,
  i32x4Eq: 0x37,
  i32x4Ne: 0x38,
  i32x4GtS: 0x3b,
  f32x4Gt: 0x44,
  f64x2Gt: 0x4a,
  f64x2Ge: 0x4c,
  not: 0x4d,
  and: 0x4e,
  andnot: 0x4f,
  or: 0x50,
  bitselect: 0x52,
  anyTrue: 0x53,
  store32Lane: 0x5a,
  store64Lane: 0x5b,
  load32Zero: 0x5c,
  load64Zero: 0x5d,
  f32x4DemoteF64x2Zero: 0x5e,
  f64x2PromoteLowF32x4: 0x5f,
  i8x16NarrowI16x8U: 0x66,
  f64x2Floor: 0x75,
  i16x8AllTrue: 0x83,
  i16x8Bitmask: 0x84,
  i16x8NarrowI32x4U: 0x86,
  i16x8Add: 0x8e,
  i16x8AddSatU: 0x90,
  i16x8Sub: 0x91,
  i16x8SubSatU: 0x93,
  i16x8Mul: 0x95,
  i16x8MinU: 0x97,
  i16x8MaxU: 0x99,
  i32x4Neg: 0xa1,
  i32x4AllTrue: 0xa3,
  i32x4Bitmask: 0xa4,
  i32x4ShrU: 0xad,
  i32x4Add: 0xae,
  i32x4Sub: 0xb1,
  i32x4Mul: 0xb5,
  i32x4MinU: 0xb7,
  i32x4ExtmulLowI16x8U: 0xbe,
  i32x4ExtmulHighI16x8U: 0xbf,
  f32x4Sqrt: 0xe3,
  f32x4Add: 0xe4,
  f32x4Sub: 0xe5,
  f32x4Mul: 0xe6,
  f32x4Div: 0xe7,
  f32x4Min: 0xe8,
  f32x4Max: 0xe9,
  f64x2Abs: 0xec,
  f64x2Add: 0xf0,
  f64x2Sub: 0xf1,
  f64x2Mul: 0xf2,
  f64x2Div: 0xf3,
  f64x2Pmin: 0xf6,
  f64x2Pmax: 0xf7,
  i32x4TruncSatF32x4U: 0xf9,
  f32x4ConvertI32x4S: 0xfa,
  i32x4TruncSatF64x2SZero: 0xfc,
  f64x2ConvertLowI32x4S: 0xfe,
} as const;

/** a scalar load/store: opcode, alignment (log2 bytes), offset */
export const mem = (op: number, align: number, offset = 0) => [op, align, ...uleb(offset)];

/**
 * A function's named locals, laid out after its parameters (`params`: name → index 0 … n − 1):
 * the groups in order, one value type each. Returns each local's index (`L`), local.get / local.set
 * of a local (`g`, `st`) and of a parameter (`p`) by name, and the code entry's local declarations
 * (`decl`: the groups' count, then per group its count and type).
 */
export function namedLocals<P extends Record<string, number>, N extends string>(
  params: P,
  groups: readonly (readonly [type: number, names: readonly N[]])[],
) {
  const np = Object.keys(params).length;
  const indices = Object.values(params).sort((a, b) => a - b);
  if (indices.some((v, i) => v !== i)) throw new Error("parameter indices must be 0 … n − 1");
  const L = {} as Record<N, number>;
  let at = np;
  for (const [, names] of groups)
    for (const k of names) {
      if (k in L || k in params) throw new Error(`local ${k} named twice`);
      L[k] = at++;
    }
  const index = (k: string) => {
    const i = (L as Record<string, number>)[k];
    if (i === undefined) throw new Error(`no local named ${k}`);
    return i;
  };
  return {
    L,
    g: (k: string) => lget(index(k)),
    st: (k: string) => lset(index(k)),
    p: (k: keyof P) => lget(params[k] as number),
    decl: [...uleb(groups.length), ...groups.flatMap(([type, names]) => [...uleb(names.length), type])],
  };
}

export function section(id: number, body: number[]): number[] {
  return [id, ...uleb(body.length), ...body];
}
export const vec = (items: number[][]) => [...uleb(items.length), ...items.flat()];
export const name = (s: string) => [...uleb(s.length), ...[...s].map((c) => c.charCodeAt(0))];

/** a function type: its parameter and result value types */
export const funcType = (params: readonly number[], results: readonly number[]) => [
  0x60,
  ...uleb(params.length),
  ...params,
  ...uleb(results.length),
  ...results,
];

/** a function of a kernel module: the name it is exported as, its type's index, its code entry
 * (local declarations, then the instructions) */
export interface KernelFunc {
  name: string;
  type: number;
  body: number[];
}

/** a kernel module: these function types; memory 0 (at least one page) exported as "mem"; each
 * function in order, exported by its name */
export function kernelModule(types: readonly number[][], funcs: readonly KernelFunc[]): Uint8Array {
  return new Uint8Array([
    ...WASM_HEADER,
    ...section(1, vec([...types])),
    ...section(3, vec(funcs.map((f) => uleb(f.type)))),
    ...section(5, vec([[0x00, ...uleb(1)]])),
    ...section(
      7,
      vec([[...name("mem"), 0x02, 0], ...funcs.map((f, i) => [...name(f.name), 0x00, ...uleb(i)])]),
    ),
    ...section(10, vec(funcs.map((f) => [...uleb(f.body.length), ...f.body]))),
  ]);
}

export type KernelFn = (...args: number[]) => void;

/** the part of the WebAssembly JS API used here (this project's TypeScript libs do not declare it) */
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}
export type WasmModule = object;
export interface WasmApi {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => WasmModule;
  Instance: new (module: WasmModule, imports: object) => { exports: Record<string, unknown> };
}
export const wasm = (globalThis as { WebAssembly?: WasmApi }).WebAssembly;

export const PAGE = 65536;
export const align16 = (n: number) => (n + 15) & ~15;
/** local.get n + by → local n (i32) */
export const inc = (local: number, by: number) => [...lget(local), ...i32c(by), 0x6a, ...lset(local)];

/** the module preamble: magic "\0asm", version 1 */
export const WASM_HEADER = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];

/** block { loop { br_if 1 (cond); body; br 0 } }: `body` while `cond` (the exit test) is 0 */
export const loopWhile = (cond: number[], body: number[]) => [
  0x02,
  0x40,
  0x03,
  0x40,
  ...cond,
  0x0d,
  1,
  ...body,
  0x0c,
  0,
  0x0b,
  0x0b,
];

/** WebAssembly memory is little-endian; JS typed arrays use the platform's order: the kernels that
 * share typed-array views with JS run only where the two agree */
export const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** memory.copy (bulk memory, prefix 0xFC): dst, src, n on the stack, memory 0 to memory 0 */
export const memoryCopy = [0xfc, ...uleb(10), 0, 0];

/** the parameters of padU16Body's function: raw, dst, w, h, pad, y0, y1 (i32 each) */
export const PAD_U16_PARAMS = [I32, I32, I32, I32, I32, I32, I32];

/**
 * The code entry of `pad(raw, dst, w, h, pad, y0, y1)`: rows y0 … y1 − 1 of the w × h u16 image
 * at raw copied to dst (a (w + 2 pad) × (h + 2 pad) image) with `pad` pixels either side repeating
 * the row's edge pixels (row copies with memory.copy, the side pixels stored one by one); when
 * the rows include the first (last) row, the border rows above (below) repeat it. Used by the
 * realism kernel (the whole image) and the blur's gather kernel (the rows a frame reads).
 */
export function padU16Body(): number[] {
  const [raw, dst, w, h, pad, y0, y1] = [0, 1, 2, 3, 4, 5, 6];
  const [y, d, s, k, v, pwb] = [7, 8, 9, 10, 11, 12];
  const load16 = [0x2f, 1, 0];
  const store16 = (offset: number) => [0x3b, 1, ...uleb(offset)];
  /** for (k = 0; k < pad; k++) body */
  const sides = (body: number[]) => [
    ...i32c(0),
    ...lset(k),
    ...loopWhile([...lget(k), ...lget(pad), OP.i32GeU], [...body, ...inc(k, 1)]),
  ];
  const rowAt = (rowExpr: number[]) => [...lget(dst), ...rowExpr, ...lget(pwb), OP.i32Mul, OP.i32Add];
  const row = [
    // s = raw + 2·y·w; d = dst + (y + pad)·pwb + 2·pad
    ...lget(raw),
    ...lget(y),
    ...lget(w),
    OP.i32Mul,
    ...i32c(1),
    OP.i32Shl,
    OP.i32Add,
    ...lset(s),
    ...rowAt([...lget(y), ...lget(pad), OP.i32Add]),
    ...lget(pad),
    ...i32c(1),
    OP.i32Shl,
    OP.i32Add,
    ...lset(d),
    ...lget(d),
    ...lget(s),
    ...lget(w),
    ...i32c(1),
    OP.i32Shl,
    ...memoryCopy,
    // left border: d − 2 (k + 1) for k = 0 … pad − 1, the row's first pixel
    ...lget(s),
    ...load16,
    ...lset(v),
    ...sides([
      ...lget(d),
      ...lget(k),
      ...i32c(1),
      OP.i32Shl,
      OP.i32Sub,
      ...i32c(2),
      OP.i32Sub,
      ...lget(v),
      ...store16(0),
    ]),
    // right border: d + 2w + 2k, the row's last pixel
    ...lget(s),
    ...lget(w),
    ...i32c(1),
    OP.i32Shl,
    OP.i32Add,
    ...i32c(2),
    OP.i32Sub,
    ...load16,
    ...lset(v),
    ...sides([
      ...lget(d),
      ...lget(w),
      ...lget(k),
      OP.i32Add,
      ...i32c(1),
      OP.i32Shl,
      OP.i32Add,
      ...lget(v),
      ...store16(0),
    ]),
    ...inc(y, 1),
  ];
  return [
    ...uleb(1),
    ...uleb(6),
    I32,
    ...lget(w),
    ...lget(pad),
    ...i32c(1),
    OP.i32Shl,
    OP.i32Add,
    ...i32c(1),
    OP.i32Shl,
    ...lset(pwb),
    ...lget(y0),
    ...lset(y),
    ...loopWhile([...lget(y), ...lget(y1), OP.i32GeU], row),
    // border rows: k above from the first row, pad + h + k below from the last
    ...lget(y0),
    OP.i32Eqz,
    OP.if,
    OP.void,
    ...sides([...rowAt(lget(k)), ...rowAt(lget(pad)), ...lget(pwb), ...memoryCopy]),
    OP.end,
    ...lget(y1),
    ...lget(h),
    OP.i32Eq,
    OP.if,
    OP.void,
    ...sides([
      ...rowAt([...lget(pad), ...lget(h), OP.i32Add, ...lget(k), OP.i32Add]),
      ...rowAt([...lget(pad), ...lget(h), OP.i32Add, ...i32c(1), OP.i32Sub]),
      ...lget(pwb),
      ...memoryCopy,
    ]),
    OP.end,
    OP.end,
  ];
}
