/**
 * The Standard API data contract (DESIGN.md §2): zod schemas for every request and response.
 * They are the single source for request validation, TypeScript types and GET /v1/openapi.json.
 * Importable without any hardware or server.
 */
import { z } from "zod";
import { boundedJson } from "./json-bounds.ts";

const finite = z.number();
const vec3 = z.tuple([finite, finite, finite]);
const quat = z.tuple([finite, finite, finite, finite]);

export const PoseSchema = z
  .object({
    xyz: vec3.describe("position, m"),
    quat_xyzw: quat
      .refine((q) => Math.hypot(...q) > 1e-6, "a zero quaternion is no orientation")
      .describe("orientation, unit quaternion x y z w (normalised by the gateway; never zero)"),
  })
  .strict();

export const ErrorResponseSchema = z.object({
  error: z.object({
    code: z.string().describe("RB_ERR_* code, see docs/errors.md"),
    message: z.string(),
    details: z.record(z.string(), z.unknown()),
  }),
});

export const END_REASONS = [
  "success",
  "finished",
  "submitted",
  "time_limit",
  "step_limit",
  "task_failed",
  "safety_stop",
  "fault",
  "aborted",
] as const;
export const EndReasonSchema = z.enum(END_REASONS);
export type EndReason = z.infer<typeof EndReasonSchema>;

export const EpisodeStatusSchema = z.object({
  id: z.string(),
  status: z.enum(["running", "ended"]),
  reason: EndReasonSchema.optional(),
  /** human-readable detail of the end, e.g. the safety cause */
  detail: z.string().optional(),
  realtime: z
    .object({
      slowdown: z.number().describe("S: one control step every S control periods of wall clock"),
      committed_step: z.number().int().describe("control steps handed to the robot so far"),
      queue_rows: z.number().int().describe("control steps queued after the committed step"),
      late_steps: z
        .number()
        .int()
        .describe(
          "steps that could not run on time (sim: late slots skipped; real arm: steps a late splice's controller ran from the old queue)",
        ),
      stood_still_s: z.number().describe("wall seconds the bench stood still because of late steps"),
      hold_steps: z.number().int().describe("steps that held the last target because the queue was empty"),
      late_splices: z
        .number()
        .int()
        .describe("real arm: splices whose trajectory reached the controller after their first step was due"),
    })
    .optional()
    .describe("realtime setting only"),
});

/** Fields every actionable response carries. */
const timed = {
  t: z.number().describe("episode time, s"),
  time_left_s: z.number().describe("seconds left in the episode's time budget"),
};

export const ReadingSchema = z.object({
  t: z.number().describe("episode time of the measurement, s"),
  q: z.array(z.number()).describe("joint positions, rad"),
  dq: z.array(z.number()).describe("joint velocities, rad/s"),
  tau: z
    .array(z.number())
    .optional()
    .describe("measured joint torques, N·m (absent when the backend measures none; see effort)"),
  gripper_width_m: z.number().describe("gripper opening, m"),
  tool: z
    .object({ xyz: vec3.describe("m"), quat_xyzw: quat })
    .optional()
    .describe("tool frame in the robot base frame at q (forward kinematics of the measured joints)"),
  effort: z
    .object({
      source: z
        .enum(["measured", "none"])
        .describe(
          "measured: the backend's joint torque sensors (= tau); none: this backend measures no torque",
        ),
      tau: z.array(z.number()).nullable().describe("joint torques, N·m; null when source is none"),
    })
    .optional()
    .describe("effort estimate: only measured torques; the gateway has no dynamics model to estimate them"),
});
export type ReadingDto = z.infer<typeof ReadingSchema>;

export const FrameRefSchema = z.object({
  camera: z.string(),
  t: z.number().describe("episode time of the exposure, s"),
  rgb: z.string().describe("URL of the image under /v1/frames/"),
  depth: z
    .string()
    .optional()
    .describe("URL of the 16-bit PNG depth image: z-depth along the optical axis in mm, 0 = no return"),
  reading: ReadingSchema.optional().describe(
    "the robot reading nearest the exposure (a wrist camera's pose is tool pose × camera pose)",
  ),
});

export const SensorEventSchema = z.object({
  type: z.string(),
  t: z.number().describe("episode time, s"),
  data: z.record(z.string(), z.unknown()),
});

export const SafetyEventSchema = z.object({
  t: z.number().describe("episode time, s"),
  kind: z.string(),
  message: z.string(),
  details: z.record(z.string(), z.unknown()),
});

export const ClippedEntrySchema = z.object({
  row: z.number().int(),
  column: z.number().int(),
  requested: z.number(),
  applied: z.number(),
});

// ---------------------------------------------------------------- effective limits

