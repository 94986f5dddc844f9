/**
 * The wrist camera (eye-in-hand) end to end: the calibration board lies fixed on the table
 * (a calibrationBoards entry mounted in the world, at its nominal pose); the robot moves the
 * wrist camera through K views planned in the camera frame (calibration/view-plan.ts) starting
 * from the operator's pose above the board; every move goes through the gateway, whose safety
 * supervisor judges it. Intrinsics are fitted from the same views, then the hand–eye problem
 * (cam←flange, base←board) is solved by the same closed form + refinement as the fixed cameras
 * (solveEyeInHand). Nothing here reads simulator state.
 */
import { mat4Mul, mat4RigidInverse, mat4ToPose, poseToMat4 } from "../robots/math.ts";
import { CodedError } from "../seam/errors.ts";
import type { BenchApi } from "./api-client.ts";
import { provenance } from "./calibration-file.ts";
import type { CameraProcedureReport } from "./camera-procedure.ts";
import { cameraInfoComparison } from "./camera-info.ts";
import { intrinsicsOf } from "./projection.ts";
import { solveEyeInHand } from "./hand-eye.ts";
import { coverageMap, fitFileIntrinsics, fitIntrinsics } from "./intrinsics.ts";
import { collectCarriedViews } from "./procedures.ts";
import type { Calibration } from "./schema.ts";
import {
  flangeTargets,
  jointTargets,
  nominalView,
  plannedBoardViews,
  rollOfView,
  viewDepth,
} from "./view-plan.ts";

/**
 * The joint envelope of the wrist-camera views around the start pose, rad per joint: wider than
 * the carried board's (procedures.ts), since the camera must travel over the board, not just tilt
 * it. The IK knows no obstacles: lay the board in open table space, clear of the wire's posts —
 * the gateway's workspace box and keep-out volumes still judge every move.
 */
export const WRIST_ENVELOPE_RAD = [1, 1, 1, 1, 1, 1, 1] as const;

export async function calibrateWristCamera(
  api: BenchApi,
  cal: Calibration,
  opts: {
    camera: string;
    poses?: number;
    around?: number[];
    /** how far each joint may move from the start pose, rad (default WRIST_ENVELOPE_RAD) */
    envelopeRad?: readonly number[];
  },
): Promise<{ calibration: Calibration; report: CameraProcedureReport; coverageRgb: Uint8Array }> {
  const t0 = performance.now();
  const cam = cal.cameras.find((c) => c.name === opts.camera);
  if (cam?.extrinsics.mount !== "tool")
    throw new CodedError("RB_ERR_CALIB_BAD_INPUT", {
      what: "camera",
      reason: `no wrist camera "${opts.camera}" (mount: tool) in the calibration file (have: ${cal.cameras.map((c) => `${c.name} (${c.extrinsics.mount})`).join(", ")})`,
    });
  const table = cal.calibrationBoards?.find((b) => b.mount.frame === "world");
  if (!table)
    throw new CodedError("RB_ERR_CALIB_BAD_INPUT", {
      what: "calibrationBoards",
      reason:
        "the calibration file names no board fixed in the world (add one with its board spec and a nominal poseWorld on the table)",
    });
  const around = opts.around ?? (await api.reading()).q;
  const k = opts.poses ?? 24;
  const start = await nominalView(api, cal, opts.camera, table.name, around);
  if (!start || !(viewDepth(start, table.board) > 0))
    throw new CodedError("RB_ERR_CALIB_BOARD_NOT_SEEN", {
      camera: opts.camera,
      reason:
        "the board is behind the wrist camera at the start pose: bring the camera above the board, facing it",
    });
  const plan = plannedBoardViews(intrinsicsOf(cam), table.board, k, {
    rollRad: rollOfView(start),
    distanceM: viewDepth(start, table.board),
  });
  const { targets, skipped } = await jointTargets(
    api,
    cal,
    flangeTargets(cal, opts.camera, table.name, plan),
    around,
    opts.envelopeRad ?? WRIST_ENVELOPE_RAD,
  );
  const session = await collectCarriedViews(api, table.board, [opts.camera], targets);
  const views = session.views.map((v) => v.detections.get(opts.camera)!);
  const size = session.imageSize.get(opts.camera) ?? {
    width: cam.intrinsics.widthPx,
    height: cam.intrinsics.heightPx,
  };
  const fit = await fitIntrinsics(opts.camera, table.board, views, size);
  const usedIds = new Set(fit.views.map((v) => v.id));
  const K = intrinsicsOf({ intrinsics: fitFileIntrinsics(fit) });
  const he = await solveEyeInHand(
    opts.camera,
    table.board,
    session.views
      .filter((v) => usedIds.has(v.id))
      .map((v) => ({ id: v.id, flangeBase: v.flangeBase, corners: v.detections.get(opts.camera)! })),
    K,
  );
  const worstResidualMm = Math.max(...he.residuals.map((r) => r.positionMm));
  const worstResidualDeg = Math.max(...he.residuals.map((r) => r.angleDeg));
  const intrinsics = fitFileIntrinsics(fit);
  // the board's solved pose goes into the world frame: world ← base · base ← board
  const { camFromFlange, baseFromBoard, ...rest } = he;
  const poseFlange = mat4ToPose(mat4RigidInverse(camFromFlange));
  const next: Calibration = {
    ...cal,
    cameras: cal.cameras.map((c) =>
      c.name === opts.camera ? { ...c, intrinsics, extrinsics: { mount: "tool" as const, poseFlange } } : c,
    ),
    calibrationBoards: (cal.calibrationBoards ?? []).map((b) =>
      b === table
        ? {
            ...b,
            mount: {
              frame: "world" as const,
              poseWorld: mat4ToPose(mat4Mul(poseToMat4(cal.robotBasePoseWorld), baseFromBoard)),
            },
          }
        : b,
    ),
    provenance: [
      ...(cal.provenance ?? []),
      provenance(
        `camera:${opts.camera} intrinsics+extrinsics (eye-in-hand), table board, ${k} planned views`,
        {
          rmsPx: fit.rmsPx,
          views: fit.views.length,
          rejectedViews: fit.rejected.length,
          extrinsicsRmsPx: he.rmsPx,
          worstResidualMm,
          worstResidualDeg,
        },
      ),
    ],
  };
  const { boardPoses: _b, ...fitReport } = fit;
  return {
    calibration: next,
    report: {
      camera: opts.camera,
      poses: targets.length,
      refused: [...skipped, ...session.refused],
      intrinsics: fitReport,
      cameraInfo: await cameraInfoComparison(api, opts.camera, intrinsics),
      extrinsics: { ...rest, worstResidualMm, worstResidualDeg },
      elapsedS: (performance.now() - t0) / 1000,
    },
    coverageRgb: coverageMap(
      views.filter((v) => usedIds.has(v.id)),
      size.width,
      size.height,
    ),
  };
}
