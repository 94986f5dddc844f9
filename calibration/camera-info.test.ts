import { describe, expect, it } from "vitest";
import type { SpecCamera } from "./api-client.ts";
import { compareWithCameraInfo, formatComparison } from "./camera-info.ts";

const PUBLISHED: SpecCamera = {
  name: "front",
  width: 640,
  height: 480,
  fx: 554,
  fy: 550,
  cx: 319.5,
  cy: 239.5,
  distortion: [-0.08, 0.02, 0, 0, 0],
  frame: "world",
  pose: { xyz: [0, 0, 0], quat_xyzw: [0, 0, 0, 1] },
};

describe("fit − CameraInfo", () => {
  it("gives each term in px and %, and the distortion coefficients' differences", () => {
    const c = compareWithCameraInfo(
      {
        widthPx: 640,
        heightPx: 480,
        fxPx: 559.54,
        fyPx: 550,
        cxPx: 318.5,
        cyPx: 241,
        distortion: [-0.07, 0.02, 0.001, 0, 0],
      },
      PUBLISHED,
    );
    expect(c.fx.diffPx).toBeCloseTo(5.54, 9);
    expect(c.fx.diffPct).toBeCloseTo(1, 9);
    expect(c.fy.diffPx).toBe(0);
    expect(c.cx.diffPx).toBeCloseTo(-1, 9);
    expect(c.cx.diffPct).toBeCloseTo((-1 / 319.5) * 100, 9);
    expect(c.cy.diffPx).toBeCloseTo(1.5, 9);
    expect(c.distortion.diff[0]).toBeCloseTo(0.01, 12);
    expect(c.distortion.diff[2]).toBeCloseTo(0.001, 12);
    expect(c.distortion.diff[4]).toBe(0);
    expect(c.size).toEqual({ fitted: [640, 480], published: [640, 480] });
    expect(formatComparison(c)).toMatch(/fx \+5\.54 px \(\+1\.00 %\).*cx -1\.00 px.*k1 k2 p1 p2 k3 \+0\.0100/);
  });

  it("pads a short published distortion vector with zeros", () => {
    const c = compareWithCameraInfo(
      { widthPx: 640, heightPx: 480, fxPx: 554, fyPx: 550, cxPx: 319.5, cyPx: 239.5, distortion: [0.1] },
      { ...PUBLISHED, distortion: [] },
    );
    expect(c.distortion.published).toEqual([0, 0, 0, 0, 0]);
    expect(c.distortion.diff).toEqual([0.1, 0, 0, 0, 0]);
    expect(c.fx.diffPx).toBe(0);
  });
});
