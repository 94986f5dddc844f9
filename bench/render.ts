/**
 * Renderer benchmark: ms per 640×480 RGB + depth frame for the 25-object demo buzz-wire scene
 * (sim/render/demo-scene.ts) from three viewpoints, beside the 8 ms target and beside an empty
 * scene (clear + resolve only, the floor of any frame); then the cost of encoding the front
 * frame as JPEG, RGB PNG and 16-bit depth PNG, beside the render time of that frame.
 * Wall-clock p50/p99 per frame, plus this process's CPU time per frame (steadier when other
 * work shares the machine).
 * Usage: npx tsx bench/render.ts [frames=300]
 */
import type { Mat4 } from "../robots/math.ts";
import { DEMO_CAMERA, demoScene, demoViews } from "../sim/render/demo-scene.ts";
import { encodeDepthPng16, encodeRgb } from "../gateway/frames/encode.ts";
import { Rasterizer } from "../sim/render/rasterizer.ts";
import type { Scene } from "../sim/render/scene.ts";
import { meshFor } from "../sim/render/tessellate.ts";
import { pct } from "./stats.ts";

const TARGET_MS = 8;
const frames = Number(process.argv[2] ?? 300);

interface Stats {
  p50: number;
  p99: number;
  cpu: number;
}

function fmt(ms: number): string {
  return ms.toFixed(2).padStart(8);
}

async function measure(n: number, fn: () => unknown): Promise<Stats> {
  for (let i = 0; i < Math.min(30, n); i++) await fn(); // warm up
  const t: number[] = [];
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn();
    t.push(performance.now() - t0);
  }
  const cpu = process.cpuUsage(cpu0);
  t.sort((a, b) => a - b);
  return { p50: pct(t, 50), p99: pct(t, 99), cpu: (cpu.user + cpu.system) / 1000 / n };
}

const scene = demoScene();
const empty: Scene = { ...scene, objects: [] };
const tris = scene.objects.reduce((n, o) => n + meshFor(o.shape).indices.length / 3, 0);
console.log(
  `scene: ${scene.objects.length} objects, ${tris} triangles; ${DEMO_CAMERA.width}×${DEMO_CAMERA.height}; ` +
    `${frames} frames per row; node ${process.version}`,
);
const r = new Rasterizer(DEMO_CAMERA);
const out = r.createTarget();
const { width: w, height: h } = DEMO_CAMERA;
const views = demoViews();
const renderOnce = (s: Scene, v: Mat4) => () => r.render(s, v, out);

console.log("\nrender RGB + depth      p50 ms   p99 ms   cpu ms/frame | target ms   empty scene p50 ms");
const emptyStats = await measure(frames, renderOnce(empty, views.front));
for (const [name, view] of Object.entries(views)) {
  const s = await measure(frames, renderOnce(scene, view));
  console.log(
    `  ${name.padEnd(20)}${fmt(s.p50)} ${fmt(s.p99)} ${fmt(s.cpu)}      | ${fmt(TARGET_MS)}   ${fmt(emptyStats.p50)}`,
  );
}

const front = await measure(frames, renderOnce(scene, views.front));
r.render(scene, views.front, out);
const encoders: [string, () => Promise<Buffer>][] = [
  ["jpeg q85 (RGB)", () => encodeRgb(out.rgb, w, h, "jpeg")],
  ["png (RGB)", () => encodeRgb(out.rgb, w, h, "png")],
  ["png 16-bit (depth)", () => encodeDepthPng16(out.depthMm, w, h)],
];
console.log("\nencode front frame      p50 ms   p99 ms   cpu ms/frame    bytes | render p50 ms");
for (const [name, enc] of encoders) {
  const bytes = (await enc()).length;
  // sharp encodes on libuv worker threads, so the CPU figure includes them
  const s = await measure(Math.max(30, Math.floor(frames / 3)), enc);
  console.log(
    `  ${name.padEnd(20)}${fmt(s.p50)} ${fmt(s.p99)} ${fmt(s.cpu)} ${String(bytes).padStart(9)} | ${fmt(front.p50)}`,
  );
}
