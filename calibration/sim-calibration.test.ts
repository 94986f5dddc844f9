/**
 * Calibration procedures on the sim, through the API only (frames over HTTP, FK from the
 * gateway), checked against the ground truth the test wrote into the bench's calibration file.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mat4Mul, mat4RigidInverse, poseToMat4 } from "../robots/math.ts";
import {
  BENCH_DISTORTION,
  type CalibrationBench,
  calibrationBench,
  carriedBoardPose,
  frontPresentationPose,
  liftThenGo,
  tapeMeasured,
  withNoise,
} from "../test-support/calibration-bench.ts";
import { DEFAULT_BOARD } from "./board.ts";
import { checkCameras } from "./check.ts";
import { diffCalibrations } from "./calibration-file.ts";
import { solveEyeToHand } from "./hand-eye.ts";
import { detectBoard } from "./board-detect.ts";
import { type BoardView, fitIntrinsics, type IntrinsicsFit } from "./intrinsics.ts";
import { rotationAngle } from "./linalg.ts";
import { type CarriedSession, collectCarriedViews, posesAround } from "./procedures.ts";
import { selectJointTargets } from "./view-select.ts";

let b: CalibrationBench;
let session: CarriedSession;
let fit: IntrinsicsFit;
let around: number[];
/** the same frames with sensor noise added (Gaussian, σ = 4 grey levels, seeded), detected again */
const noisyViews: BoardView[] = [];

beforeAll(async () => {
  b = await calibrationBench();
  around = await frontPresentationPose(b);
  await liftThenGo(b, around);
  // the poses the camera procedure visits: 30 chosen out of 240 of the joint spread for what
  // their views, predicted from the tape-measured calibration, tell the fit (view-select.ts)
  const plan = await selectJointTargets(
    b.api,
    tapeMeasured(b.truth),
    "front",
    "carried",
    posesAround(around, 240),
    30,
  );
  session = await collectCarriedViews(b.api, DEFAULT_BOARD, ["front"], plan.targets, async (v, images) => {
    const d = await detectBoard(DEFAULT_BOARD, withNoise(images.get("front")!, 4, noisyViews.length + 1));
    noisyViews.push({ id: v.id, ids: d.ids, pixels: d.pixels });
  });
}, 600_000);
afterAll(async () => {
  await b?.close();
});

