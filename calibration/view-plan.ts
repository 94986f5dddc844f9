/**
 * Where the board should appear to a camera, and the robot targets that put it there.
 *
 * Zhang's method pins the principal point and the focal lengths through the perspective of
 * tilted board views: views that are all nearly face-on, or boards cut off by the image edge,
 * leave cx, cy and fx, fy weakly determined (with 0.17 px of corner noise the principal point of
 * a random joint-space spread wandered by ±2.5 px). So the views are planned in the camera frame:
 * the whole board in the image (checked with the nominal intrinsics), its centre spread over the
 * image, tilted 15°…40° about a direction that turns by the golden angle from view to view, at
 * distances around the one where the board fills about half the image width. Deterministic (no
 * randomness), so a session is repeatable.
 *
 * The camera-frame poses become robot targets through the bench's nominal calibration (the
 * camera pose a lab measured with a tape, the board's nominal mount) and the gateway's IK; every
 * move is still judged by the gateway's safety supervisor, so a target outside the safety
 * profile is refused there and skipped by the procedure (collectCarriedViews).
 */
import { type Mat4, mat4Mul, mat4RigidInverse, mat4ToPose, poseToMat4 } from "../robots/math.ts";
import { ApiError, type BenchApi, type Pose } from "./api-client.ts";
import { type BoardSpec, boardSizeM } from "./board.ts";
import { mat3ToRotvec, rigid, rotationOf, rotvecToMat3 } from "./linalg.ts";
import type { CameraIntrinsics } from "./projection.ts";
import { POSE_SPREAD_RAD } from "./procedures.ts";
import type { Calibration } from "./schema.ts";

export interface ViewPlanOptions {
  /** smallest and largest tilt of the board against the optical axis, rad (default 0.26…0.7) */
  tiltRad?: [number, number];
  /** share of the image width the face-on board should span at the middle distance (default 0.5) */
  fill?: number;
  /** distance factors around the middle distance (default 0.9…1.2) */
  distance?: [number, number];
  /** the middle distance of the board's centre, m (default: where the face-on board spans `fill` of the image width); take it from the presented pose (`viewDepth`) */
  distanceM?: number;
  /** pixels the board's outline keeps from the image edge (default 20) */
  marginPx?: number;
  /**
   * the board's roll about the optical axis the views vary around, rad (default 0: board x
   * along image x); take it from the pose the operator presented the board in
   * (`rollOfView`), so no view asks the wrist to turn over
   */
  rollRad?: number;
}

const GOLDEN = Math.PI * (3 - Math.sqrt(5));

/** Radical inverse in base b (Halton). */
function halton(i: number, b: number): number {
  let f = 1;
  let r = 0;
  for (let n = i; n > 0; n = Math.floor(n / b)) {
    f /= b;
    r += f * (n % b);
  }
  return r;
}

function mul3(a: readonly number[], b: readonly number[]): number[] {
  const o = new Array<number>(9).fill(0);
  for (let r = 0; r < 3; r++)
    for (let c = 0; c < 3; c++) for (let k = 0; k < 3; k++) o[r * 3 + c]! += a[r * 3 + k]! * b[k * 3 + c]!;
  return o;
}

/** Depth of the board's centre in the camera frame, m (the middle distance for planned views). */
export function viewDepth(camFromBoard: Mat4, board: BoardSpec): number {
  const [w, h] = boardSizeM(board);
  return camFromBoard[8]! * (w / 2) + camFromBoard[9]! * (h / 2) + camFromBoard[11]!;
}

/** The roll about the optical axis of a camera ← board pose: the angle of the board's x axis in the image plane, rad. */
export function rollOfView(camFromBoard: Mat4): number {
  return Math.atan2(camFromBoard[4]!, camFromBoard[0]!);
}

/**
 * camera ← board at joints `q`, from the calibration's nominal geometry and the gateway's FK:
 * where the planned views start from.
 */
