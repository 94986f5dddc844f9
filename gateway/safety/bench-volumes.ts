/**
 * Keep-out volumes a bench's calibration implies: the table top under the robot and the board
 * the wire stands on, in the robot base frame. Added to the safety profile's own volumes, so
 * the pre-check refuses a chunk that would drive a link or the tool into them, on sim and real
 * alike (both read the same calibration).
 */
import type { Calibration } from "../../calibration/schema.ts";
import { mat4Mul, mat4RigidInverse, mat4ToPose, poseToMat4 } from "../../robots/math.ts";
import type { KeepOut } from "./profile.ts";

/** Table slab below the table top (world z = 0), m. */
const TABLE_HALF_EXTENTS_M: [number, number, number] = [1.5, 1.5, 0.05];

/** Volumes for a calibration; the base housing (link0) stands on the table and is exempt from it. */
export function calibrationKeepOuts(cal: Pick<Calibration, "robotBasePoseWorld" | "board">): KeepOut[] {
  const baseFromWorld = mat4RigidInverse(poseToMat4(cal.robotBasePoseWorld));
  const toBase = (xyz: [number, number, number], quat: [number, number, number, number]) =>
    mat4ToPose(mat4Mul(baseFromWorld, poseToMat4({ xyz, quat_xyzw: quat })));
  const table = toBase([0, 0, -TABLE_HALF_EXTENTS_M[2]], [0, 0, 0, 1]);
  const b = cal.board;
  // the board pose is its top-face centre; the box centre sits half a thickness below
  const boardTop = poseToMat4(b.poseWorld);
  const down = poseToMat4({ xyz: [0, 0, -b.sizeM[2] / 2], quat_xyzw: [0, 0, 0, 1] });
  const board = mat4ToPose(mat4Mul(baseFromWorld, mat4Mul(boardTop, down)));
  return [
    {
      type: "box",
      name: "table",
      centerM: table.xyz,
      halfExtentsM: TABLE_HALF_EXTENTS_M,
      quatXyzw: table.quat_xyzw,
      ignoreLinks: ["link0"],
      hidden: false,
    },
    {
      type: "box",
      name: "board",
      centerM: board.xyz,
      halfExtentsM: [b.sizeM[0] / 2, b.sizeM[1] / 2, b.sizeM[2] / 2],
      quatXyzw: board.quat_xyzw,
      ignoreLinks: [],
      hidden: false,
    },
  ];
}
