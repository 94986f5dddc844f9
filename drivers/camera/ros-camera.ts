/**
 * Driver: camera frames from ROS 2 image topics (capability: CameraSource).
 *
 * - `sensor_msgs/CompressedImage` (JPEG or PNG) passes through as encoded ImageData;
 * - `sensor_msgs/Image` in rgb8, bgr8 or mono8 becomes raw RGB;
 * - `sensor_msgs/CameraInfo` gives width, height, K (fx fy cx cy) and D → CameraDescription
 *   (the pose comes from calibration and is passed in with the camera's resource);
 * - depth, when the resource names a depth topic: `sensor_msgs/Image` aligned to the colour image
 *   as an RGB-D driver publishes it (realsense2_camera with align_depth:
 *   `<ns>/aligned_depth_to_color/image_raw`), REP 118 units: `16UC1` in millimetres or `32FC1`
 *   in metres, 0 / NaN = no return. It becomes the seam's `depthMm` (0 = no return); the colour
 *   camera's CameraInfo is its model (a depth image of another size is refused).
 * The latest frame per camera is kept, its header stamp mapped to gateway time with the
 * StampClock shared with the arm. capture() pairs each frame with the joint reading nearest
 * in time (from a JointHistory the arm driver feeds).
 */
import type { Pose } from "../../robots/math.ts";
import type { CameraDescription, Frame, ImageData, JointReading } from "../../seam/types.ts";
import { DeviceError } from "../errors.ts";
import {
  bytesOf,
  type CameraInfoMsg,
  type CompressedImageMsg,
  type ImageMsg,
  timeToS,
} from "../ros2/messages.ts";
import { StampClock } from "../ros2/stamp-clock.ts";
import type { RosTransport, Unsubscribe } from "../ros2/transport.ts";

/** Resource: one camera's topics and its calibrated mounting. */
export interface RosCameraResource {
  name: string;
  /** image topic, e.g. "/camera/color/image_raw/compressed" or "/camera/color/image_raw" */
  imageTopic: string;
  /** "compressed" → sensor_msgs/CompressedImage, "raw" → sensor_msgs/Image */
  imageKind: "compressed" | "raw";
  /** e.g. "/camera/color/camera_info" */
  cameraInfoTopic: string;
  /**
   * depth aligned to the colour image (sensor_msgs/Image, 16UC1 mm or 32FC1 m), e.g.
   * "/camera/camera/aligned_depth_to_color/image_raw"; absent: the camera has no depth
   */
  depthTopic?: string;
  /** frame the pose is given in (from calibration) */
  frame: "world" | "tool";
  /** camera optical frame in `frame` (from calibration) */
  pose: Pose;
  /**
   * the intrinsics the calibration file holds for this camera (its extrinsics were solved with
   * them): the camera's CameraInfo must agree, else RB_ERR_ROS_CAMERA_INFO_MISMATCH
   */
  calibratedIntrinsics?: CalibratedIntrinsics;
}

/** The calibration file's pinhole intrinsics (calibration/schema.ts `intrinsics`), px. */
export interface CalibratedIntrinsics {
  widthPx: number;
  heightPx: number;
  fxPx: number;
  fyPx: number;
  cxPx: number;
  cyPx: number;
}

/** relative tolerance of focal lengths, and of the principal point as a share of the image size */
export const INTRINSICS_TOLERANCE = 0.05;

/**
 * Where a CameraInfo disagrees with the calibration's intrinsics ("" when it agrees): the image
 * size exactly, fx/fy within 5 %, cx/cy within 5 % of the width/height.
 */
export function intrinsicsMismatch(info: CameraInfoMsg, cal: CalibratedIntrinsics): string {
  const out: string[] = [];
  if (info.width !== cal.widthPx || info.height !== cal.heightPx)
    out.push(`size ${info.width}×${info.height} vs ${cal.widthPx}×${cal.heightPx}`);
  const rel = (name: string, got: number, want: number, scale: number) => {
    if (!(Math.abs(got - want) <= INTRINSICS_TOLERANCE * scale)) out.push(`${name} ${got} vs ${want}`);
  };
  rel("fx", info.k[0] ?? Number.NaN, cal.fxPx, Math.abs(cal.fxPx));
  rel("fy", info.k[4] ?? Number.NaN, cal.fyPx, Math.abs(cal.fyPx));
  rel("cx", info.k[2] ?? Number.NaN, cal.cxPx, cal.widthPx);
  rel("cy", info.k[5] ?? Number.NaN, cal.cyPx, cal.heightPx);
  return out.join(", ");
}

