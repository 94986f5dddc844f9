/**
 * The tool-side procedures on the sim, end to end over a real HTTP port: tool frame, wire teaching
 * and board registration, each checked against the ground truth the sim was built from (the
 * procedures themselves get the flange poses and the operator's actions only).
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  mat4Mul,
  mat4Point,
  mat4RigidInverse,
  mat4ToPose,
  poseToMat4,
  type Vec3,
  vdot,
} from "../robots/math.ts";
import {
  liftLoop,
  PointingToucher,
  perturbPose,
  ProbingTeacher,
  type ToolCalibrationBench,
  toolCalibrationBench,
} from "../test-support/tool-calibration-bench.ts";
import { mat3ToRotvec, rigid, rotationOf, rotvecToMat3 } from "./linalg.ts";
import type { Calibration } from "./schema.ts";
import {
  calibrateToolFrame,
  defaultBoardMarks,
  registerBoard,
  seeWire,
  teachWire,
} from "./tool-procedures.ts";
import { centreline, pointAt } from "./wire-geometry.ts";
import { centrelineDistance } from "./wire-teach.ts";
import { triangulateWire } from "./wire-triangulate.ts";

let b: ToolCalibrationBench | undefined;
afterEach(async () => {
  await b?.close();
  b = undefined;
});

describe("tool-side calibration on the sim through the API", () => {
  it("tool frame: the loop centre within 0.5 mm from the fixed depth cameras, and from the wrist camera, starting 4 mm and 3° off", async () => {
    b = await toolCalibrationBench();
    await liftLoop(b.api);
    const nominal: Calibration = {
      ...b.truth,
      tool: { ...b.truth.tool, loopPoseFlange: perturbPose(b.truth.tool.loopPoseFlange, 4, 3) },
    };
    const r = await calibrateToolFrame(b.api, nominal, { poses: 12 });
    const got = poseToMat4(r.calibration.tool.loopPoseFlange);
    const want = poseToMat4(b.truth.tool.loopPoseFlange);
    const errMm = Math.hypot(got[3]! - want[3]!, got[7]! - want[7]!, got[11]! - want[11]!) * 1000;
    const axisDeg =
      (Math.acos(Math.min(1, vdot([got[2]!, got[6]!, got[10]!], [want[2]!, want[6]!, want[10]!]))) * 180) /
      Math.PI;
    console.log("tool frame", { errMm, axisDeg, ...r.report, perView: r.report.perView.length });
    expect(errMm).toBeLessThan(0.5);
    expect(axisDeg).toBeLessThan(1);
    expect(r.report.centreChangeMm).toBeGreaterThan(3);
    expect(Math.abs(r.report.radiusErrorMm)).toBeLessThan(0.5);
    expect(r.calibration.provenance!.at(-1)!.procedure).toMatch(/^tool frame/);
    expect(r.calibration.provenance!.at(-1)!.residuals.rmsMm).toBeCloseTo(r.report.rmsMm, 9);
    // the wrist camera (on the flange, its extrinsics from the file) sees the loop in one pose
    const w = await calibrateToolFrame(b.api, nominal, { cameras: ["wrist"], poses: 1 });
    const gw = poseToMat4(w.calibration.tool.loopPoseFlange);
    const wristErrMm = Math.hypot(gw[3]! - want[3]!, gw[7]! - want[7]!, gw[11]! - want[11]!) * 1000;
    console.log("tool frame (wrist camera, one pose)", {
      wristErrMm,
      rmsMm: w.report.rmsMm,
      points: w.report.points,
    });
    expect(wristErrMm).toBeLessThan(0.5);
  }, 900_000);

  it("wire teaching: the taught centreline within 0.5 mm RMS of the truth, centred by buzz-contact probing", async () => {
    b = await toolCalibrationBench();
    const truth = b.truth;
    // the file's wire before teaching: a straight nominal line (the procedure must not use it)
    const nominal: Calibration = {
      ...truth,
      wire: { ...truth.wire, pointsBase: [truth.wire.pointsBase[0]!, truth.wire.pointsBase.at(-1)!] },
    };
    const teacher = new ProbingTeacher(b.api, {
      teachLengthM: truth.wire.endMarkM - truth.wire.startMarkM,
      clearanceM: truth.tool.loopInnerRadiusM - truth.wire.wireRadiusM,
    });
    const r = await teachWire(b.api, nominal, teacher, { see: true, triangulate: true });
    const d = centrelineDistance(r.fit.points, truth.wire.pointsBase);
    const truthLine = centreline(truth.wire.pointsBase);
    const taughtLine = centreline(r.calibration.wire.pointsBase);
    const startErr = Math.hypot(
      ...(pointAt(taughtLine, r.report.startMarkM).map(
        (v, k) => v - pointAt(truthLine, truth.wire.startMarkM)[k]!,
      ) as Vec3),
    );
    console.log("wire teaching", {
      rmsToTruthMm: d.rmsM * 1000,
      maxToTruthMm: d.maxM * 1000,
      startMarkErrMm: startErr * 1000,
      misses: teacher.misses,
      reprobes: teacher.reprobes,
      ...r.report,
      residualsMm: r.report.residualsMm.map((x) => +x.toFixed(3)),
    });
    expect(d.rmsM).toBeLessThan(0.0005);
    // taught against seen: the fixed depth cameras see the wire where it was taught
    const seen = r.report.seen!.filter((c) => c.points >= 100);
    expect(seen.length).toBeGreaterThanOrEqual(2);
    for (const c of seen) expect(c.rmsMm).toBeLessThan(1.5);
    // and they see it when a taught line is 3 mm off
    const off = await seeWire(
      b.api,
      nominal,
      r.fit.points.map((p) => [p[0], p[1], p[2] + 0.003] as Vec3),
    );
    for (const c of seen) expect(off.find((o) => o.camera === c.camera)!.rmsMm).toBeGreaterThan(c.rmsMm + 1);
    // taught against triangulated from two colour views: the pair that sees most of the wire
    const tri = r.report.triangulated!;
    expect(tri.points).toBeGreaterThanOrEqual(15);
    expect(tri.rmsMm).toBeLessThan(1);
    // and a taught line 3 mm too high disagrees by about that (the search follows the image, not the line)
    const triOff = await triangulateWire(
      b.api,
      nominal,
      r.fit.points.map((p) => [p[0], p[1], p[2] + 0.003] as Vec3),
      { cameras: tri.cameras },
    );
    console.log("triangulated", {
      taught: tri,
      threeMmHigh: { ...triOff, pointsBase: triOff.pointsBase.length },
    });
    expect(triOff.medianMm).toBeGreaterThan(2);
    expect(triOff.medianMm).toBeLessThan(4);
    await expect(
      triangulateWire(b.api, nominal, r.fit.points, { cameras: ["front", "wrist"] }),
    ).rejects.toMatchObject({
      code: "RB_ERR_CALIB_BAD_INPUT",
      message: expect.stringMatching(/no fixed camera "wrist"/),
    });
    expect(startErr).toBeLessThan(0.001);
    expect(r.report.largestClearanceViolationMm).toBe(0);
    expect(r.report.poses).toBeGreaterThanOrEqual(15);
    expect(r.report.checkpointsM).toHaveLength(truth.wire.checkpointCount);
    expect(r.report.checkpointsM.at(-1)).toBeCloseTo(r.report.endMarkM, 9);
    expect(
      Math.abs(r.report.endMarkM - r.report.startMarkM - (truth.wire.endMarkM - truth.wire.startMarkM)),
    ).toBeLessThan(0.015);
  }, 900_000);

  it("board registration: the board within 1 mm from four touched marks with 0.5 mm pointing error; bad input coded", async () => {
    b = await toolCalibrationBench();
    const truth = b.truth;
    // the file's board before registration: 6 mm and 2° off
    const bp = poseToMat4(truth.board.poseWorld);
    const off = mat4Mul(rigid(rotvecToMat3([0, 0, (2 * Math.PI) / 180]), [0.004, -0.0045, 0]), bp);
    const nominal: Calibration = { ...truth, board: { ...truth.board, poseWorld: mat4ToPose(off) } };
    // the tool frame from a camera the file does not have: refused before anything moves
    await expect(calibrateToolFrame(b.api, nominal, { cameras: ["left"] })).rejects.toMatchObject({
      code: "RB_ERR_CALIB_BAD_INPUT",
      message: expect.stringMatching(/no camera "left"/),
    });
    // too few marks: refused before anything moves
    await expect(
      registerBoard(b.api, nominal, defaultBoardMarks(nominal).slice(0, 2), { touch: async () => {} }),
    ).rejects.toMatchObject({ code: "RB_ERR_CALIB_TOO_FEW_POINTS" });
    // a taught path of two poses
    await expect(
      teachWire(b.api, nominal, { next: async (n) => (n < 2 ? "record" : "done") }),
    ).rejects.toMatchObject({ code: "RB_ERR_CALIB_TOO_FEW_POINTS" });
    await liftLoop(b.api, 0.08);
    const toucher = new PointingToucher(b.api, truth, 0.0005);
    const marks = defaultBoardMarks(nominal);
    const r = await registerBoard(b.api, nominal, marks, toucher);
    const got = poseToMat4(r.calibration.board.poseWorld);
    // error of the board: the largest displacement of a top-face corner
    const [sx, sy] = truth.board.sizeM;
    let worstMm = 0;
    for (const [x, y] of [
      [-1, -1],
      [1, -1],
      [1, 1],
      [-1, 1],
    ] as const) {
      const p: Vec3 = [(x * sx) / 2, (y * sy) / 2, 0];
      const a = mat4Point(got, p);
      const w = mat4Point(bp, p);
      worstMm = Math.max(worstMm, Math.hypot(a[0] - w[0], a[1] - w[1], a[2] - w[2]) * 1000);
    }
    const rel = mat4Mul(mat4RigidInverse(bp), got);
    const angDeg = (Math.hypot(...mat3ToRotvec(rotationOf(rel))) * 180) / Math.PI;
    console.log("board registration", { worstCornerErrMm: worstMm, angDeg, ...r.report });
    expect(worstMm).toBeLessThan(1);
    expect(r.report.changeMm).toBeGreaterThan(4);
    expect(r.report.rmsMm).toBeGreaterThan(0.05);
    expect(r.report.residuals).toHaveLength(4);
  }, 900_000);
});
