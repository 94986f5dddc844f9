/**
 * `calibrate check`: a quick re-validation at the start of a session. Per camera, one frame
 * through the API; the calibration board is found, its pose in the camera solved with the
 * calibrated intrinsics (PnP) and compared with where the calibration puts it (world camera
 * pose, robot FK, board mount). The difference is how far the camera seems to have moved; above
 * the threshold the check warns. An overlay PNG per camera shows the calibrated wire and board
 * projected onto the frame, and the detected corners.
 */
import { type Mat4, mat4Mul, mat4Point, mat4RigidInverse, poseToMat4 } from "../robots/math.ts";
import type { BenchApi } from "./api-client.ts";
import { boardSizeM, cornerPoint } from "./board.ts";
import { detectBoard, type ImageU8 } from "./board-detect.ts";
import { boardPoseInCamera } from "./hand-eye.ts";
import { rotationAngle } from "./linalg.ts";
import { drawCross, drawPolyline3d, rgbCopy } from "./overlay.ts";
import { type CameraIntrinsics, projectCameraPoint } from "./projection.ts";
import type { Calibration, CameraCalibration } from "./schema.ts";

export interface CameraCheck {
  camera: string;
  /** board corners found in the frame */
  corners: number;
  /** apparent camera displacement since calibration, mm and degrees (null when the board was not seen) */
  movedMm: number | null;
  movedDeg: number | null;
  /** RMS distance between detected corners and the calibration's prediction, px */
  predictionErrorPx: number | null;
  warning: string | null;
  overlay: ImageU8;
}

export function intrinsicsOf(c: CameraCalibration): CameraIntrinsics {
  const i = c.intrinsics;
  return {
    width: i.widthPx,
    height: i.heightPx,
    fx: i.fxPx,
    fy: i.fyPx,
    cx: i.cxPx,
    cy: i.cyPx,
    distortion: i.distortion,
  };
}

/** Check every world camera of the calibration against one frame each. */
export async function checkCameras(
  api: BenchApi,
  cal: Calibration,
  opts: { cameras?: string[]; thresholdMm?: number; thresholdDeg?: number } = {},
): Promise<CameraCheck[]> {
  const thresholdMm = opts.thresholdMm ?? 2;
  const thresholdDeg = opts.thresholdDeg ?? 0.2;
  const board = cal.calibrationBoards?.[0];
  const cams = cal.cameras.filter(
    (c) => c.extrinsics.mount === "world" && (!opts.cameras || opts.cameras.includes(c.name)),
  );
  const { reading, images } = await api.capture(cams.map((c) => c.name));
  const fk = await api.fk(reading.q);
  const worldFromBase = poseToMat4(cal.robotBasePoseWorld);
  const worldFromFlange = mat4Mul(worldFromBase, poseToMat4(fk.flange));
  const out: CameraCheck[] = [];
  for (const c of cams) {
    if (c.extrinsics.mount !== "world") continue;
    const img = images.get(c.name);
    if (!img) continue;
    const K = intrinsicsOf(c);
    const worldFromCam = poseToMat4(c.extrinsics.poseWorld);
    const camFromWorld = mat4RigidInverse(worldFromCam);
    const overlay = rgbCopy(img);
    // the calibrated wire (orange) and board outline (blue)
    drawPolyline3d(overlay, K, mat4Mul(camFromWorld, worldFromBase), cal.wire.pointsBase, [255, 140, 0], 2);
    let corners = 0;
    let movedMm: number | null = null;
    let movedDeg: number | null = null;
    let predictionErrorPx: number | null = null;
    let warning: string | null = null;
    if (!board) warning = "the calibration file names no calibration board";
    else {
      const worldFromBoard: Mat4 =
        board.mount.frame === "world"
          ? poseToMat4(board.mount.poseWorld)
          : mat4Mul(worldFromFlange, poseToMat4(board.mount.poseFlange));
      const [w, h] = boardSizeM(board.board);
      drawPolyline3d(
        overlay,
        K,
        mat4Mul(camFromWorld, worldFromBoard),
        [
          [0, 0, 0],
          [w, 0, 0],
          [w, h, 0],
          [0, h, 0],
          [0, 0, 0],
        ],
        [40, 120, 255],
        2,
      );
      const det = await detectBoard(board.board, img);
      corners = det.ids.length;
      if (corners < 6)
        warning = `board not seen by ${c.name} (${corners} corners): bring it into view and check again`;
      else {
        const camFromBoardSeen = await boardPoseInCamera(board.board, { id: c.name, ...det }, K);
        // where the camera would be if the board is where the calibration says
        const worldFromCamSeen = mat4Mul(worldFromBoard, mat4RigidInverse(camFromBoardSeen));
        movedMm =
          Math.hypot(
            worldFromCamSeen[3]! - worldFromCam[3]!,
            worldFromCamSeen[7]! - worldFromCam[7]!,
            worldFromCamSeen[11]! - worldFromCam[11]!,
          ) * 1000;
        movedDeg = (rotationAngle(worldFromCamSeen, worldFromCam) * 180) / Math.PI;
        const camFromBoard = mat4Mul(camFromWorld, worldFromBoard);
        let e2 = 0;
        det.ids.forEach((id, k) => {
          const q = projectCameraPoint(K, mat4Point(camFromBoard, cornerPoint(board.board, id)));
          const p = det.pixels[k]!;
          drawCross(overlay, p, [255, 0, 0], 3);
          if (q) {
            drawCross(overlay, [q.u, q.v], [0, 220, 0], 5);
            e2 += (q.u - p[0]) ** 2 + (q.v - p[1]) ** 2;
          }
        });
        predictionErrorPx = Math.sqrt(e2 / corners);
        if (movedMm > thresholdMm || movedDeg > thresholdDeg)
          warning = `${c.name} seems to have moved ${movedMm.toFixed(1)} mm / ${movedDeg.toFixed(2)}° since calibration (threshold ${thresholdMm} mm / ${thresholdDeg}°): recalibrate its extrinsics`;
      }
    }
    out.push({ camera: c.name, corners, movedMm, movedDeg, predictionErrorPx, warning, overlay });
  }
  return out;
}
