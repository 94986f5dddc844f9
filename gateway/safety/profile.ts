/**
 * The per-bench safety profile: a strict zod schema with defaults (the data contract), and
 * `resolveLimits`, which folds a profile into one robot's published limits and freezes the
 * result. The pre-check and the runtime monitor both read only the resolved limits, so the
 * sim bench and the real bench judge motion identically whenever their profiles are equal.
 *
 * Every length is in metres in the robot **base** frame, every angle in radians.
 */
import { z } from "zod";
import { poseToMat4 } from "../../robots/math.ts";
import type { RobotModel } from "../../robots/types.ts";

const vec3 = z.tuple([z.number(), z.number(), z.number()]);
const quatXyzw = z.tuple([z.number(), z.number(), z.number(), z.number()]);
const positive = z.number().positive();
/** a fraction 0 < f ≤ 1 of a published limit; more than the robot allows is a config error */
const fraction = z.number().gt(0).lte(1);
/** link names (e.g. "link0", "hand") a volume does not apply to */
const ignoreLinks = z.array(z.string().min(1)).default([]);
/**
 * a volume that would reveal the hidden task instance (e.g. one around a wire post): enforced
 * like any other, never published in GET /v1/spec or the task card
 */
const hidden = z.boolean().default(false);

/** An oriented box: centre and half extents in the base frame, optional rotation. */
export const KeepOutBoxSchema = z.strictObject({
  type: z.literal("box"),
  name: z.string().min(1),
  /** box centre, base frame, m */
  centerM: vec3,
  /** half extents along the box's own axes, m */
  halfExtentsM: z.tuple([positive, positive, positive]),
  /** box orientation in the base frame (xyzw); axis-aligned when omitted */
  quatXyzw: quatXyzw.optional(),
  /** links this volume does not apply to (e.g. the hand for a volume the task must touch) */
  ignoreLinks,
  hidden,
});

export const KeepOutSphereSchema = z.strictObject({
  type: z.literal("sphere"),
  name: z.string().min(1),
  /** sphere centre, base frame, m */
  centerM: vec3,
  /** sphere radius, m */
  radiusM: positive,
  ignoreLinks,
  hidden,
});

export const KeepOutCapsuleSchema = z.strictObject({
  type: z.literal("capsule"),
  name: z.string().min(1),
  /** segment end points, base frame, m */
  aM: vec3,
  bM: vec3,
  /** capsule radius, m */
  radiusM: positive,
  ignoreLinks,
  hidden,
});

/** A named volume that neither the tool point nor any link capsule may enter. */
export const KeepOutSchema = z.discriminatedUnion("type", [
  KeepOutBoxSchema,
  KeepOutSphereSchema,
  KeepOutCapsuleSchema,
]);
export type KeepOut = z.infer<typeof KeepOutSchema>;

/** Axis-aligned box (base frame) that the tool point and every moving link capsule must stay inside. */
export const WorkspaceSchema = z
  .strictObject({
    /** lower corner, base frame, m */
    minM: vec3,
    /** upper corner, base frame, m */
    maxM: vec3,
  })
  .refine((w) => w.minM.every((v, i) => v < w.maxM[i]!), {
    message: "workspace minM must be below maxM on every axis",
  });

/** Task events that stop the robot at once when they arrive while it moves. */
export const StopEventSchema = z.enum(["contact", "collision"]);
export type StopEvent = z.infer<typeof StopEventSchema>;

export const SafetyProfileSchema = z.strictObject({
  /** distance kept from each published joint position limit, rad */
  jointPositionMarginRad: z.number().nonnegative().default(0.05),
  /** share of the published joint velocity limit that commands may use */
  velocityFraction: fraction.default(0.5),
  /** share of the published joint acceleration limit */
  accelerationFraction: fraction.default(0.5),
  /** share of the published joint jerk limit */
  jerkFraction: fraction.default(0.5),
  /**
   * measured-velocity tolerance of the runtime monitor: a reading may reach
   * min(published, commanded limit × factor) before it stops the robot
   */
  monitorVelocityFactor: z.number().gte(1).default(1.2),
  /**
   * the runtime monitor judges velocity from position differences over at least this span of
   * readings, ms: a driver's reported velocity alone (e.g. a finite difference over late timer
   * ticks) never stops the robot, positions moving too fast always do
   */
  monitorVelocityWindowMs: positive.default(20),
  /** max translational tool speed, m/s (at most the robot's published Cartesian limit) */
  maxToolSpeedMps: positive.default(1.0),
  workspace: WorkspaceSchema.default({ minM: [-1.0, -1.0, -0.1], maxM: [1.0, 1.0, 1.4] }),
  /** named keep-out volumes (table top, board, wire posts, …), base frame */
  keepOut: z.array(KeepOutSchema).default([]),
  gripper: z
    .strictObject({
      /** max grasp force, N (at most the gripper's published force) */
      maxForceN: positive.default(40),
      /** max finger opening speed, m/s (at most the gripper's published speed) */
      maxSpeedMps: positive.default(0.05),
    })
    .default({ maxForceN: 40, maxSpeedMps: 0.05 }),
  /** longest chunk the pre-check accepts, s */
  maxChunkDurationS: positive.default(10),
  /** realtime setting: longest gap between two commands to the drives before a stop, ms */
  commandWatchdogMs: positive.default(50),
  /** largest |measured − commanded| joint position while moving, rad */
  trackingErrorBoundRad: positive.default(0.1),
  /** longest gap between two readings (backend time) before a stop, ms */
  staleReadingTimeoutMs: positive.default(100),
  /** the runtime monitor checks keep-outs with FK every this many readings */
  monitorFkEveryTicks: z.number().int().positive().default(10),
  /** task events that stop the robot: "contact" (circuit closed), "collision" */
  stopOnEvents: z.array(StopEventSchema).default(["contact", "collision"]),
});

