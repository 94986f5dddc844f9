import { describe, expect, it } from "vitest";
import { mat4Point, poseToMat4, type Vec3 } from "../robots/math.ts";
import { rotationAngle } from "./linalg.ts";
import { kabsch, type RegistrationPair, registerBoardPoints } from "./registration.ts";

const truth = poseToMat4({ xyz: [0.5, -0.1, 0.02], quat_xyzw: [0.02, -0.03, 0.38, 0.924] });
const marks: Array<[string, Vec3]> = [
  ["A", [-0.12, -0.28, 0]],
  ["B", [0.12, -0.28, 0]],
  ["C", [0.12, 0.28, 0]],
  ["D", [-0.12, 0.28, 0]],
];

/** Seeded noise in [-1, 1]. */
function noise(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return (s / 2147483648) * 2 - 1;
  };
}

function pairs(errM: number, seed = 1): RegistrationPair[] {
  const n = noise(seed);
  return marks.map(([name, b]) => {
    const p = mat4Point(truth, b);
    return { name, board: b, base: [p[0] + errM * n(), p[1] + errM * n(), p[2] + errM * n()] as Vec3 };
  });
}

describe("board registration (Kabsch)", () => {
  it("recovers an exact pose and scale 1 from exact touches", () => {
    const r = registerBoardPoints(pairs(0));
    expect(rotationAngle(r.baseFromBoard, truth)).toBeLessThan(1e-9);
    for (const k of [3, 7, 11]) expect(r.baseFromBoard[k]!).toBeCloseTo(truth[k]!, 12);
    expect(r.rmsMm).toBeLessThan(1e-9);
    expect(r.scale).toBeCloseTo(1, 9);
  });

  it("with ±1 mm touches the board centre lands within 1 mm and the residuals show the error", () => {
    const r = registerBoardPoints(pairs(0.001, 7));
    const err = Math.hypot(
      r.baseFromBoard[3]! - truth[3]!,
      r.baseFromBoard[7]! - truth[7]!,
      r.baseFromBoard[11]! - truth[11]!,
    );
    expect(err).toBeLessThan(0.001);
    expect(r.rmsMm).toBeGreaterThan(0.1);
    expect(r.residuals.map((x) => x.name)).toEqual(["A", "B", "C", "D"]);
  });

  it("a scaled mark set shows in Umeyama's scale", () => {
    const p = pairs(0).map((x) => ({ ...x, board: x.board.map((v) => v / 1.01) as Vec3 }));
    expect(
      kabsch(
        p.map((x) => x.board),
        p.map((x) => x.base),
      ).scale,
    ).toBeCloseTo(1.01, 6);
  });

  it("refuses two marks, collinear marks and a touch far from the rest, with codes", () => {
    expect(() => registerBoardPoints(pairs(0).slice(0, 2))).toThrow(
      expect.objectContaining({ code: "RB_ERR_CALIB_TOO_FEW_POINTS" }),
    );
    const line = pairs(0).map((p, i) => ({ ...p, board: [0.1 * i, 0.05 * i, 0] as Vec3 }));
    expect(() => registerBoardPoints(line)).toThrow(
      expect.objectContaining({ code: "RB_ERR_CALIB_DEGENERATE" }),
    );
    const bad = pairs(0);
    bad[2] = { ...bad[2]!, base: [bad[2]!.base[0] + 0.02, bad[2]!.base[1], bad[2]!.base[2]] };
    expect(() => registerBoardPoints(bad)).toThrow(
      expect.objectContaining({
        code: "RB_ERR_CALIB_OUTLIER_POSE",
        message: expect.stringContaining("mark C"),
      }),
    );
  });
});
