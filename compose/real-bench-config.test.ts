/** The real backend's config schema and the example bench files (examples/benches/). */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse as parseYaml } from "yaml";
import { describe, expect, it } from "vitest";
import { calibrationSchema } from "../calibration/schema.ts";
import { BenchConfigSchema, parseBenchConfig } from "./bench-config.ts";
import { FR3, PANDA } from "../robots/franka/models.ts";
import { createSimBackend } from "../sim/sim-backend.ts";
import { createRealBackend } from "../drivers/real/real-backend.ts";
import {
  parseRealBackendConfig,
  RealBackendConfigSchema,
  withAllowMotion,
} from "../drivers/real/real-bench-config.ts";

const examples = join(dirname(fileURLToPath(import.meta.url)), "..", "examples", "benches");
const load = (name: string) =>
  parseYaml(readFileSync(join(examples, name), "utf8")) as Record<string, unknown>;

const minimal = { type: "real", ros: { type: "rosbridge", url: "ws://127.0.0.1:9090" } };

function issues(input: unknown): string[] {
  const r = RealBackendConfigSchema.safeParse(input);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
}

describe("RealBackendConfigSchema", () => {
  it("applies franka_ros2 defaults, no contact device and motion off", () => {
    const c = parseRealBackendConfig(minimal);
    expect(c.franka.jointStatesTopic).toBe("/franka/joint_states");
    expect(c.franka.trajectoryAction).toBe("/fr3_arm_controller/follow_joint_trajectory");
    expect(c.contact).toEqual({ type: "none" });
    expect(c.cameras).toEqual([]);
    expect(c.allowMotion).toBe(false);
    expect(Object.isFrozen(c) && Object.isFrozen(c.franka)).toBe(true);
    const on = withAllowMotion(c, true);
    expect(on.allowMotion).toBe(true);
    expect(c.allowMotion).toBe(false);
    expect(Object.isFrozen(on)).toBe(true);
  });

  it("fills the buzz-box and Firmata defaults", () => {
    const b = parseRealBackendConfig({ ...minimal, contact: { type: "buzzbox", path: "/dev/ttyACM0" } });
    expect(b.contact).toMatchObject({ type: "buzzbox", baudRate: 115200, heartbeatTimeoutMs: 350 });
    const f = parseRealBackendConfig({
      ...minimal,
      contact: { type: "firmata", path: "/dev/ttyACM0", contactPin: 2, lampPin: 9, buzzerPin: 8 },
    });
    expect(f.contact).toMatchObject({ type: "firmata", baudRate: 57600, outputsFollowContact: true });
  });

  it("reports every problem of a broken config with its path", () => {
    const found = issues({
      type: "real",
      ros: { type: "rosbridge", url: "http://x" },
      franka: { jointStateTopic: "/typo" },
      cameras: [
        { name: "a", imageTopic: "/a", cameraInfoTopic: "/a/info", frame: "world" },
        { name: "a", imageTopic: "/b", cameraInfoTopic: "/b/info" },
      ],
      contact: { type: "firmata", path: "/dev/x", contactPin: 2, lampPin: 2, buzzerPin: 8 },
      allowMotion: "yes",
      extra: 1,
    });
    const text = found.join("\n");
    expect(text).toMatch(/^ros\.url/m);
    expect(text).toMatch(/^franka: .*jointStateTopic/m);
    expect(text).toMatch(/^cameras\.0\.pose/m);
    expect(text).toMatch(/^cameras\.1\.name: duplicate/m);
    expect(text).toMatch(/^contact\.contactPin: .*must differ/m);
    expect(text).toMatch(/^allowMotion/m);
    expect(text).toMatch(/extra/);
    expect(issues({ ...minimal, contact: { type: "serial-thing", path: "/dev/x" } })).not.toEqual([]);
  });

  it("needs camera extrinsics from the bench file or the calibration", () => {
    const cfg = parseRealBackendConfig({
      ...minimal,
      cameras: [{ name: "front", imageTopic: "/f", cameraInfoTopic: "/f/info" }],
    });
    expect(() => createRealBackend(cfg, { robot: PANDA })).toThrow(/camera "front" has no frame\/pose/);
    const cal = calibrationSchema.parse(load("calibration-example.yaml"));
    expect(() => createRealBackend(cfg, { robot: PANDA, calibration: cal })).not.toThrow();
  });
});

describe("example bench files", () => {
  it("calibration-example.yaml matches calibration/schema.ts", () => {
    expect(() => calibrationSchema.parse(load("calibration-example.yaml"))).not.toThrow();
  });

  it("calibration-example.yaml: the wrist camera sees past the hand (the loop and the table), not into a link", async () => {
    const cal = calibrationSchema.parse(load("calibration-example.yaml"));
    const sim = createSimBackend({ robot: FR3, seed: 7, calibration: cal });
    await sim.configure();
    await sim.activate();
    try {
      const [f] = await sim.capture(["wrist"], { depth: true });
      const d = f!.depthMm!;
      // the central third of the view at the start pose: depths (mm), 0 = nothing
      const vals: number[] = [];
      for (let v = Math.floor(d.height / 3); v < (2 * d.height) / 3; v += 4)
        for (let u = Math.floor(d.width / 3); u < (2 * d.width) / 3; u += 4)
          vals.push(d.data[v * d.width + u]!);
      vals.sort((a, b) => a - b);
      const near = vals.filter((x) => x > 0 && x < 150).length / vals.length;
      // the old mount (2 cm below the flange) had 77 % of this region within 15 cm (the hand), median 58 mm
      expect(near).toBeLessThan(0.2);
      expect(vals[vals.length >> 1]!).toBeGreaterThan(250);
    } finally {
      await sim.shutdown();
    }
  });

  it("sim-buzzwire.yaml is a valid bench file", () => {
    expect(parseBenchConfig(load("sim-buzzwire.yaml")).backend.type).toBe("sim");
  });

  it.each(["real-franka-firmata.yaml", "real-franka-buzzbox.yaml"])(
    "%s is valid (real backend block + the rest)",
    (f) => {
      const { backend, ...rest } = load(f);
      const b = parseRealBackendConfig(backend);
      expect(b.allowMotion).toBe(false);
      expect(() => BenchConfigSchema.omit({ backend: true }).parse(rest)).not.toThrow();
    },
  );
});
