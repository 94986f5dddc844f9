/**
 * OpenCV radial-tangential lens model (calibration/distortion.ts) as a precomputed remap.
 *
 * The rasterizer draws an ideal pinhole image and then, for every output (distorted) pixel,
 * copies the nearest ideal pixel whose ray it sees. The per-pixel source is found once per
 * camera by inverting the distortion with a fixed-point iteration and checking the result
 * with the forward model; pixels whose ray cannot be inverted stay background.
 */

import type { CameraDescription } from "../../seam/types.ts";
import { type DistortionCoefficients, undistortPoint } from "../../calibration/distortion.ts";

/** The ideal pinhole image the rasterizer draws, and where each output pixel reads from it. */
export interface DistortionRemap {
  /** ideal image size, pixels (covers every ray the distorted camera sees, capped at 3× per axis) */
  idealWidth: number;
  idealHeight: number;
  /** ideal principal point, pixels */
  idealCx: number;
  idealCy: number;
  /** per output pixel (row-major): index of the nearest ideal pixel, or -1 (background) */
  source: Int32Array;
  /** per output pixel: index of the ideal pixel up-left of the exact source point (its 2 × 2 block is inside), or -1 */
  base: Int32Array;
  /** per output pixel: fractional offsets of the exact source point from `base`, u then v, 0…1 */
  frac: Float32Array;
}

/** Build the remap for a camera (setup time; allocates). */
export function buildRemap(
  cam: Pick<CameraDescription, "width" | "height" | "fx" | "fy" | "cx" | "cy">,
  c: DistortionCoefficients,
): DistortionRemap {
  const { width: W, height: H, fx, fy, cx, cy } = cam;
  const n = W * H;
  const su = new Float64Array(n);
  const sv = new Float64Array(n);
  const ok = new Uint8Array(n);
  let umin = 0;
  let umax = W - 1;
  let vmin = 0;
  let vmax = H - 1;
  // keep the ideal image bounded even for extreme coefficients
  const limU = W;
  const limV = H;
  for (let v = 0; v < H; v++) {
    for (let u = 0; u < W; u++) {
      const i = v * W + u;
      const p = undistortPoint(c, (u - cx) / fx, (v - cy) / fy);
      if (p === null) continue;
      const us = fx * p[0] + cx;
      const vs = fy * p[1] + cy;
      if (us < -limU || us > W - 1 + limU || vs < -limV || vs > H - 1 + limV) continue;
      su[i] = us;
      sv[i] = vs;
      ok[i] = 1;
      if (us < umin) umin = us;
      if (us > umax) umax = us;
      if (vs < vmin) vmin = vs;
      if (vs > vmax) vmax = vs;
    }
  }
  const offU = Math.floor(umin) - 1;
  const offV = Math.floor(vmin) - 1;
  const idealWidth = Math.ceil(umax) - offU + 2;
  const idealHeight = Math.ceil(vmax) - offV + 2;
  const source = new Int32Array(n).fill(-1);
  const base = new Int32Array(n).fill(-1);
  const frac = new Float32Array(2 * n);
  for (let i = 0; i < n; i++) {
    if (ok[i] === 0) continue;
    const x = Math.round(su[i]! - offU);
    const y = Math.round(sv[i]! - offV);
    source[i] = y * idealWidth + x;
    const x0 = Math.floor(su[i]! - offU);
    const y0 = Math.floor(sv[i]! - offV);
    if (x0 >= 0 && y0 >= 0 && x0 + 1 < idealWidth && y0 + 1 < idealHeight) {
      base[i] = y0 * idealWidth + x0;
      frac[2 * i] = su[i]! - offU - x0;
      frac[2 * i + 1] = sv[i]! - offV - y0;
    }
  }
  return { idealWidth, idealHeight, idealCx: cx - offU, idealCy: cy - offV, source, base, frac };
}
