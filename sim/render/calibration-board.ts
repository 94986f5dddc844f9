/**
 * ChArUco calibration boards as render objects: the printed board (calibration/board.ts) as a
 * textured plane with its white margin, fixed in the world or following the flange.
 */
import { boardRaster } from "../../calibration/board.ts";
import type { CalibrationBoard } from "../../calibration/schema.ts";
import { type Mat4, mat4Mul, poseToMat4 } from "../../robots/math.ts";
import type { SceneObject } from "./scene.ts";

/** Texels per board square of the sim's board texture. */
export const BOARD_TEXELS_PER_SQUARE = 64;
/** White margin around a sim board, in squares. */
export const BOARD_MARGIN_SQUARES = 0.5;

/**
 * Add each board to the scene; flange-mounted boards get a pose update in `renderSync`
 * (run when a frame is captured), from `flangeWorld` (world ← flange).
 */
export function addCalibrationBoards(
  boards: readonly CalibrationBoard[],
  add: (o: SceneObject) => SceneObject,
  renderSync: Array<() => void>,
  flangeWorld: (out: Mat4) => Mat4,
): void {
  for (const b of boards) {
    const P = BOARD_TEXELS_PER_SQUARE;
    const marginPx = Math.round(BOARD_MARGIN_SQUARES * P);
    const r = boardRaster(b.board, P, marginPx);
    const mPerPx = b.board.squareM / P;
    const obj = add({
      id: `calibration_board_${b.name}`,
      shape: {
        kind: "texturedPlane",
        originM: [-marginPx * mPerPx, -marginPx * mPerPx],
        sizeM: [r.width * mPerPx, r.height * mPerPx],
        texture: { width: r.width, height: r.height, grey: r.grey },
      },
      pose: b.mount.frame === "world" ? poseToMat4(b.mount.poseWorld) : poseToMat4(b.mount.poseFlange),
      color: [255, 255, 255],
    });
    if (b.mount.frame === "flange") {
      const flangeFromBoard = poseToMat4(b.mount.poseFlange);
      const tmp = new Float64Array(16);
      renderSync.push(() => {
        mat4Mul(flangeWorld(tmp), flangeFromBoard, obj.pose);
      });
    }
  }
}
