/**
 * How a calibration camera's extrinsics become the Backend seam's camera pose — one rule for
 * the simulator and the real bench. World cameras keep their world pose; a wrist camera is
 * calibrated on the flange, and the seam gives it relative to the tool frame:
 * tool←camera = (flange←tool)⁻¹ · flange←camera.
 * And the way back: world ← camera of a described camera (the simulator's renderer, clients that
 * project with the published spec).
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

/** The pose part of a described camera (the seam's CameraDescription, the spec's camera). */
export interface DescribedCameraPose {
  name: string;
  frame: "world" | "tool";
  /** world ← camera (frame world) or tool ← camera (frame tool); OpenCV optical frame */
  pose: Pose;
}

/**
 * world ← camera optical frame. `worldFromTool` is required for `frame: "tool"` cameras and
 * ignored for `frame: "world"` ones. Writes into `out` when given (allocation-free apart from
 * the camera pose matrix scratch passed as `scratch`).
 */
export function worldFromCamera(
  camera: DescribedCameraPose,
  worldFromTool: Mat4 | null,
  out: Mat4 = new Float64Array(16),
  scratch: Mat4 = new Float64Array(16),
): Mat4 {
  switch (camera.frame) {
    case "world":
      return poseToMat4(camera.pose, out);
    case "tool":
      if (worldFromTool === null)
        throw new Error(`camera ${camera.name} is on the tool: worldFromTool is required`);
      return mat4Mul(worldFromTool, poseToMat4(camera.pose, scratch), out);
  }
}
