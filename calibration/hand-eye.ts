/**
 * Eye-to-hand calibration of a fixed camera from a board carried on the flange: solve
 * cam←base (Z) and flange←board (Y) from  Z · Aᵢ · Y = Bᵢ,  Aᵢ = base←flange (the robot's FK at
 * view i), Bᵢ = cam←board (the board's pose seen by the camera, solvePnP with calibrated
 * intrinsics) — the robot-world / hand-eye problem (AX = ZB).
 *
 * Closed-form start: the rotations from the null space of the stacked Kronecker system
 * (R_Z R_Aᵢ = R_Bᵢ R_Yᵀ, linear in vec R_Z and vec R_Yᵀ; smallest eigenvector, projected onto
 * rotations), then the translations by linear least squares. Refinement: Levenberg–Marquardt on
 * the board corners' reprojection error over every view (12 parameters: rotation vector and
 * translation of Z and of Y; forward-difference Jacobian).
 */
import { type Mat4, mat4Mul, mat4Point, mat4RigidInverse, mat4ToPose, poseToMat4 } from "../robots/math.ts";
import { CodedError } from "../seam/errors.ts";
import { type BoardSpec, cornerPoint } from "./board.ts";
import type { BoardView } from "./intrinsics.ts";
import {
  det3,
  mat3ToRotvec,
  nearestRotation,
  rigid,
  rotationAngle,
  rotationOf,
  rotvecToMat3,
  solveLinear,
  symmetricEigen,
} from "./linalg.ts";
import { loadOpenCv } from "./opencv.ts";
import { type CameraIntrinsics, projectCameraPoint } from "./projection.ts";
import type { Pose } from "./api-client.ts";

export interface HandEyeView {
  id: string;
  /** base ← flange */
  flangeBase: Pose;
  corners: BoardView;
}

export interface HandEyeResult {
  /** camera ← base */
  camFromBase: Mat4;
  /** flange ← board */
  flangeFromBoard: Mat4;
  /** RMS reprojection error of every corner after refinement, px */
  rmsPx: number;
  /** per view: Z·A·Y against the camera's own board pose (PnP), mm and degrees */
  residuals: Array<{ id: string; positionMm: number; angleDeg: number; reprojectionPx: number }>;
  /** the closed-form start's RMS reprojection error, px (how much the refinement gained) */
  closedFormRmsPx: number;
  iterations: number;
}

/** camera ← board of one view by PnP (iterative, OpenCV) with the given intrinsics. */
export async function boardPoseInCamera(
  board: BoardSpec,
  view: BoardView,
  cam: CameraIntrinsics,
): Promise<Mat4> {
  const { cv } = await loadOpenCv();
  const obj = cv.matFromArray(
    view.ids.length,
    1,
    cv.CV_64FC3,
    view.ids.flatMap((id) => cornerPoint(board, id)),
  );
  const img = cv.matFromArray(view.ids.length, 1, cv.CV_64FC2, view.pixels.flat());
  const K = cv.matFromArray(3, 3, cv.CV_64F, [cam.fx, 0, cam.cx, 0, cam.fy, cam.cy, 0, 0, 1]);
  const D = cv.matFromArray(1, 5, cv.CV_64F, [...cam.distortion, 0, 0, 0, 0, 0].slice(0, 5));
  const rvec = new cv.Mat();
  const tvec = new cv.Mat();
  try {
    const ok = cv.solvePnP(obj, img, K, D, rvec, tvec, false, cv.SOLVEPNP_ITERATIVE ?? 0);
    if (!ok)
      throw new CodedError("RB_ERR_CALIB_BOARD_NOT_SEEN", {
        camera: "?",
        reason: `solvePnP failed on ${view.id}`,
      });
    return rigid(
      rotvecToMat3(Array.from(rvec.data64F as Float64Array)),
      Array.from(tvec.data64F as Float64Array),
    );
  } finally {
    for (const m of [obj, img, K, D, rvec, tvec]) m.delete();
  }
}

