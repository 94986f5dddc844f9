import { describe, expect, it } from "vitest";
import { type Mat4, mat4Identity, mat4Mul } from "../../robots/math.ts";
import { BLUR_MIN_PX, ExposureMotion } from "../sensors/motion-blur.ts";
import { DEMO_CAMERA, demoScene, demoViews } from "./demo-scene.ts";
import { translationPose } from "./placement.ts";
import { type MotionTiles, type RasterCamera, Rasterizer } from "./rasterizer.ts";
import type { Scene } from "./scene.ts";

/** the bytes of a typed array (a bitwise comparison: −0, NaN payloads and all) */
const bytes = (a: ArrayLike<number> & ArrayBufferView) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

const posesOf = (sc: Scene, moved: (id: string) => Mat4 | null = () => null) => {
  const p = new Float64Array(16 * sc.objects.length);
  for (const [i, o] of sc.objects.entries()) p.set(moved(o.id) ?? o.pose, 16 * i);
  return p;
};

/** a camera pose moved by `shiftM` along its x and turned by `turnRad` about its optical axis, times s */
const camAt = (view: Mat4, s: number, shiftM: number, turnRad: number) => {
  const c = Math.cos(s * turnRad);
  const n = Math.sin(s * turnRad);
  return mat4Mul(view, Float64Array.from([c, -n, 0, s * shiftM, n, c, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]));
};

/** every tile's reach written (the kernel leaves a linear tile's to fillReach) */
const complete = (t: MotionTiles) => t.fillReach?.(new Uint8Array(t.cols * t.rows).fill(1));

/** motionField of one rendered frame through the JS pass and through the kernel, same inputs */
function both(
  camera: RasterCamera,
  sc: Scene,
  view: Mat4,
  a: { poses: Float64Array; cam: Mat4 },
  b: { poses: Float64Array; cam: Mat4 },
  ignoreBelowPx: number,
) {
  const r = new Rasterizer(camera);
  r.render(sc, view, r.createTarget());
  const ex = new ExposureMotion();
  ex.set(sc.objects, a.poses, b.poses, a.cam, view, b.cam);
  const run = (simd: boolean) => {
    r.motionSimd = simd;
    const n = r.motionField(ex.toA, ex.toB, ex.moving, null, null, ex.tiles, ignoreBelowPx);
    const t = ex.tiles;
    complete(t);
    const vx = Float32Array.from(t.vx);
    const vy = Float32Array.from(t.vy);
    return {
      n,
      rect: [...t.rect],
      reach: Uint16Array.from(t.reach),
      l2: Float32Array.from(t.l2),
      slot: Int32Array.from(t.slot),
      least: Int32Array.from(t.least),
      pass: r.lastMotionPass,
      linear: r.lastLinearTiles,
      vx,
      vy,
    };
  };
  // JS, kernel, JS again on the same tiles: each call leaves the buffers as the JS pass would
  const js = run(false);
  const simd = run(true);
  const again = run(false);
  // (else the comparison could not fail; "none": nothing moves ½ px, no pass ran)
  if (js.pass !== "none") expect([js.pass, simd.pass, again.pass]).toEqual(["js", "kernel", "js"]);
  return { r, js, simd, again };
}

function expectSame(x: ReturnType<typeof both>["js"], y: ReturnType<typeof both>["js"]): void {
  expect(y.n).toBe(x.n);
  expect(y.linear).toBe(x.linear);
  expect(y.rect).toEqual(x.rect);
  for (const k of ["reach", "l2", "slot", "least", "vx", "vy"] as const)
    expect(bytes(y[k]).equals(bytes(x[k])), `${k} differs`).toBe(true);
}

