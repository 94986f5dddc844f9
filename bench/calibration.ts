/**
 * Calibration benchmark: the camera procedure (calibration/camera-procedure.ts) run on the sim
 * through the API — the robot carries the ChArUco board through K poses, the front camera's
 * intrinsics and extrinsics are fitted — then `calibrate check` with the result. Prints the
 * procedure time and the achieved figures beside the ground truth the bench was built from and
 * beside the targets (issue 11: fx, fy 0.5 %, cx, cy 1 px, k1 0.01, RMS 0.5 px, extrinsics
 * 2 mm / 0.2°).
 * Then the twin's overlay error (a sim built from the new calibration against the bench's own
 * frames at the same joints: board corners, px), the same frames with sensor noise over several noise seeds (the intrinsics' spread, and
 * the detected corners against their ground-truth projections: bias or variance), and the wrist
 * camera (eye-in-hand, board on the table, views planned in the camera frame).
 * Usage: npx tsx bench/calibration.ts [poses=30] [--images DIR]  (DIR gets the coverage map, the
 * check overlays and the twin-over-bench blends as PNG)
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import sharp from "sharp";
import { cornerCount, cornerPoint, DEFAULT_BOARD } from "../calibration/board.ts";
import { detectBoard, type ImageU8 } from "../calibration/board-detect.ts";
import { formatComparison } from "../calibration/camera-info.ts";
import { calibrateCamera } from "../calibration/camera-procedure.ts";
import { checkCameras } from "../calibration/check.ts";
import { type BoardView, fitIntrinsics } from "../calibration/intrinsics.ts";
import { collectCarriedViews, posesAround } from "../calibration/procedures.ts";
import { intrinsicsOf, projectCameraPoint } from "../calibration/projection.ts";
import { calibrateWristCamera } from "../calibration/wrist-procedure.ts";
import { selectJointTargets } from "../calibration/view-select.ts";
import { rotationAngle } from "../calibration/linalg.ts";
import { testGateway } from "../compose/testing.ts";
import { mat4Mul, mat4Point, mat4RigidInverse, poseToMat4 } from "../robots/math.ts";
import {
  BENCH_DISTORTION,
  calibrationBench,
  carriedBoardPose,
  cornerAgreement,
  injectApi,
  liftThenGo,
  frontPresentationPose,
  tableBoardPose,
  tapeMeasured,
  withNoise,
  wristStartPose,
  withWristMountOffset,
} from "../test-support/calibration-bench.ts";

const args = process.argv.slice(2);
const imagesAt = args.indexOf("--images");
const imagesDir = imagesAt >= 0 ? args[imagesAt + 1] : undefined;
const poses = Number(args.find((a, i) => /^\d+$/.test(a) && args[i - 1] !== "--images") ?? 30);

const b = await calibrationBench();
try {
  const around = await frontPresentationPose(b);
  await liftThenGo(b, around);
  // what a lab starts from: nominal intrinsics, a camera pose measured with a tape, a nominal board mount
  const truthFront = b.truth.cameras.find((c) => c.name === "front")!;
  if (truthFront.extrinsics.mount !== "world") throw new Error("front is a world camera");
  const tp = truthFront.extrinsics.poseWorld;
  const nominal = tapeMeasured(b.truth);
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
  const sel = r.report.viewSelection!;
  const sd = (v: number[]) =>
    `fx ${v[0]!.toFixed(2)} fy ${v[1]!.toFixed(2)} cx ${v[2]!.toFixed(2)} cy ${v[3]!.toFixed(2)} px, k1 ${v[4]!.toFixed(4)}`;
  console.log(
    `views chosen out of ${sel.candidates} candidates of the joint spread; predicted σ per px of corner noise: chosen ${sd(sel.predictedSd)}; the spread's first ${poses}: ${sd(sel.spreadSd)}`,
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
  if (r.report.cameraInfo) console.log(formatComparison(r.report.cameraInfo));
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
  // --- twin overlay: a sim built from the new calibration (as `serve --twin` builds it) against
  // the bench's own frames, at the same joints; and the same with the nominal calibration
  for (const [label, cal] of [
    ["calibrated", r.calibration],
    ["nominal", nominal],
  ] as const) {
    const file = join(dirname(b.file), `twin-${label}.json`);
    writeFileSync(file, JSON.stringify(cal, null, 1));
    const tg = await testGateway({
      backend: { type: "sim" },
      calibration: file,
      task: { id: "free-motion", seed: 3 },
      safety: { stopOnEvents: ["collision"] },
    });
    try {
      const api = injectApi(tg);
      await liftThenGo({ g: tg, api, truth: cal, file, close: () => tg.close() }, around);
      await b.api.moveTo(around);
      await api.moveTo((await b.api.reading()).q);
      const o = await cornerAgreement(b.api, api, "front");
      if (imagesDir) {
        // the bench's frame and the twin's, half and half, at half size
        const a = (await b.api.capture(["front"])).images.get("front")!;
        const t = (await api.capture(["front"])).images.get("front")!;
        const mix = Buffer.alloc(a.data.length);
        for (let i = 0; i < mix.length; i++) mix[i] = (a.data[i]! + t.data[i]!) >> 1;
        await sharp(mix, { raw: { width: a.width, height: a.height, channels: 3 } })
          .resize(a.width >> 1)
          .png({ compressionLevel: 9 })
          .toFile(join(imagesDir, `calibration-twin-front-${label}.png`));
      }
      console.log(
        `twin overlay (${label} calibration): board corners twin vs bench ${o.rmsPx.toFixed(3)} px RMS over ${o.corners} corners${label === "calibrated" ? " (target: the extrinsics target's 2 mm / 0.2° ≈ 2.4 px at 0.4 m)" : ""}`,
      );
    } finally {
      await tg.close();
    }
  }
} finally {
  await b.close();
}

/**
 * Noisy renders (σ = 4 grey levels) over noise seeds 1–5, on the bench of `benchSeed` (board,
 * wire and cameras of that seed): the poses the camera procedure chooses (view-select.ts) from
 * the tape-measured calibration, frames captured once, noise added per seed, fitted. Also the
 * detected corners against their ground-truth projections (bias or variance).
 */
