/**
 * The camera procedure end to end: carry the calibration board through K poses around the
 * robot's current (presentation) pose, fit the camera's intrinsics, solve its extrinsics
 * (eye-to-hand) and the board's flange mount, and return a new calibration with provenance,
 * the report and the coverage map. Runs against any gateway (sim or real) through its API.
 */
import { mat4ToPose } from "../robots/math.ts";
import { CodedError } from "../seam/errors.ts";
import type { BenchApi } from "./api-client.ts";
import { provenance, worldFromCameraSolved } from "./calibration-file.ts";
import { type CameraInfoComparison, cameraInfoComparison } from "./camera-info.ts";
import { type HandEyeResult, solveEyeToHand } from "./hand-eye.ts";
import { intrinsicsOf } from "./projection.ts";
import { coverageMap, fitFileIntrinsics, fitIntrinsics, type IntrinsicsFit } from "./intrinsics.ts";
import { collectCarriedViews, posesAround } from "./procedures.ts";
import { selectJointTargets } from "./view-select.ts";
import type { Calibration } from "./schema.ts";

export interface CameraProcedureReport {
  camera: string;
  poses: number;
  /**
   * how the poses were chosen: out of `candidates` joint targets of the spread, the `poses` whose
   * predicted views (nominal geometry) pin the intrinsics best (calibration/view-select.ts);
   * the predicted standard deviations of fx fy cx cy (px) and k1 per px of corner noise, of the
   * chosen set and of the spread's first `poses` targets
   */
  viewSelection?: { candidates: number; predictedSd: number[]; spreadSd: number[] };
  refused: Array<{ id: string; reason: string }>;
  intrinsics: Omit<IntrinsicsFit, "boardPoses">;
  /**
   * fit − the intrinsics the camera publishes (GET /v1/spec: its CameraInfo on a real bench;
   * calibration/camera-info.ts); null when the gateway lists no intrinsics for it
   */
  cameraInfo: CameraInfoComparison | null;
  extrinsics:
    | (Omit<HandEyeResult, "camFromBase" | "flangeFromBoard"> & {
        worstResidualMm: number;
        worstResidualDeg: number;
      })
    | null;
  /** procedure time, s (wall clock) */
  elapsedS: number;
}

export async function calibrateCamera(
  api: BenchApi,
  cal: Calibration,
  opts: {
    camera: string;
    poses?: number;
    intrinsicsOnly?: boolean;
    around?: number[];
    /** candidate joint targets per pose visited (default 8; 1 = the spread as it comes) */
    candidatesPerPose?: number;
    /** peak joint speed of the moves between poses, rad/s (default: BenchApi.moveTo's) */
    maxJointSpeedRadS?: number;
  },
): Promise<{ calibration: Calibration; report: CameraProcedureReport; coverageRgb: Uint8Array }> {
  const t0 = performance.now();
  const cam = cal.cameras.find((c) => c.name === opts.camera);
  if (!cam)
    throw new CodedError("RB_ERR_CALIB_BAD_INPUT", {
      what: "camera",
      reason: `no camera "${opts.camera}" in the calibration file (have: ${cal.cameras.map((c) => c.name).join(", ")})`,
    });
  const carried = cal.calibrationBoards?.find((b) => b.mount.frame === "flange");
  if (!carried)
    throw new CodedError("RB_ERR_CALIB_BAD_INPUT", {
      what: "calibrationBoards",
      reason:
        "the calibration file names no board carried on the flange (add one with its board spec and a nominal poseFlange)",
    });
  const around = opts.around ?? (await api.reading()).q;
  const k = opts.poses ?? 24;
  const candidates = k * Math.max(1, Math.round(opts.candidatesPerPose ?? 8));
  const plan = await selectJointTargets(
    api,
    cal,
    opts.camera,
    carried.name,
    posesAround(around, candidates),
    k,
  );
  const session = await collectCarriedViews(
    api,
    carried.board,
    [opts.camera],
    plan.targets,
    undefined,
    opts.maxJointSpeedRadS !== undefined ? { maxJointSpeedRadS: opts.maxJointSpeedRadS } : {},
  );
  const views = session.views.map((v) => v.detections.get(opts.camera)!);
  const size = session.imageSize.get(opts.camera) ?? {
    width: cam.intrinsics.widthPx,
    height: cam.intrinsics.heightPx,
  };
  const fit = await fitIntrinsics(opts.camera, carried.board, views, size);
  const usedIds = new Set(fit.views.map((v) => v.id));
  const coverageRgb = coverageMap(
    views.filter((v) => usedIds.has(v.id)),
    size.width,
    size.height,
  );
  const intrinsics = fitFileIntrinsics(fit);
  let extrinsics: CameraProcedureReport["extrinsics"] = null;
  let next: Calibration = {
    ...cal,
    cameras: cal.cameras.map((c) => (c.name === opts.camera ? { ...c, intrinsics } : c)),
  };
  const residuals: Record<string, number> = {
    rmsPx: fit.rmsPx,
    views: fit.views.length,
    rejectedViews: fit.rejected.length,
  };
  if (!opts.intrinsicsOnly && cam.extrinsics.mount === "world") {
    const he = await solveEyeToHand(
      opts.camera,
      carried.board,
      session.views
        .filter((v) => usedIds.has(v.id))
        .map((v) => ({ id: v.id, flangeBase: v.flangeBase, corners: v.detections.get(opts.camera)! })),
      intrinsicsOf({ intrinsics: fitFileIntrinsics(fit) }),
    );
    const poseWorld = mat4ToPose(worldFromCameraSolved(cal, he.camFromBase));
    const worstResidualMm = Math.max(...he.residuals.map((r) => r.positionMm));
    const worstResidualDeg = Math.max(...he.residuals.map((r) => r.angleDeg));
    const { camFromBase: _z, flangeFromBoard, ...rest } = he;
    extrinsics = { ...rest, worstResidualMm, worstResidualDeg };
    Object.assign(residuals, { extrinsicsRmsPx: he.rmsPx, worstResidualMm, worstResidualDeg });
    next = {
      ...next,
      cameras: next.cameras.map((c) =>
        c.name === opts.camera ? { ...c, intrinsics, extrinsics: { mount: "world" as const, poseWorld } } : c,
      ),
      calibrationBoards: (cal.calibrationBoards ?? []).map((b) =>
        b === carried
          ? { ...b, mount: { frame: "flange" as const, poseFlange: mat4ToPose(flangeFromBoard) } }
          : b,
      ),
    };
  }
  const procedure = `camera:${opts.camera} ${extrinsics ? "intrinsics+extrinsics (eye-to-hand)" : "intrinsics"}, carried board, ${k} poses chosen of ${candidates}`;
  next = { ...next, provenance: [...(cal.provenance ?? []), provenance(procedure, residuals)] };
  const { boardPoses: _b, ...fitReport } = fit;
  return {
    calibration: next,
    report: {
      camera: opts.camera,
      poses: k,
      viewSelection: { candidates, predictedSd: plan.predictedSd, spreadSd: plan.spreadSd },
      refused: session.refused,
      intrinsics: fitReport,
      cameraInfo: await cameraInfoComparison(api, opts.camera, intrinsics),
      extrinsics,
      elapsedS: (performance.now() - t0) / 1000,
    },
    coverageRgb,
  };
}
