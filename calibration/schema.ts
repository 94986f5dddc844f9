/**
 * The calibration file shared by the simulator and the real bench (version 1).
 *
 * One strict, versioned zod schema: unknown keys are errors. Every length is in metres,
 * every angle in radians, poses are `{ xyz, quat_xyzw }` (see robots/math.ts). The sim
 * builds its scene from the same file, so a sim bench is a digital twin of the real one.
 *
 * Frames: "world" is the bench frame; the robot base sits at `robotBasePoseWorld` in it.
 * Wire points are given in the robot **base** frame (what a calibration procedure measures
 * by touching the wire with the tool).
 */
import { z } from "zod";
import { boardSpecSchema } from "./board.ts";

const finite = z.number().finite();
const positive = finite.positive();
const nonNegative = finite.nonnegative();

/** A 3-vector, m (or a direction). */
export const vec3Schema = z.tuple([finite, finite, finite]);

/** A rigid pose: position in m and a unit quaternion in xyzw order. */
export const poseSchema = z
  .object({
    /** position, m */
    xyz: vec3Schema,
    /** orientation, unit quaternion x y z w */
    quat_xyzw: z.tuple([finite, finite, finite, finite]),
  })
  .strict()
  .refine((p) => Math.abs(Math.hypot(...p.quat_xyzw) - 1) < 1e-3, {
    message: "quat_xyzw must be a unit quaternion",
    path: ["quat_xyzw"],
  });

/** Pinhole intrinsics, OpenCV convention (x right, y down, z forward). */
export const intrinsicsSchema = z
  .object({
    /** image width, px */
    widthPx: z.number().int().positive(),
    /** image height, px */
    heightPx: z.number().int().positive(),
    /** focal lengths, px */
    fxPx: positive,
    fyPx: positive,
    /** principal point, px */
    cxPx: finite,
    cyPx: finite,
    /** OpenCV distortion k1 k2 p1 p2 k3 (zeros when undistorted) */
    distortion: z.array(finite).length(5).default([0, 0, 0, 0, 0]),
  })
  .strict();

/** Camera extrinsics: the camera optical frame fixed in the world or riding on the tool (flange). */
export const extrinsicsSchema = z.discriminatedUnion("mount", [
  z
    .object({
      mount: z.literal("world"),
      /** camera optical frame in the world frame */
      poseWorld: poseSchema,
    })
    .strict(),
  z
    .object({
      mount: z.literal("tool"),
      /** camera optical frame in the flange frame */
      poseFlange: poseSchema,
    })
    .strict(),
]);

export const cameraSchema = z
  .object({
    /** unique camera name, e.g. "front" */
    name: z.string().min(1),
    intrinsics: intrinsicsSchema,
    extrinsics: extrinsicsSchema,
    /** the camera delivers depth */
    depth: z.boolean().default(true),
  })
  .strict();

/** The metal loop held in the gripper and its handle. */
export const toolSchema = z
  .object({
    /**
     * flange → loop frame: origin at the loop centre, z axis along the loop axis,
     * x axis pointing from the loop centre away from the handle (the handle runs along −x).
     */
    loopPoseFlange: poseSchema,
    /** inner (clear) radius of the loop, m */
    loopInnerRadiusM: positive,
    /** radius of the loop's own wire, m */
    loopWireRadiusM: positive,
    /** handle length from the loop rim to the grasp point, m */
    handleLengthM: nonNegative,
  })
  .strict();

/** The bent wire. */
export const wireSchema = z
  .object({
    /** centreline polyline in the robot base frame, m (≥ 2 points, start first) */
    pointsBase: z.array(vec3Schema).min(2),
    /** wire radius, m */
    wireRadiusM: positive,
    /** arc length from the first point where the game starts, m */
    startMarkM: nonNegative,
    /** arc length from the first point where the game ends, m */
    endMarkM: positive,
    /** number of equally spaced checkpoints between start and end marks (scoring) */
    checkpointCount: z.number().int().positive().default(5),
  })
  .strict()
  .refine((w) => w.endMarkM > w.startMarkM, {
    message: "endMarkM must exceed startMarkM",
    path: ["endMarkM"],
  });

