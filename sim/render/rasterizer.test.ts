import { describe, expect, it } from "vitest";
import { mat4Identity, type Mat4, type Vec3 } from "../../robots/math.ts";
import { DEMO_CAMERA, demoScene, demoViews } from "./demo-scene.ts";
import { translationPose } from "./placement.ts";
import { distortPoint } from "../../calibration/distortion.ts";
import { type RasterCamera, Rasterizer } from "./rasterizer.ts";
import type { Rgb, Scene, SceneObject, Shape } from "./scene.ts";

// small camera; with an identity world ← camera, world coordinates are camera coordinates
const CAM: RasterCamera = { width: 160, height: 120, fx: 150, fy: 150, cx: 79.5, cy: 59.5, distortion: [] };
const EYE = mat4Identity();
const BG: Rgb = [10, 20, 30];

function obj(id: string, shape: Shape, pose: Mat4, color: Rgb, emissive = true): SceneObject {
  return { id, shape, pose, color, emissive };
}
function scene(...objects: SceneObject[]): Scene {
  return { objects, background: BG, lightDir: [0, -1, -1] };
}
/** Collects per-pixel mismatches, so one failing assertion lists the first few. */
class Mismatches {
  readonly list: string[] = [];
  check(ok: boolean, what: () => string): void {
    if (!ok && this.list.length < 10) this.list.push(what());
  }
}

function px(rgb: Uint8Array, w: number, u: number, v: number): [number, number, number] {
  const o = (v * w + u) * 3;
  return [rgb[o]!, rgb[o + 1]!, rgb[o + 2]!];
}

