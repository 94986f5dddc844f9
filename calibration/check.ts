/**
 * `calibrate check`: a quick re-validation at the start of a session. Per camera, one frame
 * through the API; the calibration board is found, its pose in the camera solved with the
 * calibrated intrinsics (PnP) and compared with where the calibration puts it. A fixed camera
 * (eye-to-hand) sees the board carried on the flange: world camera pose against robot FK and
 * board mount. The wrist camera (eye-in-hand) sees the board on the table: its pose is the
 * robot FK and its cam←flange mount, the board's is its world pose. The difference is how far
 * the camera seems to have moved (on its mount); above the threshold the check warns. An overlay
 * PNG per camera shows the calibrated wire and board projected onto the frame, the detected
 * corners, and for the wrist camera the loop (which rides with it).
 */
import { type Mat4, mat4Mul, mat4Point, mat4RigidInverse, poseToMat4 } from "../robots/math.ts";
import type { BenchApi } from "./api-client.ts";
import { type BoardSpec, boardSizeM, cornerPoint } from "./board.ts";
import { detectBoard, type ImageU8 } from "./board-detect.ts";
import { boardPoseInCamera } from "./hand-eye.ts";
import { rotationAngle } from "./linalg.ts";
import { drawCross, drawPolyline3d, rgbCopy } from "./overlay.ts";
import { type CameraIntrinsics, intrinsicsOf, projectCameraPoint } from "./projection.ts";
import type { Calibration, CameraCalibration } from "./schema.ts";

export interface CameraCheck {
  camera: string;
  /** board corners found in the frame */
  corners: number;
  /**
   * corners left out of the pose as outliers (reprojection error > 1 px and > 3 × the median:
   * a corner found on an edge of something in front of the board, e.g. the loop in the wrist
   * camera's view)
   */
  outliers: number;
  /** apparent camera displacement since calibration, mm and degrees (null when the board was not seen) */
  movedMm: number | null;
  movedDeg: number | null;
  /** RMS distance between the detected corners (less the outliers) and the calibration's prediction, px */
  predictionErrorPx: number | null;
  warning: string | null;
  overlay: ImageU8;
}

/** camera ← board by PnP, once more without the corners that stand out of the first fit. */
async function robustBoardPose(
  board: BoardSpec,
  det: { ids: number[]; pixels: Array<[number, number]> },
  K: CameraIntrinsics,
): Promise<{ camFromBoard: Mat4; outliers: number; keep: boolean[] }> {
  const first = await boardPoseInCamera(board, { id: "check", ...det }, K);
  const err = det.ids.map((id, k) => {
    const q = projectCameraPoint(K, mat4Point(first, cornerPoint(board, id)));
    return q ? Math.hypot(q.u - det.pixels[k]![0], q.v - det.pixels[k]![1]) : Number.POSITIVE_INFINITY;
  });
  const median = [...err].sort((a, b) => a - b)[Math.floor(err.length / 2)]!;
  const keep = err.map((e) => e <= Math.max(1, 3 * median));
  const n = keep.filter(Boolean).length;
  if (n === err.length || n < 6) return { camFromBoard: first, outliers: 0, keep: err.map(() => true) };
  const view = {
    id: "check",
    ids: det.ids.filter((_, k) => keep[k]),
    pixels: det.pixels.filter((_, k) => keep[k]),
  };
  return { camFromBoard: await boardPoseInCamera(board, view, K), outliers: err.length - n, keep };
}

/**
 * The board a camera is checked against: for the wrist camera one fixed in the world (a board
 * in the gripper would fill its view), for a fixed camera one carried on the flange, else the
 * first the file names.
 */
function boardFor(cal: Calibration, c: CameraCalibration) {
  const boards = cal.calibrationBoards ?? [];
  const want = c.extrinsics.mount === "tool" ? "world" : "flange";
  return (
    boards.find((b) => b.mount.frame === want) ?? (c.extrinsics.mount === "tool" ? undefined : boards[0])
  );
}

/**
 * Check the calibration's cameras (default: every fixed camera, and the wrist camera when the
 * file names a board fixed in the world) against one frame each, taken together at the robot's
 * current joints.
 */
