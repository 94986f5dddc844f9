import { describe, expect, it } from "vitest";
import { mat4Mul, mat4Point, mat4ToPose, mat4RigidInverse } from "../robots/math.ts";
import { DEFAULT_BOARD, cornerCount, cornerPoint } from "./board.ts";
import { solveEyeInHand, solveEyeToHand } from "./hand-eye.ts";
import { rigid, rotationAngle, rotvecToMat3 } from "./linalg.ts";
import { projectCameraPoint } from "./projection.ts";

const CAM = {
  width: 640,
  height: 480,
  fx: 554,
  fy: 554,
  cx: 319.5,
  cy: 239.5,
  distortion: [-0.08, 0.02, 0, 0, 0],
};

describe("eye-to-hand solver", () => {
  it("recovers camera ← base and flange ← board from exact synthetic views", async () => {
    const Z = rigid(rotvecToMat3([2.0, 0.3, -0.4]), [0.1, 0.3, 1.2]); // cam ← base
    const Y = rigid(rotvecToMat3([Math.PI, 0, 0.1]), [-0.13, 0.1, 0.24]); // flange ← board
    // flange poses that put the board in front of the camera, tilted several ways
    const camFromBoardNominal = rigid(rotvecToMat3([0, 0, 0]), [-0.13, -0.1, 0.45]);
    const views = [];
    for (let i = 0; i < 12; i++) {
      const tilt = rigid(
        rotvecToMat3([0.35 * Math.sin(i), 0.35 * Math.cos(1.7 * i), 0.3 * Math.sin(2.3 * i)]),
        [0.04 * Math.sin(3 * i), 0.03 * Math.cos(i), 0.05 * Math.sin(i)],
      );
      const B = mat4Mul(tilt, camFromBoardNominal);
      // A = Z⁻¹ B Y⁻¹
      const A = mat4Mul(mat4Mul(mat4RigidInverse(Z), B), mat4RigidInverse(Y));
      const ids: number[] = [];
      const pixels: Array<[number, number]> = [];
      for (let id = 0; id < cornerCount(DEFAULT_BOARD); id++) {
        const q = projectCameraPoint(CAM, mat4Point(B, cornerPoint(DEFAULT_BOARD, id)));
        if (q?.inImage) {
          ids.push(id);
          pixels.push([q.u, q.v]);
        }
      }
      views.push({ id: `v${i}`, flangeBase: mat4ToPose(A) as never, corners: { id: `v${i}`, ids, pixels } });
    }
    const r = await solveEyeToHand("synthetic", DEFAULT_BOARD, views, CAM);
    const mm = (a: Float64Array, b: Float64Array) =>
      Math.hypot(a[3]! - b[3]!, a[7]! - b[7]!, a[11]! - b[11]!) * 1000;
    expect(mm(r.camFromBase, Z)).toBeLessThan(1e-3);
    expect(rotationAngle(r.camFromBase, Z)).toBeLessThan(1e-6);
    expect(mm(r.flangeFromBoard, Y)).toBeLessThan(1e-3);
    expect(r.rmsPx).toBeLessThan(1e-4);
  });

  it("eye-in-hand: recovers camera ← flange and base ← board for a wrist camera over a table board", async () => {
    const camFromFlange = rigid(rotvecToMat3([0.1, -0.2, 1.4]), [0.05, -0.06, 0.02]);
    const baseFromBoard = rigid(rotvecToMat3([Math.PI, 0, 0.3]), [0.5, -0.1, 0.02]);
    const views = [];
    for (let i = 0; i < 12; i++) {
      // the camera 0.4 m above the board, tilted a little differently each time
      const camFromBoard = mat4Mul(
        rigid(rotvecToMat3([0.3 * Math.sin(i), 0.3 * Math.cos(1.3 * i), 0.5 * Math.sin(2.1 * i)]), [
          0.03 * Math.sin(i),
          0.02 * Math.cos(2 * i),
          0,
        ]),
        rigid(rotvecToMat3([0, 0, 0]), [-0.13, -0.1, 0.4]),
      );
      // base ← flange = base←board · (cam←board)⁻¹ · cam←flange
      const baseFromFlange = mat4Mul(mat4Mul(baseFromBoard, mat4RigidInverse(camFromBoard)), camFromFlange);
      const ids: number[] = [];
      const pixels: Array<[number, number]> = [];
      for (let id = 0; id < cornerCount(DEFAULT_BOARD); id++) {
        const q = projectCameraPoint(CAM, mat4Point(camFromBoard, cornerPoint(DEFAULT_BOARD, id)));
        if (q?.inImage) {
          ids.push(id);
          pixels.push([q.u, q.v]);
        }
      }
      views.push({
        id: `w${i}`,
        flangeBase: mat4ToPose(baseFromFlange) as never,
        corners: { id: `w${i}`, ids, pixels },
      });
    }
    const r = await solveEyeInHand("wrist", DEFAULT_BOARD, views, CAM);
    const mm = (a: Float64Array, b: Float64Array) =>
      Math.hypot(a[3]! - b[3]!, a[7]! - b[7]!, a[11]! - b[11]!) * 1000;
    expect(mm(r.camFromFlange, camFromFlange)).toBeLessThan(1e-3);
    expect(rotationAngle(r.camFromFlange, camFromFlange)).toBeLessThan(1e-6);
    expect(mm(r.baseFromBoard, baseFromBoard)).toBeLessThan(1e-3);
  });

  it("too few views is a coded error", async () => {
    await expect(solveEyeToHand("front", DEFAULT_BOARD, [], CAM)).rejects.toMatchObject({
      code: "RB_ERR_CALIB_TOO_FEW_VIEWS",
    });
  });
});
