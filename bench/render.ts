/**
 * Renderer benchmark: ms per 640×480 RGB + depth frame for the 25-object demo buzz-wire scene
 * (sim/render/demo-scene.ts), per viewpoint, with the target beside it, and the cost of encoding
 * that frame as JPEG, RGB PNG and 16-bit depth PNG.
 * Usage: npx tsx bench/render.ts [frames=300]
 */
import { DEMO_CAMERA, demoScene, demoViews } from "../sim/render/demo-scene.ts";
import { encodeDepthPng16, encodeRgb } from "../sim/render/encode.ts";
import { Rasterizer } from "../sim/render/rasterizer.ts";
import { meshFor } from "../sim/render/tessellate.ts";

const TARGET_MS = 8;
const frames = Number(process.argv[2] ?? 300);

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}
function fmt(ms: number): string {
  return ms.toFixed(2).padStart(7);
}

const scene = demoScene();
const tris = scene.objects.reduce((n, o) => n + meshFor(o.shape).indices.length / 3, 0);
console.log(
  `scene: ${scene.objects.length} objects, ${tris} triangles; ${DEMO_CAMERA.width}×${DEMO_CAMERA.height}; ${frames} frames per view; node ${process.version}`,
);
const r = new Rasterizer(DEMO_CAMERA);
const out = r.createTarget();
const { width: w, height: h } = DEMO_CAMERA;

console.log("\nrender (RGB + depth)        p50 ms   p99 ms   mean ms   target ms");
for (const [name, view] of Object.entries(demoViews())) {
  for (let i = 0; i < 30; i++) r.render(scene, view, out); // warm up
  const t: number[] = [];
  for (let i = 0; i < frames; i++) {
    const t0 = performance.now();
    r.render(scene, view, out);
    t.push(performance.now() - t0);
  }
  const mean = t.reduce((a, b) => a + b, 0) / t.length;
  t.sort((a, b) => a - b);
  console.log(
    `  ${name.padEnd(24)}${fmt(pct(t, 0.5))}  ${fmt(pct(t, 0.99))}  ${fmt(mean)}   ${fmt(TARGET_MS)}`,
  );
}

// encoders, on the front view's frame
r.render(scene, demoViews().front, out);
const encoders: [string, () => Promise<Buffer>][] = [
  ["jpeg q85 (RGB)", () => encodeRgb(out.rgb, w, h, "jpeg")],
  ["png (RGB)", () => encodeRgb(out.rgb, w, h, "png")],
  ["png 16-bit (depth mm)", () => encodeDepthPng16(out.depthMm, w, h)],
];
const n = Math.max(20, Math.floor(frames / 5));
console.log("\nencode (front view)         p50 ms   p99 ms   bytes     render p50 ms");
let renderP50 = 0;
{
  const t: number[] = [];
  for (let i = 0; i < 50; i++) {
    const t0 = performance.now();
    r.render(scene, demoViews().front, out);
    t.push(performance.now() - t0);
  }
  t.sort((a, b) => a - b);
  renderP50 = pct(t, 0.5);
}
for (const [name, enc] of encoders) {
  for (let i = 0; i < 5; i++) await enc();
  const t: number[] = [];
  let bytes = 0;
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    bytes = (await enc()).length;
    t.push(performance.now() - t0);
  }
  t.sort((a, b) => a - b);
  console.log(
    `  ${name.padEnd(24)}${fmt(pct(t, 0.5))}  ${fmt(pct(t, 0.99))}  ${String(bytes).padStart(8)}  ${fmt(renderP50)}`,
  );
}
