import { createHash } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { interpolateChunk } from "../../seam/interpolate.ts";
import type { Frame } from "../../seam/types.ts";
import { PANDA } from "../../robots/franka/models.ts";
import { wireReferencePath } from "../buzzwire/reference-path.ts";
import { createSimBackend, type SimBackend, type SimBackendOptions } from "../sim-backend.ts";
import { DEFAULT_REALISM, RealismSchema, SensorRealism } from "./realism.ts";

const open: SimBackend[] = [];
afterEach(async () => {
  for (const b of open.splice(0)) await b.shutdown();
});

async function backend(seed: number, extra: Partial<SimBackendOptions> = {}): Promise<SimBackend> {
  const b = createSimBackend({ robot: PANDA, seed, ...extra });
  open.push(b);
  await b.configure();
  await b.activate();
  return b;
}

const digest = (f: Frame) =>
  createHash("sha256").update(f.rgb.data).update(new Uint8Array(f.depthMm!.data.buffer)).digest("hex");

/** a short motion along the wire with frames every 40 ticks; returns frame digests and readings */
async function episode(b: SimBackend) {
  const r = b.read();
  const ref = wireReferencePath(PANDA, b.currentCalibration(), {
    gripperWidthM: r.gripperWidthM,
    seedQ: r.q,
    speedMps: 0.06,
    spacingM: 0.006,
  });
  const traj = interpolateChunk(
    { q: r.q, dq: r.dq, gripperWidthM: r.gripperWidthM },
    ref.rows.slice(0, 4),
    ref.dtS,
    PANDA.controlPeriodS,
  );
  const res = await b.execute(traj, { capture: { everyTicks: 40, cameras: [], depth: true } });
  return { frames: res.frames.map((f) => [f.camera, f.t, digest(f)]), final: res.final };
}

describe("sensor realism in the sim", () => {
  it("is deterministic per seed and differs across seeds", async () => {
    const a = await episode(await backend(3, { realism: DEFAULT_REALISM }));
    const b = await episode(await backend(3, { realism: DEFAULT_REALISM }));
    expect(b).toEqual(a);
    expect(a.frames.length).toBeGreaterThan(2);
    // another seed of the same wire (given calibration): other noise, other domain sample
    const b3 = await backend(3);
    const cal = b3.currentCalibration();
    const c = await episode(await backend(4, { realism: DEFAULT_REALISM, calibration: cal }));
    const d = await episode(await backend(3, { realism: DEFAULT_REALISM, calibration: cal }));
    expect(d).toEqual(a);
    expect(c.frames.map((x) => x[2])).not.toEqual(a.frames.map((x) => x[2]));
  });

  it("off (false) gives exactly the ideal sensors", async () => {
    const ideal = await episode(await backend(5));
    const off = await episode(await backend(5, { realism: false }));
    expect(off).toEqual(ideal);
    const on = await episode(await backend(5, { realism: DEFAULT_REALISM }));
    expect(on.frames.map((x) => x[2])).not.toEqual(ideal.frames.map((x) => x[2]));
  });

  it("stamps frames and readings at their (earlier) measurement time", async () => {
    const b = await backend(6, { realism: DEFAULT_REALISM });
    await b.hold(0.2);
    const [f] = await b.capture([], { depth: false });
    const lagS = b.now() - f!.t;
    expect(lagS).toBeGreaterThanOrEqual(0.03 - 1e-9);
    expect(lagS).toBeLessThanOrEqual(0.04 + 1e-9);
    expect(b.now() - b.read().t).toBeCloseTo(0.002, 9);
  });

  it("depth: quantised, noise grows with distance, holes at steps and on thin structures", () => {
    const w = 64;
    const h = 32;
    const clean = new Uint16Array(w * h);
    // left half near (500 mm), right half far (2000 mm), a 1-px thin post at x = 10 at 400 mm on 2000 mm
    for (let y = 0; y < h; y++)
      for (let x = 0; x < w; x++) clean[y * w + x] = x < w / 2 ? (x === 10 ? 400 : 500) : 2000;
    for (let y = 0; y < h; y++) clean[y * w + 10] = 400;
    for (let y = 0; y < h; y++) {
      clean[y * w + 9] = 2000;
      clean[y * w + 8] = 2000;
      clean[y * w + 11] = 2000;
      clean[y * w + 12] = 2000;
    }
    const p = RealismSchema.parse({ depth: { dropout: 0, thinDropout: 1 }, domain: false });
    const re = new SensorRealism(p, 1);
    const std = (lo: number, hi: number, ref: number, out: Uint16Array) => {
      let s = 0;
      let n = 0;
      for (let y = 0; y < h; y++)
        for (let x = lo; x < hi; x++) {
          const v = out[y * w + x]!;
          if (v === 0) continue;
          s += (v - ref) ** 2;
          n++;
        }
      return Math.sqrt(s / n);
    };
    let nearVar = 0;
    let farVar = 0;
    for (let step = 0; step < 20; step++) {
      const d = clean.slice();
      re.processFrame(step, 0, w, h, new Uint8Array(w * h * 3), d);
      expect(d.every((v) => Number.isInteger(v))).toBe(true);
      nearVar += std(16, 30, 500, d) ** 2;
      farVar += std(34, 64, 2000, d) ** 2;
      for (let y = 0; y < h; y++) {
        expect(d[y * w + 10]).toBe(0); // thin post gone (thinDropout 1)
        expect(d[y * w + w / 2]).toBe(0); // far side of the 500 → 2000 mm step
        expect(d[y * w + w / 2 - 1]).not.toBe(0); // near side kept
      }
    }
    const sNear = Math.sqrt(nearVar / 20);
    const sFar = Math.sqrt(farVar / 20);
    // σ(z) = 0.5 + 1.5 z²: 0.875 mm at 0.5 m, 6.5 mm at 2 m (quantisation adds ~0.3 mm)
    expect(sNear).toBeGreaterThan(0.6);
    expect(sNear).toBeLessThan(1.3);
    expect(sFar).toBeGreaterThan(5.5);
    expect(sFar).toBeLessThan(7.5);
  });

  it("rgb: noise and per-seed gains; domain off keeps the mean", () => {
    const w = 100;
    const h = 100;
    const mean = (p: typeof DEFAULT_REALISM, seed: number) => {
      const rgb = new Uint8Array(w * h * 3).fill(128);
      new SensorRealism(p, seed).processFrame(0, 0, w, h, rgb, null);
      let s = 0;
      let s2 = 0;
      for (let i = 0; i < rgb.length; i += 3) {
        s += rgb[i]!;
        s2 += rgb[i]! ** 2;
      }
      const m = s / (w * h);
      return { m, sd: Math.sqrt(s2 / (w * h) - m * m) };
    };
    const off = RealismSchema.parse({ domain: false, rgb: { exposureFlicker: 0 } });
    const a = mean(off, 1);
    expect(Math.abs(a.m - 128)).toBeLessThan(0.5);
    // σ² = 2² + 0.25·128 = 36
    expect(a.sd).toBeGreaterThan(5.4);
    expect(a.sd).toBeLessThan(6.6);
    const g = [1, 2, 3, 4, 5].map((s) => mean(DEFAULT_REALISM, s).m);
    expect(Math.max(...g) - Math.min(...g)).toBeGreaterThan(5);
  });
});
