import { describe, expect, it } from "vitest";
import { CodedError } from "../seam/errors.ts";
import { DEFAULT_BOARD } from "./board.ts";
import { fitIntrinsics } from "./intrinsics.ts";
import { rotvecToMat3, mat3ToRotvec, symmetricEigen, solveLinear, nearestRotation } from "./linalg.ts";

describe("intrinsics input errors", () => {
  it("too few views is a coded error listing why each view was rejected", async () => {
    const views = [
      { id: "a", ids: [], pixels: [] },
      {
        id: "b",
        ids: [0, 1, 2],
        pixels: [
          [1, 1],
          [2, 2],
          [3, 3],
        ] as Array<[number, number]>,
      },
    ];
    const e = await fitIntrinsics("front", DEFAULT_BOARD, views, { width: 640, height: 480 }).catch((x) => x);
    expect(e).toBeInstanceOf(CodedError);
    expect(e.code).toBe("RB_ERR_CALIB_TOO_FEW_VIEWS");
    expect(e.message).toMatch(/0 usable board views, at least 6 needed \(2 rejected\)/);
    expect(e.details.rejectedViews).toEqual([
      { id: "a", reason: "board not seen" },
      { id: "b", reason: "only 3 corners seen (need ≥ 12)" },
    ]);
  });
});

describe("calibration linear algebra", () => {
  it("rotation vectors round-trip and the eigen solver finds the smallest eigenvector", () => {
    const w = [0.3, -0.2, 1.1];
    const back = mat3ToRotvec(rotvecToMat3(w));
    for (const [i, v] of back.entries()) expect(v).toBeCloseTo(w[i]!, 12);
    // diag(3, 1, 2) rotated: the smallest eigenvalue is 1 along R·e2
    const R = rotvecToMat3([0.4, 0.1, -0.3]);
    const D = [3, 1, 2];
    const A = [0, 1, 2].flatMap((i) =>
      [0, 1, 2].map((j) => [0, 1, 2].reduce((s, k) => s + R[i * 3 + k]! * D[k]! * R[j * 3 + k]!, 0)),
    );
    const { values, vectors } = symmetricEigen(A, 3);
    expect(values[0]).toBeCloseTo(1, 12);
    const v = vectors[0]!;
    const dot = v[0]! * R[1]! + v[1]! * R[4]! + v[2]! * R[7]!;
    expect(Math.abs(dot)).toBeCloseTo(1, 12);
    expect(solveLinear([2, 1, 1, 3], [3, 5], 2)).toEqual([0.8, 1.4].map((x) => expect.closeTo(x, 12)));
    const noisy = R.map((x, i) => x * 1.3 + (i === 1 ? 0.01 : 0));
    const Rn = nearestRotation(noisy);
    const RtR = [0, 1, 2].flatMap((i) =>
      [0, 1, 2].map((j) => [0, 1, 2].reduce((s, k) => s + Rn[k * 3 + i]! * Rn[k * 3 + j]!, 0)),
    );
    for (const [i, x] of RtR.entries()) expect(x).toBeCloseTo(i % 4 === 0 ? 1 : 0, 9);
  });
});
