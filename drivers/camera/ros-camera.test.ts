import { describe, expect, it } from "vitest";
import sharp from "sharp";
import { MemoryRosGraph, MemoryRosTransport } from "../ros2/memory-transport.ts";
import { bytesToBase64 } from "../ros2/messages.ts";
import {
  decodeDepth,
  decodeRaw,
  intrinsicsMismatch,
  JointHistory,
  jpegSize,
  RosCameraSource,
} from "./ros-camera.ts";

const header = (sec: number) => ({ stamp: { sec, nanosec: 0 }, frame_id: "cam" });

describe("raw image conversion", () => {
  it("bgr8 swaps to RGB, honours the row step; mono8 replicates", () => {
    // 2×1 image, step 8 (2 padding bytes)
    const bgr = Uint8Array.from([1, 2, 3, 4, 5, 6, 0, 0]);
    const out = decodeRaw("c", {
      header: header(0),
      width: 2,
      height: 1,
      encoding: "bgr8",
      is_bigendian: 0,
      step: 8,
      data: bytesToBase64(bgr),
    });
    expect(out.kind === "raw" && Array.from(out.data)).toEqual([3, 2, 1, 6, 5, 4]);
    const mono = decodeRaw("c", {
      header: header(0),
      width: 2,
      height: 1,
      encoding: "mono8",
      is_bigendian: 0,
      step: 2,
      data: [7, 9],
    });
    expect(out.kind === "raw" && mono.kind === "raw" && Array.from(mono.data)).toEqual([7, 7, 7, 9, 9, 9]);
    expect(() =>
      decodeRaw("c", {
        header: header(0),
        width: 1,
        height: 1,
        encoding: "16UC1",
        is_bigendian: 0,
        step: 2,
        data: [0, 0],
      }),
    ).toThrow(/RB_ERR_ROS_CAMERA_ENCODING|unsupported image encoding/);
  });

  it("reads JPEG size from the SOF marker", async () => {
    const jpg = await sharp({ create: { width: 33, height: 17, channels: 3, background: "#808080" } })
      .jpeg()
      .toBuffer();
    expect(jpegSize(new Uint8Array(jpg))).toEqual({ width: 33, height: 17 });
  });
});

describe("RosCameraSource on the memory transport", () => {
  it("keeps the latest raw frame, maps its stamp, pairs the nearest reading", async () => {
    const g = new MemoryRosGraph();
    let nowS = 100;
    const history = new JointHistory(8);
    for (let i = 0; i < 10; i++) history.push({ t: 99 + i * 0.1, q: [i], dq: [0], gripperWidthM: 0 });
    const cam = new RosCameraSource({
      transport: new MemoryRosTransport(g),
      now: () => nowS,
      history,
      cameras: [
        {
          name: "wrist",
          imageTopic: "/wrist/image_raw",
          imageKind: "raw",
          cameraInfoTopic: "/wrist/camera_info",
          frame: "tool",
          pose: { xyz: [0, 0, 0], quat_xyzw: [0, 0, 0, 1] },
        },
      ],
    });
    await cam.configure();
    await expect(cam.capture([])).rejects.toMatchObject({ code: "RB_ERR_ROS_NO_FRAME" });
    g.publish("/wrist/camera_info", {
      header: header(50),
      width: 2,
      height: 1,
      distortion_model: "plumb_bob",
      d: [0.1],
      k: [10, 0, 1, 0, 11, 0.5, 0, 0, 1],
      r: [],
      p: [],
    });
    g.publish("/wrist/image_raw", {
      header: header(50),
      width: 2,
      height: 1,
      encoding: "rgb8",
      is_bigendian: 0,
      step: 6,
      data: [1, 2, 3, 4, 5, 6],
    });
    nowS = 100.5;
    g.publish("/wrist/image_raw", {
      header: header(51),
      width: 2,
      height: 1,
      encoding: "rgb8",
      is_bigendian: 0,
      step: 6,
      data: [9, 9, 9, 9, 9, 9],
    });
    const [f] = await cam.capture(["wrist"]);
    expect(f!.stampS).toBe(51);
    expect(f!.t).toBeCloseTo(100.5, 9); // stamp 51 + offset (100 − 50)
    expect(f!.reading?.q).toEqual([9]); // the newest reading (t = 99.9) is nearest to 100.5
    expect(cam.describe()[0]).toMatchObject({
      fx: 10,
      fy: 11,
      cx: 1,
      cy: 0.5,
      distortion: [0.1, 0, 0, 0, 0],
      frame: "tool",
    });
  });
});

