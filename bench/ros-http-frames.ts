/**
 * Frame delivery over HTTP on a real bench (loopback, real time): from the rosbridge rig
 * publishing a camera image on its ROS topic to an HTTP client holding the JPEG, through the
 * real backend and a gateway served on 127.0.0.1:0 (`POST /v1/observe` for the current frame,
 * then `GET /v1/frames/:id` for its bytes).
 *
 *   npx tsx bench/ros-http-frames.ts [--seconds 4] [--width 640 --height 480] [--fps 30]
 *
 * Figures (one process, one clock: performance.now()):
 * - HTTP: rig publish → client has the JPEG (observe + frame GET polled back to back, so a frame
 *   waits up to one poll round trip before it is asked for);
 * - the round trips: `POST /v1/observe` and `GET /v1/frames/:id`;
 * - reference: rig publish → the real backend's `capture()` result, polled every 1 ms (as in
 *   bench/ros-frames.ts), in the same run on the same backend, before the HTTP phase.
 * The camera is the rig's kinematic test backend (a raw RGB gradient, JPEG-encoded by the rig),
 * so the figures measure transport, not rendering.
 */
import { parseArgs } from "node:util";
import type { AddressInfo } from "node:net";
import { testGateway } from "../compose/testing.ts";
import type { Frame } from "../seam/types.ts";
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

/** publishLog key of a stamp, s */
const key = (stampS: number) => Math.round(stampS * 1e6);
/** a frame from the ROS camera source carries its header stamp */
const stampOf = (f: Frame) => (f as Frame & { stampS: number }).stampS;

function stats(xs: number[]): string {
  if (xs.length === 0) return "n=0";
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  return `p50 ${q(0.5).toFixed(2)} ms  p99 ${q(0.99).toFixed(2)} ms  max ${s.at(-1)!.toFixed(2)} ms  (n=${s.length})`;
}

const rig = await FrankaRosbridgeRig.start({
  backend: new MirrorBackend({ robot: FR3, cameras: [mirrorCamera("front", width, height)] }),
  host: "127.0.0.1",
  cameraRateHz: Number(values.fps),
});
const g = await testGateway({
  robot: "fr3",
  backend: {
    type: "real",
    ros: { type: "rosbridge", url: rig.url },
    cameras: [
      {
        name: "front",
        imageTopic: "/front/image_raw/compressed",
        cameraInfoTopic: "/front/camera_info",
        frame: "world",
        pose: { xyz: [1, 0, 0.5], quat_xyzw: [0, 0, 0, 1] },
      },
    ],
    contact: { type: "none" },
    allowMotion: false,
  },
  task: { id: "free-motion", seed: 0 },
});
await g.app.listen({ host: "127.0.0.1", port: 0 });
const base = `http://127.0.0.1:${(g.app.server.address() as AddressInfo).port}`;
const backend = g.gateway.bench.backend;

// reference: rig publish → capture() on the real backend, polled every 1 ms
const toCapture: number[] = [];
{
  let last = -1;
  const tEnd = performance.now() + seconds * 1000;
  while (performance.now() < tEnd) {
    const [f] = await backend.capture(["front"], { depth: false });
    const tCap = performance.now();
    if (f && stampOf(f) !== last) {
      last = stampOf(f);
      const p = rig.publishLog.frames.get(key(last));
      if (p !== undefined) toCapture.push(tCap - p);
    }
    await new Promise((r) => setTimeout(r, 1));
  }
}

// HTTP: the gateway's capture() is wrapped only to learn which published image each observe served
let served: number | undefined;
const capture = backend.capture.bind(backend);
backend.capture = async (cams, opts) => {
  const frames = await capture(cams, opts);
  served = frames[0] ? stampOf(frames[0]) : undefined;
  return frames;
};
const headers = { authorization: g.agent.authorization, "content-type": "application/json" };
const toClient: number[] = [];
const observeRtt: number[] = [];
const frameRtt: number[] = [];
let bytes = 0;
{
  let last = -1;
  const tEnd = performance.now() + seconds * 1000;
  while (performance.now() < tEnd) {
    const t0 = performance.now();
    const res = await fetch(`${base}/v1/observe`, {
      method: "POST",
      headers,
      body: JSON.stringify({ cameras: ["front"] }),
    });
    const obs = (await res.json()) as { frames: { rgb: string }[] };
    const t1 = performance.now();
    observeRtt.push(t1 - t0);
    const stamp = served;
    const ref = obs.frames[0];
    if (!ref || stamp === undefined || stamp === last) continue;
    last = stamp;
    const img = await fetch(`${base}${ref.rgb}`, { headers: { authorization: g.agent.authorization } });
    const jpeg = new Uint8Array(await img.arrayBuffer());
    const t2 = performance.now();
    frameRtt.push(t2 - t1);
    bytes = jpeg.length;
    const p = rig.publishLog.frames.get(key(stamp));
    if (p !== undefined) toClient.push(t2 - p);
  }
}

console.log(
  `real bench on the rosbridge rig, loopback, ${width}×${height} JPEG (${(bytes / 1024).toFixed(0)} KiB) at ${values.fps} Hz, ${seconds} s per phase, real time`,
);
console.log(`frame  publish → HTTP client has the JPEG    ${stats(toClient)}`);
console.log(`         POST /v1/observe round trip        ${stats(observeRtt)}`);
console.log(`         GET /v1/frames/:id round trip      ${stats(frameRtt)}`);
console.log(`  reference  publish → backend capture()    ${stats(toCapture)}`);
console.log(`rig pacing overruns: ${rig.overruns}`);

// close re-grades the episode record; a disagreement is printed, not fatal, for a benchmark
await g.close().catch((e: Error) => console.log(`(gateway close: ${e.message})`));
await rig.close();
