/**
 * Which board views to visit: an experiment design for the intrinsics fit.
 *
 * A joint-space spread around the presentation pose (procedures.ts posesAround) gives views
 * whose tilts happen to be what the wrist offsets make of them; with corner noise the principal
 * point is then weakly determined (cy wandered by ±1.3 px over noise seeds). Views planned in
 * the camera frame (view-plan.ts) need joint travel that takes the arm off the envelope that
 * keeps it clear of the wire's posts. So here the candidates stay inside that envelope — many
 * more of them than will be visited — and a subset is chosen by what each would tell the fit:
 *
 * - each candidate's view is predicted from the nominal geometry (the gateway's FK of the joint
 *   target, the calibration's camera pose and board mount, nominal intrinsics): the corners
 *   that fall inside the image, and whether the board faces the camera;
 * - per view, the linearised fit's information on the intrinsics (fx fy cx cy k1 k2 p1 p2) with
 *   the view's own six pose parameters eliminated (Schur complement: what the view says about
 *   the intrinsics that its pose cannot explain away);
 * - greedily, the view that most reduces the predicted variances of fx, fy, cx, cy and k1, each
 *   over its target (0.5 %, 1 px, 0.01), until K are chosen.
 *
 * The prediction uses only what a lab has before calibrating (tape-measured camera pose,
 * nominal intrinsics); nothing here reads simulator state. The gateway's safety supervisor still
 * judges every move of the chosen targets.
 */
import { type Mat4, mat4Point } from "../robots/math.ts";
import type { BenchApi } from "./api-client.ts";
import { type BoardSpec, cornerCount, cornerPoint } from "./board.ts";
import { distortPoint } from "./distortion.ts";
import { rotvecToMat3, solveLinear } from "./linalg.ts";
import { type CameraIntrinsics, intrinsicsOf } from "./projection.ts";
import type { Calibration } from "./schema.ts";
import { nominalView } from "./view-plan.ts";

/** intrinsic parameters of the information matrix, in this order */
const N = 8; // fx fy cx cy k1 k2 p1 p2

/** project a camera-frame point with intrinsics vector θ = [fx fy cx cy k1 k2 p1 p2] */
function project(t: readonly number[], p: readonly number[]): [number, number] {
  const x = p[0]! / p[2]!;
  const y = p[1]! / p[2]!;
  const [xd, yd] = distortPoint({ k1: t[4]!, k2: t[5]!, p1: t[6]!, p2: t[7]!, k3: 0 }, x, y);
  return [t[0]! * xd + t[2]!, t[1]! * yd + t[3]!];
}

/** A candidate view predicted from the nominal geometry. */
export interface PredictedView {
  /** corners predicted inside the image (with the margin) */
  corners: number;
  /** the view's 8 × 8 information on the intrinsics (per unit corner variance), row-major */
  info: number[];
}

/**
 * The information a view of the board at camera ← board `M` gives on the intrinsics, with its
 * pose eliminated. Corners outside the image (less `marginPx`) or a board seen from behind give
 * nothing.
 */
export function viewInformation(
  cam: CameraIntrinsics,
  board: BoardSpec,
  M: Mat4,
  marginPx = 10,
): PredictedView {
  const theta = [cam.fx, cam.fy, cam.cx, cam.cy, ...[0, 1, 2, 3].map((i) => cam.distortion[i] ?? 0)];
  // board z points into the board: its face is towards the camera when z looks away from it
  if (!(M[10]! > 0.05)) return { corners: 0, info: new Array(N * N).fill(0) };
  const pts: number[][] = [];
  for (let id = 0; id < cornerCount(board); id++) {
    const p = mat4Point(M, cornerPoint(board, id));
    if (!(p[2] > 0.05)) continue;
    const [u, v] = project(theta, p);
    if (u < marginPx || v < marginPx || u > cam.width - marginPx || v > cam.height - marginPx) continue;
    pts.push([...p]);
  }
  // Jacobian rows: [∂/∂θ (8) | ∂/∂(rotation, translation) in the camera frame (6)]
  const P = N + 6;
  const A: number[][] = [];
  const hTheta = [1e-3, 1e-3, 1e-3, 1e-3, 1e-6, 1e-6, 1e-6, 1e-6];
  for (const p of pts) {
    const ru: number[] = new Array(P).fill(0);
    const rv: number[] = new Array(P).fill(0);
    for (let k = 0; k < N; k++) {
      const tp = theta.slice();
      const tm = theta.slice();
      tp[k]! += hTheta[k]!;
      tm[k]! -= hTheta[k]!;
      const a = project(tp, p);
      const b = project(tm, p);
      ru[k] = (a[0] - b[0]) / (2 * hTheta[k]!);
      rv[k] = (a[1] - b[1]) / (2 * hTheta[k]!);
    }
    for (let k = 0; k < 6; k++) {
      const h = k < 3 ? 1e-6 : 1e-6;
      const move = (s: number) => {
        if (k >= 3) {
          const q = p.slice();
          q[k - 3]! += s * h;
          return q;
        }
        const w = [0, 0, 0];
        w[k] = s * h;
        const R = rotvecToMat3(w);
        return [0, 1, 2].map((r) => R[r * 3]! * p[0]! + R[r * 3 + 1]! * p[1]! + R[r * 3 + 2]! * p[2]!);
      };
      const a = project(theta, move(1));
      const b = project(theta, move(-1));
      ru[N + k] = (a[0] - b[0]) / (2 * h);
      rv[N + k] = (a[1] - b[1]) / (2 * h);
    }
    A.push(ru, rv);
  }
  // JᵀJ, then the Schur complement on the pose block
  const JtJ = new Array(P * P).fill(0);
  for (const r of A) for (let i = 0; i < P; i++) for (let j = 0; j < P; j++) JtJ[i * P + j] += r[i]! * r[j]!;
  const info = new Array(N * N).fill(0);
  if (pts.length < 6) return { corners: pts.length, info };
  const Bpp = [];
  for (let i = 0; i < 6; i++) for (let j = 0; j < 6; j++) Bpp.push(JtJ[(N + i) * P + N + j]);
  // X = Bpp⁻¹ · Bpθ (6 × 8), column by column
  const X: number[][] = [];
  for (let c = 0; c < N; c++) {
    const col = solveLinear(
      Bpp,
      [0, 1, 2, 3, 4, 5].map((i) => JtJ[(N + i) * P + c]),
      6,
    );
    if (!col) return { corners: pts.length, info };
    X.push(col);
  }
  for (let i = 0; i < N; i++)
    for (let j = 0; j < N; j++) {
      let s = JtJ[i * P + j];
      for (let k = 0; k < 6; k++) s -= JtJ[i * P + N + k] * X[j]![k]!;
      info[i * N + j] = s;
    }
  return { corners: pts.length, info };
}

