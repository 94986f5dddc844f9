import { describe, expect, it } from "vitest";
import { mat4Point } from "../robots/math.ts";
import { boardSizeM, DEFAULT_BOARD } from "./board.ts";
import { plannedBoardViews, rollOfView, viewDepth } from "./view-plan.ts";

const CAM = { width: 640, height: 480, fx: 554, fy: 554, cx: 319.5, cy: 239.5, distortion: [0, 0, 0, 0, 0] };

describe("planned board views", () => {
  const views = plannedBoardViews(CAM, DEFAULT_BOARD, 24, { distanceM: 0.4, rollRad: 0.5 });
  const [w, h] = boardSizeM(DEFAULT_BOARD);

  it("keep the whole board inside the image margin, in front of the camera", () => {
    expect(views.length).toBe(24);
    for (const M of views)
      for (const p of [
        [0, 0, 0],
        [w, 0, 0],
        [w, h, 0],
        [0, h, 0],
      ]) {
        const q = mat4Point(M, p);
        const u = (CAM.fx * q[0]) / q[2] + CAM.cx;
        const v = (CAM.fy * q[1]) / q[2] + CAM.cy;
        expect(q[2]).toBeGreaterThan(0.1);
        expect(u).toBeGreaterThanOrEqual(20 - 1e-9);
        expect(v).toBeGreaterThanOrEqual(20 - 1e-9);
        expect(u).toBeLessThanOrEqual(620 + 1e-9);
        expect(v).toBeLessThanOrEqual(460 + 1e-9);
      }
  });

  it("tilt 15°…40° about axes that turn all the way round, roll around the presented one, depth around the presented one", () => {
    const tilts = views.map((M) => Math.acos(M[10]!));
    expect(Math.min(...tilts)).toBeGreaterThanOrEqual(0.26 - 1e-6);
    expect(Math.max(...tilts)).toBeLessThanOrEqual(0.7 + 1e-6);
    // the tilt direction (board normal in the image plane) covers all four quadrants
    const quadrants = new Set(views.map((M) => `${M[2]! >= 0}${M[6]! >= 0}`));
    expect(quadrants.size).toBe(4);
    for (const M of views) {
      const d = rollOfView(M) - 0.5;
      expect(Math.abs(Math.atan2(Math.sin(d), Math.cos(d)))).toBeLessThan(0.5);
      expect(viewDepth(M, DEFAULT_BOARD)).toBeGreaterThan(0.35);
      expect(viewDepth(M, DEFAULT_BOARD)).toBeLessThan(0.6);
    }
  });
});