export async function nominalView(
  api: BenchApi,
  cal: Calibration,
  camera: string,
  boardName: string,
  q: number[],
): Promise<Mat4 | null> {
  const cam = cal.cameras.find((c) => c.name === camera);
  const board = cal.calibrationBoards?.find((b) => b.name === boardName);
  if (!cam || !board) return null;
  const worldFromBase = poseToMat4(cal.robotBasePoseWorld);
  const worldFromFlange = mat4Mul(worldFromBase, poseToMat4((await api.fk(q)).flange));
  const worldFromCam =
    cam.extrinsics.mount === "world"
      ? poseToMat4(cam.extrinsics.poseWorld)
      : mat4Mul(worldFromFlange, poseToMat4(cam.extrinsics.poseFlange));
  const worldFromBoard =
    board.mount.frame === "world"
      ? poseToMat4(board.mount.poseWorld)
      : mat4Mul(worldFromFlange, poseToMat4(board.mount.poseFlange));
  return mat4Mul(mat4RigidInverse(worldFromCam), worldFromBoard);
}

/** camera ← board for `k` planned views (board frame of calibration/board.ts: z into the board). */
export function plannedBoardViews(
  cam: CameraIntrinsics,
  board: BoardSpec,
  k: number,
  opts: ViewPlanOptions = {},
): Mat4[] {
  const [tMin, tMax] = opts.tiltRad ?? [0.26, 0.7];
  const [dMin, dMax] = opts.distance ?? [0.9, 1.2];
  const margin = opts.marginPx ?? 20;
  const [w, h] = boardSizeM(board);
  const dMid = opts.distanceM ?? (cam.fx * w) / ((opts.fill ?? 0.5) * cam.width);
  const outline = [
    [-w / 2, -h / 2, 0],
    [w / 2, -h / 2, 0],
    [w / 2, h / 2, 0],
    [-w / 2, h / 2, 0],
  ];
  const out: Mat4[] = [];
  for (let i = 0; i < k; i++) {
    const dir = i * GOLDEN;
    const tilt = tMin + (tMax - tMin) * halton(i + 1, 2);
    const roll = rotvecToMat3([0, 0, (opts.rollRad ?? 0) + 0.3 * (halton(i + 1, 5) - 0.5)]);
    const R = mul3(rotvecToMat3([Math.cos(dir) * tilt, Math.sin(dir) * tilt, 0]), roll);
    let d = dMid * (dMin + (dMax - dMin) * halton(i + 1, 3));
    // the board centre aimed at a point of the image, pulled towards the centre until the
    // whole board is inside the margin; when even the centred board does not fit, a bit further away
    const su0 = 2 * halton(i + 1, 7) - 1;
    const sv0 = 2 * halton(i + 1, 11) - 1;
    let su = su0;
    let sv = sv0;
    let M: Mat4 | null = null;
    for (let tries = 0; tries < 40 && !M; tries++) {
      if (tries % 8 === 7) {
        d *= 1.08;
        su = su0;
        sv = sv0;
      }
      const x = ((su * (cam.width / 2 - margin)) / cam.fx) * d;
      const y = ((sv * (cam.height / 2 - margin)) / cam.fy) * d;
      // camera ← board-centre frame, then shifted to the board's top-left origin
      const C = rigid(R, [x, y, d]);
      const inside = outline.every((p) => {
        const X = R[0]! * p[0]! + R[1]! * p[1]! + x;
        const Y = R[3]! * p[0]! + R[4]! * p[1]! + y;
        const Z = R[6]! * p[0]! + R[7]! * p[1]! + d;
        if (Z <= 0.05) return false;
        const u = (cam.fx * X) / Z + cam.cx;
        const v = (cam.fy * Y) / Z + cam.cy;
        return u >= margin && v >= margin && u <= cam.width - margin && v <= cam.height - margin;
      });
      if (inside) M = mat4Mul(C, rigid([1, 0, 0, 0, 1, 0, 0, 0, 1], [-w / 2, -h / 2, 0]));
      su *= 0.8;
      sv *= 0.8;
    }
    if (M) out.push(M);
  }
  return out;
}

/**
 * Flange poses (base ← flange) that realise planned views through a calibration's nominal
 * geometry: a fixed camera seeing a board carried on the flange, or a wrist camera seeing a
 * board fixed in the world.
 */