describe("CameraInfo against the calibration's intrinsics", () => {
  const CAL = { widthPx: 640, heightPx: 480, fxPx: 600, fyPx: 600, cxPx: 320, cyPx: 240 };
  const info = (width: number, height: number, fx: number, cx: number) => ({
    header: header(1),
    width,
    height,
    distortion_model: "plumb_bob",
    d: [],
    k: [fx, 0, cx, 0, fx, height / 2, 0, 0, 1],
    r: [],
    p: [],
  });
  const rgbFrame = (stampS: number) => ({
    header: header(stampS),
    width: 1,
    height: 1,
    encoding: "rgb8",
    is_bigendian: 0,
    step: 3,
    data: [1, 2, 3],
  });
  function source(g: MemoryRosGraph) {
    return new RosCameraSource({
      transport: new MemoryRosTransport(g),
      now: () => performance.now() / 1000,
      cameras: [
        {
          name: "front",
          imageTopic: "/front/image_raw",
          imageKind: "raw",
          cameraInfoTopic: "/front/camera_info",
          frame: "world",
          pose: { xyz: [0, 0, 1], quat_xyzw: [0, 0, 0, 1] },
          calibratedIntrinsics: CAL,
        },
      ],
    });
  }

  it("names every field that disagrees, and accepts small differences", () => {
    expect(intrinsicsMismatch(info(640, 480, 600, 320), CAL)).toBe("");
    expect(intrinsicsMismatch(info(640, 480, 615, 330), CAL)).toBe(""); // within 5 %
    expect(intrinsicsMismatch(info(1, 1, 1, 0.5), CAL)).toBe(
      "size 1×1 vs 640×480, fx 1 vs 600, fy 1 vs 600, cx 0.5 vs 320, cy 0.5 vs 240",
    );
    expect(intrinsicsMismatch({ ...info(640, 480, 600, 320), k: [] }, CAL)).toMatch(/fx NaN vs 600/);
  });

  it("configure (waitReady) refuses a 1×1 CameraInfo beside 640×480 calibration extrinsics", async () => {
    const g = new MemoryRosGraph();
    const cam = source(g);
    await cam.configure();
    g.publish("/front/camera_info", info(1, 1, 1, 0.5));
    g.publish("/front/image_raw", rgbFrame(1));
    await expect(cam.waitReady(1)).rejects.toMatchObject({
      code: "RB_ERR_ROS_CAMERA_INFO_MISMATCH",
      details: { camera: "front", mismatch: expect.stringContaining("size 1×1 vs 640×480") },
    });
  });

  it("an agreeing CameraInfo passes; one that changes later is reported once to onError", async () => {
    const g = new MemoryRosGraph();
    const cam = source(g);
    const errors: { code: string }[] = [];
    cam.onError((e) => errors.push(e));
    await cam.configure();
    g.publish("/front/camera_info", info(640, 480, 600, 320));
    g.publish("/front/image_raw", rgbFrame(1));
    await cam.waitReady(1);
    expect(errors).toEqual([]);
    g.publish("/front/camera_info", info(1280, 720, 900, 640));
    g.publish("/front/camera_info", info(1280, 720, 900, 640));
    expect(errors.map((e) => e.code)).toEqual(["RB_ERR_ROS_CAMERA_INFO_MISMATCH"]);
  });
});

