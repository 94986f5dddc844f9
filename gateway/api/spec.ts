/** Builds the GET /v1/spec document from the backend description and the action catalog. */
import { mat4ToPose, poseToMat4 } from "../../robots/math.ts";
import type { RobotModel } from "../../robots/types.ts";
import type { ActionCatalog } from "../episode/actions.ts";
import type { BackendDescription } from "../../seam/types.ts";
import type { SpecDto } from "./schemas.ts";

export function robotSpec(r: RobotModel): SpecDto["supported_robots"][number] {
  return {
    id: r.id,
    model: r.model,
    dof: r.dof,
    joints: r.joints.map((j) => ({
      name: j.name,
      lower: j.lower,
      upper: j.upper,
      max_velocity: j.maxVelocity,
      max_acceleration: j.maxAcceleration,
      max_jerk: j.maxJerk,
      max_effort: j.maxEffort,
    })),
    gripper: {
      min_width_m: r.gripper.minWidthM,
      max_width_m: r.gripper.maxWidthM,
      max_speed_m_s: r.gripper.maxSpeedMps,
    },
    cartesian: {
      max_linear_velocity_m_s: r.cartesian.maxLinearVelocityMps,
      max_angular_velocity_rad_s: r.cartesian.maxAngularVelocityRadps,
      max_linear_acceleration_m_s2: r.cartesian.maxLinearAccelerationMps2,
      max_linear_jerk_m_s3: r.cartesian.maxLinearJerkMps3,
    },
  };
}

export function buildSpec(
  desc: BackendDescription,
  actions: ActionCatalog,
  maxDtS: number,
  supported: readonly RobotModel[],
): SpecDto {
  const flange = {
    xyz: [0, 0, 0] as [number, number, number],
    quat_xyzw: [0, 0, 0, 1] as [number, number, number, number],
  };
  return {
    protocol: "robot-gateway/1",
    robot: {
      ...robotSpec(desc.robot),
      tool_frames: [
        { name: "flange", parent: "flange", pose: flange },
        { name: "tool", parent: "flange", pose: mat4ToPose(poseToMat4(desc.toolOffset)) },
      ],
      base_pose: desc.basePose,
    },
    control: {
      control_period_s: desc.controlPeriodS,
      max_dt_s: maxDtS,
      actions: [...actions.values()].map((a) => ({
        type: a.type,
        columns: [...a.columns],
        units: [...a.units],
        ...(a.commands ? { commands: [...a.commands] } : {}),
        ...(a.stepSizes ? { step_sizes: { ...a.stepSizes } } : {}),
      })),
    },
    readings: { columns: ["t", "q", "dq", "tau", "gripper_width_m"] },
    cameras: desc.cameras.map((c) => ({
      name: c.name,
      width: c.width,
      height: c.height,
      fx: c.fx,
      fy: c.fy,
      cx: c.cx,
      cy: c.cy,
      distortion: [...c.distortion],
      frame: c.frame,
      pose: c.pose,
      depth: c.depth,
    })),
    world: {
      frame:
        "world: z up; robot base pose given in robot.base_pose; poses for IK/FK/ee_pose are in the robot base frame",
      units: "SI: m, rad, s, N, N·m",
      quaternion_order: "xyzw",
      camera_convention: "OpenCV pinhole: x right, y down, z forward; pose = camera optical frame in `frame`",
    },
    supported_robots: supported.map(robotSpec),
  };
}
