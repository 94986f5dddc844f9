/**
 * The wrist camera (eye-in-hand) on the sim, through the API only: the board lies on the table,
 * the robot moves the wrist camera through planned views, intrinsics and cam←flange are solved
 * and checked against the ground truth the test wrote into the bench's calibration file.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { poseToMat4 } from "../robots/math.ts";
import { CodedError } from "../seam/errors.ts";
import {
  type CalibrationBench,
  calibrationBench,
  liftThenGo,
  tableBoardPose,
  wristStartPose,
  withWristMountOffset,
} from "../test-support/calibration-bench.ts";
import { checkCameras } from "./check.ts";
import { rotationAngle } from "./linalg.ts";
import type { Calibration } from "./schema.ts";
import { calibrateWristCamera } from "./wrist-procedure.ts";

let b: CalibrationBench;
let q0: number[];
beforeAll(async () => {
  b = await calibrationBench(3, "table");
  q0 = await wristStartPose(b);
  await liftThenGo(b, q0);
}, 300_000);
afterAll(async () => {
  await b?.close();
});

const dist = (a: Float64Array, c: Float64Array) =>
  Math.hypot(a[3]! - c[3]!, a[7]! - c[7]!, a[11]! - c[11]!) * 1000;

describe("wrist camera (eye-in-hand) on the sim through the API", () => {
  it("recovers cam←flange within 2 mm / 0.2° from a nominal mount 14 mm off", async () => {
    const t = b.truth.cameras.find((c) => c.name === "wrist")!;
    if (t.extrinsics.mount !== "tool") throw new Error("wrist is on the tool");
    const tp = t.extrinsics.poseFlange;
    // what a lab starts from: the mount measured with a ruler
    const nominal = withWristMountOffset(b.truth, [0.01, -0.01, 0]);
    const r = await calibrateWristCamera(b.api, nominal, { camera: "wrist", poses: 24, around: q0 });
    const g = r.calibration.cameras.find((c) => c.name === "wrist")!;
    if (g.extrinsics.mount !== "tool") throw new Error("wrist stays on the tool");
    const G = poseToMat4(g.extrinsics.poseFlange);
    const T = poseToMat4(tp);
    const posMm = dist(G, T);
    const deg = (rotationAngle(G, T) * 180) / Math.PI;
    const board = r.calibration.calibrationBoards![0]!;
    if (board.mount.frame !== "world") throw new Error("table board");
    const boardMm = dist(poseToMat4(board.mount.poseWorld), poseToMat4(tableBoardPose()));
    const ti = t.intrinsics;
    const gi = g.intrinsics;
    console.log("wrist", {
      posMm,
      deg,
      boardMm,
      views: r.report.intrinsics.views.length,
      ex: r.report.extrinsics?.rmsPx,
    });
    expect(posMm).toBeLessThan(2);
    expect(deg).toBeLessThan(0.2);
    expect(boardMm).toBeLessThan(1);
    expect(Math.abs(gi.fxPx / ti.fxPx - 1)).toBeLessThan(0.005);
    expect(Math.abs(gi.cxPx - ti.cxPx)).toBeLessThan(1);
    expect(Math.abs(gi.cyPx - ti.cyPx)).toBeLessThan(1);
    expect(r.report.intrinsics.rmsPx).toBeLessThanOrEqual(0.5);
    expect(r.report.extrinsics!.worstResidualMm).toBeLessThan(2);
    expect(r.report.extrinsics!.worstResidualDeg).toBeLessThan(0.2);
    // a new version with provenance, the nominal mount replaced
    expect(r.calibration.provenance?.at(-1)?.procedure).toMatch(/eye-in-hand/);
  }, 600_000);

  it("check: the wrist camera sees the table board where FK and its mount put it, warns when the mount moved, draws an overlay", async () => {
    await b.api.moveTo(q0);
    const all = await checkCameras(b.api, b.truth);
    // by default the wrist camera is checked too when a board lies on the table
    expect(all.map((c) => c.camera)).toContain("wrist");
    const [ok] = await checkCameras(b.api, b.truth, { cameras: ["wrist"] });
    console.log("wrist check (unmoved)", { ...ok, overlay: undefined });
    expect(ok!.corners).toBeGreaterThanOrEqual(20);
    expect(ok!.warning).toBeNull();
    expect(ok!.movedMm!).toBeLessThan(2);
    expect(ok!.movedDeg!).toBeLessThan(0.2);
    expect(ok!.predictionErrorPx!).toBeLessThan(1);
    const t = b.truth.cameras.find((c) => c.name === "wrist")!;
    expect(ok!.overlay.data.length).toBe(t.intrinsics.widthPx * t.intrinsics.heightPx * 3);
    // the overlay differs from the frame: the board outline, corners and the loop are drawn
    const frame = (await b.api.capture(["wrist"])).images.get("wrist")!;
    let changed = 0;
    for (let i = 0; i < frame.data.length; i++) if (frame.data[i] !== ok!.overlay.data[i]) changed++;
    expect(changed).toBeGreaterThan(1000);
    // the file says the camera sits 12 mm further along the flange's x than it does
    const moved = withWristMountOffset(b.truth, [0.012, 0, 0]);
    const [bad] = await checkCameras(b.api, moved, { cameras: ["wrist"] });
    console.log("wrist check (mount off by 12 mm)", { ...bad, overlay: undefined });
    expect(bad!.movedMm!).toBeGreaterThan(9);
    expect(bad!.movedMm!).toBeLessThan(15);
    expect(bad!.warning).toMatch(/wrist seems to have moved .* recalibrate/);
    // no board on the table: a clear warning, no pose
    const [none] = await checkCameras(b.api, { ...b.truth, calibrationBoards: [] }, { cameras: ["wrist"] });
    expect(none!.movedMm).toBeNull();
    expect(none!.warning).toMatch(/no board fixed in the world/);
  }, 300_000);

  it("bad input: no table board, or a fixed camera, is a coded error before anything moves", async () => {
    const noBoard: Calibration = { ...b.truth, calibrationBoards: [] };
    await expect(calibrateWristCamera(b.api, noBoard, { camera: "wrist" })).rejects.toMatchObject({
      code: "RB_ERR_CALIB_BAD_INPUT",
    });
    await expect(calibrateWristCamera(b.api, b.truth, { camera: "front" })).rejects.toBeInstanceOf(
      CodedError,
    );
  });
});