/** A frame with the joint reading nearest to its exposure time. */
export interface AlignedFrame extends Frame {
  /** header stamp of the image message, ROS seconds */
  stampS: number;
  /** gateway time at which the message arrived, s */
  receivedT: number;
  /** joint reading nearest in time to `t` (absent when none is known) */
  reading?: JointReading;
}

/** Ring buffer of recent joint readings for time alignment. */
export class JointHistory {
  private readonly buf: (JointReading | undefined)[];
  private head = 0;
  private size = 0;
  constructor(capacity = 2048) {
    this.buf = new Array(capacity);
  }
  /** add a reading (readings arrive in time order); allocation-free */
  push(r: JointReading): void {
    this.buf[this.head] = r;
    this.head = (this.head + 1) % this.buf.length;
    if (this.size < this.buf.length) this.size++;
  }
  /** the reading nearest to gateway time `t` */
  nearest(t: number): JointReading | undefined {
    let best: JointReading | undefined;
    let bestD = Number.POSITIVE_INFINITY;
    for (let i = 0; i < this.size; i++) {
      const r = this.buf[(this.head - 1 - i + this.buf.length) % this.buf.length]!;
      const d = Math.abs(r.t - t);
      if (d < bestD) {
        bestD = d;
        best = r;
      } else if (r.t < t) break; // going further back only gets worse
    }
    return best;
  }
}

export interface RosCameraSourceOptions {
  transport: RosTransport;
  cameras: readonly RosCameraResource[];
  /** gateway monotonic clock, s */
  now: () => number;
  /** share the arm driver's StampClock when both are stamped by the same machine */
  stampClock?: StampClock;
  /** joint readings for alignment (feed it from FrankaArmDriver.onReading) */
  history?: JointHistory;
}

interface CameraSlot {
  res: RosCameraResource;
  info?: CameraInfoMsg;
  /** how the latest CameraInfo disagrees with the calibration ("" = agrees) */
  mismatch: string;
  frame?: AlignedFrame;
  /** the latest depth images, oldest first (capture pairs the one nearest the colour frame) */
  depths: DepthSample[];
  waiters: (() => void)[];
}

interface DepthSample {
  /** gateway time of the exposure */
  t: number;
  depthMm: NonNullable<Frame["depthMm"]>;
}

/** depth images kept per camera */
const DEPTH_KEEP = 4;

/** ROS 2 interface names of the camera topics */
export const ROS_CAMERA_TYPES = {
  compressed: "sensor_msgs/msg/CompressedImage",
  raw: "sensor_msgs/msg/Image",
  info: "sensor_msgs/msg/CameraInfo",
} as const;
const TYPES = ROS_CAMERA_TYPES;

export class RosCameraSource {
  readonly stampClock: StampClock;
  readonly history: JointHistory;
  private readonly slots = new Map<string, CameraSlot>();
  private readonly subs: Unsubscribe[] = [];
  private readonly errorListeners = new Set<(e: DeviceError) => void>();

  constructor(private readonly opts: RosCameraSourceOptions) {
    this.stampClock = opts.stampClock ?? new StampClock(opts.now);
    this.history = opts.history ?? new JointHistory();
    for (const res of opts.cameras) this.slots.set(res.name, { res, mismatch: "", depths: [], waiters: [] });
  }