const KeepOutCommon = {
  name: z.string(),
  ignore_links: z.array(z.string()).describe("links this volume does not apply to"),
};
export const KeepOutDtoSchema = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("box"),
    ...KeepOutCommon,
    center_m: vec3.describe("box centre, robot base frame, m"),
    half_extents_m: vec3.describe("half extents along the box's own axes, m"),
    quat_xyzw: quat.describe("box orientation in the base frame"),
  }),
  z.object({
    type: z.literal("sphere"),
    ...KeepOutCommon,
    center_m: vec3.describe("robot base frame, m"),
    radius_m: z.number(),
  }),
  z.object({
    type: z.literal("capsule"),
    ...KeepOutCommon,
    a_m: vec3.describe("segment end, robot base frame, m"),
    b_m: vec3.describe("segment end, robot base frame, m"),
    radius_m: z.number(),
  }),
]);

export const EffectiveLimitsSchema = z
  .object({
    profile: z.object({
      bench: z.string().describe("bench whose safety profile this is"),
      limits_sha256: z.string().describe("sha256 of the resolved limits, as in result.json provenance"),
    }),
    joints: z
      .array(
        z.object({
          name: z.string(),
          lower: z.number().describe("commanded position band (published limit + margin), rad"),
          upper: z.number().describe("rad"),
          max_velocity: z.number().describe("rad/s"),
          max_acceleration: z.number().describe("rad/s²"),
          max_jerk: z.number().describe("rad/s³"),
        }),
      )
      .describe("what the pre-check refuses beyond (a chunk above any of these moves nothing)"),
    max_tool_speed_m_s: z.number().describe("translational speed of the tool point"),
    gripper: z.object({ max_speed_m_s: z.number(), max_force_n: z.number() }),
    workspace: z
      .object({ min_m: vec3, max_m: vec3 })
      .describe("axis-aligned box, base frame: the tool point and every link capsule stay inside"),
    keep_out: z
      .array(KeepOutDtoSchema)
      .describe("volumes neither the tool point nor any link capsule may enter (the visible ones)"),
    max_chunk_duration_s: z.number(),
  })
  .describe("the limits the safety supervisor enforces (fractions of the published robot limits)");
export type EffectiveLimitsDto = z.infer<typeof EffectiveLimitsSchema>;

// ---------------------------------------------------------------- task card

export const BudgetsSchema = z.object({
  time_limit_s: z.number(),
  resets: z.number().int(),
  max_rows_per_chunk: z.number().int(),
  max_frames_per_call: z.number().int(),
  max_call_s: z.number(),
  max_steps: z.number().int().optional().describe("max motion calls (act/observe with advance) per episode"),
});

export const TaskCardSchema = z.object({
  task_id: z.string(),
  title: z.string(),
  instruction: z.string().describe("markdown"),
  setting: z.enum(["standard", "realtime"]),
  level: z.string(),
  actions: z.array(z.string()).describe("action types open at this level"),
  budgets: BudgetsSchema,
  submission: z.record(z.string(), z.unknown()).optional().describe("JSON schema of the answer, if any"),
  instruments: z.array(z.string()).optional(),
  safety: EffectiveLimitsSchema.describe(
    "this episode's enforced limits: the bench profile plus the volumes of the bench furniture (table, board)",
  ),
  bench: z
    .record(z.string(), z.unknown())
    .optional()
    .describe("what a player can see on the bench (task-specific; listed in the instruction)"),
  realtime: z
    .object({
      drive: z
        .enum(["stepped", "streamed"])
        .describe(
          "stepped: the simulator runs each due step; streamed: a real arm's controller gets the queue ahead of time (S = 1)",
        ),
      slowdown: z.number().describe("S: one control step every S control periods of wall clock"),
      control_period_s: z.number(),
      margin_steps: z
        .number()
        .int()
        .describe(
          "a splice starts at least this many steps after the committed step or the step due by the wall clock, whichever is later (stepped drive: 0, the first step neither committed nor due)",
        ),
      horizon_steps: z
        .number()
        .int()
        .describe("a splice starts at most this many steps after the committed step"),
      late_tolerance_s: z
        .number()
        .optional()
        .describe(
          "stepped drive: a step that cannot start within this of its slot is late (skipped, counted)",
        ),
      command_gap_s: z
        .number()
        .describe("empty queue and no chunk for this long: hold, then a watchdog stop"),
      measured_speed: z.number().optional().describe("sim seconds per wall second measured at the start"),
    })
    .optional()
    .describe("realtime setting only"),
  episode: EpisodeStatusSchema,
});

// ---------------------------------------------------------------- spec

export const JointLimitSchema = z.object({
  name: z.string(),
  lower: z.number().describe("rad"),
  upper: z.number().describe("rad"),
  max_velocity: z.number().describe("rad/s"),
  max_acceleration: z.number().describe("rad/s²"),
  max_jerk: z.number().describe("rad/s³"),
  max_effort: z.number().describe("N·m"),
});