describe("calibration on the sim through the API", () => {
  it("intrinsics of the front camera from the carried board", async () => {
    const size = session.imageSize.get("front")!;
    fit = await fitIntrinsics(
      "front",
      DEFAULT_BOARD,
      session.views.map((v) => v.detections.get("front")!),
      size,
    );
    const t = b.truth.cameras.find((c) => c.name === "front")!.intrinsics;
    console.log("intrinsics", {
      fx: fit.fxPx,
      fy: fit.fyPx,
      cx: fit.cxPx,
      cy: fit.cyPx,
      d: fit.distortion,
      rms: fit.rmsPx,
      used: fit.views.length,
      rejected: fit.rejected,
    });
    expect(Math.abs(fit.fxPx / t.fxPx - 1)).toBeLessThan(0.005);
    expect(Math.abs(fit.fyPx / t.fyPx - 1)).toBeLessThan(0.005);
    expect(Math.abs(fit.cxPx - t.cxPx)).toBeLessThan(1);
    expect(Math.abs(fit.cyPx - t.cyPx)).toBeLessThan(1);
    expect(Math.abs(fit.distortion[0] - BENCH_DISTORTION[0]!)).toBeLessThan(0.01);
    expect(fit.rmsPx).toBeLessThanOrEqual(0.5);
    // views without the board are rejected with the reason
    for (const r of fit.rejected) expect(r.reason).toMatch(/board not seen|corners seen|reprojection/);
  });

  it("intrinsics from the same frames with sensor noise (σ = 4 grey levels)", async () => {
    const t = b.truth.cameras.find((c) => c.name === "front")!.intrinsics;
    const n = await fitIntrinsics("front", DEFAULT_BOARD, noisyViews, { width: 640, height: 480 });
    console.log("intrinsics (noisy)", {
      fx: n.fxPx,
      fy: n.fyPx,
      cx: n.cxPx,
      cy: n.cyPx,
      k1: n.distortion[0],
      rms: n.rmsPx,
      used: n.views.length,
    });
    expect(Math.abs(n.fxPx / t.fxPx - 1)).toBeLessThan(0.005);
    expect(Math.abs(n.fyPx / t.fyPx - 1)).toBeLessThan(0.005);
    expect(Math.abs(n.cxPx - t.cxPx)).toBeLessThan(1);
    // the 1 px target, with margin: −0.50 px measured here (−1.62 px with the joint spread as it
    // came, 0.4 m away). Over noise seeds 1–5 and two bench seeds the views chosen for their
    // information (view-select.ts) at 0.3 m keep cy within −0.07 … −0.61 px (bench/calibration.ts)
    expect(Math.abs(n.cyPx - t.cyPx)).toBeLessThan(1);
    expect(Math.abs(n.distortion[0] - BENCH_DISTORTION[0]!)).toBeLessThan(0.01);
    expect(n.rmsPx).toBeLessThanOrEqual(0.5);
  });

  it("extrinsics of the front camera (eye-to-hand) from the same views", async () => {
    expect(fit).toBeDefined();
    const cam = {
      width: fit.widthPx,
      height: fit.heightPx,
      fx: fit.fxPx,
      fy: fit.fyPx,
      cx: fit.cxPx,
      cy: fit.cyPx,
      distortion: fit.distortion,
    };
    const he = await solveEyeToHand(
      "front",
      DEFAULT_BOARD,
      session.views.map((v) => ({ id: v.id, flangeBase: v.flangeBase, corners: v.detections.get("front")! })),
      cam,
    );
    const truthCam = b.truth.cameras.find((c) => c.name === "front")!;
    if (truthCam.extrinsics.mount !== "world") throw new Error("front is a world camera");
    const worldFromBase = poseToMat4(b.truth.robotBasePoseWorld);
    const worldFromCam = mat4Mul(worldFromBase, mat4RigidInverse(he.camFromBase));
    const truth = poseToMat4(truthCam.extrinsics.poseWorld);
    const posErrMm =
      Math.hypot(worldFromCam[3]! - truth[3]!, worldFromCam[7]! - truth[7]!, worldFromCam[11]! - truth[11]!) *
      1000;
    const angErrDeg = (rotationAngle(worldFromCam, truth) * 180) / Math.PI;
    const boardTruth = poseToMat4(carriedBoardPose());
    const boardErrMm =
      Math.hypot(
        he.flangeFromBoard[3]! - boardTruth[3]!,
        he.flangeFromBoard[7]! - boardTruth[7]!,
        he.flangeFromBoard[11]! - boardTruth[11]!,
      ) * 1000;
    const worst = he.residuals.reduce((m, r) => Math.max(m, r.positionMm), 0);
    console.log("extrinsics", {
      posErrMm,
      angErrDeg,
      boardErrMm,
      rmsPx: he.rmsPx,
      closedFormRmsPx: he.closedFormRmsPx,
      iterations: he.iterations,
      worstResidualMm: worst,
    });
    expect(posErrMm).toBeLessThan(2);
    expect(angErrDeg).toBeLessThan(0.2);
    expect(boardErrMm).toBeLessThan(2);
    expect(he.rmsPx).toBeLessThan(0.5);
    expect(he.rmsPx).toBeLessThanOrEqual(he.closedFormRmsPx);
  });

  it("check: quiet while the camera stays, warns when it moved, and draws an overlay", async () => {
    await b.api.moveTo(around);
    const [ok] = await checkCameras(b.api, b.truth, { cameras: ["front"] });
    console.log("check (unmoved)", { ...ok, overlay: undefined });
    expect(ok!.corners).toBeGreaterThanOrEqual(20);
    expect(ok!.warning).toBeNull();
    expect(ok!.movedMm!).toBeLessThan(2);
    expect(ok!.predictionErrorPx!).toBeLessThan(1);
    expect(ok!.overlay.data.length).toBe(640 * 480 * 3);
    // the file says the camera sits 15 mm further left than it does
    const front = b.truth.cameras.find((c) => c.name === "front")!;
    if (front.extrinsics.mount !== "world") throw new Error("world camera");
    const p = front.extrinsics.poseWorld;
    const moved = {
      ...b.truth,
      cameras: b.truth.cameras.map((c) =>
        c.name === "front"
          ? {
              ...c,
              extrinsics: {
                mount: "world" as const,
                poseWorld: { ...p, xyz: [p.xyz[0], p.xyz[1] + 0.015, p.xyz[2]] as [number, number, number] },
              },
            }
          : c,
      ),
    };
    const [bad] = await checkCameras(b.api, moved, { cameras: ["front"] });
    console.log("check (file off by 15 mm)", { ...bad, overlay: undefined });
    expect(bad!.movedMm!).toBeGreaterThan(12);
    expect(bad!.movedMm!).toBeLessThan(18);
    expect(bad!.warning).toMatch(/moved .* recalibrate/);
    const d = diffCalibrations(b.truth, moved);
    expect(d).toEqual([
      expect.objectContaining({ path: "cameras.front.extrinsics.poseWorld.position", unit: "mm" }),
    ]);
    expect(d[0]!.delta).toBeCloseTo(15, 6);
  });
});
