/**
 * The default simulated buzz-wire bench: a calibration (robots/ + calibration/ shapes) built
 * from a seed. The simulator always builds its scene from a `Calibration`; a sim-only bench
 * samples the wire here, a digital twin passes the real bench's calibration file instead.
 */
import type {
  Calibration,
  CameraCalibration,
  CameraIntrinsics,
  PoseM,
  ToolCalibration,
} from "../../calibration/schema.ts";
import { FRANKA_HAND_TCP_OFFSET_M, FRANKA_HAND_YAW_RAD } from "../../robots/franka/models.ts";
import { mat4ToPose, mat4Identity, type Vec3, vcross } from "../../robots/math.ts";
import { lookAt } from "../render/camera-pose.ts";
import type { RobotModel } from "../../robots/types.ts";
import { sampleWire } from "./wire-sampler.ts";

/** The loop and its handle, held by the Franka Hand. */
export const DEFAULT_LOOP = Object.freeze({
  loopInnerRadiusM: 0.015,
  loopWireRadiusM: 0.0015,
  handleLengthM: 0.08,
});

/** Flange → loop frame for a loop held at the fingertips with its handle along the approach axis. */
export function defaultTool(): ToolCalibration {
  const { loopInnerRadiusM, loopWireRadiusM, handleLengthM } = DEFAULT_LOOP;
  const c = Math.cos(FRANKA_HAND_YAW_RAD);
  const s = Math.sin(FRANKA_HAND_YAW_RAD);
  // loop x = flange z (away from the handle), loop z = hand x, loop y = z × x
  const zl: Vec3 = [c, s, 0];
  const xl: Vec3 = [0, 0, 1];
  const yl = vcross(zl, xl);
  const m = mat4Identity();
  m[0] = xl[0];
  m[1] = yl[0];
  m[2] = zl[0];
  m[4] = xl[1];
  m[5] = yl[1];
  m[6] = zl[1];
  m[8] = xl[2];
  m[9] = yl[2];
  m[10] = zl[2];
  m[11] = FRANKA_HAND_TCP_OFFSET_M + handleLengthM + loopInnerRadiusM + 2 * loopWireRadiusM;
  return { loopPoseFlange: mat4ToPose(m), loopInnerRadiusM, loopWireRadiusM, handleLengthM };
}

/** The sim benches' camera: 640 × 480 px, about 60° horizontal field of view, no distortion (a fresh object). */
export function simIntrinsics(): CameraIntrinsics {
  return {
    widthPx: 640,
    heightPx: 480,
    fxPx: 554,
    fyPx: 554,
    cxPx: 319.5,
    cyPx: 239.5,
    distortion: [0, 0, 0, 0, 0],
  };
}

/** Three fixed cameras (front, side, top) aimed at the wire, and a wrist camera on the flange. */
export function defaultCameras(wireCentreWorld: Vec3, loopCentreFlange: Vec3): CameraCalibration[] {
  const [cx, cy, cz] = wireCentreWorld;
  const fixed = (name: string, eye: Vec3, up?: Vec3): CameraCalibration => ({
    name,
    intrinsics: simIntrinsics(),
    extrinsics: { mount: "world", poseWorld: mat4ToPose(lookAt(eye, wireCentreWorld, up)) },
    depth: true,
  });
  // on the side of the hand (along the hand's x axis, which is the loop's axis), 10 cm out and
  // 6 cm down from the flange: it looks past the fingers at the loop, face-on
  const hx = Math.cos(FRANKA_HAND_YAW_RAD);
  const hy = Math.sin(FRANKA_HAND_YAW_RAD);
  const wristEye: Vec3 = [0.1 * hx, 0.1 * hy, 0.06];
  return [
    fixed("front", [cx + 0.75, cy, cz + 0.3]),
    fixed("side", [cx, cy - 0.8, cz + 0.25]),
    fixed("top", [cx + 0.05, cy, cz + 0.85], [1, 0, 0]),
    {
      name: "wrist",
      intrinsics: simIntrinsics(),
      extrinsics: { mount: "tool", poseFlange: mat4ToPose(lookAt(wristEye, loopCentreFlange, [1, 0, 0])) },
      depth: true,
    },
  ];
}

const IDENTITY_POSE: PoseM = { xyz: [0, 0, 0], quat_xyzw: [0, 0, 0, 1] };

/**
 * A complete sim calibration from a seed: robot base at the world origin on the table top,
 * a board in front of it, a sampled wire, the default loop and four cameras.
 */
export function sampleBenchCalibration(robot: RobotModel, seed: number): Calibration {
  const tool = defaultTool();
  const wire = sampleWire(robot, tool, seed);
  const pts = wire.pointsBase;
  let mx = 0;
  let my = 0;
  let mz = 0;
  for (const p of pts) {
    mx += p[0] / pts.length;
    my += p[1] / pts.length;
    mz += p[2] / pts.length;
  }
  const boardThicknessM = 0.02;
  return {
    version: 1,
    robotBasePoseWorld: IDENTITY_POSE,
    cameras: defaultCameras([mx, my, mz], tool.loopPoseFlange.xyz),
    tool,
    wire,
    board: {
      poseWorld: { xyz: [mx, my, boardThicknessM], quat_xyzw: [0, 0, 0, 1] },
      sizeM: [0.3, 0.62, boardThicknessM],
    },
  };
}
