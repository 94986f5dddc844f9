import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CodedError } from "../seam/errors.ts";
import { nextVersionPath, provenance, readCalibration, writeCalibration } from "./calibration-file.ts";
import { calibrationSchema } from "./schema.ts";

const CAL = calibrationSchema.parse({
  version: 1,
  robotBasePoseWorld: { xyz: [0, 0, 0], quat_xyzw: [0, 0, 0, 1] },
  tool: {
    loopPoseFlange: { xyz: [0, 0, 0.2], quat_xyzw: [0, 0, 0, 1] },
    loopInnerRadiusM: 0.015,
    loopWireRadiusM: 0.0015,
    handleLengthM: 0.08,
  },
  wire: {
    pointsBase: [
      [0.4, 0, 0.2],
      [0.5, 0, 0.2],
    ],
    wireRadiusM: 0.001,
    startMarkM: 0,
    endMarkM: 0.1,
  },
  board: { poseWorld: { xyz: [0.45, 0, 0.02], quat_xyzw: [0, 0, 0, 1] }, sizeM: [0.3, 0.6, 0.02] },
});

describe("calibration files", () => {
  it("never overwrite: each write takes the next version name", () => {
    const dir = mkdtempSync(join(tmpdir(), "rg-calfile-"));
    const a = join(dir, "calibration.json");
    writeCalibration(a, { ...CAL, provenance: [provenance("test", { rmsPx: 0.1 })] });
    expect(() => writeCalibration(a, CAL)).toThrow(CodedError);
    try {
      writeCalibration(a, CAL);
    } catch (e) {
      expect((e as CodedError).code).toBe("RB_ERR_CALIB_FILE_EXISTS");
    }
    const b = nextVersionPath(a);
    expect(b).toBe(join(dir, "calibration.v2.json"));
    writeCalibration(b, CAL);
    expect(nextVersionPath(a)).toBe(join(dir, "calibration.v3.json"));
    expect(nextVersionPath(b)).toBe(join(dir, "calibration.v3.json"));
    const back = readCalibration(a);
    expect(back.provenance![0]!.software).toMatch(/^robot-gateway \d/);
    expect(back.provenance![0]!.residuals).toEqual({ rmsPx: 0.1 });
    expect(existsSync(b)).toBe(true);
  });

  it("a broken file is a coded error naming the problem", () => {
    const dir = mkdtempSync(join(tmpdir(), "rg-calfile-"));
    const p = join(dir, "bad.json");
    writeFileSync(p, JSON.stringify({ ...CAL, cameras: [{ name: "x" }] }));
    expect(() => readCalibration(p)).toThrow(/cameras\.0\.intrinsics/);
  });
});