describe("Rasterizer projection and depth", () => {
  it("draws a box face exactly where the pinhole formula puts it, at its z depth", () => {
    // front face z = 1.9, x ∈ [-0.05, 0.15], y ∈ [-0.13, 0.07]; no other face is visible from the origin
    const s = scene(
      obj(
        "box",
        { kind: "box", halfExtentsM: [0.1, 0.1, 0.1] },
        translationPose([0.05, -0.03, 2]),
        [200, 100, 50],
      ),
    );
    const out = new Rasterizer(CAM).render(s, EYE);
    const bad = new Mismatches();
    let inside = 0;
    for (let v = 0; v < CAM.height; v++) {
      for (let u = 0; u < CAM.width; u++) {
        const x = ((u - CAM.cx) / CAM.fx) * 1.9;
        const y = ((v - CAM.cy) / CAM.fy) * 1.9;
        // distance to the face edge in pixels (positive inside)
        const du = (Math.min(x + 0.05, 0.15 - x) * CAM.fx) / 1.9;
        const dv = (Math.min(y + 0.13, 0.07 - y) * CAM.fy) / 1.9;
        const d = out.depthMm[v * CAM.width + u]!;
        const c = px(out.rgb, CAM.width, u, v).join(",");
        if (du > 0.01 && dv > 0.01) {
          inside++;
          bad.check(d === 1900 && c === "200,100,50", () => `inside ${u},${v}: ${d} mm, ${c}`);
        } else if (du < -0.01 || dv < -0.01) {
          bad.check(d === 0 && c === BG.join(","), () => `outside ${u},${v}: ${d} mm, ${c}`);
        }
      }
    }
    expect(bad.list).toEqual([]);
    expect(inside).toBeGreaterThan(15 * 15);
  });

  it("gives a sphere's depth and silhouette within tessellation tolerance", () => {
    const s = scene(
      obj("ball", { kind: "sphere", radiusM: 0.2 }, translationPose([0, 0, 1.5]), [255, 255, 255], false),
    );
    const out = new Rasterizer(CAM).render(s, EYE);
    const rPx = CAM.fx * Math.tan(Math.asin(0.2 / 1.5)); // ≈ 20.2 px
    const bad = new Mismatches();
    for (let v = 0; v < CAM.height; v++) {
      for (let u = 0; u < CAM.width; u++) {
        const rr = Math.hypot(u - CAM.cx, v - CAM.cy);
        const d = out.depthMm[v * CAM.width + u]!;
        if (rr < 0.85 * rPx) {
          // exact ray–sphere depth along z (grazing rays near the rim see the facets more)
          const dx = (u - CAM.cx) / CAM.fx;
          const dy = (v - CAM.cy) / CAM.fy;
          const a = dx * dx + dy * dy + 1;
          const t = (1.5 - Math.sqrt(1.5 * 1.5 - a * (1.5 * 1.5 - 0.04))) / a;
          // facets sag up to r·(1 − cos²(7.5°)) ≈ 3.4 mm, seen at the angle between ray and normal
          const tol = 1 + 3.5 / Math.sqrt(1 - (rr / rPx) ** 2);
          bad.check(Math.abs(d - t * 1000) < tol, () => `${u},${v}: ${d} mm, exact ${t * 1000}`);
        } else if (rr < rPx - 1) {
          bad.check(d > 1300 && d < 1500, () => `${u},${v}: ${d} mm`);
        } else if (rr > rPx + 0.5) {
          bad.check(d === 0, () => `${u},${v}: ${d} mm outside`);
        }
      }
    }
    expect(bad.list).toEqual([]);
  });

  it("keeps the nearer object in front whatever the draw order", () => {
    const near = obj(
      "near",
      { kind: "box", halfExtentsM: [0.05, 0.05, 0.05] },
      translationPose([0, 0, 1]),
      [255, 0, 0],
    );
    const far = obj(
      "far",
      { kind: "box", halfExtentsM: [0.5, 0.5, 0.05] },
      translationPose([0, 0, 2]),
      [0, 0, 255],
    );
    const r = new Rasterizer(CAM);
    for (const s of [scene(near, far), scene(far, near)]) {
      const out = r.render(s, EYE);
      expect(px(out.rgb, CAM.width, 80, 60)).toEqual([255, 0, 0]);
      expect(out.depthMm[60 * CAM.width + 80]).toBe(950);
      expect(px(out.rgb, CAM.width, 80, 30)).toEqual([0, 0, 255]);
      expect(out.depthMm[30 * CAM.width + 80]).toBe(1950);
    }
  });

  it("clips triangles that cross the near plane instead of dropping them", () => {
    // a floor slab below the camera running from 1 m behind it to 5 m ahead; top face at y = 0.29
    const floor = obj(
      "floor",
      { kind: "box", halfExtentsM: [1, 0.01, 3] },
      translationPose([0, 0.3, 2]),
      [0, 200, 0],
    );
    const out = new Rasterizer(CAM, { nearM: 0.05 }).render(scene(floor), EYE);
    const bad = new Mismatches();
    let checked = 0;
    for (let v = 0; v < CAM.height; v++) {
      const slope = (v - CAM.cy) / CAM.fy;
      for (let u = 0; u < CAM.width; u++) {
        const d = out.depthMm[v * CAM.width + u]!;
        const z = slope > 0 ? 0.29 / slope : Infinity;
        const x = ((u - CAM.cx) / CAM.fx) * z;
        if (z < 4.8 && Math.abs(x) < 0.95) {
          bad.check(Math.abs(d - z * 1000) < z + 1, () => `${u},${v}: ${d} mm, expected ${z * 1000}`);
          checked++;
        } else if (z > 5.3) {
          bad.check(d === 0, () => `${u},${v}: ${d} mm beyond the slab`);
        }
      }
    }
    expect(bad.list).toEqual([]);
    expect(checked).toBeGreaterThan(5000);
  });

  it("draws nothing for objects behind the camera or seen from inside (back faces culled)", () => {
    const r = new Rasterizer(CAM);
    const behind = obj(
      "b",
      { kind: "box", halfExtentsM: [1, 1, 0.1] },
      translationPose([0, 0, -1]),
      [255, 0, 0],
    );
    const around = obj("a", { kind: "sphere", radiusM: 0.5 }, translationPose([0, 0, 0]), [255, 0, 0]);
    for (const s of [scene(behind), scene(around)]) {
      const out = r.render(s, EYE);
      expect(out.depthMm.every((d) => d === 0)).toBe(true);
    }
  });

  it("places the camera by worldFromCamera", () => {
    // camera 2 m along world +x looking back at the origin (camera z = world −x, x = world −y... any rigid pose)
    const wfc = new Float64Array([0, 0, -1, 2, -1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1]);
    // a box at the world origin: its +x face (x = 0.1) is 1.9 m in front of the camera
    const s = scene(
      obj("box", { kind: "box", halfExtentsM: [0.1, 0.1, 0.1] }, translationPose([0, 0, 0]), [9, 9, 9]),
    );
    const out = new Rasterizer(CAM).render(s, wfc);
    expect(out.depthMm[60 * CAM.width + 80]).toBe(1900);
    // world +y is camera −x (left): a marker at world y = +0.3 appears left of centre
    const s2 = scene(obj("m", { kind: "sphere", radiusM: 0.02 }, translationPose([0, 0.3, 0]), [9, 9, 9]));
    const out2 = new Rasterizer(CAM).render(s2, wfc);
    const u = Math.round(CAM.fx * (-0.3 / 2) + CAM.cx);
    expect(out2.depthMm[60 * CAM.width + u]).toBeGreaterThan(1900);
  });

  it("gives the same frame through the byte-wise path (unaligned target) as through the word path", () => {
    const s = demoScene();
    const r = new Rasterizer(DEMO_CAMERA);
    const aligned = r.render(s, demoViews().front, r.createTarget());
    const n = DEMO_CAMERA.width * DEMO_CAMERA.height;
    const unaligned = { rgb: new Uint8Array(n * 3 + 1).subarray(1), depthMm: new Uint16Array(n) };
    r.render(s, demoViews().front, unaligned);
    expect(Buffer.compare(aligned.rgb, unaligned.rgb)).toBe(0);
    expect(Buffer.from(aligned.depthMm.buffer).equals(Buffer.from(unaligned.depthMm.buffer))).toBe(true);
  });

  it("rejects a render target of the wrong size", () => {
    const r = new Rasterizer(CAM);
    expect(() => r.render(scene(), EYE, { rgb: new Uint8Array(3), depthMm: new Uint16Array(1) })).toThrow(
      /160×120/,
    );
  });
});

