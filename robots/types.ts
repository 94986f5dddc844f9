/**
 * Robot descriptions: pure data. Every length is in metres, every angle in radians,
 * every time in seconds. Nothing here knows which backend runs the robot.
 */

/** One revolute joint with its published limits. */
export interface JointSpec {
  name: string;
  /** lower position limit, rad */
  lower: number;
  /** upper position limit, rad */
  upper: number;
  /** max joint velocity, rad/s */
  maxVelocity: number;
  /** max joint acceleration, rad/s² */
  maxAcceleration: number;
  /** max joint jerk, rad/s³ */
  maxJerk: number;
  /** max joint torque, N·m */
  maxEffort: number;
}

/**
 * One row of a modified (Craig) Denavit–Hartenberg table:
 * T(i-1→i) = RotX(alpha) · TransX(a) · RotZ(theta + thetaOffset) · TransZ(d).
 */
export interface DhRow {
  /** link length, m */
  a: number;
  /** link offset, m */
  d: number;
  /** link twist, rad */
  alpha: number;
  /** constant added to the joint angle, rad */
  thetaOffset: number;
}

/** Parallel gripper range. */
export interface GripperSpec {
  /** fully closed opening between the fingers, m */
  minWidthM: number;
  /** fully open opening between the fingers, m */
  maxWidthM: number;
  /** max finger opening speed, m/s */
  maxSpeedMps: number;
  /** max continuous grasp force, N */
  maxForceN: number;
}

/**
 * A collision capsule rigidly attached to a frame of the chain.
 * `frame` 0 is the base, 1…7 the joint frames, 8 the flange, 9 the tool (FK with a tool offset).
 */
export interface LinkCapsule {
  /** human-readable link name, e.g. "link4" */
  link: string;
  /** kinematic frame index the capsule rides on (0 base … 7 joint 7, 8 flange, 9 tool) */
  frame: number;
  /** segment end points in that frame, m */
  a: readonly [number, number, number];
  b: readonly [number, number, number];
  /** capsule radius, m */
  radiusM: number;
}

/** Cartesian limits published for the robot. */
export interface CartesianLimits {
  /** max translational tool speed, m/s */
  maxLinearVelocityMps: number;
  /** max rotational tool speed, rad/s */
  maxAngularVelocityRadps: number;
  /** max translational acceleration, m/s² */
  maxLinearAccelerationMps2: number;
  /** max translational jerk, m/s³ */
  maxLinearJerkMps3: number;
}

export type RobotId = "panda" | "fr3";

/** A complete robot description, as the gateway and both backends use it. */
export interface RobotModel {
  id: RobotId;
  /** product name shown to clients, e.g. "Franka Emika Panda (FER)" */
  model: string;
  /** number of arm joints */
  dof: 7;
  joints: readonly JointSpec[];
  /** modified DH rows for joints 1…7 */
  dh: readonly DhRow[];
  /** distance from joint-7 frame to the flange along z, m */
  flangeOffsetM: number;
  gripper: GripperSpec;
  cartesian: CartesianLimits;
  /** link collision capsules, in kinematic frames */
  capsules: readonly LinkCapsule[];
  /** a comfortable home configuration, rad */
  homeQ: readonly number[];
  /** robot control period, s (Franka: 1 ms) */
  controlPeriodS: number;
}