export const RobotSpecSchema = z.object({
  id: z.string(),
  model: z.string(),
  dof: z.number().int(),
  joints: z.array(JointLimitSchema),
  gripper: z.object({ min_width_m: z.number(), max_width_m: z.number(), max_speed_m_s: z.number() }),
  cartesian: z.object({
    max_linear_velocity_m_s: z.number(),
    max_angular_velocity_rad_s: z.number(),
    max_linear_acceleration_m_s2: z.number(),
    max_linear_jerk_m_s3: z.number(),
  }),
});

export const ActionSpecSchema = z.object({
  type: z.string(),
  columns: z.array(z.string()),
  units: z.array(z.string()),
  commands: z.array(z.string()).optional().describe("jog only: the command words"),
  step_sizes: z.record(z.string(), z.number()).optional().describe("jog only: m or rad per command"),
  frame: z.string().optional().describe("jog only: the frame the commands move in"),
  pivot: z.string().optional().describe("jog only: the point rotations turn about"),
  min_dt_s: z
    .number()
    .describe(
      "smallest dt of a row (one command per row for jog): one control period; dt is a whole multiple",
    ),
});

export const CameraSpecSchema = z.object({
  name: z.string(),
  width: z.number().int(),
  height: z.number().int(),
  fx: z.number(),
  fy: z.number(),
  cx: z.number(),
  cy: z.number(),
  distortion: z.array(z.number()),
  frame: z.enum(["world", "tool"]),
  pose: PoseSchema,
  depth: z.boolean(),
});

export const SpecSchema = z.object({
  protocol: z.literal("robot-gateway/1"),
  robot: RobotSpecSchema.extend({
    tool_frames: z.array(z.object({ name: z.string(), parent: z.string(), pose: PoseSchema })),
    base_pose: PoseSchema.describe("robot base in the world frame"),
  }),
  control: z.object({
    control_period_s: z.number(),
    max_dt_s: z.number(),
    actions: z.array(ActionSpecSchema),
  }),
  readings: z.object({ columns: z.array(z.string()) }),
  safety: EffectiveLimitsSchema.describe(
    "the bench profile's enforced limits (episode-specific volumes: GET /v1/task safety)",
  ),
  cameras: z.array(CameraSpecSchema),
  world: z.object({
    frame: z.string(),
    units: z.string(),
    quaternion_order: z.literal("xyzw"),
    camera_convention: z.string(),
    depth_convention: z.string(),
  }),
  supported_robots: z
    .array(RobotSpecSchema)
    .describe("published limits of every robot model this gateway drives"),
  video: z
    .object({
      available: z.boolean().describe("act's frames.video works (ffmpeg with libx264 was found)"),
      container: z.literal("mp4"),
      content_type: z.literal("video/mp4"),
      codec: z.literal("h264"),
      pix_fmt: z.literal("yuv420p"),
      reason: z.string().optional().describe("why not, when unavailable"),
    })
    .describe("video of an act call's execution (frames.video)"),
});
export type SpecDto = z.infer<typeof SpecSchema>;

// ---------------------------------------------------------------- observe

export const ObserveRequestSchema = z
  .object({
    advance_s: z.number().min(0).default(0).describe("hold the last command this long first, s"),
    cameras: z
      .array(z.string().max(100))
      .max(64)
      .optional()
      .describe("camera names; all when omitted, none (no image) when empty"),
    depth: z.boolean().default(false),
    encoding: z.enum(["jpeg", "png"]).default("jpeg"),
  })
  .strict();
export type ObserveRequest = z.infer<typeof ObserveRequestSchema>;

export const ObserveResponseSchema = z.object({
  ...timed,
  observation_id: z.string(),
  readings: z.array(ReadingSchema),
  frames: z.array(FrameRefSchema),
  events: z.array(SensorEventSchema),
  safety: z.array(SafetyEventSchema),
  episode: EpisodeStatusSchema,
});

// ---------------------------------------------------------------- act

export const ActRequestSchema = z
  .object({
    type: z.string().describe("action type, see GET /v1/spec control.actions"),
    dt: z.number().describe("seconds between rows; a whole multiple of control_period_s"),
    rows: z.array(z.array(z.unknown())).describe("one row per dt; columns per action type"),
    frames: z
      .object({
        fps: z
          .number()
          .min(0.1)
          .max(60)
          .describe("frames per second of episode time, 0.1…60 (one frame per 10 s at least)"),
        cameras: z
          .array(z.string().max(100))
          .max(64)
          .optional()
          .describe("camera names; all when omitted, none when empty"),
        depth: z.boolean().default(false),
        encoding: z.enum(["jpeg", "png"]).default("jpeg"),
        video: z
          .boolean()
          .default(false)
          .describe(
            "also return the execution as one MP4 (H.264, yuv420p) per camera, of the same frames as the stills; GET /v1/spec video says whether this gateway can",
          ),
      })
      .strict()
      .optional(),
    start_step: z.number().int().min(0).optional().describe("realtime setting only"),
  })
  .strict();