  /** subscribe to every camera's image and info topics (connects the transport if needed) */
  async configure(): Promise<void> {
    await this.opts.transport.connect();
    for (const slot of this.slots.values()) {
      const { res } = slot;
      this.subs.push(
        this.opts.transport.subscribe<CameraInfoMsg>(res.cameraInfoTopic, TYPES.info, (m) =>
          this.storeInfo(slot, m),
        ),
        res.imageKind === "compressed"
          ? this.opts.transport.subscribe<CompressedImageMsg>(res.imageTopic, TYPES.compressed, (m) =>
              this.store(slot, m.header.stamp, () => decodeCompressed(res.name, m, slot.info)),
            )
          : this.opts.transport.subscribe<ImageMsg>(res.imageTopic, TYPES.raw, (m) =>
              this.store(slot, m.header.stamp, () => decodeRaw(res.name, m)),
            ),
      );
      const depthTopic = res.depthTopic;
      if (depthTopic)
        this.subs.push(
          this.opts.transport.subscribe<ImageMsg>(depthTopic, TYPES.raw, (m) => this.storeDepth(slot, m)),
        );
    }
  }

  /** remove the subscriptions */
  async shutdown(): Promise<void> {
    for (const u of this.subs.splice(0)) u();
  }

  /** decoding problems (e.g. an unsupported encoding) */
  onError(listener: (e: DeviceError) => void): Unsubscribe {
    this.errorListeners.add(listener);
    return () => this.errorListeners.delete(listener);
  }

  /**
   * Wait until every camera has delivered CameraInfo and one frame; then refuses
   * (RB_ERR_ROS_CAMERA_INFO_MISMATCH) when a camera's CameraInfo disagrees with the calibration's
   * intrinsics: its images would be paired with extrinsics solved for another camera model.
   */
  async waitReady(timeoutS = 5): Promise<void> {
    await this.waitFrames(timeoutS);
    for (const slot of this.slots.values()) if (slot.mismatch) throw this.mismatchError(slot);
  }

  private mismatchError(slot: CameraSlot): DeviceError {
    return new DeviceError("RB_ERR_ROS_CAMERA_INFO_MISMATCH", {
      camera: slot.res.name,
      topic: slot.res.cameraInfoTopic,
      mismatch: slot.mismatch,
    });
  }

  /** A CameraInfo that starts to disagree with the calibration is reported (once) to onError. */
  private storeInfo(slot: CameraSlot, m: CameraInfoMsg): void {
    slot.info = m;
    const cal = slot.res.calibratedIntrinsics;
    const was = slot.mismatch;
    slot.mismatch = cal ? intrinsicsMismatch(m, cal) : "";
    if (slot.mismatch && !was) {
      const err = this.mismatchError(slot);
      for (const l of this.errorListeners) l(err);
    }
  }

  private async waitFrames(timeoutS: number): Promise<void> {
    const deadline = Date.now() + timeoutS * 1000;
    for (const slot of this.slots.values()) {
      const noDepth = () => slot.res.depthTopic !== undefined && slot.depths.length === 0;
      while (!slot.info || !slot.frame || noDepth()) {
        if (Date.now() > deadline) {
          throw new DeviceError("RB_ERR_ROS_NO_FRAME", {
            camera: slot.res.name,
            topic: slot.info && slot.frame ? slot.res.depthTopic! : slot.res.imageTopic,
          });
        }
        // woken by the next frame or after 20 ms; either way the other wake-up is withdrawn,
        // so a camera that stays silent does not pile up waiters and timers
        await new Promise<void>((resolve) => {
          const wake = () => {
            clearTimeout(timer);
            const i = slot.waiters.indexOf(wake);
            if (i >= 0) slot.waiters.splice(i, 1);
            resolve();
          };
          const timer = setTimeout(wake, 20);
          slot.waiters.push(wake);
        });
      }
    }
  }

  /** CameraDescriptions from the latest CameraInfo (cameras without one are left out) */
  describe(): CameraDescription[] {
    const out: CameraDescription[] = [];
    for (const { res, info } of this.slots.values()) {
      if (!info) continue;
      out.push({
        name: res.name,
        width: info.width,
        height: info.height,
        fx: info.k[0]!,
        fy: info.k[4]!,
        cx: info.k[2]!,
        cy: info.k[5]!,
        distortion: [0, 1, 2, 3, 4].map((i) => info.d[i] ?? 0),
        frame: res.frame,
        pose: res.pose,
        depth: res.depthTopic !== undefined,
      });
    }
    return out;
  }