describe("depth aligned to colour (REP 118 units)", () => {
  const depthMsg = (encoding: string, width: number, bytes: Uint8Array, step: number, big = 0) => ({
    header: header(0),
    width,
    height: bytes.length / step,
    encoding,
    is_bigendian: big,
    step,
    data: bytesToBase64(bytes),
  });

  it("16UC1 is millimetres as published (row step, byte order), 0 stays 'no return'", () => {
    // 2×2, step 6 (2 padding bytes per row), little endian: 1234 mm, 0 (hole) / 65535, 7
    const le = Uint8Array.from([0xd2, 0x04, 0x00, 0x00, 0xee, 0xee, 0xff, 0xff, 0x07, 0x00, 0xee, 0xee]);
    const d = decodeDepth("c", depthMsg("16UC1", 2, le, 6));
    expect([d.width, d.height, ...d.data]).toEqual([2, 2, 1234, 0, 65535, 7]);
    const be = Uint8Array.from([0x04, 0xd2, 0x00, 0x07]);
    expect([...decodeDepth("c", depthMsg("16UC1", 2, be, 4, 1)).data]).toEqual([1234, 7]);
  });

  it("32FC1 is metres: rounded to mm; NaN, ±∞, ≤ 0 and beyond 65.535 m are no return", () => {
    const f = new Float32Array([0.4126, Number.NaN, 0, -1, Number.POSITIVE_INFINITY, 70, 1.0004, 0.0006]);
    const bytes = new Uint8Array(f.buffer);
    const d = decodeDepth("c", depthMsg("32FC1", 4, bytes, 16));
    expect([...d.data]).toEqual([413, 0, 0, 0, 0, 0, 1000, 1]);
    // the procedures read it back as metres: mm / 1000
    expect(d.data[0]! / 1000).toBeCloseTo(0.4126, 3);
  });

  it("other encodings are refused with their name", () => {
    expect(() => decodeDepth("c", depthMsg("rgb8", 1, Uint8Array.from([1, 2, 3]), 3))).toThrow(
      expect.objectContaining({
        code: "RB_ERR_ROS_CAMERA_ENCODING",
        details: { camera: "c", encoding: "rgb8" },
      }),
    );
  });

  it("a camera with a depth topic: waits for depth, pairs the nearest depth image, refuses a misaligned one", async () => {
    const g = new MemoryRosGraph();
    let nowS = 10;
    const cam = new RosCameraSource({
      transport: new MemoryRosTransport(g),
      now: () => nowS,
      cameras: [
        {
          name: "front",
          imageTopic: "/camera/front/color/image_raw",
          imageKind: "raw",
          cameraInfoTopic: "/camera/front/color/camera_info",
          depthTopic: "/camera/front/aligned_depth_to_color/image_raw",
          frame: "world",
          pose: { xyz: [0, 0, 1], quat_xyzw: [0, 0, 0, 1] },
        },
      ],
    });
    const errors: { code: string }[] = [];
    cam.onError((e) => errors.push(e));
    await cam.configure();
    const info = {
      header: header(5),
      width: 2,
      height: 1,
      distortion_model: "plumb_bob",
      d: [],
      k: [1, 0, 1, 0, 1, 0.5, 0, 0, 1],
      r: [],
      p: [],
    };
    g.publish("/camera/front/color/camera_info", info);
    g.publish("/camera/front/color/image_raw", {
      header: header(5),
      width: 2,
      height: 1,
      encoding: "rgb8",
      is_bigendian: 0,
      step: 6,
      data: [1, 2, 3, 4, 5, 6],
    });
    // colour but no depth yet: not ready, and the error names the depth topic
    await expect(cam.waitReady(0.05)).rejects.toMatchObject({
      code: "RB_ERR_ROS_NO_FRAME",
      details: { topic: "/camera/front/aligned_depth_to_color/image_raw" },
    });
    expect(cam.describe()[0]!.depth).toBe(true);
    const mm = (stampS: number, a: number, b: number) => ({
      header: header(stampS),
      width: 2,
      height: 1,
      encoding: "16UC1",
      is_bigendian: 0,
      step: 4,
      data: bytesToBase64(new Uint8Array(new Uint16Array([a, b]).buffer)),
    });
    g.publish("/camera/front/aligned_depth_to_color/image_raw", mm(4, 100, 0));
    g.publish("/camera/front/aligned_depth_to_color/image_raw", mm(5, 412, 0));
    nowS = 11;
    g.publish("/camera/front/aligned_depth_to_color/image_raw", mm(6, 999, 999));
    await cam.waitReady(1);
    const [f] = await cam.capture(["front"], { depth: true });
    // the colour frame is stamped 5: the depth image of stamp 5, not the newest
    expect([...f!.depthMm!.data]).toEqual([412, 0]);
    expect((await cam.capture(["front"]))[0]!.depthMm).toBeUndefined();
    expect([...cam.latest("front", true)!.depthMm!.data]).toEqual([412, 0]);
    // a depth image of another size than the colour camera's is not aligned to it
    g.publish("/camera/front/aligned_depth_to_color/image_raw", {
      ...mm(7, 1, 2),
      width: 1,
      height: 2,
      step: 2,
    });
    expect(errors.map((e) => e.code)).toEqual(["RB_ERR_ROS_DEPTH_NOT_ALIGNED"]);
    expect([...(await cam.capture(["front"], { depth: true }))[0]!.depthMm!.data]).toEqual([412, 0]);
  });
});