/** Solve the eye-to-hand problem for one fixed camera. */
export async function solveEyeToHand(
  camera: string,
  board: BoardSpec,
  views: readonly HandEyeView[],
  cam: CameraIntrinsics,
  opts: { minViews?: number; minCorners?: number } = {},
): Promise<HandEyeResult> {
  const minCorners = opts.minCorners ?? 12;
  const used = views.filter((v) => v.corners.ids.length >= minCorners);
  const minViews = opts.minViews ?? 5;
  if (used.length < minViews)
    throw new CodedError("RB_ERR_CALIB_TOO_FEW_VIEWS", {
      camera,
      usable: used.length,
      needed: minViews,
      rejected: views.length - used.length,
    });
  const A = used.map((v) => poseToMat4(v.flangeBase));
  const B: Mat4[] = [];
  for (const v of used) B.push(await boardPoseInCamera(board, v.corners, cam));

  // --- closed form: rotations
  const N = new Array<number>(18 * 18).fill(0);
  for (let i = 0; i < used.length; i++) {
    const RA = rotationOf(A[i]!);
    const RB = rotationOf(B[i]!);
    // rows (9): (R_Aᵀ ⊗ I) vec R_Z − (I ⊗ R_B) vec W = 0, vec column-major
    const M: number[][] = [];
    for (let i1 = 0; i1 < 3; i1++)
      for (let k = 0; k < 3; k++) {
        const row = new Array<number>(18).fill(0);
        for (let j = 0; j < 3; j++)
          for (let l = 0; l < 3; l++) {
            // (R_Aᵀ ⊗ I)[(i1,k),(j,l)] = R_A[j][i1] · δ(k,l)
            if (k === l) row[j * 3 + l]! += RA[j * 3 + i1]!;
            // (I ⊗ R_B)[(i1,k),(j,l)] = δ(i1,j) · R_B[k][l]
            if (i1 === j) row[9 + j * 3 + l]! -= RB[k * 3 + l]!;
          }
        M.push(row);
      }
    for (const row of M)
      for (let p = 0; p < 18; p++) for (let q = 0; q < 18; q++) N[p * 18 + q]! += row[p]! * row[q]!;
  }
  const x = symmetricEigen(N, 18).vectors[0]!;
  const unvec = (o: number) => [0, 1, 2].flatMap((r) => [0, 1, 2].map((c) => x[o + c * 3 + r]!));
  let Rz = unvec(0);
  let W = unvec(9);
  const d = det3(Rz);
  const s = Math.sign(d) * Math.cbrt(Math.abs(d));
  Rz = nearestRotation(Rz.map((v) => v / s));
  W = nearestRotation(W.map((v) => v / s));
  const Ry = [0, 1, 2].flatMap((r) => [0, 1, 2].map((c) => W[c * 3 + r]!));

  // --- closed form: translations   R_Z R_Aᵢ t_Y + t_Z = t_Bᵢ − R_Z t_Aᵢ
  const AtA = new Array<number>(36).fill(0);
  const Atb = new Array<number>(6).fill(0);
  for (let i = 0; i < used.length; i++) {
    const RA = rotationOf(A[i]!);
    const tA = [A[i]![3]!, A[i]![7]!, A[i]![11]!];
    const tB = [B[i]![3]!, B[i]![7]!, B[i]![11]!];
    for (let r = 0; r < 3; r++) {
      const row = new Array<number>(6).fill(0);
      for (let c = 0; c < 3; c++) {
        let v = 0;
        for (let k = 0; k < 3; k++) v += Rz[r * 3 + k]! * RA[k * 3 + c]!;
        row[c] = v;
      }
      row[3 + r] = 1;
      let rhs = tB[r]!;
      for (let k = 0; k < 3; k++) rhs -= Rz[r * 3 + k]! * tA[k]!;
      for (let p = 0; p < 6; p++) {
        Atb[p]! += row[p]! * rhs;
        for (let q = 0; q < 6; q++) AtA[p * 6 + q]! += row[p]! * row[q]!;
      }
    }
  }
  const t = solveLinear(AtA, Atb, 6);
  if (!t)
    throw new CodedError("RB_ERR_CALIB_NOT_CONVERGED", {
      camera,
      reason: "degenerate robot motion (translations)",
    });

  // --- refinement: LM on reprojection error
  let theta = [...mat3ToRotvec(Rz), t[3]!, t[4]!, t[5]!, ...mat3ToRotvec(Ry), t[0]!, t[1]!, t[2]!];
  const pts = used.map((v) => v.corners.ids.map((id) => cornerPoint(board, id)));
  const residuals = (th: readonly number[]): number[] => {
    const Z = rigid(rotvecToMat3(th.slice(0, 3)), th.slice(3, 6));
    const Y = rigid(rotvecToMat3(th.slice(6, 9)), th.slice(9, 12));
    const out: number[] = [];
    for (let i = 0; i < used.length; i++) {
      const M = mat4Mul(mat4Mul(Z, A[i]!), Y);
      const obs = used[i]!.corners.pixels;
      pts[i]!.forEach((p, j) => {
        const q = projectCameraPoint(cam, mat4Point(M, p));
        if (!q) out.push(1e3, 1e3);
        else out.push(q.u - obs[j]![0], q.v - obs[j]![1]);
      });
    }
    return out;
  };
  const rms = (r: number[]) => Math.sqrt(r.reduce((a, v) => a + v * v, 0) / (r.length / 2));
  let r = residuals(theta);
  const closedFormRmsPx = rms(r);
  let lambda = 1e-3;
  let iterations = 0;
  for (; iterations < 100; iterations++) {
    const n = r.length;
    const J: number[][] = [];
    for (let p = 0; p < 12; p++) {
      const h = 1e-7;
      const tp = theta.slice();
      tp[p]! += h;
      const rp = residuals(tp);
      J.push(rp.map((v, k) => (v - r[k]!) / h));
    }
    const H = new Array<number>(144).fill(0);
    const g = new Array<number>(12).fill(0);
    for (let p = 0; p < 12; p++) {
      for (let k = 0; k < n; k++) g[p]! -= J[p]![k]! * r[k]!;
      for (let q = p; q < 12; q++) {
        let v = 0;
        for (let k = 0; k < n; k++) v += J[p]![k]! * J[q]![k]!;
        H[p * 12 + q] = v;
        H[q * 12 + p] = v;
      }
    }
    const cost = r.reduce((a, v) => a + v * v, 0);
    let improved = false;
    for (let tries = 0; tries < 10; tries++) {
      const Hd = H.slice();
      for (let p = 0; p < 12; p++) Hd[p * 13]! *= 1 + lambda;
      const step = solveLinear(Hd, g, 12);
      if (!step) break;
      const cand = theta.map((v, p) => v + step[p]!);
      const rc = residuals(cand);
      const cc = rc.reduce((a, v) => a + v * v, 0);
      if (cc < cost) {
        theta = cand;
        r = rc;
        lambda = Math.max(1e-9, lambda / 10);
        improved = cost - cc > 1e-12 * cost;
        break;
      }
      lambda *= 10;
    }
    if (!improved) break;
  }
  const Z = rigid(rotvecToMat3(theta.slice(0, 3)), theta.slice(3, 6));
  const Y = rigid(rotvecToMat3(theta.slice(6, 9)), theta.slice(9, 12));
  const perView = used.map((v, i) => {
    const M = mat4Mul(mat4Mul(Z, A[i]!), Y);
    const diff = mat4Mul(mat4RigidInverse(B[i]!), M);
    const obs = v.corners.pixels;
    let e = 0;
    pts[i]!.forEach((p, j) => {
      const q = projectCameraPoint(cam, mat4Point(M, p))!;
      e += (q.u - obs[j]![0]) ** 2 + (q.v - obs[j]![1]) ** 2;
    });
    return {
      id: v.id,
      positionMm: Math.hypot(M[3]! - B[i]![3]!, M[7]! - B[i]![7]!, M[11]! - B[i]![11]!) * 1000,
      angleDeg: (rotationAngle(diff, rigid([1, 0, 0, 0, 1, 0, 0, 0, 1], [0, 0, 0])) * 180) / Math.PI,
      reprojectionPx: Math.sqrt(e / pts[i]!.length),
    };
  });
  return {
    camFromBase: Z,
    flangeFromBoard: Y,
    rmsPx: rms(r),
    residuals: perView,
    closedFormRmsPx,
    iterations,
  };
}

/** The eye-in-hand result: a wrist camera and a board fixed in the world. */
export interface EyeInHandResult extends Omit<HandEyeResult, "camFromBase" | "flangeFromBoard"> {
  /** camera ← flange */
  camFromFlange: Mat4;
  /** base ← board */
  baseFromBoard: Mat4;
}

/**
 * Eye-in-hand: a camera on the flange sees a board fixed on the table. cam←board =
 * cam←flange · flange←base · base←board is the same Z·A·Y = B with A = (base←flange)⁻¹,
 * Z = cam←flange and Y = base←board, so the eye-to-hand solver answers it.
 */
export async function solveEyeInHand(
  camera: string,
  board: BoardSpec,
  views: readonly HandEyeView[],
  cam: CameraIntrinsics,
  opts: { minViews?: number; minCorners?: number } = {},
): Promise<EyeInHandResult> {
  const inverted = views.map((v) => ({
    ...v,
    flangeBase: mat4ToPose(mat4RigidInverse(poseToMat4(v.flangeBase))) as Pose,
  }));
  const { camFromBase, flangeFromBoard, ...rest } = await solveEyeToHand(camera, board, inverted, cam, opts);
  return { ...rest, camFromFlange: camFromBase, baseFromBoard: flangeFromBoard };
}
