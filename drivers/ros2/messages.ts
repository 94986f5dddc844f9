/**
 * The ROS 2 message shapes the drivers exchange, as plain objects (rosbridge JSON and
 * rclnodejs use the same field names). Only the fields the drivers use are typed.
 * Interface names: sensor_msgs, trajectory_msgs, control_msgs, franka_msgs, std_srvs.
 */

/** builtin_interfaces/msg/Time */
export interface RosTime {
  /** whole seconds */
  sec: number;
  /** nanoseconds, 0 … 999 999 999 */
  nanosec: number;
}
/** builtin_interfaces/msg/Duration (same layout as Time) */
export type RosDuration = RosTime;

/** std_msgs/msg/Header */
export interface Header {
  stamp: RosTime;
  frame_id: string;
}

/** sensor_msgs/msg/JointState; arrays are parallel to `name` (SI units: rad, rad/s, N·m) */
export interface JointStateMsg {
  header: Header;
  name: string[];
  position: number[];
  velocity: number[];
  effort: number[];
}

/** trajectory_msgs/msg/JointTrajectoryPoint */
export interface JointTrajectoryPointMsg {
  /** rad */
  positions: number[];
  /** rad/s */
  velocities: number[];
  /** rad/s² */
  accelerations: number[];
  /** N·m */
  effort: number[];
  time_from_start: RosDuration;
}

/** trajectory_msgs/msg/JointTrajectory */
export interface JointTrajectoryMsg {
  header: Header;
  joint_names: string[];
  points: JointTrajectoryPointMsg[];
}

/** control_msgs/msg/JointTolerance */
export interface JointToleranceMsg {
  name: string;
  position: number;
  velocity: number;
  acceleration: number;
}

/** control_msgs/action/FollowJointTrajectory goal */
export interface FollowJointTrajectoryGoal {
  trajectory: JointTrajectoryMsg;
  path_tolerance: JointToleranceMsg[];
  goal_tolerance: JointToleranceMsg[];
  goal_time_tolerance: RosDuration;
}

/** control_msgs/action/FollowJointTrajectory feedback (fields used) */
export interface FollowJointTrajectoryFeedback {
  header: Header;
  joint_names: string[];
  desired: Partial<JointTrajectoryPointMsg>;
  actual: Partial<JointTrajectoryPointMsg>;
  error: Partial<JointTrajectoryPointMsg>;
}

/** control_msgs/action/FollowJointTrajectory result */
export interface FollowJointTrajectoryResult {
  error_code: number;
  /** free text; franka_ros2 puts libfranka reflex / error names here */
  error_string: string;
}

/** FollowJointTrajectory result error codes (control_msgs). */
export const FJT_ERROR_CODES: Readonly<Record<number, string>> = Object.freeze({
  0: "SUCCESSFUL",
  [-1]: "INVALID_GOAL",
  [-2]: "INVALID_JOINTS",
  [-3]: "OLD_HEADER_TIMESTAMP",
  [-4]: "PATH_TOLERANCE_VIOLATED",
  [-5]: "GOAL_TOLERANCE_VIOLATED",
});
export const FJT_SUCCESSFUL = 0;
export const FJT_INVALID_GOAL = -1;
export const FJT_INVALID_JOINTS = -2;
export const FJT_PATH_TOLERANCE_VIOLATED = -4;

/** franka_msgs/action/Move goal */
export interface GripperMoveGoal {
  /** target opening, m */
  width: number;
  /** finger speed, m/s */
  speed: number;
}
/** franka_msgs/action/Grasp goal */
export interface GripperGraspGoal {
  /** target opening, m */
  width: number;
  /** accepted deviation of the final width below/above `width`, m */
  epsilon: { inner: number; outer: number };
  /** m/s */
  speed: number;
  /** grasp force, N */
  force: number;
}
/** franka_msgs/action/{Move,Grasp,Homing} result */
export interface GripperResult {
  success: boolean;
  error: string;
}
/** std_srvs/srv/Trigger response */
export interface TriggerResponse {
  success: boolean;
  message: string;
}

/** sensor_msgs/msg/CompressedImage; `data` is base64 over rosbridge JSON, bytes over rclnodejs */
export interface CompressedImageMsg {
  header: Header;
  /** e.g. "jpeg", "png", or image_transport's "rgb8; jpeg compressed bgr8" */
  format: string;
  data: string | Uint8Array | number[];
}

/** sensor_msgs/msg/Image */
export interface ImageMsg {
  header: Header;
  height: number;
  width: number;
  /** e.g. "rgb8", "bgr8", "mono8" */
  encoding: string;
  is_bigendian: number;
  /** bytes per row */
  step: number;
  data: string | Uint8Array | number[];
}

/** sensor_msgs/msg/CameraInfo (ROS 2 lower-case field names) */
export interface CameraInfoMsg {
  header: Header;
  height: number;
  width: number;
  distortion_model: string;
  /** distortion coefficients (plumb_bob: k1 k2 t1 t2 k3) */
  d: number[];
  /** 3×3 intrinsic matrix, row-major: fx 0 cx / 0 fy cy / 0 0 1 (pixels) */
  k: number[];
  r: number[];
  p: number[];
}

/** Time → seconds. */
export function timeToS(t: RosTime): number {
  return t.sec + t.nanosec * 1e-9;
}

/** Seconds (≥ 0 or negative) → Time/Duration with 0 ≤ nanosec < 1e9. */
export function sToTime(s: number): RosTime {
  let sec = Math.floor(s);
  let nanosec = Math.round((s - sec) * 1e9);
  if (nanosec >= 1e9) {
    sec += 1;
    nanosec -= 1e9;
  }
  return { sec, nanosec };
}

/** uint8[] field → bytes (rosbridge sends base64 strings; rclnodejs arrays or typed arrays). */
export function bytesOf(data: string | Uint8Array | number[]): Uint8Array {
  if (typeof data === "string") {
    const b = Buffer.from(data, "base64");
    return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  }
  if (data instanceof Uint8Array) return data;
  return Uint8Array.from(data);
}

/** bytes → the JSON form rosbridge uses for uint8[] (base64). */
export function bytesToBase64(data: Uint8Array): string {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString("base64");
}
