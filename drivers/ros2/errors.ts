/**
 * Coded errors of the ROS 2 drivers (drivers/ros2, drivers/camera). Drivers may not import the
 * gateway's registry (gateway/errors.ts), so their codes live here, in one table; the gateway
 * maps any of them to `RB_ERR_BACKEND_FAULT` when a client would see it. Codes are never reused.
 */

export interface RosErrorSpec {
  /** message template; `{name}` is replaced from details */
  message: string;
  /** what an operator should do about it */
  hint: string;
}

export const ROS_ERRORS = {
  RB_ERR_ROS_RCLNODEJS_MISSING: {
    message:
      "The native ROS 2 transport needs the optional package rclnodejs, which is not installed ({reason})",
    hint:
      "Source a ROS 2 installation (e.g. `source /opt/ros/humble/setup.bash`), then run `npm install rclnodejs` " +
      "in the project folder; or choose the rosbridge transport (type: rosbridge).",
  },
  RB_ERR_ROS_NOT_CONNECTED: {
    message: "Not connected to ROS ({url}); {operation} refused",
    hint: "Check that rosbridge_server (or the ROS graph) is running and reachable.",
  },
  RB_ERR_ROS_CONNECT_TIMEOUT: {
    message: "Could not connect to {url} within {timeoutMs} ms",
    hint: "Start rosbridge_server (ros2 launch rosbridge_server rosbridge_websocket_launch.xml) or fix the URL.",
  },
  RB_ERR_ROS_CONNECTION_LOST: {
    message: "Connection to ROS ({url}) was lost during {operation}",
    hint: "The motion was stopped; check the network and the rosbridge server.",
  },
  RB_ERR_ROS_SERVICE_FAILED: {
    message: "Service {service} failed: {reason}",
    hint: "Check the service server's log.",
  },
  RB_ERR_ROS_SERVICE_TIMEOUT: {
    message: "Service {service} gave no answer within {timeoutMs} ms",
    hint: "Check that the service server runs.",
  },
  RB_ERR_ROS_ACTION_FAILED: {
    message: "Action {action} failed: {reason}",
    hint: "Check the action server's log.",
  },
  RB_ERR_ROS_TRANSPORT_CLOSED: {
    message: "The ROS transport was closed; {operation} refused",
    hint: "Create and connect a new transport.",
  },
  RB_ERR_ROS_JOINT_MISSING: {
    message: "Joint state on {topic} lacks joint {joint}",
    hint: "Configure jointNames to match the robot's joint state message.",
  },
  RB_ERR_ROS_NO_JOINT_STATE: {
    message: "No joint state received on {topic} yet",
    hint: "Check that the robot's joint state broadcaster publishes.",
  },
  RB_ERR_ROS_MOTION_BUSY: {
    message: "A trajectory is already executing on {action}",
    hint: "Wait for it or stop it first.",
  },
  RB_ERR_ROS_START_MISMATCH: {
    message:
      "Trajectory starts {distanceRad} rad away from the measured state at joint {joint} (tolerance {toleranceRad} rad)",
    hint: "Build the trajectory from the latest reading; the robot would stop with a reflex.",
  },
  RB_ERR_ROS_GRIPPER_FAILED: {
    message: "Gripper {operation} failed: {reason}",
    hint: "Home the gripper (operator) and check the gripper node.",
  },
  RB_ERR_ROS_CAMERA_ENCODING: {
    message: "Camera {camera}: unsupported image encoding {encoding}",
    hint: "Publish rgb8, bgr8, mono8 or a JPEG/PNG CompressedImage.",
  },
  RB_ERR_ROS_NO_FRAME: {
    message: "Camera {camera} has delivered no frame yet (topic {topic})",
    hint: "Check that the camera driver publishes.",
  },
  RB_ERR_ROS_UNKNOWN_CAMERA: {
    message: "Unknown camera {camera}; cameras: {cameras}",
    hint: "Name one of the configured cameras.",
  },
} as const satisfies Record<string, RosErrorSpec>;

export type RosErrorCode = keyof typeof ROS_ERRORS;

function render(template: string, details: Record<string, unknown>): string {
  return template.replace(/\{(\w+)\}/g, (_, k: string) => {
    const v = details[k];
    if (v === undefined) return `{${k}}`;
    return typeof v === "string" ? v : JSON.stringify(v);
  });
}

/** An error of the ROS drivers: a code from `ROS_ERRORS` plus context. */
export class RosDriverError extends Error {
  readonly hint: string;
  constructor(
    readonly code: RosErrorCode,
    readonly details: Record<string, unknown> = {},
  ) {
    const spec: RosErrorSpec = ROS_ERRORS[code];
    super(`${render(spec.message, details)}. ${spec.hint}`);
    this.name = "RosDriverError";
    this.hint = spec.hint;
  }
}

export function isRosDriverError(e: unknown, code?: RosErrorCode): e is RosDriverError {
  return e instanceof RosDriverError && (code === undefined || e.code === code);
}
