import { createHash } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { interpolateChunk } from "../../seam/interpolate.ts";
import type { Frame } from "../../seam/types.ts";
import { PANDA } from "../../robots/franka/models.ts";
import { wireReferencePath } from "../buzzwire/reference-path.ts";
import { createSimBackend, type SimBackend, type SimBackendOptions } from "../sim-backend.ts";
import { DEFAULT_REALISM, RealismSchema, SensorRealism, simdAvailable } from "./realism.ts";

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

/**
 * a short motion along the wire with frames of two cameras every 40 ticks; returns frame digests
 * and readings (simulated episodes take tens of seconds on a loaded machine: hence the timeouts)
 */
async function episode(b: SimBackend, keep?: Frame[]) {
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
  const res = await b.execute(traj, {
    capture: { everyTicks: 40, cameras: ["front", "wrist"], depth: true },
  });
  keep?.push(...res.frames);
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
  }, 180_000);

  it("off (false) gives exactly the ideal sensors", async () => {
    const ideal = await episode(await backend(5));
    const off = await episode(await backend(5, { realism: false }));
    expect(off).toEqual(ideal);
    const on = await episode(await backend(5, { realism: DEFAULT_REALISM }));
    expect(on.frames.map((x) => x[2])).not.toEqual(ideal.frames.map((x) => x[2]));
  }, 180_000);

  it("motion blur: frames taken while the arm moves are smeared (the wrist view most), still frames not; off = instants", async () => {
    const cal = (await backend(3)).currentCalibration();
    const onF: Frame[] = [];
    const offF: Frame[] = [];
    const longF: Frame[] = [];
    const on = await episode(await backend(3, { realism: DEFAULT_REALISM, calibration: cal }), onF);
    const off = await episode(
      await backend(3, { realism: RealismSchema.parse({ rgb: { motionBlur: false } }), calibration: cal }),
      offF,
    );
    expect(on.frames.length).toBe(off.frames.length);
    // the first capture is before the motion: the same bytes; later wrist frames differ
    expect(on.frames[0]).toEqual(off.frames[0]);
    expect(on.frames[1]).toEqual(off.frames[1]);
    const wristDiffers = on.frames.filter((f, k) => f[0] === "wrist" && f[2] !== off.frames[k]![2]).length;
    expect(wristDiffers).toBeGreaterThan(2);
    // readings are not touched by blur
    expect(on.final).toEqual(off.final);
    // a longer exposure smears more: the wrist frames' colour bytes that differ from the instants
    // (the same seed: the same noise on every unchanged byte)
    await episode(
      await backend(3, { realism: RealismSchema.parse({ rgb: { exposureMs: 30 } }), calibration: cal }),
      longF,
    );
    const differing = (frames: Frame[]) => {
      let n = 0;
      for (const [k, f] of frames.entries()) {
        if (f.camera !== "wrist") continue;
        const a = f.rgb.data;
        const b = offF[k]!.rgb.data;
        for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) n++;
      }
      return n;
    };
    const at15 = differing(onF);
    const at30 = differing(longF);
    expect(at15).toBeGreaterThan(1000);
    expect(at30).toBeGreaterThan(1.3 * at15);
  }, 180_000);

  it("stamps frames and readings at their (earlier) measurement time", async () => {
    const b = await backend(6, { realism: DEFAULT_REALISM });
    await b.hold(0.2);
    const [f] = await b.capture([], { depth: false });
    const lagS = b.now() - f!.t;
    expect(lagS).toBeGreaterThanOrEqual(0.03 - 1e-9);
    expect(lagS).toBeLessThanOrEqual(0.04 + 1e-9);
    expect(b.now() - b.read().t).toBeCloseTo(0.002, 9);
  });

  it("the frames an agent sees: the wire mostly gone from depth, noise on the board as modelled", async () => {
    const ideal = await backend(9);
    const cal = ideal.currentCalibration();
    const real = await backend(9, { realism: DEFAULT_REALISM, calibration: cal });
    await ideal.hold(0.2);
    await real.hold(0.2);
    const [fi] = await ideal.capture(["front"], { depth: true });
    const [fr] = await real.capture(["front"], { depth: true });
    const w = fi!.rgb.width;
    const rgb = fi!.rgb.data;
    const di = fi!.depthMm!.data;
    const dr = fr!.depthMm!.data;
    // the wire's pixels in the ideal frame, by the example agent's colour rule (orange)
    let wire = 0;
    let kept = 0;
    let holes = 0;
    const p = DEFAULT_REALISM.depth;
    const sigma = (mm: number) => Math.hypot(p.baseMm + p.quadMmPerM2 * (mm / 1000) ** 2, Math.sqrt(1 / 12));
    let z2 = 0;
    let nBoard = 0;
    for (let i = 0; i < di.length; i++) {
      const [r, g, b] = [rgb[3 * i]!, rgb[3 * i + 1]!, rgb[3 * i + 2]!];
      if (r > 60 && r * 10 > g * 13 && g * 10 > (r * 35) / 10 && g > 2 * b + 8) {
        wire++;
        if (dr[i] === 0) holes++;
        else if (Math.abs(dr[i]! - di[i]!) <= 5 * sigma(di[i]!)) kept++;
        continue;
      }
      // smooth surfaces (all 4-neighbours within 3 mm in the ideal image): noise only
      const d = di[i]!;
      const nb = [di[i - 1], di[i + 1], di[i - w], di[i + w]];
      if (d === 0 || dr[i] === 0 || nb.some((v) => v === undefined || v === 0 || Math.abs(v - d) > 3))
        continue;
      z2 += ((dr[i]! - d) / sigma(d)) ** 2;
      nBoard++;
    }
    expect(wire).toBeGreaterThan(200);
    // ideal: every wire pixel has its depth; with realism most are holes or show the board
    expect(kept / wire).toBeLessThan(0.35);
    expect(holes / wire).toBeGreaterThan(0.3);
    expect(nBoard).toBeGreaterThan(50_000);
    const rel = Math.sqrt(z2 / nBoard);
    expect(rel).toBeGreaterThan(0.85);
    expect(rel).toBeLessThan(1.15);
  });

  /** a w × h depth image, every pixel `mm`, with `paint(x, y)` overriding where it returns a value */
  const plane = (w: number, h: number, mm: number, paint?: (x: number, y: number) => number | undefined) => {
    const d = new Uint16Array(w * h);
    for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) d[y * w + x] = paint?.(x, y) ?? mm;
    return d;
  };
  const FX = 554; // the sim benches' focal length, px

  it("same seed gives the same bytes; another seed or step other bytes (RGB and depth)", () => {
    const w = 96;
    const h = 64;
    const run = (seed: number, step: number) => {
      const rgb = new Uint8Array(w * h * 3);
      for (let i = 0; i < rgb.length; i++) rgb[i] = (i * 37) & 255;
      const depth = plane(w, h, 900, (x, y) => (y >= 30 && y < 32 ? 800 : x > 60 ? 400 : undefined));
      new SensorRealism(DEFAULT_REALISM, seed).processFrame(step, 1, w, h, rgb, depth, FX);
      return createHash("sha256").update(rgb).update(new Uint8Array(depth.buffer)).digest("hex");
    };
    expect(run(7, 3)).toBe(run(7, 3));
    expect(run(8, 3)).not.toBe(run(7, 3));
    expect(run(7, 4)).not.toBe(run(7, 3));
  });

  it("the output bytes are pinned (speed-ups must keep them; a model change updates the digests and says so)", () => {
    // a board with a step, a near block (occlusion shadow), thin wires (rows and columns), a
    // hole and pixels below the minimum range, under the defaults and under non-default steps
    const w = 120;
    const h = 70;
    const depth0 = plane(w, h, 900, (x, y) =>
      y === 20 || (x === 30 && y > 30)
        ? 820
        : x >= 70 && x < 90 && y >= 35 && y < 55
          ? 450
          : x >= 100 && y < 10
            ? 0
            : x < 6 && y > 60
              ? 120
              : x >= 60
                ? 960 + (y % 7)
                : undefined,
    );
    const rgb0 = new Uint8Array(w * h * 3);
    for (let i = 0; i < rgb0.length; i++) rgb0[i] = (i * 53 + (i >> 5)) & 255;
    const digestOf = (params: typeof DEFAULT_REALISM, seed: number, step: number, simd = true) => {
      const rgb = rgb0.slice();
      const depth = depth0.slice();
      const re = new SensorRealism(params, seed);
      re.simd = simd;
      re.processFrame(step, 1, w, h, rgb, depth, FX);
      return createHash("sha256").update(rgb).update(new Uint8Array(depth.buffer)).digest("hex").slice(0, 16);
    };
    const other = RealismSchema.parse({ depth: { quantMm: 3, baseMm: 0.7, thinMaxPx: 1, edgeStepMm: 40.5 } });
    const pinned = ["f946b636835985ee", "54b144e3d6fbfc6a", "9f4c8fbd66674060"];
    for (const simd of [true, false])
      expect([
        digestOf(DEFAULT_REALISM, 7, 3, simd),
        digestOf(DEFAULT_REALISM, 8, 0, simd),
        digestOf(other, 7, 3, simd),
      ]).toEqual(pinned);
  });

  it("depth: the WebAssembly SIMD kernel gives the bytes of the JS pass (random scenes, sizes, parameters)", () => {
    // the kernel is there on Node 20 (WebAssembly SIMD); without it both runs below would be JS
    expect(simdAvailable()).toBe(true);
    let state = 12345;
    const rnd = () => {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      return state / 4294967296;
    };
    const sets = [
      DEFAULT_REALISM,
      RealismSchema.parse({ depth: { baseMm: 0.7, edgeStepMm: 40.5, thinMaxPx: 4 } }),
      RealismSchema.parse({ depth: { thinStepMm: 3.3, minRangeMm: 600.5, dropout: 0.3, thinMaxPx: 0 } }),
      RealismSchema.parse({ depth: { dropout: 0, minRangeMm: 0, quadMmPerM2: 40 }, domain: false }),
      RealismSchema.parse({ depth: { dropout: 1 } }),
    ];
    let compared = 0;
    for (let trial = 0; trial < 40; trial++) {
      const w = trial < 5 ? [1, 7, 8, 9, 33][trial]! : 8 + Math.floor(rnd() * 150);
      const h = 1 + Math.floor(rnd() * 60);
      // boxes and bars at random depths on a sloped board, zeros, near pixels and the top of the range
      const d = plane(w, h, 0, (x, y) => 700 + Math.floor(x * 0.7 + y * 0.3));
      for (let k = 0; k < 12; k++) {
        const x0 = Math.floor(rnd() * w);
        const y0 = Math.floor(rnd() * h);
        const bw = 1 + Math.floor(rnd() * (rnd() < 0.5 ? 3 : 40));
        const bh = 1 + Math.floor(rnd() * (rnd() < 0.5 ? 3 : 30));
        const r = rnd();
        const z =
          r < 0.1
            ? 0
            : r < 0.2
              ? Math.floor(rnd() * 200)
              : r < 0.25
                ? 65535 - Math.floor(rnd() * 3)
                : 300 + Math.floor(rnd() * 3000);
        for (let y = y0; y < Math.min(h, y0 + bh); y++)
          for (let x = x0; x < Math.min(w, x0 + bw); x++)
            d[y * w + x] = z + (rnd() < 0.2 ? Math.floor(rnd() * 40) : 0);
      }
      const params = sets[trial % sets.length]!;
      const fx = [FX, 300, 900][trial % 3]!;
      const run = (simd: boolean) => {
        const re = new SensorRealism(params, 1 + (trial % 4));
        re.simd = simd;
        const out = d.slice();
        re.processFrame(trial, trial % 3, w, h, new Uint8Array(w * h * 3), out, fx);
        return out;
      };
      const js = run(false);
      expect(Buffer.from(run(true).buffer).equals(Buffer.from(js.buffer)), `trial ${trial}: ${w}×${h}`).toBe(
        true,
      );
      compared += js.length;
    }
    expect(compared).toBeGreaterThan(40_000);
  });

  it("rgb: the four-bytes-per-load path gives the bytes of the byte path", () => {
    const w = 101; // odd sizes: segments end inside a row, tails are handled byte by byte
    const h = 37;
    const n = w * h * 3;
    const base = new Uint8Array(n);
    for (let i = 0; i < n; i++) base[i] = (i * 131 + (i >> 7)) & 255;
    const aligned = base.slice();
    const store = new Uint8Array(n + 1);
    const unaligned = store.subarray(1); // byteOffset 1: byte path only
    unaligned.set(base);
    const re = new SensorRealism(DEFAULT_REALISM, 11);
    re.simd = false; // the JS paths (the kernel copies the bytes into its own memory)
    re.processFrame(5, 0, w, h, aligned, null, FX);
    re.processFrame(5, 0, w, h, unaligned, null, FX);
    expect(Buffer.from(unaligned).equals(Buffer.from(aligned))).toBe(true);
    expect(Buffer.from(aligned).equals(Buffer.from(base))).toBe(false);
  });

  it("rgb: the WebAssembly kernel gives the bytes of the JS path (sizes with partial rounds and segments, flicker steps)", () => {
    expect(simdAvailable()).toBe(true);
    for (const [w, h] of [
      [1, 1],
      [5, 3],
      [16, 1],
      [101, 37],
      [640, 48],
      [333, 71],
    ] as const) {
      const base = new Uint8Array(w * h * 3);
      for (let i = 0; i < base.length; i++) base[i] = (i * 131 + (i >> 7) + w) & 255;
      for (let step = 0; step < 6; step++) {
        const js = base.slice();
        const wasm = base.slice();
        const a = new SensorRealism(DEFAULT_REALISM, 3 + step);
        a.simd = false;
        a.processFrame(step, 1, w, h, js, null, FX);
        new SensorRealism(DEFAULT_REALISM, 3 + step).processFrame(step, 1, w, h, wasm, null, FX);
        expect(Buffer.from(wasm).equals(Buffer.from(js)), `${w}×${h} step ${step}`).toBe(true);
      }
    }
  });

  it("depth noise: σ = quad · z² (+ 1 mm quantisation) at 0.5, 1 and 2 m, within 10 %", () => {
    const w = 64;
    const h = 48;
    const p = RealismSchema.parse({ depth: { dropout: 0 }, domain: false });
    const re = new SensorRealism(p, 2);
    for (const zMm of [500, 1000, 2000]) {
      let s2 = 0;
      let n = 0;
      let zeros = 0;
      for (let step = 0; step < 20; step++) {
        const d = plane(w, h, zMm);
        re.processFrame(step, 0, w, h, new Uint8Array(w * h * 3), d, FX);
        for (const v of d) {
          if (v === 0) zeros++;
          s2 += (v - zMm) ** 2;
          n++;
        }
      }
      expect(zeros).toBe(0);
      const zM = zMm / 1000;
      const model = Math.sqrt((p.depth.baseMm + p.depth.quadMmPerM2 * zM * zM) ** 2 + 1 / 12);
      const measured = Math.sqrt(s2 / n);
      expect(measured / model).toBeGreaterThan(0.9);
      expect(measured / model).toBeLessThan(1.1);
    }
    // the default is the D435's RMS error at 848×480: 0.08 px subpixel · z² / (424 px · 50 mm)
    expect(DEFAULT_REALISM.depth.quadMmPerM2).toBeCloseTo((0.08 * 1e6) / (424 * 50), 1);
  });

  it("depth: no return nearer than the minimum range; quantised to whole mm", () => {
    const w = 32;
    const h = 16;
    const re = new SensorRealism(DEFAULT_REALISM, 3);
    const d = plane(w, h, 150, (x) => (x >= 16 ? 600 : undefined));
    re.processFrame(0, 0, w, h, new Uint8Array(w * h * 3), d, FX);
    for (let y = 0; y < h; y++) {
      for (let x = 0; x < 16; x++) expect(d[y * w + x]).toBe(0);
    }
    const far = [...d].filter((_v, i) => i % w >= 18);
    expect(far.filter((v) => v !== 0).length).toBeGreaterThan(0.95 * far.length);
    expect(far.every((v) => Number.isInteger(v) && (v === 0 || Math.abs(v - 600) < 10))).toBe(true);
  });

  it("depth: a wire 2 px wide is mostly lost (holes or the board's depth), a 20 px bar is kept", () => {
    const w = 200;
    const h = 120;
    const p = RealismSchema.parse({ depth: { dropout: 0 } });
    const re = new SensorRealism(p, 4);
    // a horizontal wire at 800 mm (rows 40, 41) and a vertical one (columns 150, 151) in front of
    // a board at 860 mm; a bar 20 px tall at 800 mm (rows 80–99) stands for a wide object
    const clean = plane(w, h, 860, (x, y) =>
      (y === 40 || y === 41) && x >= 20 && x < 120
        ? 800
        : (x === 150 || x === 151) && y >= 50 && y < 110
          ? 800
          : y >= 80 && y < 100 && x >= 20 && x < 120
            ? 800
            : undefined,
    );
    const count = { wire: 0, kept: 0, hole: 0, board: 0, bar: 0, barKept: 0 };
    for (let step = 0; step < 30; step++) {
      const d = clean.slice();
      re.processFrame(step, 0, w, h, new Uint8Array(w * h * 3), d, FX);
      for (let y = 0; y < h; y++)
        for (let x = 0; x < w; x++) {
          const i = y * w + x;
          const wire =
            ((y === 40 || y === 41) && x >= 24 && x < 116) ||
            ((x === 150 || x === 151) && y >= 54 && y < 106);
          const bar = y >= 84 && y < 96 && x >= 24 && x < 116;
          const v = d[i]!;
          if (wire) {
            count.wire++;
            if (v === 0) count.hole++;
            else if (Math.abs(v - 800) <= 12) count.kept++;
            else if (Math.abs(v - 860) <= 12) count.board++;
          }
          if (bar) {
            count.bar++;
            if (Math.abs(v - 800) <= 12) count.barKept++;
          }
        }
    }
    const f = (k: number) => k / count.wire;
    // thinDropout 0.5, thinBackground 0.4, the rest (0.1) keep their depth; ± 0.05
    expect(Math.abs(f(count.hole) - p.depth.thinDropout)).toBeLessThan(0.05);
    expect(Math.abs(f(count.board) - p.depth.thinBackground)).toBeLessThan(0.05);
    expect(Math.abs(f(count.kept) - (1 - p.depth.thinDropout - p.depth.thinBackground))).toBeLessThan(0.05);
    expect(count.barKept / count.bar).toBeGreaterThan(0.99);
    // the thin width is in depth-imager pixels: with a quarter of the focal length the 2 px wire
    // is 2 · 4 · 424 / 554 ≈ 6 imager px wide, no longer thin
    let keptWide = 0;
    let wire = 0;
    const d = clean.slice();
    re.processFrame(0, 0, w, h, new Uint8Array(w * h * 3), d, FX / 4);
    for (let x = 24; x < 116; x++)
      for (const y of [40, 41]) {
        wire++;
        if (Math.abs(d[y * w + x]! - 800) <= 12) keptWide++;
      }
    expect(keptWide / wire).toBeGreaterThan(0.95);
  });

  it("depth: the far side of a step has no return, and the occlusion shadow left of a near object", () => {
    const w = 160;
    const h = 8;
    const p = RealismSchema.parse({ depth: { dropout: 0 }, domain: false });
    const re = new SensorRealism(p, 5);
    // a near block (500 mm) at x 100–139 in front of a wall at 1000 mm
    const d = plane(w, h, 1000, (x) => (x >= 100 && x < 140 ? 500 : undefined));
    re.processFrame(0, 0, w, h, new Uint8Array(w * h * 3), d, FX);
    // shadow width f·B·(1/z_near − 1/z_far) = 554 · 50 · (1/500 − 1/1000) = 27.7 px
    const band = Math.round(FX * p.depth.baselineMm * (1 / 500 - 1 / 1000));
    for (let y = 0; y < h; y++) {
      const row = [...d.subarray(y * w, y * w + w)];
      for (let x = 100 - band; x < 100; x++) expect(row[x]).toBe(0);
      expect(row[100 - band - 2]).not.toBe(0);
      expect(row[100]).not.toBe(0); // the near side keeps its depth
      expect(row[139]).not.toBe(0);
      expect(row[140]).toBe(0); // the far side right of the block: one pixel
      expect(row[142]).not.toBe(0);
    }
  });

  it("rgb: noise and per-seed gains; domain off keeps the mean", () => {
    const w = 100;
    const h = 100;
    const mean = (p: typeof DEFAULT_REALISM, seed: number) => {
      const rgb = new Uint8Array(w * h * 3).fill(128);
      new SensorRealism(p, seed).processFrame(0, 0, w, h, rgb, null, FX);
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
