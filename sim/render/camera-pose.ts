/**
 * Camera poses: world ← camera for a CameraDescription (a fixed camera's pose is given in the
 * world frame, a wrist camera's pose in the tool frame: then pass the current world ← tool
 * transform), and `lookAt` for aiming a camera (the benches' and the demo scene's viewpoints).
 */
import type { CameraDescription } from "../../seam/types.ts";
import {
  type Mat4,
  mat4Identity,
  mat4Mul,
  poseToMat4,
  type Vec3,
  vcross,
  vnorm,
  vscale,
  vsub,
} from "../../robots/math.ts";

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

/** Camera optical frame (OpenCV: x right, y down, z forward) looking from `eye` at `target`. */
export function lookAt(eye: Vec3, target: Vec3, up: Vec3 = [0, 0, 1]): Mat4 {
  const z0 = vsub(target, eye);
  const z = vscale(z0, 1 / vnorm(z0));
  let x = vcross(z, up);
  if (vnorm(x) < 1e-6) x = vcross(z, [1, 0, 0]);
  x = vscale(x, 1 / vnorm(x));
  const y = vcross(z, x);
  const m = mat4Identity();
  m[0] = x[0];
  m[1] = y[0];
  m[2] = z[0];
  m[3] = eye[0];
  m[4] = x[1];
  m[5] = y[1];
  m[6] = z[1];
  m[7] = eye[1];
  m[8] = x[2];
  m[9] = y[2];
  m[10] = z[2];
  m[11] = eye[2];
  return m;
}