describe("Rasterizer thin objects", () => {
  // a 1 mm wire at 1.5 m projects to 0.1 px wide, between the pixel rows 60 and 61
  const y = ((60.45 - CAM.cy) / CAM.fy) * 1.5;
  const points: Vec3[] = [];
  for (let i = 0; i <= 40; i++) points.push([-0.3 + (0.6 * i) / 40, y, 1.5]);
  const wire = obj(
    "wire",
    { kind: "tube", points, radiusM: 0.0005 },
    translationPose([0, 0, 0]),
    [255, 255, 0],
  );
  const columnsHit = (r: Rasterizer): number => {
    const out = r.render(scene(wire), EYE);
    let hit = 0;
    for (let u = 51; u <= 108; u++) {
      let any = false;
      for (let v = 59; v <= 61; v++) any ||= out.depthMm[v * CAM.width + u]! > 0;
      if (any) hit++;
    }
    return hit;
  };

  it("keeps a sub-pixel tube visible as an unbroken line", () => {
    expect(columnsHit(new Rasterizer(CAM))).toBe(108 - 51 + 1);
  });

  it("would lose it without the centreline (the check above can fail)", () => {
    expect(columnsHit(new Rasterizer(CAM, { thinLines: false }))).toBeLessThan(20);
  });

  it("shows the demo wire and loop from about 1 m at 640×480", () => {
    const r = new Rasterizer(DEMO_CAMERA);
    const s = demoScene();
    const onlyWire: Scene = { ...s, objects: s.objects.filter((o) => o.id === "wire" || o.id === "loop") };
    const out = r.render(onlyWire, demoViews().front);
    let n = 0;
    for (const d of out.depthMm) if (d > 0) n++;
    // the wire is ~0.9 m long at ~1 m: several hundred pixels even at one pixel wide
    expect(n).toBeGreaterThan(500);
  });
});

describe("Rasterizer determinism", () => {
  it("renders bit-identical frames for the same scene and camera", () => {
    const a = new Rasterizer(DEMO_CAMERA);
    const b = new Rasterizer(DEMO_CAMERA);
    const views = demoViews();
    for (const view of Object.values(views)) {
      const s1 = demoScene();
      const s2 = demoScene();
      const o1 = a.render(s1, view, a.createTarget());
      a.render(s1, views.side); // something else in between
      const o2 = a.render(s1, view, a.createTarget());
      const o3 = b.render(s2, view, b.createTarget());
      expect(Buffer.compare(o1.rgb, o2.rgb)).toBe(0);
      expect(Buffer.compare(o1.rgb, o3.rgb)).toBe(0);
      expect(Buffer.from(o1.depthMm.buffer).equals(Buffer.from(o3.depthMm.buffer))).toBe(true);
    }
  });
});

describe("Rasterizer lens distortion", () => {
  const dist = { k1: -0.25, k2: 0.05, p1: 0.002, p2: -0.001, k3: 0 };
  const cam: RasterCamera = { ...CAM, distortion: [dist.k1, dist.k2, dist.p1, dist.p2, dist.k3] };

  it("puts a point where the OpenCV model says, not where the pinhole would", () => {
    const p: Vec3 = [0.4, 0.25, 1];
    const s = scene(obj("dot", { kind: "sphere", radiusM: 0.008 }, translationPose(p), [255, 255, 255]));
    const out = new Rasterizer(cam).render(s, EYE);
    let su = 0;
    let sv = 0;
    let n = 0;
    for (let v = 0; v < cam.height; v++) {
      for (let u = 0; u < cam.width; u++) {
        if (out.depthMm[v * cam.width + u]! > 0) {
          su += u;
          sv += v;
          n++;
        }
      }
    }
    expect(n).toBeGreaterThan(0);
    const [xd, yd] = distortPoint(dist, p[0] / p[2], p[1] / p[2]);
    const eu = cam.fx * xd + cam.cx;
    const ev = cam.fy * yd + cam.cy;
    expect(Math.hypot(su / n - eu, sv / n - ev)).toBeLessThan(1);
    const pinholeU = cam.fx * (p[0] / p[2]) + cam.cx;
    const pinholeV = cam.fy * (p[1] / p[2]) + cam.cy;
    expect(Math.hypot(su / n - pinholeU, sv / n - pinholeV)).toBeGreaterThan(3);
  });

  it("fills the corners of a barrel-distorted view (the ideal image is widened)", () => {
    const wall = obj(
      "wall",
      { kind: "box", halfExtentsM: [5, 5, 0.1] },
      translationPose([0, 0, 2.1]),
      [100, 100, 100],
    );
    const out = new Rasterizer(cam).render(scene(wall), EYE);
    for (const [u, v] of [
      [0, 0],
      [159, 0],
      [0, 119],
      [159, 119],
    ] as const) {
      expect(out.depthMm[v * cam.width + u]).toBe(2000);
    }
  });
});
