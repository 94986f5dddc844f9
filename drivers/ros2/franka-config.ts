/**
 * Resource: the names and numbers the Franka-over-ROS-2 drivers bind to (STYLE.md §1, §9).
 * Defaults are franka_ros2's. Validated strictly (unknown keys are errors), then frozen.
 */
import { z } from "zod";

const rosName = z
  .string()
  .min(1)
  .transform((s) => (s.startsWith("/") ? s : `/${s}`));

export const FrankaRosConfigSchema = z.strictObject({
  /** sensor_msgs/JointState of the arm (franka_ros2: franka/joint_states; merged: /joint_states) */
  jointStatesTopic: rosName.default("/franka/joint_states"),
  /** joint names in model order; default: the RobotModel's names (fr3_joint1…7) */
  jointNames: z.array(z.string().min(1)).length(7).optional(),
  /** control_msgs/action/FollowJointTrajectory server */
  trajectoryAction: rosName.default("/fr3_arm_controller/follow_joint_trajectory"),
  /** franka_gripper node: actions <node>/homing, /move, /grasp; service <node>/stop; <node>/joint_states */
  gripperNode: rosName.default("/franka_gripper"),
  /** finger joint names in the gripper's joint state; opening = sum of both positions */
  gripperFingerJoints: z.tuple([z.string(), z.string()]).default(["fr3_finger_joint1", "fr3_finger_joint2"]),
  /** franka_msgs/action/ErrorRecovery server */
  errorRecoveryAction: rosName.default("/action_server/error_recovery"),
  /** spacing of the FollowJointTrajectory points sent to the controller, s */
  goalPointPeriodS: z.number().positive().max(0.1).default(0.01),
  /** goal_time_tolerance sent with each goal, s */
  goalTimeToleranceS: z.number().nonnegative().default(0.1),
  /**
   * realtime streaming: how long before a sample is due the controller must have its goal, s
   * (transport latency plus jitter; sets the splice margin). A goal that arrives later makes
   * joint_trajectory_controller jump to where the new trajectory is by then (a reflex when it
   * moved away): the margin must cover the link's worst case, not its mean.
   */
  streamLeadS: z.number().positive().max(1).default(0.1),
  /** largest allowed distance between the measured state and the trajectory's first sample, rad */
  startToleranceRad: z.number().positive().default(0.02),
  /** configure() waits this long for the first joint state, s */
  firstJointStateTimeoutS: z.number().positive().default(5),
  /** configure() waits this long for the gripper's width (absent gripper: go on without), s */
  gripperStateWaitS: z.number().nonnegative().default(0.5),
  /** stop(): wait this long for the cancelled goal's result, s */
  cancelTimeoutS: z.number().positive().default(1),
  /** default gripper finger speed, m/s */
  gripperSpeedMps: z.number().positive().default(0.05),
  /** default grasp force, N */
  graspForceN: z.number().positive().default(20),
  /** default grasp tolerance on both sides of the target width, m */
  graspEpsilonM: z.number().nonnegative().default(0.005),
});

export type FrankaRosConfigInput = z.input<typeof FrankaRosConfigSchema>;
export type FrankaRosConfig = Readonly<z.output<typeof FrankaRosConfigSchema>>;

/** Validate (throws a ZodError listing every problem with its path) and freeze. */
export function parseFrankaRosConfig(input: FrankaRosConfigInput = {}): FrankaRosConfig {
  return Object.freeze(FrankaRosConfigSchema.parse(input));
}
