/**
 * Overlay drawing for calibration checks: lines, crosses and dots onto an RGB frame, and the
 * calibrated wire and board projected with a camera's calibration. For a person to look at.
 */
import { type Mat4, mat4Point } from "../robots/math.ts";
import type { ImageU8 } from "./board-detect.ts";
import { type CameraIntrinsics, projectCameraPoint } from "./projection.ts";

export type Colour = readonly [number, number, number];

/** An RGB copy of an image to draw on. */
export function rgbCopy(img: ImageU8): ImageU8 {
  if (img.channels === 3) return { ...img, data: img.data.slice() };
  const d = new Uint8Array(img.width * img.height * 3);
  for (let i = 0; i < img.width * img.height; i++) d.fill(img.data[i]!, i * 3, i * 3 + 3);
  return { width: img.width, height: img.height, channels: 3, data: d };
}

function plot(img: ImageU8, x: number, y: number, c: Colour): void {
  const xi = Math.round(x);
  const yi = Math.round(y);
  if (xi < 0 || yi < 0 || xi >= img.width || yi >= img.height) return;
  const k = (yi * img.width + xi) * 3;
  img.data[k] = c[0];
  img.data[k + 1] = c[1];
  img.data[k + 2] = c[2];
}

export function drawLine(
  img: ImageU8,
  a: readonly [number, number],
  b: readonly [number, number],
  c: Colour,
  width = 1,
): void {
  const n = Math.ceil(Math.max(Math.abs(b[0] - a[0]), Math.abs(b[1] - a[1]), 1));
  if (n > 10 * (img.width + img.height)) return;
  const r = Math.floor(width / 2);
  for (let k = 0; k <= n; k++) {
    const x = a[0] + ((b[0] - a[0]) * k) / n;
    const y = a[1] + ((b[1] - a[1]) * k) / n;
    for (let dy = -r; dy <= r; dy++) for (let dx = -r; dx <= r; dx++) plot(img, x + dx, y + dy, c);
  }
}

export function drawCross(img: ImageU8, p: readonly [number, number], c: Colour, size = 4): void {
  drawLine(img, [p[0] - size, p[1]], [p[0] + size, p[1]], c);
  drawLine(img, [p[0], p[1] - size], [p[0], p[1] + size], c);
}

/** Draw a 3-D polyline (points in some frame F) through camera ← F. */
export function drawPolyline3d(
  img: ImageU8,
  cam: CameraIntrinsics,
  camFromF: Mat4,
  pts: readonly (readonly number[])[],
  c: Colour,
  width = 1,
): void {
  let prev: [number, number] | null = null;
  for (const p of pts) {
    const q = projectCameraPoint(cam, mat4Point(camFromF, p));
    const cur: [number, number] | null = q ? [q.u, q.v] : null;
    if (prev && cur) drawLine(img, prev, cur, c, width);
    prev = cur;
  }
}