export async function checkCameras(
  api: BenchApi,
  cal: Calibration,
  opts: { cameras?: string[]; thresholdMm?: number; thresholdDeg?: number } = {},
): Promise<CameraCheck[]> {
  const thresholdMm = opts.thresholdMm ?? 2;
  const thresholdDeg = opts.thresholdDeg ?? 0.2;
  // by default every fixed camera, and the wrist camera when a board lies on the table for it
  const cams = cal.cameras.filter((c) =>
    opts.cameras ? opts.cameras.includes(c.name) : c.extrinsics.mount === "world" || !!boardFor(cal, c),
  );
  const { reading, images } = await api.capture(cams.map((c) => c.name));
  const fk = await api.fk(reading.q);
  const worldFromBase = poseToMat4(cal.robotBasePoseWorld);
  const worldFromFlange = mat4Mul(worldFromBase, poseToMat4(fk.flange));
  const out: CameraCheck[] = [];
  for (const c of cams) {
    const img = images.get(c.name);
    if (!img) continue;
    const board = boardFor(cal, c);
    const K = intrinsicsOf(c);
    // where the calibration puts the camera now: fixed in the world, or riding on the flange
    const worldFromCam =
      c.extrinsics.mount === "world"
        ? poseToMat4(c.extrinsics.poseWorld)
        : mat4Mul(worldFromFlange, poseToMat4(c.extrinsics.poseFlange));
    const camFromWorld = mat4RigidInverse(worldFromCam);
    const overlay = rgbCopy(img);
    // the calibrated wire (orange) and board outline (blue)
    drawPolyline3d(overlay, K, mat4Mul(camFromWorld, worldFromBase), cal.wire.pointsBase, [255, 140, 0], 2);
    let corners = 0;
    let movedMm: number | null = null;
    let movedDeg: number | null = null;
    let predictionErrorPx: number | null = null;
    let warning: string | null = null;
    let outliers = 0;
    if (c.extrinsics.mount === "tool") {
      // the loop (green-blue ring) where the calibrated tool frame puts it
      const loop = mat4Mul(mat4Mul(camFromWorld, worldFromFlange), poseToMat4(cal.tool.loopPoseFlange));
      const r = cal.tool.loopInnerRadiusM;
      const ring = Array.from({ length: 49 }, (_, k) => {
        const a = (2 * Math.PI * k) / 48;
        return [r * Math.cos(a), r * Math.sin(a), 0] as [number, number, number];
      });
      drawPolyline3d(overlay, K, loop, ring, [0, 200, 200], 2);
    }
    if (!board)
      warning =
        c.extrinsics.mount === "tool"
          ? `the calibration file names no board fixed in the world for the wrist camera ${c.name}: add the table board (calibrationBoards, poseWorld)`
          : "the calibration file names no calibration board";
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
        const {
          camFromBoard: camFromBoardSeen,
          outliers: dropped,
          keep,
        } = await robustBoardPose(board.board, det, K);
        outliers = dropped;
        // where the camera would be if the board is where the calibration says (for the wrist
        // camera: the robot where its FK says, so the difference is the camera on its mount)
        const worldFromCamSeen = mat4Mul(worldFromBoard, mat4RigidInverse(camFromBoardSeen));
        movedMm =
          Math.hypot(
            worldFromCamSeen[3]! - worldFromCam[3]!,
            worldFromCamSeen[7]! - worldFromCam[7]!,
            worldFromCamSeen[11]! - worldFromCam[11]!,
          ) * 1000;
        movedDeg = (rotationAngle(worldFromCamSeen, worldFromCam) * 180) / Math.PI;
        const camFromBoard = mat4Mul(camFromWorld, worldFromBoard);
        // over the corners the pose kept (an outlier is drawn in magenta)
        let e2 = 0;
        let n = 0;
        det.ids.forEach((id, k) => {
          const q = projectCameraPoint(K, mat4Point(camFromBoard, cornerPoint(board.board, id)));
          const p = det.pixels[k]!;
          drawCross(overlay, p, keep[k] ? [255, 0, 0] : [255, 0, 255], 3);
          if (q) {
            drawCross(overlay, [q.u, q.v], [0, 220, 0], 5);
            if (keep[k]) {
              e2 += (q.u - p[0]) ** 2 + (q.v - p[1]) ** 2;
              n++;
            }
          }
        });
        predictionErrorPx = n ? Math.sqrt(e2 / n) : null;
        if (movedMm > thresholdMm || movedDeg > thresholdDeg)
          warning = `${c.name} seems to have moved ${movedMm.toFixed(1)} mm / ${movedDeg.toFixed(2)}° since calibration (threshold ${thresholdMm} mm / ${thresholdDeg}°): recalibrate its extrinsics`;
      }
    }
    out.push({ camera: c.name, corners, outliers, movedMm, movedDeg, predictionErrorPx, warning, overlay });
  }
  return out;
}
