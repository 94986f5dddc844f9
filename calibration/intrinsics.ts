/**
 * Camera intrinsics from ChArUco board views: OpenCV's calibrateCameraExtended (Zhang's method
 * initialisation, Levenberg–Marquardt on reprojection error) for fx, fy, cx, cy and the plumb-bob
 * distortion k1 k2 p1 p2 (k3 fixed at 0 unless asked for). Views with too few corners are
 * rejected before the fit; views whose reprojection error stands out (> 3 × the median and
 * > 1 px) are rejected after it and the fit is repeated. Every rejection carries its reason.
 */
import { CodedError } from "../seam/errors.ts";
import { type BoardSpec, cornerPoint } from "./board.ts";
import { loadOpenCv, type OpenCv } from "./opencv.ts";
import type { CameraCalibration } from "./schema.ts";

/** One view's detected corners. */
export interface BoardView {
  /** a label for reports, e.g. "pose-07" or a file name */
  id: string;
  ids: number[];
  pixels: Array<[number, number]>;
}

export interface RejectedView {
  id: string;
  reason: string;
}

export interface IntrinsicsFit {
  widthPx: number;
  heightPx: number;
  fxPx: number;
  fyPx: number;
  cxPx: number;
  cyPx: number;
  /** k1 k2 p1 p2 k3 */
  distortion: [number, number, number, number, number];
  /** RMS reprojection error over every used corner, px */
  rmsPx: number;
  /** used views: RMS reprojection error per view, px, and corner count */
  views: Array<{ id: string; errorPx: number; corners: number }>;
  rejected: RejectedView[];
  /** camera ← board per used view (rotation vector, translation in m) */
  boardPoses: Array<{ id: string; rvec: [number, number, number]; tvec: [number, number, number] }>;
}

export interface IntrinsicsOptions {
  /** fewest corners a view must have (default 12) */
  minCorners?: number;
  /** fewest usable views (default 6) */
  minViews?: number;
  /** also fit k3 (default false: k3 = 0) */
  fitK3?: boolean;
}

/** OpenCV calib3d flags (values of the C++ enum). */
const CALIB_FIX_K3 = 128;

/** The fit as a calibration file's camera `intrinsics`. */
export function fitFileIntrinsics(fit: IntrinsicsFit): CameraCalibration["intrinsics"] {
  return {
    widthPx: fit.widthPx,
    heightPx: fit.heightPx,
    fxPx: fit.fxPx,
    fyPx: fit.fyPx,
    cxPx: fit.cxPx,
    cyPx: fit.cyPx,
    distortion: [...fit.distortion],
  };
}

/** Fit intrinsics; throws RB_ERR_CALIB_TOO_FEW_VIEWS when too few views remain. */
export async function fitIntrinsics(
  camera: string,
  board: BoardSpec,
  views: readonly BoardView[],
  size: { width: number; height: number },
  opts: IntrinsicsOptions = {},
): Promise<IntrinsicsFit> {
  const { cv } = await loadOpenCv();
  const minCorners = opts.minCorners ?? 12;
  const minViews = opts.minViews ?? 6;
  const rejected: RejectedView[] = [];
  let used = views.filter((v) => {
    if (v.ids.length === 0) rejected.push({ id: v.id, reason: "board not seen" });
    else if (v.ids.length < minCorners)
      rejected.push({ id: v.id, reason: `only ${v.ids.length} corners seen (need ≥ ${minCorners})` });
    else return true;
    return false;
  });
  const tooFew = () =>
    new CodedError("RB_ERR_CALIB_TOO_FEW_VIEWS", {
      camera,
      usable: used.length,
      needed: minViews,
      rejected: rejected.length,
      rejectedViews: rejected,
    });
  if (used.length < minViews) throw tooFew();
  let fit = runCalibration(cv, board, used, size, opts.fitK3 ? 0 : CALIB_FIX_K3);
  const errs = fit.perView.slice().sort((a, b) => a - b);
  const median = errs[Math.floor(errs.length / 2)]!;
  const limit = Math.max(1, 3 * median);
  const keep = used.filter((v, i) => {
    const e = fit.perView[i]!;
    if (e <= limit) return true;
    rejected.push({
      id: v.id,
      reason: `reprojection error ${e.toFixed(2)} px > ${limit.toFixed(2)} px (3 × median)`,
    });
    return false;
  });
  if (keep.length !== used.length) {
    used = keep;
    if (used.length < minViews) throw tooFew();
    fit = runCalibration(cv, board, used, size, opts.fitK3 ? 0 : CALIB_FIX_K3);
  }
  if (!Number.isFinite(fit.rms) || !(fit.K[0]! > 0))
    throw new CodedError("RB_ERR_CALIB_NOT_CONVERGED", { camera, reason: `RMS ${fit.rms}` });
  const d = fit.dist;
  return {
    widthPx: size.width,
    heightPx: size.height,
    fxPx: fit.K[0]!,
    fyPx: fit.K[4]!,
    cxPx: fit.K[2]!,
    cyPx: fit.K[5]!,
    distortion: [d[0] ?? 0, d[1] ?? 0, d[2] ?? 0, d[3] ?? 0, d[4] ?? 0],
    rmsPx: fit.rms,
    views: used.map((v, i) => ({ id: v.id, errorPx: fit.perView[i]!, corners: v.ids.length })),
    rejected,
    boardPoses: used.map((v, i) => ({ id: v.id, rvec: fit.rvecs[i]!, tvec: fit.tvecs[i]! })),
  };
}

