/**
 * `robot-gateway calibrate camera` as a user runs it: a real process against a gateway
 * listening on a real port, writing a new calibration version next to the old one.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readCalibration } from "../calibration/calibration-file.ts";
import { AGENT_TOKEN } from "../compose/testing.ts";
import {
  type CalibrationBench,
  calibrationBench,
  liftThenGo,
  presentationPose,
} from "../test-support/calibration-bench.ts";

let b: CalibrationBench;
let url: string;
beforeAll(async () => {
  b = await calibrationBench();
  url = await b.g.app.listen({ host: "127.0.0.1", port: 0 });
  const wire = b.truth.wire.pointsBase;
  const mid = wire[Math.floor(wire.length / 2)]!;
  await liftThenGo(b, await presentationPose(b, "front", [mid[0], mid[1], mid[2] + 0.2], 0.4));
}, 300_000);
afterAll(async () => {
  await b?.close();
});

/** Run the CLI as a child process (asynchronously: the gateway it talks to lives in this process). */
function cli(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ["--import", "tsx", "cli/main.ts", "calibrate", ...args]);
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d) => {
      stdout += d;
    });
    p.stderr.on("data", (d) => {
      stderr += d;
    });
    p.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

describe("calibrate camera over HTTP", () => {
  it("writes the next calibration version with provenance, a report and a coverage map; refuses to overwrite", async () => {
    const dir = dirname(b.file);
    const args = [
      "camera",
      "--url",
      url,
      "--agent-token",
      AGENT_TOKEN,
      "--calibration",
      b.file,
      "--camera",
      "front",
      "--poses",
      "16",
      "--report-dir",
      dir,
    ];
    const r = await cli(args);
    expect(r.stderr).not.toMatch(/Error/);
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.calibration).toBe(join(dir, "calibration.v2.json"));
    const v2 = readCalibration(out.calibration);
    const fx = v2.cameras.find((c) => c.name === "front")!.intrinsics.fxPx;
    expect(Math.abs(fx / 554 - 1)).toBeLessThan(0.01);
    expect(v2.provenance!.at(-1)!.procedure).toMatch(/camera:front intrinsics\+extrinsics/);
    expect(existsSync(out.coverage)).toBe(true);
    const report = JSON.parse(readFileSync(out.report, "utf8"));
    expect(report.intrinsics.views.length).toBeGreaterThanOrEqual(6);
    // fit − the camera's published intrinsics (the sim publishes its true camera: fx 554 px)
    expect(out.cameraInfo).toMatch(/^fit − published: fx [+-]\d+\.\d\d px/);
    expect(report.cameraInfo.fx.published).toBe(554);
    expect(Math.abs(report.cameraInfo.fx.diffPct)).toBeLessThan(1);
    expect(report.viewSelection.candidates).toBe(16 * 8);
    // naming an existing file as output is refused with the coded error
    const again = await cli([...args, "--out", out.calibration, "--poses", "6"]);
    expect(again.status).toBe(2);
    expect(again.stderr).toMatch(/RB_ERR_CALIB_FILE_EXISTS/);
  }, 300_000);
});