/** A validated safety profile (defaults applied). */
export type SafetyProfile = z.infer<typeof SafetyProfileSchema>;
/** What a bench file may write (every field optional). */
export type SafetyProfileInput = z.input<typeof SafetyProfileSchema>;

/** Validate a profile strictly (unknown keys are errors); throws a ZodError listing every issue. */
export function parseSafetyProfile(input: unknown): SafetyProfile {
  return SafetyProfileSchema.parse(input);
}

/** A keep-out volume compiled for fast distance queries. */
export type CompiledVolume =
  | {
      type: "box";
      name: string;
      /** centre, base frame, m */
      center: readonly [number, number, number];
      /** half extents, m */
      half: readonly [number, number, number];
      /** base→box rotation, row-major 3×3 (rows are the box axes in the base frame) */
      rot: readonly number[];
      ignoreLinks: readonly string[];
      /** enforced, never published (reveals the hidden instance) */
      hidden: boolean;
    }
  | {
      type: "sphere";
      name: string;
      center: readonly [number, number, number];
      radiusM: number;
      ignoreLinks: readonly string[];
      hidden: boolean;
    }
  | {
      type: "capsule";
      name: string;
      a: readonly [number, number, number];
      b: readonly [number, number, number];
      radiusM: number;
      ignoreLinks: readonly string[];
      hidden: boolean;
    };

/** The effective, frozen limits a bench enforces; the only input of pre-check and monitor besides the robot. */
export interface EffectiveLimits {
  robotId: RobotModel["id"];
  jointNames: readonly string[];
  /** published position limits, rad */
  hardLowerRad: readonly number[];
  hardUpperRad: readonly number[];
  /** commanded position band (published limits minus the margin), rad */
  lowerRad: readonly number[];
  upperRad: readonly number[];
  /** commanded velocity limit, rad/s */
  maxVelocityRadps: readonly number[];
  /** commanded acceleration limit, rad/s² */
  maxAccelerationRadps2: readonly number[];
  /** commanded jerk limit, rad/s³ */
  maxJerkRadps3: readonly number[];
  /** measured velocity limit of the runtime monitor, rad/s */
  monitorMaxVelocityRadps: readonly number[];
  /** span of readings the monitor's position-difference velocity is taken over, s */
  monitorVelocityWindowS: number;
  /** max translational tool speed, m/s */
  maxToolSpeedMps: number;
  gripper: Readonly<{ minWidthM: number; maxWidthM: number; maxSpeedMps: number; maxForceN: number }>;
  workspace: Readonly<{ minM: readonly number[]; maxM: readonly number[] }>;
  keepOut: readonly CompiledVolume[];
  /** s */
  maxChunkDurationS: number;
  /** ms */
  commandWatchdogMs: number;
  /** rad */
  trackingErrorBoundRad: number;
  /** ms */
  staleReadingTimeoutMs: number;
  monitorFkEveryTicks: number;
  stopOnEvents: readonly StopEvent[];
}

/** A profile that does not fit the robot (e.g. a tool speed above the robot's Cartesian limit). */
export class SafetyConfigError extends Error {
  constructor(readonly issues: readonly { path: string; message: string }[]) {
    super(
      `safety profile does not fit the robot: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`,
    );
    this.name = "SafetyConfigError";
  }
}

/** Base→box rotation rows (the box axes in the base frame) of a box orientation; identity when omitted. */
function baseToBoxRows(q: readonly [number, number, number, number] | undefined): number[] {
  if (!q) return [1, 0, 0, 0, 1, 0, 0, 0, 1];
  // poseToMat4 normalises q and gives R (box → base); its transpose maps base → box
  const m = poseToMat4({ xyz: [0, 0, 0], quat_xyzw: [...q] });
  return [m[0]!, m[4]!, m[8]!, m[1]!, m[5]!, m[9]!, m[2]!, m[6]!, m[10]!];
}

