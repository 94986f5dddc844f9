/**
 * The fitted intrinsics against the ones the camera publishes itself: GET /v1/spec lists each
 * camera's intrinsics as the backend describes them — on the real backend from the camera's
 * sensor_msgs/CameraInfo (K and D, drivers/camera/ros-camera.ts), on the sim from its camera
 * model. The camera procedures report fit − published (fx, fy, cx, cy in px and %, the
 * distortion coefficients), so a lab sees how far its camera's factory or driver calibration
 * is from what the board says.
 */
import type { BenchApi, SpecCamera } from "./api-client.ts";

export interface IntrinsicsTerm {
  fitted: number;
  published: number;
  /** fitted − published, px */
  diffPx: number;
  /** (fitted − published) / published, % */
  diffPct: number;
}

export interface CameraInfoComparison {
  /** where the published intrinsics come from */
  source: string;
  size: { fitted: [number, number]; published: [number, number] };
  fx: IntrinsicsTerm;
  fy: IntrinsicsTerm;
  cx: IntrinsicsTerm;
  cy: IntrinsicsTerm;
  /** k1 k2 p1 p2 k3: fitted, published, fitted − published */
  distortion: { fitted: number[]; published: number[]; diff: number[] };
}

/** The fit's intrinsics as the procedures hold them (IntrinsicsFit, calibration file intrinsics). */
export interface FittedIntrinsics {
  widthPx: number;
  heightPx: number;
  fxPx: number;
  fyPx: number;
  cxPx: number;
  cyPx: number;
  distortion: readonly number[];
}

const SOURCE =
  "GET /v1/spec (a ROS camera's CameraInfo K and D on the real backend; the camera model on the sim)";

/** fit − published for one camera. */
export function compareWithCameraInfo(fit: FittedIntrinsics, published: SpecCamera): CameraInfoComparison {
  const term = (fitted: number, pub: number): IntrinsicsTerm => ({
    fitted,
    published: pub,
    diffPx: fitted - pub,
    diffPct: pub !== 0 ? ((fitted - pub) / pub) * 100 : Number.NaN,
  });
  const five = (d: readonly number[]) => [0, 1, 2, 3, 4].map((i) => d[i] ?? 0);
  const f = five(fit.distortion);
  const p = five(published.distortion);
  return {
    source: SOURCE,
    size: { fitted: [fit.widthPx, fit.heightPx], published: [published.width, published.height] },
    fx: term(fit.fxPx, published.fx),
    fy: term(fit.fyPx, published.fy),
    cx: term(fit.cxPx, published.cx),
    cy: term(fit.cyPx, published.cy),
    distortion: { fitted: f, published: p, diff: f.map((v, i) => v - p[i]!) },
  };
}

/** The comparison for `camera` when the gateway publishes its intrinsics (null when it lists no such camera). */
export async function cameraInfoComparison(
  api: BenchApi,
  camera: string,
  fit: FittedIntrinsics,
): Promise<CameraInfoComparison | null> {
  const published = (await api.spec()).cameras.find((c) => c.name === camera);
  return published && published.fx > 0 ? compareWithCameraInfo(fit, published) : null;
}

/** One line for a report: fx, fy, cx, cy differences in px and %, k1 k2 differences. */
export function formatComparison(c: CameraInfoComparison): string {
  const t = (name: string, x: IntrinsicsTerm) =>
    `${name} ${x.diffPx >= 0 ? "+" : ""}${x.diffPx.toFixed(2)} px (${x.diffPct >= 0 ? "+" : ""}${x.diffPct.toFixed(2)} %)`;
  const d = c.distortion.diff.map((v) => (v >= 0 ? "+" : "") + v.toFixed(4)).join(" ");
  return `fit − published: ${t("fx", c.fx)}, ${t("fy", c.fy)}, ${t("cx", c.cx)}, ${t("cy", c.cy)}; distortion k1 k2 p1 p2 k3 ${d}`;
}
