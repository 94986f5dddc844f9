/**
 * Seeded buzz-wire sampler: a smooth wire (Catmull-Rom spline through four control points)
 * that bends in both the horizontal and the vertical plane, 0.3–0.5 m long, with a curvature
 * radius well above the loop radius, and reachable along its whole length by the arm with the
 * loop centred on it and its axis along the tangent (checked with IK; resampled otherwise).
 */
import type { ToolCalibration, WireCalibration } from "../../calibration/schema.ts";
import { type Mat4, poseToMat4, type Vec3 } from "../../robots/math.ts";
import type { RobotModel } from "../../robots/types.ts";
import { createPrng } from "../prng.ts";
import { solveToolPose } from "../../calibration/wire-pose.ts";
import {
  catmullRom,
  centreline,
  loopFrameAt,
  minCurvatureRadiusM,
  tangentAt,
} from "../../calibration/wire-geometry.ts";

/** Wire radius of the default bench, m. */
export const DEFAULT_WIRE_RADIUS_M = 0.0015;
/** Distance from each wire end to its start/end mark, m. */
export const MARK_INSET_M = 0.035;
/** Spacing of the stored centreline points, m. */
export const CENTRELINE_SPACING_M = 0.005;

export interface WireSampleOptions {
  /** minimum curvature radius as a multiple of the loop's outer radius */
  minCurvatureFactor?: number;
  /** give up after this many candidates */
  maxAttempts?: number;
}

/** Sample a wire from a seed; throws if no candidate passes the checks. */
export function sampleWire(
  robot: RobotModel,
  tool: ToolCalibration,
  seed: number,
  opts: WireSampleOptions = {},
): WireCalibration {
  const rng = createPrng(seed);
  const loopOuterM = tool.loopInnerRadiusM + 2 * tool.loopWireRadiusM;
  const minR = (opts.minCurvatureFactor ?? 3) * loopOuterM;
  const toolM = poseToMat4(tool.loopPoseFlange);
  const rejected = { length: 0, curvature: 0, steep: 0, reach: 0 };
  for (let attempt = 0; attempt < (opts.maxAttempts ?? 50); attempt++) {
    const chord = rng.uniform(0.28, 0.4);
    const xc = rng.uniform(0.4, 0.5);
    const zc = rng.uniform(0.16, 0.24);
    const ctrl: Vec3[] = [];
    for (let k = 0; k < 4; k++) {
      const u = k / 3 - 0.5;
      const edge = k === 0 || k === 3;
      ctrl.push([
        xc + rng.uniform(-0.045, 0.045) * (edge ? 0.4 : 1),
        u * chord + (edge ? 0 : rng.uniform(-0.02, 0.02)),
        zc + rng.uniform(-0.04, 0.04) * (edge ? 0.3 : 1),
      ]);
    }
    const points = catmullRom(ctrl, CENTRELINE_SPACING_M);
    const c = centreline(points);
    if (c.lengthM < 0.3 || c.lengthM > 0.5) {
      rejected.length++;
      continue;
    }
    if (minCurvatureRadiusM(c) < minR) {
      rejected.curvature++;
      continue;
    }
    let steep = false;
    for (let s = 0; s <= c.lengthM; s += 0.01) if (Math.abs(tangentAt(c, s)[2]) > 0.6) steep = true;
    if (steep) {
      rejected.steep++;
      continue;
    }
    const wire: WireCalibration = {
      pointsBase: points,
      wireRadiusM: DEFAULT_WIRE_RADIUS_M,
      startMarkM: MARK_INSET_M,
      endMarkM: c.lengthM - MARK_INSET_M,
      checkpointCount: 5,
    };
    if (wireReachable(robot, wire, toolM)) return wire;
    rejected.reach++;
  }
  throw new Error(`no reachable wire found for seed ${seed} (rejected: ${JSON.stringify(rejected)})`);
}

/**
 * Joint path that carries the loop along the wire: one IK solution every `spacingM` from the
 * start mark to the end mark, each seeded with the previous one; null if any waypoint fails.
 */
export function wireJointPath(
  robot: RobotModel,
  wire: WireCalibration,
  tool: Mat4,
  spacingM = 0.01,
  seedQ: readonly number[] = robot.homeQ,
): number[][] | null {
  const c = centreline(wire.pointsBase);
  const n = Math.max(2, Math.ceil((wire.endMarkM - wire.startMarkM) / spacingM) + 1);
  const path: number[][] = [];
  let seed = [...seedQ];
  const target: Mat4 = new Float64Array(16);
  for (let i = 0; i < n; i++) {
    const s = wire.startMarkM + ((wire.endMarkM - wire.startMarkM) * i) / (n - 1);
    loopFrameAt(c, s, [0, 0, -1], target);
    // later waypoints stay on the seed's branch: no random restarts that could jump elsewhere
    const r = solveToolPose(robot, target, tool, seed, { restarts: i === 0 ? 30 : 1 });
    if (!r.ok) return null;
    if (i > 0) {
      for (let j = 0; j < 7; j++) if (Math.abs(r.q[j]! - seed[j]!) > 0.25) return null;
    }
    for (let j = 0; j < 7; j++) {
      const jt = robot.joints[j]!;
      if (r.q[j]! < jt.lower + 0.05 || r.q[j]! > jt.upper - 0.05) return null;
    }
    path.push(r.q);
    seed = r.q;
  }
  return path;
}

function wireReachable(robot: RobotModel, wire: WireCalibration, tool: Mat4): boolean {
  return wireJointPath(robot, wire, tool, 0.02) !== null;
}
