/**
 * How a calibration camera's extrinsics become the Backend seam's camera pose — one rule for
 * the simulator and the real bench. World cameras keep their world pose; a wrist camera is
 * calibrated on the flange, and the seam gives it relative to the tool frame:
 * tool←camera = (flange←tool)⁻¹ · flange←camera.
 */
import { type Mat4, mat4Mul, mat4RigidInverse, mat4ToPose, type Pose, poseToMat4 } from "../robots/math.ts";
import type { CameraCalibration } from "./schema.ts";

/** A mutable copy of a pose. */
export function clonePose(p: { xyz: readonly number[]; quat_xyzw: readonly number[] }): Pose {
  return {
    xyz: [p.xyz[0]!, p.xyz[1]!, p.xyz[2]!],
    quat_xyzw: [p.quat_xyzw[0]!, p.quat_xyzw[1]!, p.quat_xyzw[2]!, p.quat_xyzw[3]!],
  };
}

/**
 * The seam's frame and pose of a calibrated camera.
 * @param toolPoseFlange the tool frame in the flange frame (flange←tool)
 */
export function cameraSeamPose(
  cam: CameraCalibration,
  toolPoseFlange: Mat4,
): { frame: "world" | "tool"; pose: Pose } {
  if (cam.extrinsics.mount === "world") return { frame: "world", pose: clonePose(cam.extrinsics.poseWorld) };
  return {
    frame: "tool",
    pose: mat4ToPose(mat4Mul(mat4RigidInverse(toolPoseFlange), poseToMat4(cam.extrinsics.poseFlange))),
  };
}