async function noisyIntrinsics(benchSeed: number, poses: number, select = true): Promise<void> {
  const nb = await calibrationBench(benchSeed);
  try {
    const around = await frontPresentationPose(nb);
    await liftThenGo(nb, around);
    const truthFront = nb.truth.cameras.find((c) => c.name === "front")!;
    if (truthFront.extrinsics.mount !== "world") throw new Error("front is a world camera");
    const ti = truthFront.intrinsics;
    const camFromWorld = mat4RigidInverse(poseToMat4(truthFront.extrinsics.poseWorld));
    const worldFromBase = poseToMat4(nb.truth.robotBasePoseWorld);
    const flangeFromBoard = poseToMat4(carriedBoardPose());
    const K = intrinsicsOf(truthFront);
    const plan = await selectJointTargets(
      nb.api,
      tapeMeasured(nb.truth),
      "front",
      "carried",
      posesAround(around, 8 * poses),
      poses,
    );
    const targets = select ? plan.targets : posesAround(around, poses);
    const frames: Array<{ id: string; img: ImageU8; truth: Array<[number, number] | null> }> = [];
    const session = await collectCarriedViews(
      nb.api,
      DEFAULT_BOARD,
      ["front"],
      targets,
      async (v, images) => {
        const M = mat4Mul(
          mat4Mul(mat4Mul(camFromWorld, worldFromBase), poseToMat4(v.flangeBase)),
          flangeFromBoard,
        );
        const truth: Array<[number, number] | null> = [];
        for (let id = 0; id < cornerCount(DEFAULT_BOARD); id++) {
          const q = projectCameraPoint(K, mat4Point(M, cornerPoint(DEFAULT_BOARD, id)));
          truth.push(q ? [q.u, q.v] : null);
        }
        frames.push({ id: v.id, img: images.get("front")!, truth });
      },
    );
    console.log(
      `\nnoisy renders (σ = 4 grey levels), bench seed ${benchSeed}, ${select ? `${poses} poses chosen of ${8 * poses}` : `the spread's first ${poses} poses, none chosen (for comparison)`} (${session.refused.length} refused), per noise seed: detected corners − ground-truth projection (mean, RMS) and the fit's errors`,
    );
    console.log(
      `${"seed".padEnd(6)}${"mean du".padStart(9)}${"mean dv".padStart(9)}${"rms".padStart(7)}${"fx px".padStart(9)}${"fx %".padStart(8)}${"fy px".padStart(9)}${"fy %".padStart(8)}${"cx".padStart(8)}${"cy".padStart(8)}${"k1".padStart(9)}${"RMS".padStart(7)}`,
    );
    const worst = [0, 0, 0, 0, 0];
    for (const seed of [0, 1, 2, 3, 4, 5]) {
      const views: BoardView[] = [];
      let du = 0;
      let dv = 0;
      let e2 = 0;
      let n = 0;
      for (const [i, f] of frames.entries()) {
        const d = await detectBoard(DEFAULT_BOARD, seed === 0 ? f.img : withNoise(f.img, 4, seed * 1000 + i));
        views.push({ id: f.id, ids: d.ids, pixels: d.pixels });
        d.ids.forEach((id, k) => {
          const t = f.truth[id];
          if (!t) return;
          const a = d.pixels[k]![0] - t[0];
          const c = d.pixels[k]![1] - t[1];
          du += a;
          dv += c;
          e2 += a * a + c * c;
          n++;
        });
      }
      const fit = await fitIntrinsics("front", DEFAULT_BOARD, views, {
        width: ti.widthPx,
        height: ti.heightPx,
      });
      const err = [
        (fit.fxPx / ti.fxPx - 1) * 100,
        (fit.fyPx / ti.fyPx - 1) * 100,
        fit.cxPx - ti.cxPx,
        fit.cyPx - ti.cyPx,
        fit.distortion[0] - BENCH_DISTORTION[0]!,
      ];
      if (seed > 0)
        err.forEach((e, k) => {
          worst[k] = Math.max(worst[k]!, Math.abs(e));
        });
      console.log(
        `${(seed === 0 ? "clean" : String(seed)).padEnd(6)}${(du / n).toFixed(3).padStart(9)}${(dv / n).toFixed(3).padStart(9)}${Math.sqrt(
          e2 / n,
        )
          .toFixed(3)
          .padStart(
            7,
          )}${fit.fxPx.toFixed(2).padStart(9)}${err[0]!.toFixed(3).padStart(8)}${fit.fyPx.toFixed(2).padStart(9)}${err[1]!.toFixed(3).padStart(8)}${err[2]!.toFixed(2).padStart(8)}${err[3]!.toFixed(2).padStart(8)}${err[4]!.toFixed(4).padStart(9)}${fit.rmsPx.toFixed(3).padStart(7)}`,
      );
    }
    console.log(
      `worst over noise seeds 1–5: fx ${worst[0]!.toFixed(3)} %, fy ${worst[1]!.toFixed(3)} %, cx ${worst[2]!.toFixed(2)} px, cy ${worst[3]!.toFixed(2)} px, k1 ${worst[4]!.toFixed(4)} (truth fx ${ti.fxPx.toFixed(2)} fy ${ti.fyPx.toFixed(2)} cx ${ti.cxPx.toFixed(2)} cy ${ti.cyPx.toFixed(2)}; targets: fx, fy 0.5 %, cx, cy 1 px, k1 0.01, RMS 0.5 px)`,
    );
  } finally {
    await nb.close();
  }
}

for (const benchSeed of [3, 5]) await noisyIntrinsics(benchSeed, poses);
await noisyIntrinsics(3, poses, false);

// --- the wrist camera (eye-in-hand): board on the table, planned views
const w = await calibrationBench(3, "table");
try {
  const q0 = await wristStartPose(w);
  await liftThenGo(w, q0);
  const t = w.truth.cameras.find((c) => c.name === "wrist")!;
  if (t.extrinsics.mount !== "tool") throw new Error("wrist is on the tool");
  const tp = t.extrinsics.poseFlange;
  const nominal = withWristMountOffset(w.truth, [0.01, -0.01, 0]);
  const r = await calibrateWristCamera(w.api, nominal, { camera: "wrist", poses: 24, around: q0 });
  const g = r.calibration.cameras.find((c) => c.name === "wrist")!;
  if (g.extrinsics.mount !== "tool") throw new Error("wrist stays on the tool");
  const G = poseToMat4(g.extrinsics.poseFlange);
  const T = poseToMat4(tp);
  const gi = g.intrinsics;
  const ti = t.intrinsics;
  console.log(
    `\nwrist camera (eye-in-hand), board on the table, 24 planned views: ${r.report.poses} reachable, ${r.report.intrinsics.views.length} used, ${r.report.refused.length} left out (IK or gateway)`,
  );
  console.log(`procedure time: ${r.report.elapsedS.toFixed(1)} s wall clock`);
  const row = (name: string, error: string, target: string) =>
    console.log(`${name.padEnd(28)}${error.padStart(14)}${target.padStart(12)}`);
  row("", "error", "target");
  row("fx, %", ((gi.fxPx / ti.fxPx - 1) * 100).toFixed(3), "0.5 %");
  row("fy, %", ((gi.fyPx / ti.fyPx - 1) * 100).toFixed(3), "0.5 %");
  row("cx, px", (gi.cxPx - ti.cxPx).toFixed(3), "1 px");
  row("cy, px", (gi.cyPx - ti.cyPx).toFixed(3), "1 px");
  row("intrinsics RMS, px", r.report.intrinsics.rmsPx.toFixed(3), "≤ 0.5 px");
  row(
    "cam←flange position, mm",
    (Math.hypot(G[3]! - T[3]!, G[7]! - T[7]!, G[11]! - T[11]!) * 1000).toFixed(3),
    "2 mm",
  );
  row("cam←flange orientation, deg", ((rotationAngle(G, T) * 180) / Math.PI).toFixed(4), "0.2°");
  const tb = r.calibration.calibrationBoards![0]!;
  if (tb.mount.frame === "world") {
    const B = poseToMat4(tb.mount.poseWorld);
    const BT = poseToMat4(tableBoardPose());
    row(
      "table board position, mm",
      (Math.hypot(B[3]! - BT[3]!, B[7]! - BT[7]!, B[11]! - BT[11]!) * 1000).toFixed(3),
      "1 mm",
    );
  }
  const e = r.report.extrinsics!;
  row("hand-eye reprojection, px", `${e.closedFormRmsPx.toFixed(3)} → ${e.rmsPx.toFixed(3)}`, "");
  row("worst view residual", `${e.worstResidualMm.toFixed(2)} mm ${e.worstResidualDeg.toFixed(3)}°`, "");
  if (r.report.cameraInfo) console.log(`wrist ${formatComparison(r.report.cameraInfo)}`);
  // `calibrate check` with the wrist camera: the table board seen from where FK and the new mount put it
  await w.api.moveTo(q0);
  const [wc] = await checkCameras(w.api, r.calibration, { cameras: ["wrist"] });
  const [wn] = await checkCameras(w.api, nominal, { cameras: ["wrist"] });
  console.log(
    `wrist check with the new calibration: camera moved ${wc!.movedMm?.toFixed(2)} mm / ${wc!.movedDeg?.toFixed(3)}° on its mount, predicted vs detected ${wc!.predictionErrorPx?.toFixed(3)} px RMS (${wc!.corners} corners, ${wc!.outliers} outliers left out), warning: ${wc!.warning ?? "none"}; with the ruler-measured mount: moved ${wn!.movedMm?.toFixed(1)} mm, ${wn!.predictionErrorPx?.toFixed(1)} px`,
  );
  if (imagesDir)
    await sharp(Buffer.from(wc!.overlay.data), {
      raw: { width: wc!.overlay.width, height: wc!.overlay.height, channels: 3 },
    })
      .png()
      .toFile(join(imagesDir, "calibration-check-wrist.png"));
} finally {
  await w.close();
}
process.exit(0);
