/**
 * world ← camera for a CameraDescription: a fixed camera's pose is given in the world frame,
 * a wrist camera's pose in the tool frame (then pass the current world ← tool transform).
 */
import type { CameraDescription } from "../../gateway/seam/types.ts";
import { type Mat4, mat4Mul, poseToMat4 } from "../../robots/math.ts";

/**
 * world ← camera optical frame. `worldFromTool` is required for `frame: "tool"` cameras and
 * ignored for `frame: "world"` ones. Writes into `out` when given (allocation-free apart from
 * the camera pose matrix scratch passed as `scratch`).
 */
export function worldFromCamera(
  camera: Pick<CameraDescription, "frame" | "pose" | "name">,
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
