import { describe, expect, it } from "vitest";
import { mat4Point, poseToMat4 } from "../robots/math.ts";
import { worldFromCamera } from "./camera-pose.ts";

describe("worldFromCamera", () => {
  const pose = {
    xyz: [0.1, 0, 0.05] as [number, number, number],
    quat_xyzw: [0, 0, 0, 1] as [number, number, number, number],
  };

  it("uses a fixed camera's pose as is", () => {
    const m = worldFromCamera({ name: "front", frame: "world", pose }, null);
    expect(Array.from(m)).toEqual(Array.from(poseToMat4(pose)));
  });

  it("chains a wrist camera through the tool pose", () => {
    // tool 0.5 m up, rotated 90° about z: camera offset +x in the tool frame is +y in the world
    const s = Math.SQRT1_2;
    const tool = poseToMat4({ xyz: [0, 0, 0.5], quat_xyzw: [0, 0, s, s] });
    const m = worldFromCamera({ name: "wrist", frame: "tool", pose }, tool);
    const origin = mat4Point(m, [0, 0, 0]);
    expect(origin[0]).toBeCloseTo(0, 12);
    expect(origin[1]).toBeCloseTo(0.1, 12);
    expect(origin[2]).toBeCloseTo(0.55, 12);
  });

  it("needs the tool pose for a wrist camera", () => {
    expect(() => worldFromCamera({ name: "wrist", frame: "tool", pose }, null)).toThrow(/wrist/);
  });
});
