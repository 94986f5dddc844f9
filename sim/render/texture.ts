/**
 * Texture sampling for the rasterizer: a box-filtered mip pyramid per texture (built once,
 * cached by identity) and bilinear lookup in a chosen level, so a board seen from afar is
 * filtered rather than aliased.
 */
import type { Texture } from "./scene.ts";

export interface MipLevel {
  width: number;
  height: number;
  /** grey values 0…255 */
  data: Float32Array;
}

const pyramids = new WeakMap<Texture, MipLevel[]>();

/** The mip pyramid of a texture: level 0 is the texture, each next level halves both sides. */
export function mipPyramid(tex: Texture): MipLevel[] {
  let p = pyramids.get(tex);
  if (p) return p;
  if (tex.grey.length !== tex.width * tex.height)
    throw new Error("texture data size does not match width × height");
  p = [{ width: tex.width, height: tex.height, data: Float32Array.from(tex.grey) }];
  for (;;) {
    const prev = p[p.length - 1]!;
    if (prev.width <= 1 && prev.height <= 1) break;
    const w = Math.max(1, prev.width >> 1);
    const h = Math.max(1, prev.height >> 1);
    const data = new Float32Array(w * h);
    for (let y = 0; y < h; y++) {
      const y0 = Math.min(prev.height - 1, 2 * y);
      const y1 = Math.min(prev.height - 1, 2 * y + 1);
      for (let x = 0; x < w; x++) {
        const x0 = Math.min(prev.width - 1, 2 * x);
        const x1 = Math.min(prev.width - 1, 2 * x + 1);
        const d = prev.data;
        data[y * w + x] =
          (d[y0 * prev.width + x0]! +
            d[y0 * prev.width + x1]! +
            d[y1 * prev.width + x0]! +
            d[y1 * prev.width + x1]!) /
          4;
      }
    }
    p.push({ width: w, height: h, data });
  }
  pyramids.set(tex, p);
  return p;
}

/**
 * Bilinear sample at level-0 texel coordinates (s, t) (texel i spans [i, i+1)) in `level`;
 * clamps at the edges. Returns 0…255.
 */
export function sampleBilinear(level: MipLevel, scale: number, s: number, t: number): number {
  const x = s * scale - 0.5;
  const y = t * scale - 0.5;
  const W = level.width;
  const H = level.height;
  let x0 = Math.floor(x);
  let y0 = Math.floor(y);
  const fx = x - x0;
  const fy = y - y0;
  let x1 = x0 + 1;
  let y1 = y0 + 1;
  if (x0 < 0) x0 = 0;
  else if (x0 > W - 1) x0 = W - 1;
  if (x1 < 0) x1 = 0;
  else if (x1 > W - 1) x1 = W - 1;
  if (y0 < 0) y0 = 0;
  else if (y0 > H - 1) y0 = H - 1;
  if (y1 < 0) y1 = 0;
  else if (y1 > H - 1) y1 = H - 1;
  const d = level.data;
  const a = d[y0 * W + x0]! + (d[y0 * W + x1]! - d[y0 * W + x0]!) * fx;
  const b = d[y1 * W + x0]! + (d[y1 * W + x1]! - d[y1 * W + x0]!) * fx;
  return a + (b - a) * fy;
}
