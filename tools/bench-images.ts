/**
 * Render the default simulated bench's camera views through the Standard API and write them to
 * docs/images/ (the views an agent sees; the last set after a touch shows the lit lamp).
 * Usage: npx tsx tools/bench-images.ts [seed=1]
 */
import { writeFileSync } from "node:fs";
import sharp from "sharp";
import { testGateway } from "../compose/testing.ts";
import { api, sidewaysRows } from "../hil-tests/buzz-wire.suite.ts";

const seed = Number(process.argv[2] ?? 1);
const g = await testGateway({
  robot: "fr3",
  backend: { type: "sim" },
  task: { id: "buzz-wire", seed, level: "joint_position" },
});
const out = new URL("../docs/images/", import.meta.url);

async function save(prefix: string): Promise<void> {
  const obs = (await api(g, "POST", "/v1/observe", { depth: true })).body;
  for (const f of obs.frames as { camera: string; rgb: string; depth: string }[]) {
    const jpeg = (await api(g, "GET", f.rgb)).body as Buffer;
    writeFileSync(new URL(`${prefix}-${f.camera}.png`, out), await sharp(jpeg).png().toBuffer());
  }
  const front = obs.frames[0];
  const depth = (await api(g, "GET", front.depth)).body as Buffer;
  // depth for viewing: 0.3 m white … 2 m black
  const { data, info } = await sharp(depth)
    .toColourspace("grey16")
    .raw({ depth: "ushort" })
    .toBuffer({ resolveWithObject: true });
  const mm = new Uint16Array(data.buffer, data.byteOffset, data.length / 2);
  const grey = Buffer.alloc(mm.length);
  for (let i = 0; i < mm.length; i++)
    grey[i] = mm[i] ? Math.max(0, Math.min(255, 255 - ((mm[i]! - 300) / 1700) * 255)) : 0;
  await sharp(grey, { raw: { width: info.width, height: info.height, channels: 1 } })
    .png()
    .toFile(new URL(`${prefix}-front-depth.png`, out).pathname);
}

await save("bench");
const r0 = g.gateway.bench.backend.read();
const sweep = sidewaysRows(g, r0.q, r0.gripperWidthM, 0.03, 2);
await api(g, "POST", "/v1/act", { type: "joint_position", dt: sweep.dtS, rows: sweep.rows });
await save("bench-contact");
await g.close();
console.log("wrote docs/images/bench-*.png");
