import { describe, expect, it } from "vitest";
import { mat4Identity, mat4Mul } from "../../robots/math.ts";
import { DEMO_CAMERA, demoScene, demoViews } from "../render/demo-scene.ts";
import { Rasterizer } from "../render/rasterizer.ts";
import type { Scene } from "../render/scene.ts";
import { translationPose } from "../render/placement.ts";
import { roundMagic } from "./gather-simd.ts";
import { BLUR_MIN_PX, ExposureMotion, MotionBlur } from "./motion-blur.ts";
import { RealismSchema, SensorRealism } from "./realism.ts";

const CAM = { width: 160, height: 120, fx: 150, fy: 150, cx: 79.5, cy: 59.5, distortion: [0, 0, 0, 0, 0] };
const N = CAM.width * CAM.height;

/** a camera at the origin looking along +z (camera frame = world frame); a wall at 2 m, a box at 1 m */
function scene(): Scene {
  return {
    objects: [
      {
        id: "wall",
        shape: { kind: "box", halfExtentsM: [3, 3, 0.01] },
        pose: translationPose([0, 0, 2]),
        color: [40, 60, 120],
      },
      {
        id: "box",
        shape: { kind: "box", halfExtentsM: [0.08, 0.08, 0.02] },
        pose: translationPose([0, 0, 1]),
        color: [240, 200, 40],
      },
    ],
    background: [10, 10, 10],
    lightDir: [0, 0, -1],
  };
}

/** render, then the motion field of the box moved by (mx, my) m between the exposure's ends (centred) */
function frame(mx: number, my: number, camShiftM = 0) {
  const sc = scene();
  const r = new Rasterizer(CAM);
  const cam = mat4Identity();
  const img = r.render(sc, cam, r.createTarget());
  const ex = new ExposureMotion();
  ex.size(N);
  const poses = (s: number) => {
    const p = new Float64Array(32);
    p.set(sc.objects[0]!.pose, 0);
    p.set(translationPose([s * mx, s * my, 1]), 16);
    return p;
  };
  const camAt = (s: number) => translationPose([s * camShiftM, 0, 0]);
  const moving = ex.set(sc.objects, poses(-0.5), poses(0.5), camAt(-0.5), cam, camAt(0.5));
  r.motionField(ex.toA, ex.toB, ex.moving, ex.dx, ex.dy, ex.tiles);
  return { img, ex, moving, motion: ex.motion(img.depthMm, 10) };
}

/** the pixels whose RGB differs between two images, as (x, y) lists */
function changed(a: Uint8Array, b: Uint8Array): { xs: number[]; ys: number[] } {
  const xs: number[] = [];
  const ys: number[] = [];
  for (let i = 0; i < N; i++)
    if (a[3 * i] !== b[3 * i] || a[3 * i + 1] !== b[3 * i + 1] || a[3 * i + 2] !== b[3 * i + 2]) {
      xs.push(i % CAM.width);
      ys.push(Math.floor(i / CAM.width));
    }
  return { xs, ys };
}

/** the depth holes a blur found, in pixel order (the kernel's come after the JS tiles') */
const holesOf = (b: MotionBlur) => Array.from(b.holes.subarray(0, b.holeCount)).sort((x, y) => x - y);

/** the box's pixel extent in the still frame */
function boxExtent(rgb: Uint8Array) {
  let x0 = CAM.width;
  let x1 = -1;
  let y0 = CAM.height;
  let y1 = -1;
  for (let i = 0; i < N; i++)
    if (rgb[3 * i]! > 150) {
      const x = i % CAM.width;
      const y = Math.floor(i / CAM.width);
      x0 = Math.min(x0, x);
      x1 = Math.max(x1, x);
      y0 = Math.min(y0, y);
      y1 = Math.max(y1, y);
    }
  return { x0, x1, y0, y1 };
}