export type ActRequest = z.infer<typeof ActRequestSchema>;

export const VideoRefSchema = z.object({
  camera: z.string(),
  url: z.string().describe("URL of the file under /v1/frames/ (agent token), content type video/mp4"),
  content_type: z.literal("video/mp4"),
  container: z.literal("mp4").describe("MP4 with the index first (faststart)"),
  codec: z.literal("h264"),
  pix_fmt: z.literal("yuv420p"),
  width: z.number().int().describe("px (an odd camera size is padded by one pixel to even)"),
  height: z.number().int().describe("px"),
  fps: z.number().describe("frames per second of EPISODE time (one frame every k control periods)"),
  frames: z.number().int().describe("frame count: the same frames as the stills of this camera"),
  duration_s: z.number().describe("frames / fps, episode seconds"),
  t_start: z.number().describe("episode time of the first frame, s"),
  bytes: z.number().int().describe("size of the file"),
});

const ErrorBodySchema = ErrorResponseSchema.shape.error;

export const ActResponseSchema = z.object({
  ...timed,
  executed_rows: z.number().int(),
  clipped: z.array(ClippedEntrySchema),
  readings: z.array(ReadingSchema).describe("one reading at the end of every executed row"),
  frames: z.array(FrameRefSchema),
  events: z.array(SensorEventSchema),
  safety: z.array(SafetyEventSchema),
  robot_errors: z.array(z.string()),
  start_step: z.number().int().optional().describe("realtime: the control step the chunk starts at"),
  videos: z
    .array(VideoRefSchema)
    .optional()
    .describe("frames.video: one MP4 per camera with frames (absent when video was not asked for)"),
  video_error: ErrorBodySchema.optional().describe(
    "frames.video: the encode failed after the chunk ran (RB_ERR_VIDEO_ENCODE); the rest of the response stands",
  ),
  episode: EpisodeStatusSchema,
});

// ---------------------------------------------------------------- instruments

export const InstrumentResponseSchema = z.object({
  ...timed,
  observation_id: z.string().describe("cite it as evidence"),
  name: z.string(),
  readings: z
    .array(z.record(z.string(), z.number()))
    .describe("every reading so far: t (episode s) and the instrument's values"),
});

// ---------------------------------------------------------------- kinematics

export const FkRequestSchema = z.object({ q: z.array(z.number()) }).strict();
export const FkResponseSchema = z.object({
  ...timed,
  tool: PoseSchema,
  flange: PoseSchema,
});

export const IkRequestSchema = z
  .object({
    pose: PoseSchema.describe("tool pose in the base frame"),
    q_seed: z.array(z.number()).optional(),
  })
  .strict();
export const IkResponseSchema = z.object({
  ...timed,
  q: z.array(z.number()),
  position_residual_m: z.number(),
  orientation_residual_rad: z.number(),
});

// ---------------------------------------------------------------- episode end / submit / reset

export const EpisodeResponseSchema = z.object({ ...timed, episode: EpisodeStatusSchema });

export const SubmitRequestSchema = z
  .object({
    answer: boundedJson({ maxDepth: 16, maxBytes: 64 * 1024 }),
    evidence: z.array(z.string()).describe("observation_ids that support the answer"),
  })
  .strict();

export const EmptyBodySchema = z.strictObject({}).nullish().describe("no body, or an empty object");

// ---------------------------------------------------------------- operator

export const StartEpisodeRequestSchema = z
  .object({
    task: z.string().optional(),
    seed: z.number().int().min(0).optional(),
    setting: z.enum(["standard", "realtime"]).default("standard"),
    level: z.string().optional(),
    privileged: z.boolean().default(false).describe("sim only: allow privileged operator calls"),
  })
  .strict();
export type StartEpisodeRequest = z.infer<typeof StartEpisodeRequestSchema>;

export const EpisodeSummarySchema = z.object({
  id: z.string(),
  task: z.string(),
  seed: z.number(),
  setting: z.string(),
  level: z.string(),
  status: z.enum(["running", "ended"]),
  reason: EndReasonSchema.optional(),
  detail: z.string().optional(),
  t: z.number(),
  steps: z.number().int(),
  resets_used: z.number().int(),
  started_at: z.string().describe("ISO wall-clock time"),
  result: z.record(z.string(), z.unknown()).optional(),
  record_path: z.string().optional(),
});

export const EstopRequestSchema = z.object({ reason: z.string().max(500).default("operator") }).strict();
