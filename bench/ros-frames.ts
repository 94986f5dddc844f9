/**
 * Frame delivery and joint-state latency over the rosbridge rig (loopback, real time).
 *
 *   npx tsx bench/ros-frames.ts [--seconds 4] [--width 640 --height 480] [--fps 30]
 *
 * Figures (all in one process, one clock: performance.now()):
 * - joint state: rig publish → FrankaArmDriver reading (receivedT);
 * - frame: rig publish (after JPEG encoding) → RosCameraSource arrival, and → capture() result
 *   (capture polled every 1 ms, so that figure includes ≤ 1 ms polling);
 * - reference: the same messages to a bare `ws` client speaking rosbridge JSON (no roslib,
 *   no driver), side by side.
 */
import { createRequire } from "node:module";
import { parseArgs } from "node:util";
import { RosCameraSource } from "../drivers/camera/ros-camera.ts";
import { FrankaArmDriver } from "../drivers/ros2/franka-arm.ts";
import { timeToS } from "../drivers/ros2/messages.ts";
import { RoslibTransport } from "../drivers/ros2/roslib-transport.ts";
import { FrankaRosbridgeRig } from "../hil-tests/rigs/rosbridge/franka-rig.ts";
import { MirrorBackend, mirrorCamera } from "../drivers/mirror/mirror-backend.ts";
import { FR3 } from "../robots/franka/models.ts";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "4" },
    width: { type: "string", default: "640" },
    height: { type: "string", default: "480" },
    fps: { type: "string", default: "30" },
  },
});
const seconds = Number(values.seconds);
const width = Number(values.width);
const height = Number(values.height);

const key = (stampS: number) => Math.round(stampS * 1e6);
const nowS = () => performance.now() / 1000;

function stats(xs: number[]): string {
  if (xs.length === 0) return "n=0";
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  return `p50 ${q(0.5).toFixed(2)} ms  p99 ${q(0.99).toFixed(2)} ms  max ${s.at(-1)!.toFixed(2)} ms  (n=${s.length})`;
}

const backend = new MirrorBackend({ robot: FR3, cameras: [mirrorCamera("front", width, height)] });
const rig = await FrankaRosbridgeRig.start({ backend, cameraRateHz: Number(values.fps) });
const transport = new RoslibTransport({ url: rig.url });
const arm = new FrankaArmDriver({ transport, robot: FR3, now: nowS });
const cam = new RosCameraSource({
  transport,
  now: nowS,
  stampClock: arm.stampClock,
  history: undefined,
  cameras: [
    {
      name: "front",
      imageTopic: "/front/image_raw/compressed",
      imageKind: "compressed",
      cameraInfoTopic: "/front/camera_info",
      frame: "world",
      pose: { xyz: [0, 0, 0], quat_xyzw: [0, 0, 0, 1] },
    },
  ],
});

// reference: bare ws client
const { WebSocket } = createRequire(import.meta.url)("ws") as {
  WebSocket: new (
    url: string,
  ) => {
    on(e: "open", cb: () => void): void;
    on(e: "message", cb: (d: Buffer) => void): void;
    send(s: string): void;
    close(): void;
  };
};
const bare = new WebSocket(rig.url);
const bareJs: number[] = [];
const bareFrames: number[] = [];
bare.on("open", () => {
  bare.send(
    JSON.stringify({
      op: "subscribe",
      id: "b1",
      topic: "/franka/joint_states",
      type: "sensor_msgs/msg/JointState",
    }),
  );
  bare.send(
    JSON.stringify({
      op: "subscribe",
      id: "b2",
      topic: "/front/image_raw/compressed",
      type: "sensor_msgs/msg/CompressedImage",
    }),
  );
});
bare.on("message", (d) => {
  const t = performance.now();
  const m = JSON.parse(String(d)) as {
    op: string;
    topic: string;
    msg: { header: { stamp: { sec: number; nanosec: number } } };
  };
  if (m.op !== "publish") return;
  const k = key(timeToS(m.msg.header.stamp));
  if (m.topic === "/franka/joint_states") {
    const p = rig.publishLog.jointState.get(k);
    if (p !== undefined) bareJs.push(t - p);
  } else {
    const p = rig.publishLog.frames.get(k);
    if (p !== undefined) bareFrames.push(t - p);
  }
});

await arm.configure();
await cam.configure();
await cam.waitReady(5);

const jsLatency: number[] = [];
arm.onReading((r) => {
  const p = rig.publishLog.jointState.get(key(r.stampS));
  if (p !== undefined) jsLatency.push(r.receivedT * 1000 - p);
});
const arrival: number[] = [];
const toCapture: number[] = [];
let lastStamp = -1;
const tEnd = performance.now() + seconds * 1000;
while (performance.now() < tEnd) {
  const [f] = await cam.capture(["front"]);
  const tCap = performance.now();
  if (f && f.stampS !== lastStamp) {
    lastStamp = f.stampS;
    const p = rig.publishLog.frames.get(key(f.stampS));
    if (p !== undefined) {
      arrival.push(f.receivedT * 1000 - p);
      toCapture.push(tCap - p);
    }
  }
  await new Promise((r) => setTimeout(r, 1));
}

console.log(`rosbridge rig, loopback, ${width}×${height} JPEG at ${values.fps} Hz, ${seconds} s, real time`);
console.log(`joint state  publish → driver reading   ${stats(jsLatency)}`);
console.log(`  reference  publish → bare ws client   ${stats(bareJs)}`);
console.log(`frame        publish → driver arrival   ${stats(arrival)}`);
console.log(`frame        publish → capture() result ${stats(toCapture)}`);
console.log(`  reference  publish → bare ws client   ${stats(bareFrames)}`);
console.log(`rig pacing overruns: ${rig.overruns}`);

bare.close();
await arm.shutdown();
await cam.shutdown();
await transport.close();
await rig.close();
