/**
 * Camera helpers over the published spec (GET /v1/spec `cameras`, `robot.base_pose`): project a
 * point of the robot base frame into a camera's image, and back-project a depth pixel to a point
 * of the base frame. The lens model is the plumb bob (k1 k2 p1 p2 k3) of calibration/distortion.ts;
 * pixel coordinates follow OpenCV (u right, v down, integer values at pixel centres); depth is the
 * z-depth along the optical axis, in metres here (the depth PNG is in mm, 0 = no return).
 *
 * A world camera's pose is world ← camera; a wrist camera's is tool ← camera, so it needs the tool
 * pose in the base frame at the frame's capture time (FK of that reading's q).
 */
import {
  type DistortionCoefficients,
  parseDistortion,
  undistortPoint,
} from "../../calibration/distortion.ts";
import { worldFromCamera } from "../../calibration/camera-pose.ts";
import {
  type Mat4,
  mat4Mul,
  mat4Point,
  mat4RigidInverse,
  type Pose,
  poseToMat4,
  type Vec3,
} from "../../robots/math.ts";
import type { z } from "zod";
import type { CameraSpecSchema, SpecSchema } from "../api/schemas.ts";
import { projectCameraPoint } from "../../calibration/projection.ts";

type Spec = z.infer<typeof SpecSchema>;
type CameraSpec = z.infer<typeof CameraSpecSchema>;

/** A pixel and the z-depth of the point that projects there. */
export interface Projection {
  u: number;
  v: number;
  /** z-depth, m (positive in front of the camera) */
  depthM: number;
  /** inside the image bounds */
  inImage: boolean;
}

/** One camera placed in the robot base frame. */
export interface CameraView {
  camera: CameraSpec;
  /** base ← camera optical frame (row-major 4×4) */
  baseFromCamera: Mat4;
  /** camera optical frame ← base */
  cameraFromBase: Mat4;
  /** a base-frame point → pixel, or null when it is not in front of the camera */
  project(pBase: readonly number[]): Projection | null;
  /** pixel + z-depth (m) → base-frame point, or null for no return (depth 0 or absent) */
  backProject(u: number, v: number, depthM: number | null): Vec3 | null;
}

function asPose(p: { xyz: readonly number[]; quat_xyzw: readonly number[] }): Pose {
  return {
    xyz: [p.xyz[0]!, p.xyz[1]!, p.xyz[2]!],
    quat_xyzw: [p.quat_xyzw[0]!, p.quat_xyzw[1]!, p.quat_xyzw[2]!, p.quat_xyzw[3]!],
  };
}

/**
 * Project a point given in the camera optical frame (intrinsics + distortion).
 * Returns null behind the camera.
 */
export function projectPoint(camera: CameraSpec, pCamera: readonly number[]): Projection | null {
  return projectCameraPoint(camera, pCamera);
}

/**
 * Back-project a pixel with its z-depth to a point in the camera optical frame. Returns null for
 * no return (depth null, 0 or not finite) or a pixel whose ray the lens model cannot invert.
 */
export function backProjectPixel(
  camera: CameraSpec,
  u: number,
  v: number,
  depthM: number | null,
  dist: DistortionCoefficients | null = parseDistortion(camera.distortion),
): Vec3 | null {
  if (depthM === null || !(depthM > 0) || !Number.isFinite(depthM)) return null;
  let x = (u - camera.cx) / camera.fx;
  let y = (v - camera.cy) / camera.fy;
  if (dist) {
    const p = undistortPoint(dist, x, y);
    if (!p) return null;
    [x, y] = p;
  }
  return [x * depthM, y * depthM, depthM];
}

/**
 * Place a published camera in the base frame.
 * @param toolPoseBase the tool pose in the base frame at capture time; required for a wrist camera
 */
export function cameraView(
  spec: Spec,
  name: string,
  toolPoseBase?: Pose | { xyz: readonly number[]; quat_xyzw: readonly number[] },
): CameraView {
  const camera = spec.cameras.find((c) => c.name === name);
  if (!camera) throw new Error(`no camera ${name}; cameras: ${spec.cameras.map((c) => c.name).join(", ")}`);
  if (camera.frame === "tool" && !toolPoseBase)
    throw new Error(`camera ${name} rides on the tool: pass the tool pose (base frame) at its capture time`);
  const worldFromBase = poseToMat4(asPose(spec.robot.base_pose));
  const worldFromTool = toolPoseBase ? mat4Mul(worldFromBase, poseToMat4(asPose(toolPoseBase))) : null;
  const worldFromCam = worldFromCamera(
    { name, frame: camera.frame, pose: asPose(camera.pose) },
    worldFromTool,
  );
  const baseFromCamera = mat4Mul(mat4RigidInverse(worldFromBase), worldFromCam);
  const cameraFromBase = mat4RigidInverse(baseFromCamera);
  const dist = parseDistortion(camera.distortion);
  return {
    camera,
    baseFromCamera,
    cameraFromBase,
    project: (p) => projectPoint(camera, mat4Point(cameraFromBase, p)),
    backProject: (u, v, depthM) => {
      const pc = backProjectPixel(camera, u, v, depthM, dist);
      return pc ? mat4Point(baseFromCamera, pc) : null;
    },
  };
}