  /** latest frame of one camera, or undefined; with `depth`, the depth image nearest to it added (when there is one) */
  latest(camera: string, depth = false): AlignedFrame | undefined {
    const slot = this.slot(camera);
    const f = slot.frame;
    if (!f || !depth || !slot.res.depthTopic) return f;
    const d = nearestDepth(slot.depths, f.t);
    return d ? { ...f, depthMm: d.depthMm } : f;
  }

  /**
   * The latest frame of each named camera (all when empty), each with the joint reading
   * nearest to its exposure time; with `depth`, a camera with a depth topic adds the depth image
   * nearest in time to that frame (cameras without one deliver colour only: the gateway refuses
   * depth from them by name, RB_ERR_NO_DEPTH).
   */
  async capture(
    cameras: readonly string[],
    opts: { depth: boolean } = { depth: false },
  ): Promise<AlignedFrame[]> {
    const names = cameras.length > 0 ? cameras : [...this.slots.keys()];
    return names.map((name) => {
      const slot = this.slot(name);
      const f = slot.frame;
      if (!f) throw new DeviceError("RB_ERR_ROS_NO_FRAME", { camera: name, topic: slot.res.imageTopic });
      const reading = this.history.nearest(f.t);
      const out: AlignedFrame = reading ? { ...f, reading } : { ...f };
      if (opts.depth && slot.res.depthTopic) {
        const d = nearestDepth(slot.depths, f.t);
        if (!d) throw new DeviceError("RB_ERR_ROS_NO_FRAME", { camera: name, topic: slot.res.depthTopic });
        out.depthMm = d.depthMm;
      }
      return out;
    });
  }

  /**
   * A depth image aligned to the colour image: decoded (16UC1 mm / 32FC1 m → mm), checked against
   * the colour CameraInfo's size, kept with its stamp mapped to gateway time.
   */
  private storeDepth(slot: CameraSlot, m: ImageMsg): void {
    const topic = slot.res.depthTopic!;
    let depthMm: DepthSample["depthMm"];
    try {
      depthMm = decodeDepth(slot.res.name, m);
      const info = slot.info;
      if (info && (info.width !== m.width || info.height !== m.height))
        throw new DeviceError("RB_ERR_ROS_DEPTH_NOT_ALIGNED", {
          camera: slot.res.name,
          topic,
          size: `${m.width}×${m.height}`,
          colour: `${info.width}×${info.height}`,
        });
    } catch (e) {
      if (e instanceof DeviceError) for (const l of this.errorListeners) l(e);
      return;
    }
    slot.depths.push({ t: this.stampClock.observe(timeToS(m.header.stamp)), depthMm });
    if (slot.depths.length > DEPTH_KEEP) slot.depths.shift();
    for (const w of slot.waiters.splice(0)) w();
  }

  private slot(camera: string): CameraSlot {
    const s = this.slots.get(camera);
    if (!s) throw new DeviceError("RB_ERR_UNKNOWN_CAMERA", { camera, cameras: [...this.slots.keys()] });
    return s;
  }

  private store(slot: CameraSlot, stamp: { sec: number; nanosec: number }, decode: () => ImageData): void {
    let rgb: ImageData;
    try {
      rgb = decode();
    } catch (e) {
      if (e instanceof DeviceError) for (const l of this.errorListeners) l(e);
      return;
    }
    const stampS = timeToS(stamp);
    slot.frame = {
      camera: slot.res.name,
      t: this.stampClock.observe(stampS),
      rgb,
      stampS,
      receivedT: this.opts.now(),
    };
    for (const w of slot.waiters.splice(0)) w();
  }
}

/** CompressedImage → encoded ImageData (size from CameraInfo, else from the JPEG/PNG header). */
export function decodeCompressed(camera: string, m: CompressedImageMsg, info?: CameraInfoMsg): ImageData {
  const data = bytesOf(m.data);
  const fmt = m.format.toLowerCase();
  const format =
    fmt.includes("jpeg") || fmt.includes("jpg") ? "jpeg" : fmt.includes("png") ? "png" : undefined;
  if (!format) throw new DeviceError("RB_ERR_ROS_CAMERA_ENCODING", { camera, encoding: m.format });
  const size = (format === "jpeg" ? jpegSize(data) : pngSize(data)) ?? {
    width: info?.width ?? 0,
    height: info?.height ?? 0,
  };
  return { kind: "encoded", format, width: size.width, height: size.height, data };
}

