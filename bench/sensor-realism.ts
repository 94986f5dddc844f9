/**
 * Sensor realism cost per frame: the time SensorRealism.processFrame adds to one 640×480 RGB +
 * depth frame of the demo buzz-wire scene (sim/render/demo-scene.ts), beside the ≤ 2 ms target
 * (issue #12) and beside the render time of the same frame. RGB-only processing is shown too.
 * Wall-clock p50/p99 and this process's CPU time per frame.
 * Usage: npx tsx bench/sensor-realism.ts [frames=200]
 */
import { DEMO_CAMERA, demoScene, demoViews } from "../sim/render/demo-scene.ts";
import { Rasterizer } from "../sim/render/rasterizer.ts";
import { DEFAULT_REALISM, SensorRealism } from "../sim/sensors/realism.ts";
import { pct } from "./stats.ts";

const TARGET_MS = 2;
const frames = Number(process.argv[2] ?? 200);

function measure(n: number, fn: (i: number) => void): { p50: number; p99: number; cpu: number } {
  for (let i = 0; i < Math.min(20, n); i++) fn(i);
  const t: number[] = [];
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    fn(i);
    t.push(performance.now() - t0);
  }
  const cpu = process.cpuUsage(cpu0);
  t.sort((a, b) => a - b);
  return { p50: pct(t, 50), p99: pct(t, 99), cpu: (cpu.user + cpu.system) / 1000 / n };
}

const { width: w, height: h } = DEMO_CAMERA;
const r = new Rasterizer(DEMO_CAMERA);
const clean = r.render(demoScene(), demoViews().front, r.createTarget());
const rgb = new Uint8Array(clean.rgb.length);
const depth = new Uint16Array(clean.depthMm.length);
const re = new SensorRealism(DEFAULT_REALISM, 1);
const scene = demoScene();
const view = demoViews().front;
const out = r.createTarget();

console.log(`${w}×${h}, ${frames} frames per row; node ${process.version}`);
console.log("                              p50 ms   p99 ms   cpu ms/frame | target ms");
const row = (name: string, s: { p50: number; p99: number; cpu: number }, target: string) =>
  console.log(
    `${name.padEnd(28)} ${s.p50.toFixed(2).padStart(7)} ${s.p99.toFixed(2).padStart(8)} ${s.cpu.toFixed(2).padStart(10)}     | ${target}`,
  );
row(
  "realism RGB + depth",
  measure(frames, (i) => {
    rgb.set(clean.rgb);
    depth.set(clean.depthMm);
    re.processFrame(i, 0, w, h, rgb, depth, DEMO_CAMERA.fx);
  }),
  `≤ ${TARGET_MS}`,
);
row(
  "realism RGB only",
  measure(frames, (i) => {
    rgb.set(clean.rgb);
    re.processFrame(i, 0, w, h, rgb, null, DEMO_CAMERA.fx);
  }),
  "-",
);
row(
  "copy of the clean frame",
  measure(frames, () => {
    rgb.set(clean.rgb);
    depth.set(clean.depthMm);
  }),
  "(included above)",
);
row(
  "render (for scale)",
  measure(Math.min(frames, 60), () => r.render(scene, view, out)),
  "-",
);
