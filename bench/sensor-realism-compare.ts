/**
 * Sensor realism per frame, two trees of this repository side by side in one process: the rows of
 * bench/sensor-realism.ts that matter for the ≤ 2 ms target (issue #12) — the still front frame,
 * the front view with the demo arm turning (gripper at 0.025 and 0.25 m/s), the wrist camera
 * moving (0.025 and 0.25 m/s) — each tree with its own modules (renderer, motion field, blur,
 * realism), frame by frame in turn (old, new, old, new, …) so that both see the same load. Timed
 * per frame: the exposure transforms, the motion field and processFrame (the restore of the clean
 * frame is outside). Prints min / p50 / p99 ms per tree and whether the two trees' output bytes
 * (RGB + depth of the last frame) are equal.
 * A tree of an older commit: `git archive <commit> sim robots seam calibration | tar -x -C
 * .tmp/cmp/<commit>` (inside the checkout, so that its imports resolve node_modules).
 * Usage: node --import tsx bench/sensor-realism-compare.ts [frames=200] <oldTree> [newTree=.]
 */
import { execSync } from "node:child_process";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { pct } from "./stats.ts";

const frames = Number(process.argv[2] ?? 200);
const dirs = [process.argv[3], process.argv[4] ?? "."].map((d) => {
  if (d === undefined) throw new Error("usage: sensor-realism-compare.ts [frames] <oldTree> [newTree]");
  return resolve(d);
});

interface Row {
  prep: () => void;
  run: (i: number) => void;
  out: () => Buffer;
}

/** the rows of one tree, built from its own modules */
async function rowsOf(dir: string): Promise<Record<string, Row>> {
  const imp = (p: string) => import(pathToFileURL(`${dir}/${p}`).href);
  const { mat4Mul } = await imp("robots/math.ts");
  const { DEMO_CAMERA, demoScene, demoViews } = await imp("sim/render/demo-scene.ts");
  const { Rasterizer } = await imp("sim/render/rasterizer.ts");
  const { BLUR_MIN_PX, ExposureMotion } = await imp("sim/sensors/motion-blur.ts");
  const { DEFAULT_REALISM, SensorRealism } = await imp("sim/sensors/realism.ts");
  const w: number = DEMO_CAMERA.width;
  const h: number = DEMO_CAMERA.height;
  const re = new SensorRealism(DEFAULT_REALISM, 1);
  re.prepare();
  const rgb = new Uint8Array(w * h * 3);
  const depth = new Uint16Array(w * h);
  const out = () => Buffer.concat([Buffer.from(rgb), Buffer.from(depth.buffer)]);
  const exposureS = Math.max(DEFAULT_REALISM.rgb.exposureMs, DEFAULT_REALISM.depth.exposureMs) / 1000;
  type Obj = { id: string; pose: Float64Array };
  const posesOf = (sc: { objects: Obj[] }) => {
    const p = new Float64Array(16 * sc.objects.length);
    for (const [i, o] of sc.objects.entries()) p.set(o.pose, 16 * i);
    return p;
  };
  // as bench/sensor-realism.ts: the arm turned about the base, the camera moved and turned
  const arm = (sc: { objects: Obj[] }, speed: number) => {
    const grip = sc.objects.find((o) => o.id === "gripper")!.pose;
    const a = (speed * exposureS) / Math.hypot(grip[3]!, grip[7]!);
    const at = (ang: number) => {
      const p = posesOf(sc);
      const c = Math.cos(ang);
      const s = Math.sin(ang);
      const m = Float64Array.from([c, -s, 0, 0, s, c, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]);
      for (const [i, o] of sc.objects.entries())
        if (/^(link\d|gripper|handle|loop)$/.test(o.id)) p.set(mat4Mul(m, o.pose), 16 * i);
      return p;
    };
    return [at(-a / 2), at(a / 2)] as const;
  };
  const cam = (c: Float64Array, speed: number) => {
    const at = (s: number) => {
      const d = s * speed * exposureS;
      const r = s * 2 * speed * exposureS;
      const m = Float64Array.from([
        Math.cos(r),
        -Math.sin(r),
        0,
        d,
        Math.sin(r),
        Math.cos(r),
        0,
        0,
        0,
        0,
        1,
        0,
        0,
        0,
        0,
        1,
      ]);
      return mat4Mul(c, m);
    };
    return [at(-0.5), at(0.5)] as const;
  };
  const moving = (
    view: Float64Array,
    camA: Float64Array,
    camB: Float64Array,
    pA: Float64Array,
    pB: Float64Array,
  ): Row => {
    const sc = demoScene();
    const r = new Rasterizer(DEMO_CAMERA);
    const img = r.render(sc, view, r.createTarget());
    const ex = new ExposureMotion();
    const zMm = new Uint16Array(img.depthMm);
    return {
      prep: () => {
        rgb.set(img.rgb);
        depth.set(img.depthMm);
      },
      run: (i) => {
        ex.set(sc.objects, pA, pB, camA, view, camB);
        r.motionField(ex.toA, ex.toB, ex.moving, null, null, ex.tiles, BLUR_MIN_PX);
        re.processFrame(i, 0, w, h, rgb, depth, DEMO_CAMERA.fx, ex.motion(zMm, exposureS * 1000));
      },
      out,
    };
  };
  const views = demoViews();
  const r0 = new Rasterizer(DEMO_CAMERA);
  const clean = r0.render(demoScene(), views.front, r0.createTarget());
  const rows: Record<string, Row> = {
    still: {
      prep: () => {
        rgb.set(clean.rgb);
        depth.set(clean.depthMm);
      },
      run: (i) => re.processFrame(i, 0, w, h, rgb, depth, DEMO_CAMERA.fx),
      out,
    },
  };
  for (const speed of [0.025, 0.25]) {
    const [a, b] = arm(demoScene(), speed);
    rows[`front ${speed}`] = moving(views.front, views.front, views.front, a, b);
  }
  for (const speed of [0.025, 0.25]) {
    const [a, b] = cam(views.wrist, speed);
    rows[`wrist ${speed}`] = moving(views.wrist, a, b, posesOf(demoScene()), posesOf(demoScene()));
  }
  return rows;
}

const trees = [];
for (const d of dirs) trees.push(await rowsOf(d));
const load = () => execSync("cat /proc/loadavg").toString().split(" ").slice(0, 3).join(" ");
console.log(`${frames} frames per row and tree, in turn; load ${load()}`);
console.log(
  `${"row".padEnd(12)} ${dirs.map((d) => `${d} min / p50 / p99`.padEnd(36)).join(" ")} bytes equal`,
);
for (const name of Object.keys(trees[0]!)) {
  const t = trees.map(() => [] as number[]);
  for (let i = 0; i < frames + 20; i++)
    for (const [k, tree] of trees.entries()) {
      const r = tree[name]!;
      r.prep();
      const t0 = performance.now();
      r.run(i);
      const dt = performance.now() - t0;
      if (i >= 20) t[k]!.push(dt);
    }
  const same = trees[0]![name]!.out().equals(trees[1]![name]!.out());
  const cols = t.map((x) => {
    x.sort((a, b) => a - b);
    return `${x[0]!.toFixed(2)} / ${pct(x, 50).toFixed(2)} / ${pct(x, 99).toFixed(2)}`.padEnd(36);
  });
  console.log(`${name.padEnd(12)} ${cols.join(" ")} ${same}`);
}
console.log(`load ${load()}`);
