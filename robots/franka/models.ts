/**
 * Franka Emika Panda (FER) and Franka Research 3 (FR3) descriptions.
 * Limits are Franka's published robot specifications / control parameters
 * (see docs/decisions.md); kinematics are the published modified-DH parameters,
 * identical for both arms.
 */
import type { CartesianLimits, DhRow, GripperSpec, JointSpec, LinkCapsule, RobotModel } from "../types.ts";
import { FRANKA_CAPSULES } from "./capsules.ts";

const HALF_PI = Math.PI / 2;

/** Franka modified-DH table (a, d, alpha) for joints 1…7. */
export const FRANKA_DH: readonly DhRow[] = Object.freeze([
  { a: 0, d: 0.333, alpha: 0, thetaOffset: 0 },
  { a: 0, d: 0, alpha: -HALF_PI, thetaOffset: 0 },
  { a: 0, d: 0.316, alpha: HALF_PI, thetaOffset: 0 },
  { a: 0.0825, d: 0, alpha: HALF_PI, thetaOffset: 0 },
  { a: -0.0825, d: 0.384, alpha: -HALF_PI, thetaOffset: 0 },
  { a: 0, d: 0, alpha: HALF_PI, thetaOffset: 0 },
  { a: 0.088, d: 0, alpha: HALF_PI, thetaOffset: 0 },
]);

/** Joint-7 frame to flange, along z, m. */
export const FRANKA_FLANGE_OFFSET_M = 0.107;

/** Franka Hand: flange to fingertip centre (TCP) along z, m, and the hand's yaw on the flange. */
export const FRANKA_HAND_TCP_OFFSET_M = 0.1034;
export const FRANKA_HAND_YAW_RAD = -Math.PI / 4;

const FRANKA_HAND: GripperSpec = Object.freeze({
  minWidthM: 0,
  maxWidthM: 0.08,
  maxSpeedMps: 0.05,
  maxForceN: 70,
});

const PANDA_CARTESIAN: CartesianLimits = Object.freeze({
  maxLinearVelocityMps: 1.7,
  maxAngularVelocityRadps: 2.5,
  maxLinearAccelerationMps2: 13,
  maxLinearJerkMps3: 6500,
});

function joints(
  lower: number[],
  upper: number[],
  vel: number[],
  acc: number[],
  jerk: number[],
  effort: number[],
): JointSpec[] {
  return lower.map((lo, i) =>
    Object.freeze({
      name: `fr3_joint${i + 1}`,
      lower: lo,
      upper: upper[i]!,
      maxVelocity: vel[i]!,
      maxAcceleration: acc[i]!,
      maxJerk: jerk[i]!,
      maxEffort: effort[i]!,
    }),
  );
}

const EFFORT = [87, 87, 87, 87, 12, 12, 12];

function freezeModel(m: RobotModel): RobotModel {
  return Object.freeze({
    ...m,
    joints: Object.freeze(m.joints),
    capsules: Object.freeze(m.capsules) as readonly LinkCapsule[],
    homeQ: Object.freeze(m.homeQ),
  });
}

/** Franka Emika Panda (FER). Joint names follow franka_ros2 (which names the Panda's joints alike). */
export const PANDA: RobotModel = freezeModel({
  id: "panda",
  model: "Franka Emika Panda (FER)",
  dof: 7,
  joints: joints(
    [-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973],
    [2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973],
    [2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61],
    [15, 7.5, 10, 12.5, 15, 20, 20],
    [7500, 3750, 5000, 6250, 7500, 10000, 10000],
    EFFORT,
  ).map((j, i) => Object.freeze({ ...j, name: `panda_joint${i + 1}` })),
  dh: FRANKA_DH,
  flangeOffsetM: FRANKA_FLANGE_OFFSET_M,
  gripper: FRANKA_HAND,
  cartesian: PANDA_CARTESIAN,
  capsules: FRANKA_CAPSULES,
  homeQ: [0, -Math.PI / 4, 0, (-3 * Math.PI) / 4, 0, Math.PI / 2, Math.PI / 4],
  controlPeriodS: 0.001,
});

/** Franka Research 3. */
export const FR3: RobotModel = freezeModel({
  id: "fr3",
  model: "Franka Research 3 (FR3)",
  dof: 7,
  joints: joints(
    [-2.9007, -1.8361, -2.9007, -3.077, -2.8763, 0.4398, -3.0508],
    [2.9007, 1.8361, 2.9007, -0.1169, 2.8763, 4.6216, 3.0508],
    [2.62, 2.62, 2.62, 2.62, 5.26, 4.18, 5.26],
    [10, 10, 10, 10, 10, 10, 10],
    [5000, 5000, 5000, 5000, 5000, 5000, 5000],
    EFFORT,
  ),
  dh: FRANKA_DH,
  flangeOffsetM: FRANKA_FLANGE_OFFSET_M,
  gripper: FRANKA_HAND,
  // Franka publishes the same Cartesian limits for FR3's default configuration.
  cartesian: PANDA_CARTESIAN,
  capsules: FRANKA_CAPSULES,
  homeQ: [0, -Math.PI / 4, 0, (-3 * Math.PI) / 4, 0, Math.PI / 2, Math.PI / 4],
  controlPeriodS: 0.001,
});

/** Every robot the gateway knows, by id. */
export const ROBOTS: Readonly<Record<RobotModel["id"], RobotModel>> = Object.freeze({
  panda: PANDA,
  fr3: FR3,
});
