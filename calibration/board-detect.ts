/**
 * Find a ChArUco board in an image: ArUco markers first, then the chessboard corners between
 * them interpolated and refined to sub-pixel precision by OpenCV's CharucoDetector
 * (objdetect module of `@techstark/opencv-js`). One detector per board spec, built on first use.
 */
import { type BoardSpec, cornerCount } from "./board.ts";
import { loadOpenCv, type OpenCv } from "./opencv.ts";

/** An 8-bit image as the detector takes it: 1 (grey) or 3 (RGB) channels, row-major. */
export interface ImageU8 {
  width: number;
  height: number;
  channels: 1 | 3;
  data: Uint8Array;
}

/** Corners of one board view. */
export interface BoardDetection {
  /** ChArUco corner ids (0 … cornerCount−1), ascending */
  ids: number[];
  /** pixel positions of those corners, [u, v] (OpenCV convention, pixel centres at integers) */
  pixels: Array<[number, number]>;
  /** ArUco markers found */
  markers: number;
}

/** The half-pixel bias of OpenCV 4.12's CharucoDetector (see detectBoard); 0 once the package carries the fix. */
export const CHARUCO_HALF_PIXEL_BIAS = 0.5;

const detectors = new Map<string, OpenCv>();

async function detectorFor(spec: BoardSpec): Promise<{ cv: OpenCv; det: OpenCv }> {
  const { cv } = await loadOpenCv();
  const key = JSON.stringify(spec);
  let det = detectors.get(key);
  if (!det) {
    const dict = cv.getPredefinedDictionary(cv[spec.dictionary]);
    const board = new cv.aruco_CharucoBoard(
      new cv.Size(spec.squaresX, spec.squaresY),
      spec.squareM,
      spec.markerM,
      dict,
      new cv.Mat(),
    );
    const dp = new cv.aruco_DetectorParameters();
    dp.cornerRefinementMethod = 1; // CORNER_REFINE_SUBPIX for the markers
    det = new cv.aruco_CharucoDetector(
      board,
      new cv.aruco_CharucoParameters(),
      dp,
      new cv.aruco_RefineParameters(10, 3, true),
    );
    detectors.set(key, det);
  }
  return { cv, det };
}

/** Luma of an RGB image (BT.601 weights), or the image itself when it is grey. */
export function toGrey(img: ImageU8): Uint8Array {
  if (img.channels === 1) return img.data;
  const n = img.width * img.height;
  const g = new Uint8Array(n);
  const d = img.data;
  for (let i = 0, k = 0; i < n; i++, k += 3)
    g[i] = (299 * d[k]! + 587 * d[k + 1]! + 114 * d[k + 2]! + 500) / 1000;
  return g;
}

/** Detect the board; corners are empty when it is not seen. */
export async function detectBoard(spec: BoardSpec, img: ImageU8): Promise<BoardDetection> {
  const { cv, det } = await detectorFor(spec);
  const grey = new cv.Mat(img.height, img.width, cv.CV_8UC1);
  const corners = new cv.Mat();
  const ids = new cv.Mat();
  const markerCorners = new cv.MatVector();
  const markerIds = new cv.Mat();
  try {
    grey.data.set(toGrey(img));
    det.detectBoard(grey, corners, ids, markerCorners, markerIds);
    const n = ids.rows;
    const out: BoardDetection = { ids: [], pixels: [], markers: markerIds.rows };
    const max = cornerCount(spec);
    const pairs: Array<[number, [number, number]]> = [];
    for (let i = 0; i < n; i++) {
      const id = ids.data32S[i]!;
      // OpenCV 4.12's CharucoDetector returns corners +0.5 px off in x and y (it shifts the
      // cornerSubPix result by half a pixel; opencv/opencv#25539, fixed upstream by #28380):
      // undo it, so pixels follow the cornerSubPix / projection convention
      if (id >= 0 && id < max)
        pairs.push([
          id,
          [
            corners.data32F[2 * i]! - CHARUCO_HALF_PIXEL_BIAS,
            corners.data32F[2 * i + 1]! - CHARUCO_HALF_PIXEL_BIAS,
          ],
        ]);
    }
    pairs.sort((a, b) => a[0] - b[0]);
    for (const [id, px] of pairs) {
      out.ids.push(id);
      out.pixels.push(px);
    }
    return out;
  } finally {
    grey.delete();
    corners.delete();
    ids.delete();
    markerCorners.delete();
    markerIds.delete();
  }
}
