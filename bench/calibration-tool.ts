/**
 * Tool-side calibration benchmark: the three procedures of calibration/tool-procedures.ts
 * through the API on a real port, chained as a lab runs them — the tool frame from a nominal
 * 4 mm / 3° off, then wire teaching and board registration with the tool frame just measured.
 * Prints each procedure's wall time and its figures beside the ground truth the bench was built
 * from and the targets of issue 11 (loop frame 0.5 mm, taught centreline 0.5 mm RMS, board 1 mm).
 * - default: on the sim;
 * - `--rig`: on the real backend wired to the test rigs (hil-tests/calibration-tool-rig.ts: the
 *   rosbridge rig with ROS colour + aligned depth topics, the buzz box in simavr), the whole wire
 *   taught at wall-clock speed (several minutes); the truth is the rig simulator's calibration.
 * Usage: node --import tsx bench/calibration-tool.ts [--rig] [seed=3] [pointingErrorMm=0.5]
 */
import { rotationAngle } from "../calibration/linalg.ts";
import { startToolRig, teachAndRegisterOnRig, toolFrameOnRig } from "../hil-tests/calibration-tool-rig.ts";
import type { Calibration } from "../calibration/schema.ts";
import {
  calibrateToolFrame,
  defaultBoardMarks,
  registerBoard,
  teachWire,
} from "../calibration/tool-procedures.ts";
import { centrelineDistance } from "../calibration/wire-teach.ts";
import { mat4Point, poseToMat4, type Vec3, vdot } from "../robots/math.ts";
import {
  liftLoop,
  PointingToucher,
  ProbingTeacher,
  perturbPose,
  toolCalibrationBench,
} from "../test-support/tool-calibration-bench.ts";

const args = process.argv.slice(2);
const rigMode = args[0] === "--rig";
if (rigMode) args.shift();
const seed = Number(args[0] ?? 3);
const pointingMm = Number(args[1] ?? 0.5);
const f = (x: number, d = 3) => x.toFixed(d);

if (rigMode) {
  const { execSync } = await import("node:child_process");
  console.log(`load before: ${execSync("uptime").toString().trim()}`);
  const rig = await startToolRig(seed);
  try {
    const t = await toolFrameOnRig(rig);
    const r = t.figures.report;
    console.log(
      `rig tool frame (${r.views} wrist poses, ROS aligned depth of ${r.cameras.join("+")}, ${r.points} ring points): ${f(t.figures.seconds, 1)} s; ` +
        `centre error ${f(t.figures.centreErrMm)} mm (target 0.5 mm), axis error ${f(t.figures.axisErrDeg)}°; residuals: ${f(r.rmsMm)} mm RMS point-to-ring, radius ${f(r.radiusErrorMm)} mm; nominal was ${f(r.centreChangeMm, 2)} mm off`,
    );
    const { wire, board } = await teachAndRegisterOnRig(rig, t.tool, { pointingErrorM: pointingMm / 1000 });
    const w = wire.report;
    console.log(
      `rig wire teaching (${w.poses} poses centred by buzz-box contact probing, ${f(w.lengthM)} m, wall clock): ${f(wire.seconds, 1)} s (${f(wire.seconds / w.poses, 2)} s per pose); ` +
        `centreline vs truth ${f(wire.rmsToTruthMm)} mm RMS, ${f(wire.maxToTruthMm)} mm max (target 0.5 mm RMS); residuals ${f(w.rmsResidualMm)} mm RMS, worst ${f(w.worstResidualMm)} mm; largest clearance violation ${f(w.largestClearanceViolationMm)} mm; marks ${f(w.startMarkM)}…${f(w.endMarkM)} m; probes widened ${wire.misses}, centrings probed again ${wire.reprobes}, holds for a late contact-open ${wire.lateOpens}`,
    );
    console.log(
      `rig board registration (4 marks, pointing error σ ${pointingMm} mm per axis): ${f(board.seconds, 1)} s; ` +
        `worst board-corner error ${f(board.worstCornerErrMm)} mm (target 1 mm), rotation ${f(board.rotErrDeg)}°; residuals ${f(board.report.rmsMm)} mm RMS, worst ${f(board.report.worstMm)} mm, scale ${f(board.report.scale, 5)}`,
    );
  } finally {
    await rig.close();
  }
  console.log(`load after: ${execSync("uptime").toString().trim()}`);
  process.exit(0);
}

