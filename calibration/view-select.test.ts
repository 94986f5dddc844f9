import { describe, expect, it } from "vitest";
import { DEFAULT_BOARD } from "./board.ts";
import { plannedBoardViews } from "./view-plan.ts";
import { predictedVariances, selectViews, viewInformation } from "./view-select.ts";

const CAM = { width: 640, height: 480, fx: 554, fy: 554, cx: 319.5, cy: 239.5, distortion: [0, 0, 0, 0, 0] };

describe("view selection by the intrinsics fit's information", () => {
  const flat = plannedBoardViews(CAM, DEFAULT_BOARD, 10, { distanceM: 0.4, tiltRad: [0.02, 0.06] });
  const tilted = plannedBoardViews(CAM, DEFAULT_BOARD, 10, { distanceM: 0.4, tiltRad: [0.4, 0.7] });
  const cands = [...flat, ...tilted].map((M) => viewInformation(CAM, DEFAULT_BOARD, M));
  const sum = (idx: number[]) => {
    const s = new Array(64).fill(0);
    for (const i of idx)
      cands[i]!.info.forEach((v, k) => {
        s[k] += v;
      });
    return s;
  };

  it("counts the corners inside the image and gives nothing for a board seen from behind", () => {
    expect(cands[0]!.corners).toBe(48);
    const behind = flat[0]!.slice();
    for (const k of [0, 1, 2, 4, 5, 6, 8, 9, 10]) behind[k] = -behind[k]!;
    const v = viewInformation(CAM, DEFAULT_BOARD, behind);
    expect(v.corners).toBe(0);
    expect(v.info.every((x) => x === 0)).toBe(true);
  });

  it("prefers tilted views: they pin the principal point and focal lengths that face-on views leave open", () => {
    const pick = selectViews(CAM, cands, 5);
    expect(pick).toHaveLength(5);
    // tilted ones, and face-on ones where they add (distortion, the image's corners)
    expect(pick.filter((i) => i >= 10).length).toBeGreaterThanOrEqual(2);
    const chosen = predictedVariances(sum(pick));
    const faceOn = predictedVariances(sum([0, 1, 2, 3, 4]));
    // cx, cy and fx of the chosen five better determined than of five face-on views (σ per px of corner noise: 7.5, 6.1, 6.1 px against 20, 19, 70)
    expect(Math.sqrt(chosen[2]!)).toBeLessThan(Math.sqrt(faceOn[2]!) / 2);
    expect(Math.sqrt(chosen[3]!)).toBeLessThan(Math.sqrt(faceOn[3]!) / 2);
    expect(Math.sqrt(chosen[0]!)).toBeLessThan(Math.sqrt(faceOn[0]!) / 5);
    // and better than five tilted views taken as they come, on the sum it minimises
    const firstTilted = predictedVariances(sum([10, 11, 12, 13, 14]));
    const cost = (v: number[]) =>
      v[0]! / (0.005 * 554) ** 2 + v[1]! / (0.005 * 554) ** 2 + v[2]! + v[3]! + v[4]! / 0.01 ** 2;
    expect(cost(chosen)).toBeLessThan(cost(firstTilted));
  });

  it("leaves out views with too few corners", () => {
    const few = cands.map((c, i) => (i >= 10 ? { ...c, corners: 5 } : c));
    expect(selectViews(CAM, few, 5).every((i) => i < 10)).toBe(true);
    expect(selectViews(CAM, few, 15)).toHaveLength(10);
  });
});
