/**
 * Test and benchmark fixtures for the safety supervisor: a robot with stand-in link
 * capsules (so the geometry path is exercised whatever robots/franka/capsules.ts holds),
 * a bench-like profile with a table, a board and wire posts, and smooth chunk builders.
 * Not used by production code.
 */
import type { LinkCapsule, RobotModel } from "../../robots/types.ts";
import type { SafetyProfileInput } from "./profile.ts";

/** Rough stand-in capsules on Franka frames (not a fitted model; geometry tests only). */
export const STAND_IN_CAPSULES: readonly LinkCapsule[] = Object.freeze([
  { link: "link0", frame: 0, a: [0, 0, 0], b: [0, 0, 0.2], radiusM: 0.08 },
  { link: "link1", frame: 1, a: [0, 0, -0.19], b: [0, 0, 0], radiusM: 0.06 },
  { link: "link2", frame: 2, a: [0, 0, 0], b: [0, -0.2, 0], radiusM: 0.06 },
  { link: "link3", frame: 3, a: [0, 0, -0.15], b: [0, 0, 0], radiusM: 0.06 },
  { link: "link4", frame: 4, a: [0, 0, 0], b: [-0.08, 0.1, 0], radiusM: 0.06 },
  { link: "link5", frame: 5, a: [0, 0, -0.26], b: [0, 0, 0], radiusM: 0.06 },
  { link: "link7", frame: 7, a: [0, 0, 0], b: [0, 0, 0.08], radiusM: 0.05 },
  { link: "hand", frame: 8, a: [0, -0.08, 0.06], b: [0, 0.08, 0.06], radiusM: 0.04 },
] as LinkCapsule[]);

/** `robot` with the stand-in capsules when it has none of its own. */
export function withCapsules(robot: RobotModel): RobotModel {
  if (robot.capsules.length > 0) return robot;
  return Object.freeze({ ...robot, capsules: STAND_IN_CAPSULES });
}

/** A buzz-wire-like bench profile: table top below the base plane, a board and two wire posts in front. */
export const BENCH_PROFILE: SafetyProfileInput = {
  jointPositionMarginRad: 0.05,
  velocityFraction: 0.5,
  accelerationFraction: 0.5,
  jerkFraction: 0.5,
  maxToolSpeedMps: 0.5,
  workspace: { minM: [-0.5, -0.8, -0.02], maxM: [0.9, 0.7, 1.2] },
  keepOut: [
    {
      type: "box",
      name: "table",
      centerM: [0.4, 0, -0.05],
      halfExtentsM: [0.6, 0.8, 0.045],
      ignoreLinks: ["link1"],
    },
    {
      type: "box",
      name: "board",
      centerM: [0.75, 0, 0.05],
      halfExtentsM: [0.1, 0.3, 0.05],
      quatXyzw: [0, 0, 0.2588, 0.9659],
    },
    { type: "capsule", name: "post_left", aM: [0.6, -0.25, 0.1], bM: [0.6, -0.25, 0.3], radiusM: 0.01 },
    { type: "sphere", name: "post_right", centerM: [0.6, 0.25, 0.2], radiusM: 0.03 },
  ],
  stopOnEvents: ["contact", "collision"],
};

/**
 * Rows of a smooth (minimum-jerk) joint move from q0 to q1 over `rows` rows of `dtS`,
 * gripper held at `gripperWidthM`.
 */
export function minJerkRows(
  q0: readonly number[],
  q1: readonly number[],
  rows: number,
  gripperWidthM = 0.04,
): number[][] {
  const out: number[][] = [];
  for (let k = 1; k <= rows; k++) {
    const s = k / rows;
    const h = 10 * s ** 3 - 15 * s ** 4 + 6 * s ** 5;
    out.push([...q0.map((v, j) => v + (q1[j]! - v) * h), gripperWidthM]);
  }
  return out;
}