describe("motionField's WebAssembly SIMD pixel pass", () => {
  it("gives the JS pass's field bit for bit: the wrist camera moving (every pixel, every slot)", () => {
    const sc = demoScene();
    const view = demoViews().wrist;
    const still = posesOf(sc);
    for (const [shiftM, turnRad] of [
      [0.0004, 0.0008],
      [0.004, 0.008],
      [0.012, -0.002],
      [0, 0.05],
    ] as const) {
      const { r, js, simd, again } = both(
        DEMO_CAMERA,
        sc,
        view,
        { poses: still, cam: camAt(view, -0.5, shiftM, turnRad) },
        { poses: still, cam: camAt(view, 0.5, shiftM, turnRad) },
        BLUR_MIN_PX,
      );
      expect(r.motionKernelReady).toBe(true);
      // the case is not empty: every pixel moves, tiles of one slot and of several
      expect(js.n).toBe(DEMO_CAMERA.width * DEMO_CAMERA.height);
      expect(js.slot.some((s) => s >= 0)).toBe(true);
      expect(js.slot.some((s) => s === -1)).toBe(true);
      // tiles from the linear model and tiles per pixel (several slots)
      expect(js.linear).toBeGreaterThan(1000);
      expect(js.linear).toBeLessThan(js.l2.length);
      expectSame(js, simd);
      expectSame(js, again);
    }
  });

  it("and with part of the scene moving (the front view's arm), still slots and slots bounded below ½ px", () => {
    const sc = demoScene();
    const view = demoViews().front;
    const arm = (id: string) => /^(link\d|gripper|handle|loop)$/.test(id);
    for (const [angle, ignore] of [
      [0.01, BLUR_MIN_PX],
      [0.01, 0],
      [0.0002, BLUR_MIN_PX],
      [0.0002, 0],
    ] as const) {
      const turned = (s: number) => {
        const c = Math.cos(s * angle);
        const n = Math.sin(s * angle);
        const m = Float64Array.from([c, -n, 0, 0, n, c, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]);
        return posesOf(sc, (id) => (arm(id) ? mat4Mul(m, sc.objects.find((o) => o.id === id)!.pose) : null));
      };
      const { js, simd, again } = both(
        DEMO_CAMERA,
        sc,
        view,
        { poses: turned(-0.5), cam: view },
        { poses: turned(0.5), cam: view },
        ignore,
      );
      if (ignore === 0) expect(js.n).toBeGreaterThan(0);
      expectSame(js, simd);
      expectSame(js, again);
    }
  });

  it("and on an image whose tiles are cut at the edges (156 × 101 px: 4 px at the right, 5 rows at the bottom)", () => {
    const cam = { width: 156, height: 101, fx: 150, fy: 150, cx: 78, cy: 50, distortion: [0, 0, 0, 0, 0] };
    const sc: Scene = {
      objects: [
        {
          id: "wall",
          shape: { kind: "box", halfExtentsM: [3, 3, 0.01] },
          pose: translationPose([0, 0, 2]),
          color: [40, 60, 120],
        },
        {
          id: "box",
          shape: { kind: "box", halfExtentsM: [0.2, 0.15, 0.02] },
          pose: translationPose([0.05, 0, 1]),
          color: [240, 200, 40],
        },
      ],
      background: [10, 10, 10],
      lightDir: [0, 0, -1],
    };
    const view = mat4Identity();
    const poses = (s: number) =>
      posesOf(sc, (id) => (id === "box" ? translationPose([0.05 + s * 0.03, s * 0.01, 1]) : null));
    const { r, js, simd, again } = both(
      cam,
      sc,
      view,
      { poses: poses(-0.5), cam: camAt(view, -0.5, 0.01, 0.01) },
      { poses: poses(0.5), cam: camAt(view, 0.5, 0.01, 0.01) },
      BLUR_MIN_PX,
    );
    expect(r.motionKernelReady).toBe(true);
    expect(js.n).toBe(cam.width * cam.height);
    expectSame(js, simd);
    expectSame(js, again);
  });

  it("leaves reach zero outside each frame's rectangle when the rectangle changes between frames", () => {
    // one rasterizer and one set of tiles over frames whose moving objects (so rectangles) differ,
    // the kernel and the JS pass in turn; each frame's reach against a fresh JS pass's
    const sc = demoScene();
    const view = demoViews().front;
    const r = new Rasterizer(DEMO_CAMERA);
    r.render(sc, view, r.createTarget());
    const ex = new ExposureMotion();
    const fresh = new Rasterizer(DEMO_CAMERA);
    fresh.render(sc, view, fresh.createTarget());
    fresh.motionSimd = false;
    const groups = [
      /^(link\d|gripper|handle|loop)$/,
      /^gripper$/,
      /^(link1|link2)$/,
      /^loop$/,
      /^(link\d|gripper|handle|loop)$/,
    ];
    let rects = 0;
    let last = "";
    for (const [f, re] of groups.entries()) {
      const turned = (s: number) => {
        const a = s * 0.02;
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
        return posesOf(sc, (id) =>
          re.test(id) ? mat4Mul(m, sc.objects.find((o) => o.id === id)!.pose) : null,
        );
      };
      ex.set(sc.objects, turned(-0.5), turned(0.5), view, view, view);
      r.motionSimd = f % 2 === 0;
      r.motionField(ex.toA, ex.toB, ex.moving, null, null, ex.tiles, BLUR_MIN_PX);
      complete(ex.tiles);
      const ref = new ExposureMotion();
      ref.set(sc.objects, turned(-0.5), turned(0.5), view, view, view);
      fresh.motionField(ref.toA, ref.toB, ref.moving, null, null, ref.tiles, BLUR_MIN_PX);
      expect(ex.tiles.rect).toEqual(ref.tiles.rect);
      if (`${ex.tiles.rect}` !== last) rects++;
      last = `${ex.tiles.rect}`;
      expect(bytes(ex.tiles.reach).equals(bytes(ref.tiles.reach)), `frame ${f}`).toBe(true);
    }
    expect(rects).toBeGreaterThanOrEqual(4);
  });

  it("is within 0.01 px of the exact field (a double-precision projection of each pixel at both ends), linear tiles and per-pixel ones", () => {
    // the bench's frames (the arm turning in the front view, the wrist camera moving) and
    // harder ones: a camera moving along and turning about every axis
    const { width: w, height: h, fx, fy, cx, cy } = DEMO_CAMERA;
    const worst = (
      view: Mat4,
      a: { poses: Float64Array; cam: Mat4 },
      b: { poses: Float64Array; cam: Mat4 },
      tol: number,
    ) => {
      const sc = demoScene();
      const r = new Rasterizer(DEMO_CAMERA);
      r.render(sc, view, r.createTarget());
      r.motionLinearTolPx = tol;
      const ex = new ExposureMotion();
      ex.size(w * h);
      ex.set(sc.objects, a.poses, b.poses, a.cam, view, b.cam);
      // the JS pass (dx, dy wanted), then the kernel's reach
      r.motionField(ex.toA, ex.toB, ex.moving, ex.dx, ex.dy, ex.tiles);
      const linear = r.lastLinearTiles;
      r.motionField(ex.toA, ex.toB, ex.moving, null, null, ex.tiles);
      expect(r.lastMotionPass).toBe("kernel");
      complete(ex.tiles);
      const { invZ, shade } = r as unknown as { invZ: Float32Array; shade: Uint32Array };
      let err = 0;
      let reachErr = 0;
      for (let i = 0; i < w * h; i++) {
        const wz = invZ[i]!;
        const s = wz > 0 ? shade[i]! >>> 8 : 0;
        if (!ex.moving[s]) continue;
        const hp = [((i % w) - cx) / fx, (Math.floor(i / w) - cy) / fy, 1, wz];
        const proj = (T: Float64Array) => {
          const q = [0, 1, 2].map((k) => hp.reduce((acc, v, c) => acc + T[16 * s + 4 * k + c]! * v, 0));
          return [(fx * q[0]!) / q[2]! + cx, (fy * q[1]!) / q[2]! + cy];
        };
        const pa = proj(ex.toA);
        const pb = proj(ex.toB);
        const ex_ = pb[0]! - pa[0]!;
        const ey = pb[1]! - pa[1]!;
        err = Math.max(err, Math.hypot(ex.dx[i]! - ex_, ex.dy[i]! - ey));
        reachErr = Math.max(reachErr, Math.abs(ex.tiles.reach[i]! / 64 - Math.hypot(ex_, ey)));
      }
      return { err, reachErr, linear };
    };
    const still = (sc: Scene) => posesOf(sc);
    const arm = (angle: number) => (s: number) => {
      const sc = demoScene();
      const c = Math.cos(s * angle);
      const n = Math.sin(s * angle);
      const m = Float64Array.from([c, -n, 0, 0, n, c, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]);
      return posesOf(sc, (id) =>
        /^(link\d|gripper|handle|loop)$/.test(id)
          ? mat4Mul(m, sc.objects.find((o) => o.id === id)!.pose)
          : null,
      );
    };
    /** the camera moved by t (m) and turned by r (rad, about x, y, z) times s */
    const moved = (view: Mat4, t: number[], r: number[]) => (s: number) => {
      const rot = (axis: number, a: number) => {
        const c = Math.cos(s * a);
        const n = Math.sin(s * a);
        const m = mat4Identity();
        const [i, j] = axis === 0 ? [1, 2] : axis === 1 ? [2, 0] : [0, 1];
        m[4 * i + i] = c;
        m[4 * i + j] = -n;
        m[4 * j + i] = n;
        m[4 * j + j] = c;
        return m;
      };
      const m = mat4Mul(rot(2, r[2]!), mat4Mul(rot(1, r[1]!), rot(0, r[0]!)));
      m[3] = s * t[0]!;
      m[7] = s * t[1]!;
      m[11] = s * t[2]!;
      return mat4Mul(view, m);
    };
    const views = demoViews();
    const cases: [Mat4, (s: number) => { poses: Float64Array; cam: Mat4 }][] = [
      [views.front, (s) => ({ poses: arm(0.0075)(s), cam: views.front })],
      [views.wrist, (s) => ({ poses: still(demoScene()), cam: camAt(views.wrist, s, 0.00375, 0.0075) })],
      [
        views.wrist,
        (s) => ({
          poses: still(demoScene()),
          cam: moved(views.wrist, [0.004, 0, 0.004], [0.01, 0, 0.008])(s),
        }),
      ],
      [
        views.wrist,
        (s) => ({
          poses: still(demoScene()),
          cam: moved(views.wrist, [0.02, 0.01, 0.02], [0.03, 0.02, 0.05])(s),
        }),
      ],
      [
        views.side,
        (s) => ({
          poses: still(demoScene()),
          cam: moved(views.side, [0.02, 0.01, 0.02], [0.03, 0.02, 0.05])(s),
        }),
      ],
      // 5 cm along the wrist camera's axis (160 px at the image's corners)
      [
        views.wrist,
        (s) => ({ poses: still(demoScene()), cam: moved(views.wrist, [0, 0, 0.05], [0, 0, 0])(s) }),
      ],
    ];
    let linear = 0;
    for (const [view, at] of cases) {
      const r = worst(view, at(-0.5), at(0.5), 0.01);
      expect(r.err).toBeLessThanOrEqual(0.01);
      // reach is the length in 1/64 px, floored
      expect(r.reachErr).toBeLessThanOrEqual(0.01 + 1 / 64);
      linear += r.linear;
    }
    expect(linear).toBeGreaterThan(10000);
    // without the remainder's bound (every full tile of one slot linear) the error grows past it
    // (0.027 px; 0.0065 with it)
    const [view, at] = cases[5]!;
    expect(worst(view, at(-0.5), at(0.5), Number.POSITIVE_INFINITY).err).toBeGreaterThan(0.02);
  });

  it("is not used with lens distortion (the remap's field is the JS pass's)", () => {
    const r = new Rasterizer({ ...DEMO_CAMERA, distortion: [-0.05, 0.01, 0, 0, 0] });
    expect(r.motionKernelReady).toBe(false);
  });
});