describe("motion blur", () => {
  it("the renderer's image motion is the projection of the object's motion", () => {
    // 20 mm to the right, the box's face at 0.98 m: fx · 0.02 / 0.98 px, nothing on the still wall
    const { ex, img, moving } = frame(0.02, 0);
    expect(moving).toBe(true);
    const box = boxExtent(img.rgb);
    const c = (box.y0 + box.y1) / 2;
    const i = Math.round(c) * CAM.width + Math.round((box.x0 + box.x1) / 2);
    expect(ex.dx[i]).toBeCloseTo((150 * 0.02) / 0.98, 4);
    expect(ex.dy[i]).toBeCloseTo(0, 6);
    expect(ex.dx[5 * CAM.width + 5]).toBe(0);
    // the camera moving 20 mm to the left: the box (0.98 m) as above, the wall (1.99 m) half as far
    const cam = frame(0, 0, -0.02);
    expect(cam.ex.dx[i]).toBeCloseTo((150 * 0.02) / 0.98, 4);
    expect(cam.ex.dx[5 * CAM.width + 5]).toBeCloseTo((150 * 0.02) / 1.99, 4);
  });

  it("with lens distortion the field is the ideal image's at each pixel's source", () => {
    const cam = { ...CAM, distortion: [-0.05, 0.01, 0, 0, 0] };
    const sc = scene();
    const r = new Rasterizer(cam);
    const img = r.render(sc, mat4Identity(), r.createTarget());
    const ex = new ExposureMotion();
    ex.size(N);
    const p = (s: number) => {
      const out = new Float64Array(32);
      out.set(sc.objects[0]!.pose, 0);
      out.set(translationPose([s * 0.02, 0, 1]), 16);
      return out;
    };
    const I = mat4Identity();
    ex.set(sc.objects, p(-0.5), p(0.5), I, I, I);
    r.motionField(ex.toA, ex.toB, ex.moving, ex.dx, ex.dy, ex.tiles);
    const box = boxExtent(img.rgb);
    const i = Math.round((box.y0 + box.y1) / 2) * CAM.width + Math.round((box.x0 + box.x1) / 2);
    expect(ex.dx[i]).toBeCloseTo((150 * 0.02) / 0.98, 3);
    expect(ex.dx[5 * CAM.width + 5]).toBe(0);
  });

  it("a slot whose motion is bounded below ignoreBelowPx is skipped; above, the field is exact", () => {
    const r = new Rasterizer(CAM);
    const run = (mm: number, ignore: number) => {
      const { ex } = frame(mm / 1000, 0);
      const sc = scene();
      r.render(sc, mat4Identity(), r.createTarget());
      const dx = new Float32Array(N);
      const n = r.motionField(ex.toA, ex.toB, ex.moving, dx, new Float32Array(N), ex.tiles, ignore);
      return { n, max: Math.max(...dx.map(Math.abs)) };
    };
    // 0.5 mm at 0.98 m is 0.08 px: below 0.5 px, skipped; the exact field agrees it is small
    expect(run(0.5, 0.5).n).toBe(0);
    expect(run(0.5, 0).max).toBeLessThan(0.5);
    // 20 mm: 3.06 px, computed as without the bound
    expect(run(20, 0.5).max).toBeCloseTo(run(20, 0).max, 6);
    expect(run(20, 0.5).n).toBeGreaterThan(0);
  });

  it("smears a moving object along its motion and not across it, by speed × exposure", () => {
    const still = frame(0, 0).img.rgb;
    const box = boxExtent(still);
    const extentPx: number[] = [];
    for (const mm of [20, 40, 80]) {
      const { img, motion } = frame(mm / 1000, 0);
      const rgb = new Uint8Array(img.rgb);
      const b = new MotionBlur();
      expect(b.apply(CAM.width, CAM.height, rgb, motion, 1, 0, 25)).toBe(true);
      const d = changed(rgb, still);
      expect(d.xs.length).toBeGreaterThan(0);
      // across the motion: no row outside the box's rows changes
      expect(Math.min(...d.ys)).toBeGreaterThanOrEqual(box.y0);
      expect(Math.max(...d.ys)).toBeLessThanOrEqual(box.y1);
      // along it: the smear reaches past the box's edges by about half the displacement
      extentPx.push(box.x0 - Math.min(...d.xs), Math.max(...d.xs) - box.x1);
    }
    // displacements 3, 6, 12 px: half of each outside either edge (±1 px of pixel rounding)
    const want = [1.5, 1.5, 3, 3, 6, 6];
    for (const [k, e] of extentPx.entries()) expect(Math.abs(e - want[k]!)).toBeLessThanOrEqual(1);
    // the exposure's share halves the smear: 12 px over the interval at half the exposure = 6 px
    {
      const { img, motion } = frame(0.08, 0);
      const rgb = new Uint8Array(img.rgb);
      new MotionBlur().apply(CAM.width, CAM.height, rgb, motion, 0.5, 0, 25);
      const d = changed(rgb, still);
      expect(Math.abs(box.x0 - Math.min(...d.xs) - 3)).toBeLessThanOrEqual(1);
      expect(Math.abs(Math.max(...d.xs) - box.x1 - 3)).toBeLessThanOrEqual(1);
    }
    // vertical motion: the changed pixels stay within the box's columns
    const v = frame(0, 0.04);
    const rgb = new Uint8Array(v.img.rgb);
    new MotionBlur().apply(CAM.width, CAM.height, rgb, v.motion, 1, 0, 25);
    const dv = changed(rgb, still);
    expect(Math.min(...dv.xs)).toBeGreaterThanOrEqual(box.x0);
    expect(Math.max(...dv.xs)).toBeLessThanOrEqual(box.x1);
    expect(box.y0 - Math.min(...dv.ys)).toBeGreaterThanOrEqual(2);
  });

  it("the smear is the time average: a box's edge ramps across its displacement", () => {
    const { img, motion } = frame(0.08, 0); // 12 px
    const rgb = new Uint8Array(img.rgb);
    new MotionBlur().apply(CAM.width, CAM.height, rgb, motion, 1, 0, 25);
    const box = boxExtent(img.rgb);
    const y = Math.round((box.y0 + box.y1) / 2);
    const red = (x: number) => rgb[3 * (y * CAM.width + x)]!;
    const wall = img.rgb[3 * (y * CAM.width + 2)]!;
    const boxRed = img.rgb[3 * (y * CAM.width + Math.round((box.x0 + box.x1) / 2))]!;
    // at the still frame's edge: half box, half wall; 6 px out: wall; 6 px in: box
    const mid = (wall + boxRed) / 2;
    expect(Math.abs(red(box.x1) - mid)).toBeLessThan(0.2 * (boxRed - wall));
    expect(red(box.x1 + 7)).toBe(wall);
    expect(red(box.x1 - 7)).toBe(boxRed);
    // monotone ramp in between
    for (let x = box.x1 - 6; x < box.x1 + 6; x++) expect(red(x + 1)).toBeLessThanOrEqual(red(x));
  });

  it("depth: no return where the moving edge sweeps during the IR exposure, kept inside the surface", () => {
    const { img, motion } = frame(0.08, 0); // 12 px over the interval
    const b = new MotionBlur();
    // depth exposure half the interval: 6 px, 3 px either side of each vertical edge
    b.apply(CAM.width, CAM.height, new Uint8Array(img.rgb), motion, 1, 0.5, 25);
    const box = boxExtent(img.rgb);
    const holes = new Set(Array.from(b.holes.subarray(0, b.holeCount)));
    const y = Math.round((box.y0 + box.y1) / 2);
    const at = (x: number) => holes.has(y * CAM.width + x);
    expect(at(box.x1)).toBe(true);
    expect(at(box.x1 + 2)).toBe(true);
    expect(at(box.x0 - 2)).toBe(true);
    expect(at(box.x1 + 5)).toBe(false);
    expect(at(Math.round((box.x0 + box.x1) / 2))).toBe(false);
    // the horizontal edges move along themselves: no holes above or below the box's middle
    expect(holes.has((box.y0 - 2) * CAM.width + Math.round((box.x0 + box.x1) / 2))).toBe(false);
  });

  it("in processFrame: off gives the still frame, no motion gives the still bytes, same input same bytes", () => {
    const on = RealismSchema.parse({});
    const off = RealismSchema.parse({ rgb: { motionBlur: false } });
    const run = (p: typeof on, f: ReturnType<typeof frame> | null) => {
      const src = (f ?? frame(0, 0)).img;
      const rgb = new Uint8Array(src.rgb);
      const depth = new Uint16Array(src.depthMm);
      const m = f ? f.ex.motion(new Uint16Array(src.depthMm), 10) : null;
      new SensorRealism(p, 4).processFrame(7, 0, CAM.width, CAM.height, rgb, depth, CAM.fx, m);
      return Buffer.concat([rgb, new Uint8Array(depth.buffer)]).toString("base64");
    };
    const still = run(on, null);
    expect(run(on, frame(0, 0))).toBe(still);
    expect(run(off, frame(0.04, 0))).toBe(still);
    const moving = run(on, frame(0.04, 0));
    expect(moving).not.toBe(still);
    expect(run(on, frame(0.04, 0))).toBe(moving);
  });

  it("the colour gather and depth sweep in WebAssembly SIMD give the JS passes' bytes and holes (with and without the skips)", () => {
    const { width: w, height: h } = DEMO_CAMERA;
    // the wrist camera moving from the follower's speed to 1 m/s (3 to 9 samples; the kernel takes
    // every tile, those at the image's edges through its padded copies)
    for (const speed of [0.025, 0.1, 0.25, 1]) {
      const sp = speed * 0.015;
      const sc = demoScene();
      const view = demoViews().wrist;
      const r = new Rasterizer(DEMO_CAMERA);
      const img = r.render(sc, view, r.createTarget());
      const at = (s: number) => {
        const c = Math.cos(2 * s * sp);
        const n = Math.sin(2 * s * sp);
        return mat4Mul(view, Float64Array.from([c, -n, 0, s * sp, n, c, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]));
      };
      const poses = new Float64Array(16 * sc.objects.length);
      for (const [i, o] of sc.objects.entries()) poses.set(o.pose, 16 * i);
      const ex = new ExposureMotion();
      ex.set(sc.objects, poses, poses, at(-0.5), view, at(0.5));
      const m = ex.motion(new Uint16Array(img.depthMm), 15);
      for (const fast of [true, false]) {
        const run = (simd: boolean) => {
          r.motionField(ex.toA, ex.toB, ex.moving, null, null, ex.tiles, BLUR_MIN_PX);
          // the reach of the field's linear tiles not yet written: garbage (the kernel asks for
          // the tiles its records read; a tile it failed to ask for would change bytes or holes)
          const t = ex.tiles;
          let unwritten = 0;
          for (let i = 0; i < w * h; i++)
            if (t.ready[Math.floor(i / w / 8) * t.cols + Math.floor((i % w) / 8)] === 0) {
              t.reach[i] = (i * 7919) % 3000;
              unwritten++;
            }
          if (simd) expect(unwritten).toBeGreaterThan(0);
          const b = new MotionBlur();
          b.simd = simd;
          b.fastPaths = fast;
          const rgb = new Uint8Array(img.rgb);
          b.apply(w, h, rgb, m, 1, 0.6, 25);
          return {
            rgb,
            holes: holesOf(b),
            simdTiles: Array.from(b.simdTiles),
            fastTiles: Array.from(b.fastTiles),
            visited: b.visited,
          };
        };
        const js = run(false);
        const simd = run(true);
        expect(js.simdTiles).toEqual([0, 0]);
        // the kernel did the tiles (else this test could not fail), and the bytes are the JS path's
        expect(simd.simdTiles[0]).toBe(js.visited / 64);
        expect(simd.visited).toBe(js.visited);
        expect(simd.simdTiles[1]).toBeGreaterThan(0);
        expect(Buffer.from(img.rgb).equals(Buffer.from(js.rgb))).toBe(false);
        expect(Buffer.from(simd.rgb).equals(Buffer.from(js.rgb))).toBe(true);
        expect(simd.fastTiles).toEqual(js.fastTiles);
        if (speed >= 0.1) expect(js.holes.length).toBeGreaterThan(0);
        expect(simd.holes).toEqual(js.holes);
      }
    }
  });

  it("the kernel's rounding, (2s + N) · roundMagic(N) >> 18, is the JS path's round(s / N) for every sum of N bytes", () => {
    for (const ns of [3, 5, 7, 9]) {
      const m = roundMagic(ns);
      expect(m).toBeLessThan(65536);
      for (let s = 0; s <= 255 * ns; s++)
        expect(Math.floor(((2 * s + ns) * m) / 2 ** 18), `N ${ns}, sum ${s}`).toBe((s * (1 / ns) + 0.5) | 0);
    }
  });

  it("the kernels' bytes stay the JS passes' over frames that move different rows (one MotionBlur reused)", () => {
    // the front view, parts of the arm turning: each frame's moving rows differ, the kernel's
    // memory holds only the rows a frame can read
    const { width: w, height: h } = DEMO_CAMERA;
    const sc = demoScene();
    const view = demoViews().front;
    const r = new Rasterizer(DEMO_CAMERA);
    const img = r.render(sc, view, r.createTarget());
    const reused = new MotionBlur();
    for (const [re, angle] of [
      [/^(link\d|gripper|handle|loop)$/, 0.02],
      [/^gripper$/, 0.05],
      [/^(link1|link2)$/, 0.03],
      [/^loop$/, 0.04],
      [/^(link\d|gripper|handle|loop)$/, 0.01],
    ] as const) {
      const turned = (s: number) => {
        const a = s * angle;
        const m = Float64Array.from([
          Math.cos(a),
          -Math.sin(a),
          0,
          0,
          Math.sin(a),
          Math.cos(a),
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
        const p = new Float64Array(16 * sc.objects.length);
        for (const [i, o] of sc.objects.entries()) p.set(re.test(o.id) ? mat4Mul(m, o.pose) : o.pose, 16 * i);
        return p;
      };
      const ex = new ExposureMotion();
      ex.set(sc.objects, turned(-0.5), turned(0.5), view, view, view);
      r.motionField(ex.toA, ex.toB, ex.moving, null, null, ex.tiles, BLUR_MIN_PX);
      const m = ex.motion(new Uint16Array(img.depthMm), 15);
      const js = new MotionBlur();
      js.simd = false;
      const a = new Uint8Array(img.rgb);
      const b = new Uint8Array(img.rgb);
      js.apply(w, h, a, m, 1, 0.6, 25);
      // garbage in the kernel's memory (all of it is per-frame scratch): what a frame reads must
      // be what it copied in or derived from that
      const k = (reused as unknown as { gather: { memory: { buffer: ArrayBuffer } } }).gather;
      new Uint8Array(k.memory.buffer).fill(0xa7);
      reused.apply(w, h, b, m, 1, 0.6, 25);
      expect(reused.simdTiles[0]).toBeGreaterThan(0);
      expect(Buffer.from(a).equals(Buffer.from(img.rgb))).toBe(false);
      expect(Buffer.from(b).equals(Buffer.from(a))).toBe(true);
      expect(holesOf(reused)).toEqual(holesOf(js));
    }
  });

  it("the skips (plain box average, depth tiles without a step) give the per-sample tests' bytes", () => {
    // the demo scene's wrist camera moving sideways and turning about its axis: every pixel moves
    const { width: w, height: h } = DEMO_CAMERA;
    for (const [shiftM, turnRad] of [
      [0.004, 0.008],
      [0.0004, 0.0008],
      [0.012, -0.002],
    ] as const) {
      const sc = demoScene();
      const view = demoViews().wrist;
      const r = new Rasterizer(DEMO_CAMERA);
      const img = r.render(sc, view, r.createTarget());
      const at = (s: number) => {
        const c = Math.cos(s * turnRad);
        const n = Math.sin(s * turnRad);
        return mat4Mul(view, Float64Array.from([c, -n, 0, s * shiftM, n, c, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]));
      };
      const poses = new Float64Array(16 * sc.objects.length);
      for (const [i, o] of sc.objects.entries()) poses.set(o.pose, 16 * i);
      const ex = new ExposureMotion();
      expect(ex.set(sc.objects, poses, poses, at(-0.5), view, at(0.5))).toBe(true);
      r.motionField(ex.toA, ex.toB, ex.moving, null, null, ex.tiles, BLUR_MIN_PX);
      const m = ex.motion(new Uint16Array(img.depthMm), 10);
      const run = (fast: boolean) => {
        const b = new MotionBlur();
        b.fastPaths = fast;
        const rgb = new Uint8Array(img.rgb);
        b.apply(w, h, rgb, m, 1, 0.6, 25);
        return { rgb, holes: holesOf(b), fast: Array.from(b.fastTiles) };
      };
      const slow = run(false);
      const fast = run(true);
      expect(slow.fast).toEqual([0, 0]);
      // the skips were taken (else this test could not fail) and changed no byte
      expect(fast.fast[0]).toBeGreaterThan(0);
      expect(fast.fast[1]).toBeGreaterThan(0);
      expect(Buffer.from(fast.rgb).equals(Buffer.from(slow.rgb))).toBe(true);
      expect(fast.holes).toEqual(slow.holes);
      expect(slow.holes.length).toBeGreaterThan(0);
    }
  });
});
