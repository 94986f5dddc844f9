import { describe, expect, it } from "vitest";
import { PANDA } from "../robots/franka/models.ts";
import { sampleBenchCalibration } from "../sim/buzzwire/bench.ts";
import { calibrationSchema, parseCalibration } from "./schema.ts";

describe("calibration schema", () => {
  const sampled = sampleBenchCalibration(PANDA, 1);

  it("accepts the simulator's sampled calibration and freezes it", () => {
    const c = parseCalibration(JSON.parse(JSON.stringify(sampled)));
    expect(c.version).toBe(1);
    expect(c.wire.checkpointCount).toBe(5);
    expect(Object.isFrozen(c.wire.pointsBase)).toBe(true);
  });

  it("rejects unknown keys, a wrong version, bad marks and duplicate cameras, all at once", () => {
    const bad = JSON.parse(JSON.stringify(sampled));
    bad.version = 2;
    bad.extra = true;
    bad.wire.endMarkM = 0;
    bad.cameras[1].name = bad.cameras[0].name;
    const r = calibrationSchema.safeParse(bad);
    expect(r.success).toBe(false);
    const paths = r.error!.issues.map((i) => i.path.join("."));
    expect(paths).toContain("version");
    expect(paths).toContain("wire.endMarkM");
    expect(paths).toContain("cameras.1.name");
    expect(r.error!.issues.some((i) => i.code === "unrecognized_keys" && i.path.length === 0)).toBe(true);
  });
});
