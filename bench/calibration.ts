/**
 * Calibration benchmark: the camera procedure (calibration/camera-procedure.ts) run on the sim
 * through the API — the robot carries the ChArUco board through K poses, the front camera's
 * intrinsics and extrinsics are fitted — then `calibrate check` with the result. Prints the
 * procedure time and the achieved figures beside the ground truth the bench was built from and
 * beside the targets (issue 11: fx, fy 0.5 %, cx, cy 1 px, k1 0.01, RMS 0.5 px, extrinsics
 * 2 mm / 0.2°).
 * Usage: npx tsx bench/calibration.ts [poses=30] [--images DIR]  (DIR gets the coverage map and
 * the check overlay as PNG)
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { calibrateCamera } from "../calibration/camera-procedure.ts";
import { checkCameras } from "../calibration/check.ts";
import { rotationAngle } from "../calibration/linalg.ts";
import type { Calibration } from "../calibration/schema.ts";
import { poseToMat4 } from "../robots/math.ts";
import {
  BENCH_DISTORTION,
  calibrationBench,
  carriedBoardPose,
  liftThenGo,
  presentationPose,
} from "../test-support/calibration-bench.ts";

const args = process.argv.slice(2);
const imagesAt = args.indexOf("--images");
const imagesDir = imagesAt >= 0 ? args[imagesAt + 1] : undefined;
const poses = Number(args.find((a, i) => /^\d+$/.test(a) && args[i - 1] !== "--images") ?? 30);

const b = await calibrationBench();
try {
  const wire = b.truth.wire.pointsBase;
  const mid = wire[Math.floor(wire.length / 2)]!;
  const around = await presentationPose(b, "front", [mid[0], mid[1], mid[2] + 0.2], 0.4);
  await liftThenGo(b, around);
  // what a lab starts from: nominal intrinsics, a camera pose measured with a tape, a nominal board mount
  const truthFront = b.truth.cameras.find((c) => c.name === "front")!;
  if (truthFront.extrinsics.mount !== "world") throw new Error("front is a world camera");
  const tp = truthFront.extrinsics.poseWorld;
  const nominal: Calibration = {
    ...b.truth,
    cameras: b.truth.cameras.map((c) =>
      c.name === "front"
        ? {
            ...c,
            intrinsics: { ...c.intrinsics, fxPx: 600, fyPx: 600, distortion: [0, 0, 0, 0, 0] },
            extrinsics: {
              mount: "world",
              poseWorld: { ...tp, xyz: [tp.xyz[0] + 0.02, tp.xyz[1] - 0.01, tp.xyz[2]] },
            },
          }
        : c,
    ),
  };
  const r = await calibrateCamera(b.api, nominal, { camera: "front", poses, around });
  const got = r.calibration.cameras.find((c) => c.name === "front")!;
  const ti = truthFront.intrinsics;
  const gi = got.intrinsics;
  const row = (name: string, value: string, truth: string, error: string, target: string) =>
    console.log(
      `${name.padEnd(28)}${value.padStart(14)}${truth.padStart(14)}${error.padStart(14)}${target.padStart(12)}`,
    );
  console.log(
    `camera procedure on the sim, front camera, ${poses} poses (${r.report.refused.length} refused by the gateway), ${r.report.intrinsics.views.length} views used, ${r.report.intrinsics.rejected.length} rejected`,
  );
  console.log(
    `procedure time: ${r.report.elapsedS.toFixed(1)} s wall clock (moves, captures over HTTP, detection, fits)`,
  );
  row("", "fitted", "truth", "error", "target");
  row(
    "fx, px",
    gi.fxPx.toFixed(2),
    ti.fxPx.toFixed(2),
    `${((gi.fxPx / ti.fxPx - 1) * 100).toFixed(3)} %`,
    "0.5 %",
  );
  row(
    "fy, px",
    gi.fyPx.toFixed(2),
    ti.fyPx.toFixed(2),
    `${((gi.fyPx / ti.fyPx - 1) * 100).toFixed(3)} %`,
    "0.5 %",
  );
  row("cx, px", gi.cxPx.toFixed(2), ti.cxPx.toFixed(2), (gi.cxPx - ti.cxPx).toFixed(3), "1 px");
  row("cy, px", gi.cyPx.toFixed(2), ti.cyPx.toFixed(2), (gi.cyPx - ti.cyPx).toFixed(3), "1 px");
  row(
    "k1",
    gi.distortion[0]!.toFixed(4),
    BENCH_DISTORTION[0]!.toFixed(4),
    (gi.distortion[0]! - BENCH_DISTORTION[0]!).toFixed(4),
    "0.01",
  );
  row(
    "k2",
    gi.distortion[1]!.toFixed(4),
    BENCH_DISTORTION[1]!.toFixed(4),
    (gi.distortion[1]! - BENCH_DISTORTION[1]!).toFixed(4),
    "–",
  );
  row("intrinsics RMS, px", r.report.intrinsics.rmsPx.toFixed(3), "", "", "≤ 0.5 px");
  if (got.extrinsics.mount === "world" && r.report.extrinsics) {
    const g = poseToMat4(got.extrinsics.poseWorld);
    const t = poseToMat4(tp);
    const mm = Math.hypot(g[3]! - t[3]!, g[7]! - t[7]!, g[11]! - t[11]!) * 1000;
    const deg = (rotationAngle(g, t) * 180) / Math.PI;
    row("camera position, mm", "", "", mm.toFixed(3), "2 mm");
    row("camera orientation, deg", "", "", deg.toFixed(4), "0.2°");
    const board = r.calibration.calibrationBoards![0]!;
    if (board.mount.frame === "flange") {
      const bm = poseToMat4(board.mount.poseFlange);
      const bt = poseToMat4(carriedBoardPose());
      row(
        "board mount position, mm",
        "",
        "",
        (Math.hypot(bm[3]! - bt[3]!, bm[7]! - bt[7]!, bm[11]! - bt[11]!) * 1000).toFixed(3),
        "–",
      );
      row("board mount orientation, deg", "", "", ((rotationAngle(bm, bt) * 180) / Math.PI).toFixed(4), "–");
    }
    const e = r.report.extrinsics;
    row("hand-eye reprojection, px", `${e.closedFormRmsPx.toFixed(3)} → ${e.rmsPx.toFixed(3)}`, "", "", "");
    row(
      "worst view residual",
      `${e.worstResidualMm.toFixed(2)} mm`,
      `${e.worstResidualDeg.toFixed(3)}°`,
      "",
      "",
    );
  }
  await b.api.moveTo(around);
  const [check] = await checkCameras(b.api, r.calibration, { cameras: ["front"] });
  console.log(
    `check with the new calibration: camera moved ${check!.movedMm?.toFixed(2)} mm / ${check!.movedDeg?.toFixed(3)}°, predicted vs detected corners ${check!.predictionErrorPx?.toFixed(3)} px RMS (${check!.corners} corners), warning: ${check!.warning ?? "none"}`,
  );
  const [before] = await checkCameras(b.api, nominal, { cameras: ["front"] });
  console.log(
    `check with the nominal (tape-measured) calibration: moved ${before!.movedMm?.toFixed(1)} mm, predicted vs detected ${before!.predictionErrorPx?.toFixed(1)} px RMS`,
  );
  if (imagesDir) {
    mkdirSync(imagesDir, { recursive: true });
    const w = r.report.intrinsics.widthPx;
    const h = r.report.intrinsics.heightPx;
    const png = (name: string, rgb: Uint8Array) =>
      sharp(Buffer.from(rgb.buffer, rgb.byteOffset, rgb.length), {
        raw: { width: w, height: h, channels: 3 },
      })
        .png()
        .toFile(join(imagesDir, name));
    await png("calibration-coverage-front.png", r.coverageRgb);
    await png("calibration-check-front.png", check!.overlay.data);
    await png("calibration-check-front-nominal.png", before!.overlay.data);
    console.log(`images written to ${imagesDir}`);
  }
} finally {
  await b.close();
}
process.exit(0);
