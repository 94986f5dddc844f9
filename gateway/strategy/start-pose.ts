/**
 * The named "at start" state of a bench for an episode seed: where `homeBench` drives a bench
 * that cannot `reset()` (a real bench) before the episode begins.
 *
 * A buzz-wire bench starts with the loop at the wire's start mark (the same configuration the
 * simulator teleports to: IK of the start-mark loop frame, seeded with the robot's home pose);
 * any other bench starts at the robot's home pose. The gripper keeps its measured opening
 * unless the caller says otherwise, so a held tool is never dropped.
 */
import { calibrationSchema } from "../../calibration/schema.ts";
import { poseToMat4 } from "../../robots/math.ts";
import type { RobotModel } from "../../robots/types.ts";
import { startMarkJoints } from "../../calibration/wire-pose.ts";

export interface StartPose {
  /** joint configuration, rad */
  targetQ: number[];
  /** where it came from, for logs */
  source: "wire_start_mark" | "robot_home";
}

/**
 * The start pose for a bench geometry (what `Bench.taskBench(seed)` returns).
 * @param taskBench the bench geometry; a calibration with a wire gives the wire's start mark
 */
export function startPoseFor(robot: RobotModel, taskBench: Record<string, unknown>): StartPose {
  const cal = calibrationSchema.safeParse(taskBench);
  if (cal.success) {
    const q = startMarkJoints(robot, cal.data.wire, poseToMat4(cal.data.tool.loopPoseFlange), robot.homeQ);
    if (q) return { targetQ: q, source: "wire_start_mark" };
  }
  return { targetQ: [...robot.homeQ], source: "robot_home" };
}
