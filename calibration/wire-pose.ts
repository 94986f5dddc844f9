/**
 * Tool poses on a calibrated bench: joint angles that put the tool frame at a pose, and the
 * configuration with the loop around the wire at its start mark. Shared by the simulator (bench
 * construction, reference paths) and the gateway (homing a real bench to its start pose). Not a
 * solver of its own: every query goes to the project's one IK, `robots/franka/ik.ts`
 * (`solveIkInto` with `tcp` = the tool frame and the given seed), with tight tolerances and a
 * reused workspace. Not a hot path.
 */
import { type IkWorkspace, ikWorkspace, solveIkInto } from "../robots/franka/ik.ts";
import { type Mat4, mat4ToPose } from "../robots/math.ts";
import type { RobotModel } from "../robots/types.ts";
import type { WireCalibration } from "./schema.ts";
import { centreline, loopFrameAt } from "./wire-geometry.ts";

export interface ToolIkResult {
  /** joint angles within the limits (the best found when `ok` is false), rad */
  q: number[];
  /** the IK met its tolerances */
  ok: boolean;
  /** position residual, m */
  positionErrorM: number;
  /** orientation residual, rad */
  orientationErrorRad: number;
}

export interface ToolIkOptions {
  /** accepted position error, m (default 1e-5) */
  positionToleranceM?: number;
  /** accepted orientation error, rad (default 1e-4) */
  orientationToleranceRad?: number;
  /**
   * extra attempts after the one from the seed (default 30). Path following passes a small
   * number so that a waypoint cannot jump to another arm configuration.
   */
  restarts?: number;
}

let shared: IkWorkspace | undefined;

/**
 * Joint angles that put the tool frame (flange · `tool`) at `target` (base frame), starting from
 * `seed`. Deterministic: the same inputs give the same result.
 */
export function solveToolPose(
  robot: RobotModel,
  target: Mat4,
  tool: Mat4,
  seed: readonly number[],
  opts: ToolIkOptions = {},
): ToolIkResult {
  shared ??= ikWorkspace();
  const r = solveIkInto(
    robot,
    mat4ToPose(target),
    {
      tcp: tool,
      seedQ: seed,
      positionToleranceM: opts.positionToleranceM ?? 1e-5,
      orientationToleranceRad: opts.orientationToleranceRad ?? 1e-4,
      restarts: opts.restarts ?? 30,
    },
    shared,
  );
  return {
    q: r.ok ? r.q : r.bestQ,
    ok: r.ok,
    positionErrorM: r.positionResidualM,
    orientationErrorRad: r.orientationResidualRad,
  };
}

/** Joint angles that put the loop around the wire at its start mark (null if unreachable). */
export function startMarkJoints(
  robot: RobotModel,
  wire: WireCalibration,
  tool: Mat4,
  seedQ: readonly number[] = robot.homeQ,
): number[] | null {
  const c = centreline(wire.pointsBase);
  const r = solveToolPose(robot, loopFrameAt(c, wire.startMarkM), tool, seedQ);
  return r.ok ? r.q : null;
}