export function flangeTargets(
  cal: Calibration,
  camera: string,
  boardName: string,
  camFromBoard: Mat4[],
): Mat4[] {
  const cam = cal.cameras.find((c) => c.name === camera);
  const board = cal.calibrationBoards?.find((b) => b.name === boardName);
  if (!cam || !board) return [];
  const baseFromWorld = mat4RigidInverse(poseToMat4(cal.robotBasePoseWorld));
  if (cam.extrinsics.mount === "world" && board.mount.frame === "flange") {
    // base ← flange = base ← cam · cam ← board · board ← flange
    const baseFromCam = mat4Mul(baseFromWorld, poseToMat4(cam.extrinsics.poseWorld));
    const boardFromFlange = mat4RigidInverse(poseToMat4(board.mount.poseFlange));
    return camFromBoard.map((m) => mat4Mul(mat4Mul(baseFromCam, m), boardFromFlange));
  }
  if (cam.extrinsics.mount === "tool" && board.mount.frame === "world") {
    // base ← flange = base ← board · board ← cam · cam ← flange
    const baseFromBoard = mat4Mul(baseFromWorld, poseToMat4(board.mount.poseWorld));
    const camFromFlange = mat4RigidInverse(poseToMat4(cam.extrinsics.poseFlange));
    return camFromBoard.map((m) => mat4Mul(mat4Mul(baseFromBoard, mat4RigidInverse(m)), camFromFlange));
  }
  return [];
}

/**
 * Joint targets for the flange poses through the gateway's IK (tool pose = flange · loop
 * offset), followed in steps from `around` so every solution stays on the start pose's branch.
 * A pose the IK cannot reach, or one whose solution leaves the joint envelope around `around`
 * (per joint, default the envelope the joint-space spread of procedures.ts uses: the proximal
 * joints barely move, so the arm stays clear of what is around the presentation pose — the IK
 * knows nothing of obstacles), is left out and reported.
 */
export async function jointTargets(
  api: BenchApi,
  cal: Calibration,
  flange: Mat4[],
  around: readonly number[],
  maxJointTravelRad: readonly number[] = POSE_SPREAD_RAD,
): Promise<{ targets: number[][]; skipped: Array<{ id: string; reason: string }> }> {
  const flangeFromTool = poseToMat4(cal.tool.loopPoseFlange);
  const targets: number[][] = [];
  const skipped: Array<{ id: string; reason: string }> = [];
  const start = poseToMat4((await api.fk([...around])).flange);
  const startInv = mat4RigidInverse(start);
  for (let i = 0; i < flange.length; i++) {
    const id = `plan-${String(i + 1).padStart(2, "0")}`;
    // follow the pose from the start pose to the target in steps, each IK seeded from the last
    // answer: the local solver then stays on the start pose's branch
    const rel = mat4Mul(startInv, flange[i]!);
    const w = mat3ToRotvec(rotationOf(rel));
    const steps = Math.max(
      1,
      Math.ceil(Math.max(Math.hypot(...w) / 0.15, Math.hypot(rel[3]!, rel[7]!, rel[11]!) / 0.05)),
    );
    let seed = [...around];
    let failed: string | null = null;
    for (let s = 1; s <= steps && !failed; s++) {
      const f = s / steps;
      const step = mat4Mul(
        start,
        rigid(rotvecToMat3(w.map((v) => v * f)), [rel[3]! * f, rel[7]! * f, rel[11]! * f]),
      );
      const tool = mat4ToPose(mat4Mul(step, flangeFromTool)) as Pose;
      try {
        const r = await api.ik(tool, seed);
        if (r.position_residual_m > 1e-3)
          failed = `IK residual ${(r.position_residual_m * 1000).toFixed(1)} mm`;
        else seed = r.q;
      } catch (e) {
        if (!(e instanceof ApiError)) throw e;
        failed = `IK: ${e.message}`;
      }
    }
    if (failed) {
      skipped.push({ id, reason: failed });
      continue;
    }
    const far = seed.findIndex((v, j) => Math.abs(v - around[j]!) > (maxJointTravelRad[j] ?? 0));
    if (far >= 0) {
      skipped.push({
        id,
        reason: `joint ${far + 1} would move ${Math.abs(seed[far]! - around[far]!).toFixed(2)} rad from the start pose (envelope ${maxJointTravelRad[far]} rad)`,
      });
      continue;
    }
    targets.push(seed);
  }
  return { targets, skipped };
}