/** Image (rgb8 / bgr8 / mono8) → raw RGB ImageData. */
export function decodeRaw(camera: string, m: ImageMsg): ImageData {
  const src = bytesOf(m.data);
  const { width, height } = m;
  const out = new Uint8Array(width * height * 3);
  const enc = m.encoding.toLowerCase();
  const step = m.step || width * (enc === "mono8" ? 1 : 3);
  if (enc === "rgb8" || enc === "bgr8") {
    const swap = enc === "bgr8";
    for (let y = 0; y < height; y++) {
      let s = y * step;
      let d = y * width * 3;
      for (let x = 0; x < width; x++, s += 3, d += 3) {
        out[d] = src[swap ? s + 2 : s]!;
        out[d + 1] = src[s + 1]!;
        out[d + 2] = src[swap ? s : s + 2]!;
      }
    }
  } else if (enc === "mono8") {
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const v = src[y * step + x]!;
        const d = (y * width + x) * 3;
        out[d] = v;
        out[d + 1] = v;
        out[d + 2] = v;
      }
    }
  } else {
    throw new DeviceError("RB_ERR_ROS_CAMERA_ENCODING", { camera, encoding: m.encoding });
  }
  return { kind: "raw", width, height, channels: 3, data: out };
}

/** the depth sample nearest to gateway time `t` */
function nearestDepth(depths: readonly DepthSample[], t: number): DepthSample | undefined {
  let best: DepthSample | undefined;
  for (const d of depths) if (!best || Math.abs(d.t - t) < Math.abs(best.t - t)) best = d;
  return best;
}

/** largest depth a 16-bit millimetre image holds, m */
const MAX_DEPTH_M = 65.535;

/**
 * Depth Image → millimetres, 0 = no return (REP 118): `16UC1` (or `mono16`) is millimetres as
 * published; `32FC1` is metres (NaN, ±∞, ≤ 0 or beyond 65.535 m → 0). Honours the row step and
 * the byte order.
 */
export function decodeDepth(camera: string, m: ImageMsg): NonNullable<Frame["depthMm"]> {
  const src = bytesOf(m.data);
  const { width, height } = m;
  const enc = m.encoding.toUpperCase();
  const out = new Uint16Array(width * height);
  const view = new DataView(src.buffer, src.byteOffset, src.byteLength);
  const little = !m.is_bigendian;
  if (enc === "16UC1" || enc === "MONO16") {
    const step = m.step || width * 2;
    for (let y = 0; y < height; y++)
      for (let x = 0; x < width; x++) out[y * width + x] = view.getUint16(y * step + x * 2, little);
  } else if (enc === "32FC1") {
    const step = m.step || width * 4;
    for (let y = 0; y < height; y++)
      for (let x = 0; x < width; x++) {
        const zM = view.getFloat32(y * step + x * 4, little);
        out[y * width + x] = zM > 0 && zM <= MAX_DEPTH_M ? Math.round(zM * 1000) : 0;
      }
  } else {
    throw new DeviceError("RB_ERR_ROS_CAMERA_ENCODING", { camera, encoding: m.encoding });
  }
  return { width, height, data: out };
}

/** width/height from a JPEG's SOF marker, or undefined */
export function jpegSize(d: Uint8Array): { width: number; height: number } | undefined {
  if (d[0] !== 0xff || d[1] !== 0xd8) return undefined;
  let i = 2;
  while (i + 9 < d.length) {
    if (d[i] !== 0xff) return undefined;
    const marker = d[i + 1]!;
    const len = (d[i + 2]! << 8) | d[i + 3]!;
    const isSof = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (isSof) return { height: (d[i + 5]! << 8) | d[i + 6]!, width: (d[i + 7]! << 8) | d[i + 8]! };
    i += 2 + len;
  }
  return undefined;
}

/** width/height from a PNG's IHDR, or undefined */
export function pngSize(d: Uint8Array): { width: number; height: number } | undefined {
  if (d.length < 24 || d[0] !== 0x89 || d[1] !== 0x50) return undefined;
  const v = new DataView(d.buffer, d.byteOffset, d.byteLength);
  return { width: v.getUint32(16), height: v.getUint32(20) };
}