function compileVolume(v: KeepOut): CompiledVolume {
  const ignore = Object.freeze([...v.ignoreLinks]);
  switch (v.type) {
    case "box": {
      const q = v.quatXyzw;
      if (q && Math.hypot(...q) === 0)
        throw new SafetyConfigError([{ path: `keepOut.${v.name}.quatXyzw`, message: "zero quaternion" }]);
      return Object.freeze({
        type: "box",
        name: v.name,
        center: Object.freeze([...v.centerM] as [number, number, number]),
        half: Object.freeze([...v.halfExtentsM] as [number, number, number]),
        rot: Object.freeze(baseToBoxRows(q)),
        ignoreLinks: ignore,
        hidden: v.hidden,
      });
    }
    case "sphere":
      return Object.freeze({
        type: "sphere",
        name: v.name,
        center: Object.freeze([...v.centerM] as [number, number, number]),
        radiusM: v.radiusM,
        ignoreLinks: ignore,
        hidden: v.hidden,
      });
    case "capsule":
      return Object.freeze({
        type: "capsule",
        name: v.name,
        a: Object.freeze([...v.aM] as [number, number, number]),
        b: Object.freeze([...v.bM] as [number, number, number]),
        radiusM: v.radiusM,
        ignoreLinks: ignore,
        hidden: v.hidden,
      });
  }
}

const frozen = (xs: number[]): readonly number[] => Object.freeze(xs);

/**
 * Fold a validated profile into the robot's published limits: position band = published
 * limits minus the margin; velocity/acceleration/jerk = fraction × published. Checks what the
 * schema cannot know (tool speed and gripper against the robot, margin vs joint range,
 * duplicate volume names) and throws SafetyConfigError listing every problem.
 */
export function resolveLimits(robot: RobotModel, profile: SafetyProfile): EffectiveLimits {
  const issues: { path: string; message: string }[] = [];
  const m = profile.jointPositionMarginRad;
  robot.joints.forEach((j, i) => {
    if (j.lower + m >= j.upper - m)
      issues.push({
        path: "jointPositionMarginRad",
        message: `margin ${m} rad leaves no range on joint ${i + 1} (${j.name})`,
      });
  });
  if (profile.maxToolSpeedMps > robot.cartesian.maxLinearVelocityMps)
    issues.push({
      path: "maxToolSpeedMps",
      message: `${profile.maxToolSpeedMps} m/s exceeds the robot's ${robot.cartesian.maxLinearVelocityMps} m/s`,
    });
  if (profile.gripper.maxSpeedMps > robot.gripper.maxSpeedMps)
    issues.push({
      path: "gripper.maxSpeedMps",
      message: `${profile.gripper.maxSpeedMps} m/s exceeds the gripper's ${robot.gripper.maxSpeedMps} m/s`,
    });
  if (profile.gripper.maxForceN > robot.gripper.maxForceN)
    issues.push({
      path: "gripper.maxForceN",
      message: `${profile.gripper.maxForceN} N exceeds the gripper's ${robot.gripper.maxForceN} N`,
    });
  const names = new Set<string>();
  profile.keepOut.forEach((v, i) => {
    if (names.has(v.name))
      issues.push({ path: `keepOut.${i}.name`, message: `duplicate volume name "${v.name}"` });
    names.add(v.name);
  });
  if (issues.length > 0) throw new SafetyConfigError(issues);

  const J = robot.joints;
  const vel = J.map((j) => j.maxVelocity * profile.velocityFraction);
  return Object.freeze({
    robotId: robot.id,
    jointNames: Object.freeze(J.map((j) => j.name)),
    hardLowerRad: frozen(J.map((j) => j.lower)),
    hardUpperRad: frozen(J.map((j) => j.upper)),
    lowerRad: frozen(J.map((j) => j.lower + m)),
    upperRad: frozen(J.map((j) => j.upper - m)),
    maxVelocityRadps: frozen(vel),
    maxAccelerationRadps2: frozen(J.map((j) => j.maxAcceleration * profile.accelerationFraction)),
    maxJerkRadps3: frozen(J.map((j) => j.maxJerk * profile.jerkFraction)),
    monitorMaxVelocityRadps: frozen(
      J.map((j, i) => Math.min(j.maxVelocity, vel[i]! * profile.monitorVelocityFactor)),
    ),
    monitorVelocityWindowS: profile.monitorVelocityWindowMs / 1000,
    maxToolSpeedMps: profile.maxToolSpeedMps,
    gripper: Object.freeze({
      minWidthM: robot.gripper.minWidthM,
      maxWidthM: robot.gripper.maxWidthM,
      maxSpeedMps: profile.gripper.maxSpeedMps,
      maxForceN: profile.gripper.maxForceN,
    }),
    workspace: Object.freeze({
      minM: frozen([...profile.workspace.minM]),
      maxM: frozen([...profile.workspace.maxM]),
    }),
    keepOut: Object.freeze(profile.keepOut.map(compileVolume)),
    maxChunkDurationS: profile.maxChunkDurationS,
    commandWatchdogMs: profile.commandWatchdogMs,
    trackingErrorBoundRad: profile.trackingErrorBoundRad,
    staleReadingTimeoutMs: profile.staleReadingTimeoutMs,
    monitorFkEveryTicks: profile.monitorFkEveryTicks,
    stopOnEvents: Object.freeze([...profile.stopOnEvents]),
  });
}
