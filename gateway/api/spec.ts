/** Builds the GET /v1/spec document from the backend description and the action catalog. */
import { mat4ToPose, poseToMat4 } from "../../robots/math.ts";
import type { RobotModel } from "../../robots/types.ts";
import type { ActionCatalog } from "../episode/actions.ts";
import type { BackendDescription } from "../../seam/types.ts";
import type { CompiledVolume, EffectiveLimits } from "../safety/profile.ts";
import { sha256Json } from "../recorder/provenance.ts";
import type { EffectiveLimitsDto, SpecDto } from "./schemas.ts";

type V3 = [number, number, number];
const v3 = (v: readonly number[]): V3 => [v[0]!, v[1]!, v[2]!];

function keepOutDto(v: CompiledVolume): EffectiveLimitsDto["keep_out"][number] {
  const common = { name: v.name, ignore_links: [...v.ignoreLinks] };
  switch (v.type) {
    case "box": {
      // rot rows are the box axes in the base frame: box → base is its transpose
      const r = v.rot;
      const m = new Float64Array([
        r[0]!,
        r[3]!,
        r[6]!,
        0,
        r[1]!,
        r[4]!,
        r[7]!,
        0,
        r[2]!,
        r[5]!,
        r[8]!,
        0,
        0,
        0,
        0,
        1,
      ]);
      const q = mat4ToPose(m).quat_xyzw;
      return { type: "box", ...common, center_m: v3(v.center), half_extents_m: v3(v.half), quat_xyzw: q };
    }
    case "sphere":
      return { type: "sphere", ...common, center_m: v3(v.center), radius_m: v.radiusM };
    case "capsule":
      return { type: "capsule", ...common, a_m: v3(v.a), b_m: v3(v.b), radius_m: v.radiusM };
  }
}

/**
 * The limits the pre-check and the monitor enforce, as published: the commanded joint band and
 * derivative limits, tool speed, workspace and every keep-out volume not marked hidden.
 */
export function limitsDto(benchName: string, l: EffectiveLimits): EffectiveLimitsDto {
  return {
    profile: { bench: benchName, limits_sha256: sha256Json(l) },
    joints: l.jointNames.map((name, i) => ({
      name,
      lower: l.lowerRad[i]!,
      upper: l.upperRad[i]!,
      max_velocity: l.maxVelocityRadps[i]!,
      max_acceleration: l.maxAccelerationRadps2[i]!,
      max_jerk: l.maxJerkRadps3[i]!,
    })),
    max_tool_speed_m_s: l.maxToolSpeedMps,
    gripper: { max_speed_m_s: l.gripper.maxSpeedMps, max_force_n: l.gripper.maxForceN },
    workspace: { min_m: v3(l.workspace.minM), max_m: v3(l.workspace.maxM) },
    keep_out: l.keepOut.filter((v) => !v.hidden).map(keepOutDto),
    max_chunk_duration_s: l.maxChunkDurationS,
  };
}

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
  safety: EffectiveLimitsDto,
): Omit<SpecDto, "video"> {
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
        ...(a.jogFrame ? { frame: a.jogFrame.frame, pivot: a.jogFrame.pivot } : {}),
        // a row's dt is at least one control period (and a whole multiple of it)
        min_dt_s: desc.controlPeriodS,
      })),
    },
    readings: { columns: ["t", "q", "dq", "tau", "gripper_width_m", "tool", "effort"] },
    safety,
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
      depth_convention:
        "depth images: 16-bit PNG, z-depth along the camera's optical axis (not the ray length) in mm, 0 = no return",
    },
    supported_robots: supported.map(robotSpec),
  };
}
