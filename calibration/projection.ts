/**
 * Pinhole projection with the plumb-bob lens model (calibration/distortion.ts): a point in a
 * camera's optical frame (OpenCV: x right, y down, z forward) → pixel. One implementation for the
 * console's overlays, the clients' helpers and calibration checks.
 */
import { distortPoint, parseDistortion } from "./distortion.ts";
import type { CameraCalibration } from "./schema.ts";

/** The intrinsics a projection needs (the seam's CameraDescription and the spec's camera both fit). */
export interface CameraIntrinsics {
  width: number;
  height: number;
  fx: number;
  fy: number;
  cx: number;
  cy: number;
  /** OpenCV k1 k2 p1 p2 k3 (all zero or empty when undistorted) */
  distortion: readonly number[];
}

/**
 * The camera model of a calibration file's camera; `size` when the image at hand is what the
 * model must describe (a frame whose size the file's intrinsics are checked against elsewhere).
 */
export function intrinsicsOf(
  c: Pick<CameraCalibration, "intrinsics">,
  size?: { width: number; height: number },
): CameraIntrinsics {
  const i = c.intrinsics;
  return {
    width: size?.width ?? i.widthPx,
    height: size?.height ?? i.heightPx,
    fx: i.fxPx,
    fy: i.fyPx,
    cx: i.cxPx,
    cy: i.cyPx,
    distortion: i.distortion,
  };
}

/** A pixel and the z-depth of the point that projects there. */
export interface PixelProjection {
  /** pixel column, OpenCV convention (integer values at pixel centres) */
  u: number;
  /** pixel row */
  v: number;
  /** z-depth along the optical axis, m */
  depthM: number;
  /** inside the image bounds */
  inImage: boolean;
}

/** Project a point of the camera optical frame; null when it is not in front of the camera. */
export function projectCameraPoint(cam: CameraIntrinsics, p: readonly number[]): PixelProjection | null {
  const z = p[2]!;
  if (!(z > 0)) return null;
  let x = p[0]! / z;
  let y = p[1]! / z;
  const dist = parseDistortion(cam.distortion);
  if (dist) [x, y] = distortPoint(dist, x, y);
  const u = cam.fx * x + cam.cx;
  const v = cam.fy * y + cam.cy;
  const inImage = u > -0.5 && v > -0.5 && u < cam.width - 0.5 && v < cam.height - 0.5;
  return { u, v, depthM: z, inImage };
}
