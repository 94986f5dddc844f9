import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_BOARD } from "./board.ts";
import { fitIntrinsics } from "./intrinsics.ts";
import { collectCarriedViews, posesAround } from "./procedures.ts";
import {
  BENCH_DISTORTION,
  type CalibrationBench,
  calibrationBench,
  liftThenGo,
  presentationPose,
} from "../test-support/calibration-bench.ts";

let b: CalibrationBench;
beforeAll(async () => {
  b = await calibrationBench();
});
afterAll(async () => {
  await b?.close();
});

describe("calibration on the sim through the API", () => {
  it("intrinsics of the front camera from the carried board", async () => {
    const wire = b.truth.wire.pointsBase;
    const mid = wire[Math.floor(wire.length / 2)]!;
    const around = await presentationPose(b, "front", [mid[0], mid[1], mid[2] + 0.2], 0.4);
    await liftThenGo(b, around);
    const session = await collectCarriedViews(b.api, DEFAULT_BOARD, ["front"], posesAround(around, 30));
    const size = session.imageSize.get("front")!;
    const fit = await fitIntrinsics(
      "front",
      DEFAULT_BOARD,
      session.views.map((v) => v.detections.get("front")!),
      size,
    );
    const t = b.truth.cameras.find((c) => c.name === "front")!.intrinsics;
    console.log(JSON.stringify({ fit: { ...fit, boardPoses: undefined }, truth: t }, null, 1));
    expect(Math.abs(fit.fxPx / t.fxPx - 1)).toBeLessThan(0.005);
    expect(Math.abs(fit.fyPx / t.fyPx - 1)).toBeLessThan(0.005);
    expect(Math.abs(fit.cxPx - t.cxPx)).toBeLessThan(1);
    expect(Math.abs(fit.cyPx - t.cyPx)).toBeLessThan(1);
    expect(Math.abs(fit.distortion[0] - BENCH_DISTORTION[0]!)).toBeLessThan(0.01);
    expect(fit.rmsPx).toBeLessThanOrEqual(0.5);
  }, 300_000);
});
