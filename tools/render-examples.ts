/**
 * Render the demo scene from its three viewpoints and write PNGs into docs/images/
 * (RGB, a grey depth image for the front view, and the wrist view through a barrel-distorted
 * lens, k1 = −0.3, k2 = 0.1).
 * Usage: npx tsx tools/render-examples.ts [outDir]
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DEMO_CAMERA, demoScene, demoViews } from "../sim/render/demo-scene.ts";
import { encodeRgb } from "../gateway/frames/encode.ts";
import { Rasterizer } from "../sim/render/rasterizer.ts";

async function writeRgb(file: string, rgb: Uint8Array): Promise<void> {
  writeFileSync(file, await encodeRgb(rgb, DEMO_CAMERA.width, DEMO_CAMERA.height, "png"));
  console.log(`wrote ${file}`);
}

const outDir = process.argv[2] ?? join("docs", "images");
mkdirSync(outDir, { recursive: true });
const scene = demoScene();
const r = new Rasterizer(DEMO_CAMERA);
const out = r.createTarget();
const { width: w, height: h } = DEMO_CAMERA;
for (const [name, view] of Object.entries(demoViews())) {
  r.render(scene, view, out);
  await writeRgb(join(outDir, `render-${name}.png`), out.rgb);
  if (name === "front") {
    // depth as grey: near = bright, no surface = black
    let lo = Infinity;
    let hi = 0;
    for (const d of out.depthMm) {
      if (d > 0) {
        lo = Math.min(lo, d);
        hi = Math.max(hi, d);
      }
    }
    const vis = new Uint8Array(w * h * 3);
    out.depthMm.forEach((d, i) => {
      const g = d === 0 ? 0 : Math.round(255 - (200 * (d - lo)) / Math.max(1, hi - lo));
      vis.fill(g, i * 3, i * 3 + 3);
    });
    const dfile = join(outDir, `render-${name}-depth.png`);
    writeFileSync(dfile, await encodeRgb(vis, w, h, "png"));
    console.log(`wrote ${dfile} (depth ${lo}…${hi} mm)`);
  }
}

const distorted = new Rasterizer({ ...DEMO_CAMERA, distortion: [-0.3, 0.1, 0, 0, 0] });
await writeRgb(join(outDir, "render-wrist-distorted.png"), distorted.render(scene, demoViews().wrist).rgb);
