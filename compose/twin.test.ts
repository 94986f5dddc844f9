import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { calibrationSchema } from "../calibration/schema.ts";
import { parseBenchConfig } from "./bench-config.ts";
import { composeBench } from "./compose.ts";
import { twinBenchConfig } from "./twin.ts";

const examples = join(dirname(fileURLToPath(import.meta.url)), "..", "examples", "benches");

describe("the twin of a real bench", () => {
  it("is a sim bench with the real bench's cameras from its calibration file", async () => {
    const real = parseBenchConfig(
      parseYaml(readFileSync(join(examples, "real-franka-buzzbox.yaml"), "utf8")),
    );
    expect(real.backend.type).toBe("real");
    const twin = twinBenchConfig(real);
    expect(twin.backend).toMatchObject({ type: "sim", scene: "buzzwire", realism: false });
    expect(twin.calibration).toBe(real.calibration);
    expect(twin.safety).toEqual(real.safety);
    const bench = await composeBench(twin, examples);
    try {
      const cal = calibrationSchema.parse(parseYaml(readFileSync(join(examples, real.calibration!), "utf8")));
      const cams = bench.backend.describe().cameras;
      expect(cams.map((c) => c.name)).toEqual(cal.cameras.map((c) => c.name));
      for (const c of cal.cameras) {
        const d = cams.find((x) => x.name === c.name)!;
        expect([d.width, d.height, d.fx, d.fy, d.cx, d.cy]).toEqual([
          c.intrinsics.widthPx,
          c.intrinsics.heightPx,
          c.intrinsics.fxPx,
          c.intrinsics.fyPx,
          c.intrinsics.cxPx,
          c.intrinsics.cyPx,
        ]);
        if (c.extrinsics.mount === "world") expect(d.pose.xyz).toEqual(c.extrinsics.poseWorld.xyz);
      }
    } finally {
      await bench.backend.shutdown();
    }
  });

  it("needs a calibration file", () => {
    const real = parseBenchConfig({ version: 1, name: "r", backend: { type: "mirror" } });
    expect(() => twinBenchConfig(real)).toThrow(/calibration file/);
  });
});
