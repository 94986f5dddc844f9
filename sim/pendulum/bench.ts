/**
 * The simulated pendulum bench (a measurement apparatus for "act to know" tasks), built from a
 * seed: a bob on a light rod hangs from a hinge on a stand on the table in front of the robot;
 * a photogate (a light beam between two posts) crosses the bottom of the swing. The rod length
 * is the hidden instance parameter; everything else is fixed so that the apparatus stays within
 * the arm's reach and clear of its start pose.
 *
 * World frame = robot base frame (the base stands at the origin on the table top, z up).
 * The bob swings in the world x–z plane (hinge axis along world y), away from and towards the robot.
 */
import type { CameraCalibration, PoseM } from "../../calibration/schema.ts";
import { FRANKA_HAND_TCP_OFFSET_M, FRANKA_HAND_YAW_RAD } from "../../robots/franka/models.ts";
import { mat4ToPose, type Vec3 } from "../../robots/math.ts";
import type { RobotModel } from "../../robots/types.ts";
import { simIntrinsics } from "../buzzwire/bench.ts";
import { lookAt } from "../render/camera-pose.ts";
import { createPrng } from "../prng.ts";

/** Range of the hidden rod length (hinge axis to bob centre), m. */
export const PENDULUM_LENGTH_RANGE_M = Object.freeze([0.32, 0.6] as const);

/** Everything the simulator needs to build the pendulum bench; also the task's bench context. */
export interface PendulumBenchSpec {
  scene: "pendulum";
  seed: number;
  /** robot base frame in the world frame */
  robotBasePoseWorld: PoseM;
  /** flange → tool frame (the Franka Hand TCP between the fingertips, z along the approach) */
  toolPoseFlange: PoseM;
  cameras: CameraCalibration[];
  pendulum: {
    /** hinge axis point, world, m */
    hingeWorld: Vec3;
    /** hinge axis (unit), world */
    axisWorld: Vec3;
    /** hinge axis to bob centre, m (hidden) */
    lengthM: number;
    /** bob sphere radius, m */
    bobRadiusM: number;
    /** bob density, kg/m³ (steel) */
    bobDensityKgM3: number;
    /** viscous damping of the bob's linear velocity, 1/s (Rapier linear damping) */
    dampingPerS: number;
    /** rod radius for rendering, m (the rod is light and has no collider) */
    rodRadiusM: number;
  };
  /** the light beam: a line through `centreWorld` along `beamAxisWorld`, between two posts */
  photogate: {
    /** beam centre, world, m (the bob's rest centre) */
    centreWorld: Vec3;
    /** beam direction (unit), world */
    beamAxisWorld: Vec3;
    /** distance from the beam centre to each post, m */
    postOffsetM: number;
    /** post radius, m */
    postRadiusM: number;
  };
  /** the stand: a vertical post and a crossbar reaching to the hinge, m */
  stand: {
    /** foot point of the post on the table, world */
    postBaseWorld: Vec3;
    postRadiusM: number;
  };
  /** table top height in the world frame, m */
  tableTopZM: number;
  /** joint angles at the start of an episode, rad (the robot's home pose) */
  startQ: number[];
  /** gripper opening at the start, m */
  startGripperM: number;
}

/** Bob rest centre in the world, m. */
export const BOB_REST_WORLD: Vec3 = [0.55, 0, 0.15];

/** Flange → Franka Hand TCP (fingertip centre), as a pose. */
export function handTcpPose(): PoseM {
  const h = FRANKA_HAND_YAW_RAD / 2;
  return { xyz: [0, 0, FRANKA_HAND_TCP_OFFSET_M], quat_xyzw: [0, 0, Math.sin(h), Math.cos(h)] };
}

/**
 * Three fixed cameras — side (looking across the swing plane), front (from beyond the stand,
 * towards the robot) and top — aimed at a fixed point (they do not depend on the hidden length),
 * and a wrist camera on the flange looking at the fingertips.
 */
export function pendulumCameras(tcpFlange: Vec3): CameraCalibration[] {
  const aim: Vec3 = [0.5, 0, 0.35];
  const fixed = (name: string, eye: Vec3, up?: Vec3): CameraCalibration => ({
    name,
    intrinsics: simIntrinsics(),
    extrinsics: { mount: "world", poseWorld: mat4ToPose(lookAt(eye, aim, up)) },
    depth: true,
  });
  return [
    fixed("side", [0.5, -1.25, 0.45]),
    fixed("front", [1.55, -0.5, 0.7]),
    fixed("top", [0.5, 0, 1.6], [1, 0, 0]),
    {
      name: "wrist",
      intrinsics: simIntrinsics(),
      extrinsics: { mount: "tool", poseFlange: mat4ToPose(lookAt([0.07, 0, 0.02], tcpFlange, [1, 0, 0])) },
      depth: true,
    },
  ];
}

/** The pendulum bench for a seed: only the rod length is sampled. */
export function samplePendulumBench(robot: RobotModel, seed: number): PendulumBenchSpec {
  const rng = createPrng(seed ^ 0x5bd1e995);
  const [lo, hi] = PENDULUM_LENGTH_RANGE_M;
  const lengthM = rng.uniform(lo, hi);
  const [bx, by, bz] = BOB_REST_WORLD;
  const hinge: Vec3 = [bx, by, bz + lengthM];
  const tcp = handTcpPose();
  return {
    scene: "pendulum",
    seed,
    robotBasePoseWorld: { xyz: [0, 0, 0], quat_xyzw: [0, 0, 0, 1] },
    toolPoseFlange: tcp,
    cameras: pendulumCameras(tcp.xyz),
    pendulum: {
      hingeWorld: hinge,
      axisWorld: [0, 1, 0],
      lengthM,
      bobRadiusM: 0.02,
      bobDensityKgM3: 7800,
      dampingPerS: 0.02,
      rodRadiusM: 0.002,
    },
    photogate: {
      centreWorld: [bx, by, bz],
      beamAxisWorld: [0, 1, 0],
      postOffsetM: 0.15,
      postRadiusM: 0.008,
    },
    // the post stands behind the pendulum (away from the robot); the crossbar runs along −x to the hinge
    stand: { postBaseWorld: [bx + 0.25, by, 0], postRadiusM: 0.012 },
    tableTopZM: 0,
    startQ: [...robot.homeQ],
    startGripperM: 0,
  };
}