// 1. tool frame
let b = await toolCalibrationBench(seed);
const truth = b.truth;
let tool: Calibration["tool"];
try {
  await liftLoop(b.api);
  const nominal: Calibration = {
    ...truth,
    tool: { ...truth.tool, loopPoseFlange: perturbPose(truth.tool.loopPoseFlange, 4, 3) },
  };
  const t0 = performance.now();
  const r = await calibrateToolFrame(b.api, nominal, { poses: 12 });
  const s = (performance.now() - t0) / 1000;
  const got = poseToMat4(r.calibration.tool.loopPoseFlange);
  const want = poseToMat4(truth.tool.loopPoseFlange);
  const errMm = Math.hypot(got[3]! - want[3]!, got[7]! - want[7]!, got[11]! - want[11]!) * 1000;
  const axisDeg =
    (Math.acos(Math.min(1, vdot([got[2]!, got[6]!, got[10]!], [want[2]!, want[6]!, want[10]!]))) * 180) /
    Math.PI;
  console.log(
    `tool frame (${r.report.views} wrist poses, cameras ${r.report.cameras.join("+")}, ${r.report.points} ring points): ${f(s, 1)} s; ` +
      `centre error ${f(errMm)} mm (target 0.5 mm), axis error ${f(axisDeg)}°; residuals: ${f(r.report.rmsMm)} mm RMS point-to-ring, radius ${f(r.report.radiusErrorMm)} mm; nominal was ${f(r.report.centreChangeMm, 2)} mm off`,
  );
  const t1 = performance.now();
  const w = await calibrateToolFrame(b.api, nominal, { cameras: ["wrist"], poses: 1 });
  const sw = (performance.now() - t1) / 1000;
  const gw = poseToMat4(w.calibration.tool.loopPoseFlange);
  console.log(
    `tool frame (wrist camera, 1 pose, ${w.report.points} ring points): ${f(sw, 1)} s; centre error ${f(Math.hypot(gw[3]! - want[3]!, gw[7]! - want[7]!, gw[11]! - want[11]!) * 1000)} mm (target 0.5 mm); residuals ${f(w.report.rmsMm)} mm RMS`,
  );
  tool = r.calibration.tool;
} finally {
  await b.close();
}

// 2. wire teaching with the measured tool frame; the file's wire a straight nominal line
b = await toolCalibrationBench(seed);
try {
  const cal: Calibration = {
    ...truth,
    tool,
    wire: { ...truth.wire, pointsBase: [truth.wire.pointsBase[0]!, truth.wire.pointsBase.at(-1)!] },
  };
  const teacher = new ProbingTeacher(b.api, {
    teachLengthM: truth.wire.endMarkM - truth.wire.startMarkM,
    clearanceM: truth.tool.loopInnerRadiusM - truth.wire.wireRadiusM,
  });
  const t0 = performance.now();
  const r = await teachWire(b.api, cal, teacher, { see: true });
  const s = (performance.now() - t0) / 1000;
  const d = centrelineDistance(r.fit.points, truth.wire.pointsBase);
  console.log(
    `wire teaching (${r.report.poses} poses centred by buzz-contact probing, ${f(r.report.lengthM, 3)} m): ${f(s, 1)} s (${f(s / r.report.poses, 2)} s per pose); ` +
      `centreline vs truth ${f(d.rmsM * 1000)} mm RMS, ${f(d.maxM * 1000)} mm max (target 0.5 mm RMS); residuals ${f(r.report.rmsResidualMm)} mm RMS, worst ${f(r.report.worstResidualMm)} mm; largest clearance violation ${f(r.report.largestClearanceViolationMm)} mm; marks ${f(r.report.startMarkM)}…${f(r.report.endMarkM)} m; taught vs seen by depth: ${(r.report.seen ?? []).map((c) => `${c.camera} ${f(c.rmsMm, 2)} mm RMS (${c.points} px)`).join(", ")}`,
  );
} finally {
  await b.close();
}

// 3. board registration with the measured tool frame, touches with a pointing error
b = await toolCalibrationBench(seed);
try {
  const cal: Calibration = { ...truth, tool };
  await liftLoop(b.api, 0.08);
  const toucher = new PointingToucher(b.api, truth, pointingMm / 1000);
  const t0 = performance.now();
  const r = await registerBoard(b.api, cal, defaultBoardMarks(cal), toucher);
  const s = (performance.now() - t0) / 1000;
  const got = poseToMat4(r.calibration.board.poseWorld);
  const want = poseToMat4(truth.board.poseWorld);
  const [sx, sy] = truth.board.sizeM;
  let worst = 0;
  for (const [x, y] of [
    [-1, -1],
    [1, -1],
    [1, 1],
    [-1, 1],
  ]) {
    const p: Vec3 = [(x! * sx) / 2, (y! * sy) / 2, 0];
    const a = mat4Point(got, p);
    const w = mat4Point(want, p);
    worst = Math.max(worst, Math.hypot(a[0] - w[0], a[1] - w[1], a[2] - w[2]) * 1000);
  }
  console.log(
    `board registration (4 marks, pointing error σ ${pointingMm} mm per axis): ${f(s, 1)} s; ` +
      `worst board-corner error ${f(worst)} mm (target 1 mm), rotation ${f((rotationAngle(got, want) * 180) / Math.PI)}°; residuals ${f(r.report.rmsMm)} mm RMS, worst ${f(r.report.worstMm)} mm, scale ${f(r.report.scale, 5)}`,
  );
} finally {
  await b.close();
}
process.exit(0);
