/**
 * act's frames.video: milliseconds to encode the MP4 of a chunk (ffmpeg libx264 in a child
 * process, raw RGB on stdin) beside the reference, JPEG-encoding the same frames as stills with
 * sharp (what fetching every still of the chunk costs), both on the simulator's own 640×480
 * renders of the buzz-wire bench. Usage: node --import tsx bench/video.ts [frames=25] [runs=5]
 */
import { parseBenchConfig } from "../compose/bench-config.ts";
import { composeBench } from "../compose/compose.ts";
import { encodeImage } from "../gateway/frames/frame-store.ts";
import { captureRate, VideoEncoder } from "../gateway/frames/video.ts";
import type { Frame } from "../seam/types.ts";
import { pct } from "./stats.ts";

const frames = Number(process.argv[2] ?? 25);
const runs = Number(process.argv[3] ?? 5);

const bench = await composeBench(
  parseBenchConfig({
    version: 1,
    name: "bench-video",
    backend: { type: "sim" },
    task: { id: "buzz-wire", seed: 1 },
  }),
);
const b = bench.backend;
await b.reset?.({ seed: 1 });
// frames of a moving arm would differ more; the bench's own renders of the front camera
const shots: Frame[] = [];
for (let i = 0; i < frames; i++) shots.push(...(await b.capture(["front"], { depth: false })));

const enc = new VideoEncoder();
const avail = await enc.availability();
if (!avail.available) {
  console.log(`video unavailable: ${avail.reason}`);
  process.exit(1);
}
const rate = captureRate(40, b.describe().controlPeriodS); // 25 fps
const video: number[] = [];
const stills: number[] = [];
let bytes = 0;
for (let r = 0; r < runs; r++) {
  let t = performance.now();
  const v = await enc.encode(shots, rate);
  video.push(performance.now() - t);
  bytes = v.data.byteLength;
  t = performance.now();
  for (const f of shots) await encodeImage(f.rgb, "jpeg", 90);
  stills.push(performance.now() - t);
}
const f = (xs: number[]) =>
  `p50 ${pct(xs, 50).toFixed(1)} ms (${(pct(xs, 50) / frames).toFixed(2)} ms/frame)`;
console.log(`ffmpeg ${avail.version}, ${frames} frames 640×480, ${runs} runs`);
console.log(`reference: JPEG stills (sharp, q90)  ${f(stills)}`);
console.log(`MP4 (libx264 veryfast crf 23)        ${f(video)}, ${(bytes / 1024).toFixed(0)} KiB`);
console.log(`ratio video / stills: ${(pct(video, 50) / pct(stills, 50)).toFixed(2)}`);
await b.shutdown();