function runCalibration(
  cv: OpenCv,
  board: BoardSpec,
  views: readonly BoardView[],
  size: { width: number; height: number },
  flags: number,
) {
  const objectPoints = new cv.MatVector();
  const imagePoints = new cv.MatVector();
  const mats: OpenCv[] = [];
  for (const v of views) {
    const obj = cv.matFromArray(
      v.ids.length,
      1,
      cv.CV_32FC3,
      v.ids.flatMap((id) => cornerPoint(board, id)),
    );
    const img = cv.matFromArray(v.ids.length, 1, cv.CV_32FC2, v.pixels.flat());
    objectPoints.push_back(obj);
    imagePoints.push_back(img);
    mats.push(obj, img);
  }
  const K = new cv.Mat();
  const dist = new cv.Mat();
  const rvecs = new cv.MatVector();
  const tvecs = new cv.MatVector();
  const sdI = new cv.Mat();
  const sdE = new cv.Mat();
  const perView = new cv.Mat();
  try {
    const rms: number = cv.calibrateCameraExtended(
      objectPoints,
      imagePoints,
      new cv.Size(size.width, size.height),
      K,
      dist,
      rvecs,
      tvecs,
      sdI,
      sdE,
      perView,
      flags,
      new cv.TermCriteria(cv.TermCriteria_COUNT + cv.TermCriteria_EPS, 100, 1e-12),
    );
    const vec3 = (m: OpenCv): [number, number, number] => [m.data64F[0], m.data64F[1], m.data64F[2]];
    const rv: Array<[number, number, number]> = [];
    const tv: Array<[number, number, number]> = [];
    for (let i = 0; i < views.length; i++) {
      rv.push(vec3(rvecs.get(i)));
      tv.push(vec3(tvecs.get(i)));
    }
    return {
      rms,
      K: Array.from(K.data64F as Float64Array),
      dist: Array.from(dist.data64F as Float64Array),
      perView: Array.from(perView.data64F as Float64Array),
      rvecs: rv,
      tvecs: tv,
    };
  } finally {
    for (const m of [...mats, K, dist, sdI, sdE, perView]) m.delete();
    objectPoints.delete();
    imagePoints.delete();
    rvecs.delete();
    tvecs.delete();
  }
}

/**
 * A coverage map: the image divided into cells shaded by how many corners fell in each
 * (dark = none), with every used corner drawn as a dot. RGB, width × height.
 */
export function coverageMap(
  views: readonly BoardView[],
  width: number,
  height: number,
  cell = 40,
): Uint8Array {
  const cols = Math.ceil(width / cell);
  const rows = Math.ceil(height / cell);
  const count = new Uint32Array(cols * rows);
  for (const v of views)
    for (const [u, w] of v.pixels) {
      const c = Math.floor(u / cell);
      const r = Math.floor(w / cell);
      if (c >= 0 && r >= 0 && c < cols && r < rows) count[r * cols + c]!++;
    }
  const max = Math.max(1, ...count);
  const rgb = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const n = count[Math.floor(y / cell) * cols + Math.floor(x / cell)]!;
      const k = (y * width + x) * 3;
      const s = n === 0 ? 0 : 0.25 + (0.75 * n) / max;
      rgb[k] = n === 0 ? 60 : 20;
      rgb[k + 1] = n === 0 ? 20 : Math.round(220 * s);
      rgb[k + 2] = n === 0 ? 20 : Math.round(80 * s);
    }
  for (const v of views)
    for (const [u, w] of v.pixels)
      for (let dy = -1; dy <= 1; dy++)
        for (let dx = -1; dx <= 1; dx++) {
          const x = Math.round(u) + dx;
          const y = Math.round(w) + dy;
          if (x < 0 || y < 0 || x >= width || y >= height) continue;
          rgb.fill(255, (y * width + x) * 3, (y * width + x) * 3 + 3);
        }
  return rgb;
}
