import { describe, expect, it } from "vitest";
import sharp from "sharp";
import { MemoryRosGraph, MemoryRosTransport } from "../ros2/memory-transport.ts";
import { bytesToBase64 } from "../ros2/messages.ts";
import { decodeRaw, JointHistory, jpegSize, RosCameraSource } from "./ros-camera.ts";

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