/** The board the wire stands on. */
export const boardSchema = z
  .object({
    /** board centre (top face centre) in the world frame */
    poseWorld: poseSchema,
    /** board size along its x, y, z, m */
    sizeM: vec3Schema,
  })
  .strict();

/**
 * A ChArUco calibration board on the bench (board frame: calibration/board.ts), fixed in the
 * world or carried on the flange. On a real bench the pose is what a procedure solves for (or a
 * nominal value); the simulator draws the board there, so on the sim it is the ground truth.
 */
export const calibrationBoardSchema = z
  .object({
    /** unique name, e.g. "table" or "carried" */
    name: z.string().min(1),
    board: boardSpecSchema,
    mount: z.discriminatedUnion("frame", [
      z
        .object({ frame: z.literal("world"), /** board frame in the world frame */ poseWorld: poseSchema })
        .strict(),
      z
        .object({ frame: z.literal("flange"), /** board frame in the flange frame */ poseFlange: poseSchema })
        .strict(),
    ]),
  })
  .strict();

/** Where a calibration came from: one entry per procedure that wrote into the file. */
export const provenanceSchema = z
  .object({
    /** ISO 8601 date and time the procedure ran */
    date: z.string().min(1),
    /** e.g. "camera:front intrinsics+extrinsics (carried board, 30 poses)" */
    procedure: z.string().min(1),
    /** software that ran it, e.g. "robot-gateway 0.1.0" */
    software: z.string().min(1),
    /** the figures the procedure achieved (units in the names: rmsPx, worstResidualMm …) */
    residuals: z.record(z.string(), z.number()).default({}),
  })
  .strict();

export const calibrationSchema = z
  .object({
    version: z.literal(1),
    /** robot base frame in the world frame */
    robotBasePoseWorld: poseSchema,
    // names are checked on the array itself, so a duplicate is reported together with every
    // other problem of the file (a refinement on the whole object is skipped once any field fails)
    cameras: z
      .array(cameraSchema)
      .superRefine((cams, ctx) => {
        const seen = new Set<string>();
        cams.forEach((cam, i) => {
          if (seen.has(cam.name))
            ctx.addIssue({
              code: "custom",
              message: `duplicate camera name "${cam.name}"`,
              path: [i, "name"],
            });
          seen.add(cam.name);
        });
      })
      .default([]),
    tool: toolSchema,
    wire: wireSchema,
    board: boardSchema,
    /** ChArUco calibration boards on the bench (none unless a calibration session placed them) */
    calibrationBoards: z.array(calibrationBoardSchema).optional(),
    /** the procedures that produced this file, oldest first */
    provenance: z.array(provenanceSchema).optional(),
  })
  .strict();

export type Vec3M = z.infer<typeof vec3Schema>;
export type PoseM = z.infer<typeof poseSchema>;
export type CameraIntrinsics = z.infer<typeof intrinsicsSchema>;
export type CameraExtrinsics = z.infer<typeof extrinsicsSchema>;
export type CameraCalibration = z.infer<typeof cameraSchema>;
export type ToolCalibration = z.infer<typeof toolSchema>;
export type WireCalibration = z.infer<typeof wireSchema>;
export type BoardCalibration = z.infer<typeof boardSchema>;
export type CalibrationBoard = z.infer<typeof calibrationBoardSchema>;
export type Provenance = z.infer<typeof provenanceSchema>;
/** A parsed, validated calibration file. */
export type Calibration = z.infer<typeof calibrationSchema>;
/** The calibration file as written (defaults not yet applied). */
export type CalibrationInput = z.input<typeof calibrationSchema>;

/** Parse and deep-freeze a calibration object; throws a ZodError listing every problem. */
export function parseCalibration(raw: unknown): Calibration {
  return deepFreeze(calibrationSchema.parse(raw));
}

/**
 * Freeze a validated config object and everything inside it (configs are validated once, then
 * frozen). Shared by the calibration, bench and backend config parsers.
 */
export function deepFreeze<T>(o: T): T {
  if (o && typeof o === "object" && !Object.isFrozen(o)) {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
}
