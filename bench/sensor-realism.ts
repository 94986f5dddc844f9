/**
 * Sensor realism cost per frame: the time SensorRealism.processFrame adds to one 640×480 RGB +
 * depth frame of the demo buzz-wire scene (sim/render/demo-scene.ts), beside the ≤ 2 ms target
 * (issue #12) and beside the render time of the same frame. RGB-only processing is shown too.
 * Only processFrame is timed: the copy that restores the clean frame before each call is outside
 * the timed region (it is not realism's work; it was inside it up to 2026-12-01 round 3, its own
 * row shows what it adds). Wall-clock min/p50/p99 and this process's CPU time per frame (CPU
 * includes the restore copy); on a loaded machine the min is the closest to the unloaded cost.
 * Beside it: the same frame with the depth pass in JS only (the WebAssembly kernel switched off,
 * same output bytes), the wrist view (near, most occlusion shadow), and for scale one plain JS
 * pass over the depth pixels (read, add, store) and the render of the frame.
 * Usage: node --import tsx bench/sensor-realism.ts [frames=200]
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { DEMO_CAMERA, demoScene, demoViews } from "../sim/render/demo-scene.ts";
import { Rasterizer } from "../sim/render/rasterizer.ts";
import { DEFAULT_REALISM, SensorRealism } from "../sim/sensors/realism.ts";
import { pct } from "./stats.ts";

const TARGET_MS = 2;
const frames = Number(process.argv[2] ?? 200);
const jsOnly = process.argv.includes("--js-only");

function measure(
  n: number,
  fn: (i: number) => void,
  prep: () => void = () => {},
): { min: number; p50: number; p99: number; cpu: number } {
  for (let i = 0; i < Math.min(20, n); i++) {
    prep();
    fn(i);
  }
  const t: number[] = [];
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    prep();
    const t0 = performance.now();
    fn(i);
    t.push(performance.now() - t0);
  }
  const cpu = process.cpuUsage(cpu0);
  t.sort((a, b) => a - b);
  return { min: t[0]!, p50: pct(t, 50), p99: pct(t, 99), cpu: (cpu.user + cpu.system) / 1000 / n };
}

const { width: w, height: h } = DEMO_CAMERA;
const r = new Rasterizer(DEMO_CAMERA);
const clean = r.render(demoScene(), demoViews().front, r.createTarget());
const wrist = r.render(demoScene(), demoViews().wrist, r.createTarget());
const rgb = new Uint8Array(clean.rgb.length);
const depth = new Uint16Array(clean.depthMm.length);
const re = new SensorRealism(DEFAULT_REALISM, 1);
const reJs = new SensorRealism(DEFAULT_REALISM, 1);
reJs.simd = false;
const scene = demoScene();
const view = demoViews().front;
const out = r.createTarget();
const restore =
  (f: typeof clean, withDepth = true) =>
  () => {
    rgb.set(f.rgb);
    if (withDepth) depth.set(f.depthMm);
  };

const row = (name: string, s: { min: number; p50: number; p99: number; cpu: number }, target: string) =>
  console.log(
    `${name.padEnd(28)} ${s.min.toFixed(2).padStart(7)} ${s.p50.toFixed(2).padStart(8)} ${s.p99.toFixed(2).padStart(8)} ${s.cpu.toFixed(2).padStart(10)}     | ${target}`,
  );
if (jsOnly) {
  row(
    "RGB + depth, JS only",
    measure(frames, (i) => reJs.processFrame(i, 0, w, h, rgb, depth, DEMO_CAMERA.fx), restore(clean)),
    "(same bytes)",
  );
  process.exit(0);
}
console.log(`${w}×${h}, ${frames} frames per row; node ${process.version}`);
console.log("                              min ms   p50 ms   p99 ms   cpu ms/frame | target ms");
row(
  "realism RGB + depth",
  measure(frames, (i) => re.processFrame(i, 0, w, h, rgb, depth, DEMO_CAMERA.fx), restore(clean)),
  `≤ ${TARGET_MS}`,
);
row(
  "realism RGB only",
  measure(frames, (i) => re.processFrame(i, 0, w, h, rgb, null, DEMO_CAMERA.fx), restore(clean, false)),
  "-",
);
// the JS-only row in a process of its own: run after the kernel rows in this process, the JS
// pass's type feedback would be mixed (it serves both) and the row slower than the JS path is
const js = spawnSync(
  process.execPath,
  [...process.execArgv, fileURLToPath(import.meta.url), String(frames), "--js-only"],
  {
    encoding: "utf8",
  },
);
process.stdout.write(js.stdout);
row(
  "RGB + depth, wrist view",
  measure(frames, (i) => re.processFrame(i, 0, w, h, rgb, depth, DEMO_CAMERA.fx), restore(wrist)),
  `≤ ${TARGET_MS}`,
);
row("copy of the clean frame", measure(frames, restore(clean)), "(not timed above)");
/** one plain JS pass over the depth pixels, for the speed of the machine at hand */
function plainPass(src: Uint16Array, dst: Uint16Array): void {
  for (let i = 0; i < src.length; i++) dst[i] = src[i]! + 1;
}
row(
  "plain JS pass, depth pixels",
  measure(frames, () => plainPass(clean.depthMm, depth)),
  "(scale)",
);
row(
  "render (for scale)",
  measure(Math.min(frames, 60), () => r.render(scene, view, out)),
  "-",
);
