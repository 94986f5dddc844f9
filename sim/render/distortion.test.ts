import { describe, expect, it } from "vitest";
import { buildRemap } from "./distortion.ts";

describe("distortion remap", () => {
  it("maps the principal point to itself and widens the ideal image for barrel distortion", () => {
    const cam = { width: 40, height: 30, fx: 40, fy: 40, cx: 20, cy: 15 };
    const m = buildRemap(cam, { k1: -0.3, k2: 0, p1: 0, p2: 0, k3: 0 });
    expect(m.idealWidth).toBeGreaterThan(cam.width);
    expect(m.idealHeight).toBeGreaterThan(cam.height);
    const centre = 15 * cam.width + 20;
    const src = m.source[centre]!;
    expect(src % m.idealWidth).toBe(Math.round(m.idealCx));
    expect(Math.floor(src / m.idealWidth)).toBe(Math.round(m.idealCy));
  });
});
