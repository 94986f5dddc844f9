/**
 * Test-only helper: a joint-space reference path that carries the loop along the wire
 * (IK per waypoint, loop centred on the wire, axis along the tangent), as chunk rows for
 * seam/interpolate.ts. Scripted test runs and benchmarks use it; the agent never does.
 */
import type { Calibration } from "../../calibration/schema.ts";
import { poseToMat4 } from "../../robots/math.ts";
import type { RobotModel } from "../../robots/types.ts";
import { wireJointPath } from "./wire-sampler.ts";

export interface ReferencePath {
  /** chunk rows: 7 joint angles (rad) then the gripper opening (m) */
  rows: number[][];
  /** seconds between rows */
  dtS: number;
}

/**
 * Rows from the start mark to the end mark every `spacingM`, timed for a tool speed of `speedMps`.
 * `dtS` is rounded up to a whole number of control periods.
 */
export function wireReferencePath(
  robot: RobotModel,
  cal: Calibration,
  opts: { spacingM?: number; speedMps?: number; gripperWidthM: number; seedQ?: readonly number[] },
): ReferencePath {
  const spacing = opts.spacingM ?? 0.005;
  const speed = opts.speedMps ?? 0.05;
  const path = wireJointPath(
    robot,
    cal.wire,
    poseToMat4(cal.tool.loopPoseFlange),
    spacing,
    opts.seedQ ?? robot.homeQ,
  );
  if (!path) throw new Error("wire is not reachable along its whole length");
  const period = robot.controlPeriodS;
  const dtS = Math.ceil(spacing / speed / period - 1e-9) * period;
  return { rows: path.slice(1).map((q) => [...q, opts.gripperWidthM]), dtS };
}
