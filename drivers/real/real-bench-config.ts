/**
 * Resource (STYLE.md §1, §9): the `backend:` block of a real bench file. Plain, strictly
 * validated data (unknown keys are errors, every problem reported with its path), frozen after
 * parsing. It reuses the resource schemas of the drivers it composes:
 * - `ros`: drivers/ros2 `RosTransportResourceSchema` (rosbridge URL or native rclnodejs);
 * - `franka`: drivers/ros2 `FrankaRosConfigSchema` (topic / action names default to franka_ros2's);
 * - `contact.type: buzzbox`: drivers/serial `BuzzboxResourceSchema`;
 * - `contact.type: firmata`: drivers/firmata `FirmataContactResourceSchema`.
 *
 * Motion is off unless `allowMotion` is true; the CLI's `--allow-motion` sets it with
 * `withAllowMotion()` after the bench file was parsed (the file alone may also grant it).
 */
import { z } from "zod";
import { deepFreeze, poseSchema } from "../../calibration/schema.ts";
import { FirmataContactResourceSchema } from "../firmata/resource.ts";
import { FrankaRosConfigSchema } from "../ros2/franka-config.ts";
import { RosTransportResourceSchema } from "../ros2/transport-factory.ts";
import { BuzzboxResourceSchema } from "../serial/resource.ts";

const rosName = z
  .string()
  .min(1)
  .transform((s) => (s.startsWith("/") ? s : `/${s}`));

/**
 * One camera served as ROS 2 topics. `frame` and `pose` may be left out when the calibration
 * file has a camera of the same name: its extrinsics are used then.
 */
export const RealCameraResourceSchema = z
  .strictObject({
    /** camera name in the Standard API, e.g. "front" */
    name: z.string().min(1),
    /** image topic, e.g. /front/image_raw/compressed */
    imageTopic: rosName,
    /** compressed → sensor_msgs/CompressedImage (JPEG/PNG); raw → sensor_msgs/Image (rgb8/bgr8/mono8) */
    imageKind: z.enum(["compressed", "raw"]).default("compressed"),
    /** sensor_msgs/CameraInfo topic, e.g. /front/camera_info */
    cameraInfoTopic: rosName,
    /**
     * depth aligned to the colour image, sensor_msgs/Image 16UC1 (mm) or 32FC1 (m), e.g.
     * /camera/front/aligned_depth_to_color/image_raw (realsense2_camera, align_depth.enable);
     * absent: the camera has no depth
     */
    depthTopic: rosName.optional(),
    /** frame the pose is given in: "world" (fixed camera) or "tool" (wrist camera, tool = loop frame) */
    frame: z.enum(["world", "tool"]).optional(),
    /** camera optical frame in `frame` (overrides the calibration file's extrinsics) */
    pose: poseSchema.optional(),
  })
  .superRefine((cam, ctx) => {
    if ((cam.pose === undefined) !== (cam.frame === undefined))
      ctx.addIssue({
        code: "custom",
        message: "give both frame and pose, or neither (then the calibration file's extrinsics are used)",
        path: [cam.pose ? "frame" : "pose"],
      });
  });
export type RealCameraResource = z.output<typeof RealCameraResourceSchema>;

/** Which device senses the buzz-wire circuit. */
export const ContactResourceSchema = z.discriminatedUnion("type", [
  BuzzboxResourceSchema,
  FirmataContactResourceSchema,
  z.strictObject({ type: z.literal("none") }),
]);
export type ContactResource = z.output<typeof ContactResourceSchema>;

export const RealBackendConfigSchema = z.strictObject({
  type: z.literal("real"),
  /** how to reach ROS 2 */
  ros: RosTransportResourceSchema,
  /** franka_ros2 names and driver numbers (defaults: franka_ros2's) */
  franka: FrankaRosConfigSchema.prefault({}),
  /** camera topics; empty = no cameras */
  cameras: z
    .array(RealCameraResourceSchema)
    .superRefine((cams, ctx) => {
      const seen = new Set<string>();
      cams.forEach((cam, i) => {
        if (seen.has(cam.name))
          ctx.addIssue({ code: "custom", message: `duplicate camera name "${cam.name}"`, path: [i, "name"] });
        seen.add(cam.name);
      });
    })
    .default([]),
  /** the buzz-wire contact sensor */
  contact: ContactResourceSchema.prefault({ type: "none" }),
  /** configure() waits this long for every camera's CameraInfo and first frame, s */
  cameraReadyTimeoutS: z.number().positive().default(5),
  /**
   * The allow-motion switch: when false (default) execute() and hold() refuse with
   * RB_ERR_MOTION_DISABLED. The CLI's --allow-motion sets it (withAllowMotion).
   */
  allowMotion: z.boolean().default(false),
});

export type RealBackendConfigInput = z.input<typeof RealBackendConfigSchema>;
export type RealBackendConfig = z.output<typeof RealBackendConfigSchema>;

/** Validate strictly (throws a ZodError listing every problem with its path) and freeze. */
export function parseRealBackendConfig(input: unknown): RealBackendConfig {
  return deepFreeze(RealBackendConfigSchema.parse(input));
}

/** A frozen copy with the allow-motion switch set (for the CLI's --allow-motion). */
export function withAllowMotion(cfg: RealBackendConfig, allowMotion: boolean): RealBackendConfig {
  return deepFreeze({ ...cfg, allowMotion });
}
