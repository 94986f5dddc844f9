/**
 * Tool-pose reach queries for bench construction (wire reachability, reference paths) and test
 * helpers. Not a solver of its own: every query goes to the project's one IK,
 * `robots/franka/ik.ts` (`solveIkInto` with `tcp` = the tool frame and the given seed), with
 * tight tolerances and a reused workspace. Not a hot path.
 */
import { type IkWorkspace, ikWorkspace, solveIkInto } from "../robots/franka/ik.ts";
import { type Mat4, mat4ToPose } from "../robots/math.ts";
import type { RobotModel } from "../robots/types.ts";

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