/** the targets the selection weighs the predicted variances by: fx, fy 0.5 %, cx, cy 1 px, k1 0.01 */
function targetScales(cam: CameraIntrinsics): number[] {
  return [0.005 * cam.fx, 0.005 * cam.fy, 1, 1, 0.01];
}

/** a weak prior so a few views' information can be inverted: σ 100 px on fx…cy, 1 on k1…p2 */
const PRIOR = [1e-4, 1e-4, 1e-4, 1e-4, 1, 1, 1, 1];

/** Predicted variances of fx fy cx cy k1 (per unit corner variance) for summed information `info`. */
export function predictedVariances(info: readonly number[]): number[] {
  const F = info.map((v, i) => v + (i % (N + 1) === 0 ? PRIOR[i / (N + 1)]! : 0));
  return [0, 1, 2, 3, 4].map((k) => {
    const e = new Array(N).fill(0);
    e[k] = 1;
    return solveLinear(F, e, N)?.[k] ?? Number.POSITIVE_INFINITY;
  });
}

function score(cam: CameraIntrinsics, info: readonly number[]): number {
  const s = targetScales(cam);
  return predictedVariances(info).reduce((a, v, k) => a + v / s[k]! ** 2, 0);
}

/**
 * Choose `k` of the candidate views (greedy, by the sum of predicted variances over their
 * targets). Candidates with fewer than `minCorners` predicted corners are not chosen. Returns
 * the indices in the order chosen.
 */
export function selectViews(
  cam: CameraIntrinsics,
  candidates: readonly PredictedView[],
  k: number,
  minCorners = 12,
): number[] {
  const chosen: number[] = [];
  const sum = new Array(N * N).fill(0);
  const open = new Set(candidates.map((_, i) => i).filter((i) => candidates[i]!.corners >= minCorners));
  while (chosen.length < k && open.size > 0) {
    let best = -1;
    let bestScore = Number.POSITIVE_INFINITY;
    for (const i of open) {
      const s = score(
        cam,
        sum.map((v, j) => v + candidates[i]!.info[j]!),
      );
      if (s < bestScore) {
        bestScore = s;
        best = i;
      }
    }
    chosen.push(best);
    open.delete(best);
    candidates[best]!.info.forEach((v, j) => {
      sum[j] += v;
    });
  }
  return chosen;
}

/**
 * `k` joint targets out of `candidates` (joint vectors inside the envelope), chosen for the
 * intrinsics fit of `camera` seeing the board `boardName`, predicted through the calibration's
 * nominal geometry and the gateway's FK. Also returns the predicted standard deviations of
 * fx fy cx cy k1 of the chosen set and of the first k candidates (per px of corner noise).
 */
export async function selectJointTargets(
  api: BenchApi,
  cal: Calibration,
  camera: string,
  boardName: string,
  candidates: readonly (readonly number[])[],
  k: number,
): Promise<{ targets: number[][]; predictedSd: number[]; spreadSd: number[] }> {
  const c = cal.cameras.find((x) => x.name === camera);
  const board = cal.calibrationBoards?.find((b) => b.name === boardName);
  if (!c || !board)
    return { targets: candidates.slice(0, k).map((q) => [...q]), predictedSd: [], spreadSd: [] };
  const cam: CameraIntrinsics = intrinsicsOf(c);
  const predicted: PredictedView[] = [];
  for (const q of candidates) {
    const M = await nominalView(api, cal, camera, boardName, [...q]);
    predicted.push(M ? viewInformation(cam, board.board, M) : { corners: 0, info: new Array(N * N).fill(0) });
  }
  // visited in the candidates' order (the spread's order), not the order chosen
  const pick = selectViews(cam, predicted, k).sort((a, b) => a - b);
  const sd = (idx: number[]) => {
    const sum = new Array(N * N).fill(0);
    for (const j of idx)
      predicted[j]!.info.forEach((v, m) => {
        sum[m] += v;
      });
    return predictedVariances(sum).map(Math.sqrt);
  };
  return {
    targets: pick.map((j) => [...candidates[j]!]),
    predictedSd: sd(pick),
    spreadSd: sd(predicted.map((_, j) => j).slice(0, k)),
  };
}
