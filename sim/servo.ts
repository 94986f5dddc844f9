/**
 * Joint servo model of the simulated arm: a feed-forward + proportional velocity tracker
 * with acceleration, velocity and position saturation. Pure and deterministic.
 *
 * Each tick the commanded velocity is `v = ffVel + kp · (qRef − q)` where `ffVel` is the
 * finite-difference velocity of the reference; the joint velocity moves towards `v` by at
 * most `maxAcceleration · dt`, is clamped to ±`maxVelocity`, then integrates into q
 * (clamped to the position limits). For a reference that itself respects the limits, the
 * tracking error settles to about one control period of lag and stays bounded.
 *
 * Hot path: `servoStep` allocates nothing.
 */
import { z } from "zod";
import type { RobotModel } from "../robots/types.ts";

/** The servo model as a bench file states it (per-joint gains, command delay). */
export const SimServoSchema = z.strictObject({
  /** proportional gain per joint (7 values), 1/s */
  kpPerJoint: z.array(z.number().positive().max(999)).length(7).optional(),
  /** command transport delay, control periods */
  delayTicks: z.number().int().min(0).max(200).default(0),
  /** where the values came from (e.g. "sysid 2026-12-01 from 3 records; residual 1.2e-4 rad") */
  note: z.string().optional(),
});
export type SimServoConfig = z.infer<typeof SimServoSchema>;

/** Servo state; plain typed arrays so snapshots can copy it bit-exactly. */
export interface ServoState {
  /** joint positions, rad */
  q: Float64Array;
  /** joint velocities, rad/s */
  dq: Float64Array;
  /** last reference position, rad (for feed-forward velocity) */
  qRefPrev: Float64Array;
  /** gripper opening, m */
  gripperWidthM: number;
}

export interface ServoParams {
  /** proportional gain on position error, 1/s (kp · dt must stay below 1) */
  kpPerS: number;
  /** per-joint gains replacing kpPerS (a fitted or perturbed servo), 1/s */
  kpPerJoint?: Float64Array;
  /** transport delay of the command, control periods (the backend delays the reference) */
  delayTicks?: number;
  lower: Float64Array;
  upper: Float64Array;
  /** rad/s */
  maxVelocity: Float64Array;
  /** rad/s² */
  maxAcceleration: Float64Array;
  gripperMinM: number;
  gripperMaxM: number;
  /** finger speed limit, m/s */
  gripperMaxSpeedMps: number;
}

export function servoParams(robot: RobotModel, kpPerS = 200): ServoParams {
  const f = (k: "lower" | "upper" | "maxVelocity" | "maxAcceleration") =>
    Float64Array.from(robot.joints.map((j) => j[k]));
  return {
    kpPerS,
    lower: f("lower"),
    upper: f("upper"),
    maxVelocity: f("maxVelocity"),
    maxAcceleration: f("maxAcceleration"),
    gripperMinM: robot.gripper.minWidthM,
    gripperMaxM: robot.gripper.maxWidthM,
    gripperMaxSpeedMps: robot.gripper.maxSpeedMps,
  };
}

/** A servo at rest at `q`. */
export function servoAtRest(q: ArrayLike<number>, gripperWidthM: number): ServoState {
  return {
    q: Float64Array.from(q),
    dq: new Float64Array(q.length),
    qRefPrev: Float64Array.from(q),
    gripperWidthM,
  };
}

/**
 * Advance the servo by one period towards the reference (hot path, no allocation).
 * @param qRef reference joint positions for the end of this tick, rad (read from `offset`)
 * @param gripperRefM reference gripper opening, m
 */
export function servoStep(
  s: ServoState,
  p: ServoParams,
  qRef: ArrayLike<number>,
  offset: number,
  gripperRefM: number,
  dtS: number,
): void {
  const n = s.q.length;
  for (let j = 0; j < n; j++) {
    const ref = qRef[offset + j]!;
    const ff = (ref - s.qRefPrev[j]!) / dtS;
    s.qRefPrev[j] = ref;
    // aim to reach the reference at the end of this tick, softened by kp
    const err = ref - s.q[j]!;
    const e = err - ff * dtS;
    const aMax = p.maxAcceleration[j]!;
    // proportional near the reference, braking-feasible (√(2·a·|e|)) far from it
    const ae = e < 0 ? -e : e;
    const kp = p.kpPerJoint ? p.kpPerJoint[j]! : p.kpPerS;
    const corr = Math.min(kp * ae, Math.sqrt(2 * aMax * ae));
    let v = ff + (e < 0 ? -corr : corr);
    const vMax = p.maxVelocity[j]!;
    const dvMax = aMax * dtS;
    const dq0 = s.dq[j]!;
    if (v > dq0 + dvMax) v = dq0 + dvMax;
    else if (v < dq0 - dvMax) v = dq0 - dvMax;
    if (v > vMax) v = vMax;
    else if (v < -vMax) v = -vMax;
    let q = s.q[j]! + v * dtS;
    if (q > p.upper[j]!) {
      q = p.upper[j]!;
      v = 0;
    } else if (q < p.lower[j]!) {
      q = p.lower[j]!;
      v = 0;
    }
    s.q[j] = q;
    s.dq[j] = v;
  }
  let g = gripperRefM;
  if (g > p.gripperMaxM) g = p.gripperMaxM;
  else if (g < p.gripperMinM) g = p.gripperMinM;
  const dgMax = p.gripperMaxSpeedMps * dtS;
  const dg = g - s.gripperWidthM;
  s.gripperWidthM += Math.min(dgMax, Math.max(-dgMax, dg));
}
