/**
 * A minimal WebAssembly binary writer for the kernels emitted from TypeScript at load (no
 * toolchain, no binary in the repo): sim/sensors/realism-simd.ts, sim/render/motion-simd.ts.
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
export const F64 = 0x7c;
export const V128 = 0x7b;

export const lget = (i: number) => [0x20, ...uleb(i)];
export const lset = (i: number) => [0x21, ...uleb(i)];
export const i32c = (n: number) => [0x41, ...sleb(n)];
export const f64c = (x: number) => [0x44, ...new Uint8Array(new Float64Array([x]).buffer)];
/** a SIMD instruction (prefix 0xFD, opcode as unsigned LEB128) */
export const simd = (op: number) => [0xfd, ...uleb(op)];
export const vmem = (op: number, offset: number) => [0xfd, ...uleb(op), 0, ...uleb(offset)];
export const vload = (offset: number) => vmem(0x00, offset);
export const vstore = (offset: number) => [0xfd, 0x0b, 0, ...uleb(offset)];
export const shuffle = (lanes: number[]) => [0xfd, 0x0d, ...lanes];

export function section(id: number, body: number[]): number[] {
  return [id, ...uleb(body.length), ...body];
}
export const vec = (items: number[][]) => [...uleb(items.length), ...items.flat()];
export const name = (s: string) => [...uleb(s.length), ...[...s].map((c) => c.charCodeAt(0))];

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
