/**
 * End-to-end buzz-wire over HTTP, tier 3: on the simulated bench by default; on a real bench
 * when HIL_BENCH names its bench file (`HIL_BENCH=bench.yaml npx vitest run hil-tests/buzz-wire.test.ts`).
 */
import sharp from "sharp";
import { centreline } from "../calibration/wire-geometry.ts";
import { afterEach, describe, expect, it } from "vitest";
import type { EpisodeResult } from "../gateway/recorder/result.ts";
import type { TestGateway } from "../compose/testing.ts";
import {
  actRows,
  api,
  benchUnderTest,
  redPixels,
  referenceRows,
  sidewaysRows,
  type SuiteContext,
} from "./buzz-wire.suite.ts";

let g: TestGateway | undefined;
afterEach(async () => {
  await g?.close();
  g = undefined;
});

async function simBench(seed: number, level = "joint_position"): Promise<SuiteContext> {
  const ctx = await benchUnderTest(seed, level);
  g = ctx.g;
  return ctx;
}

describe("buzz wire on the sim bench, through the Standard API", () => {
  it("spec → observe: frames decode and depth is plausible", async () => {
    const { g } = await simBench(1);
    const spec = (await api(g, "GET", "/v1/spec")).body;
    expect(spec.cameras.map((c: { name: string }) => c.name)).toEqual(["front", "side", "top", "wrist"]);
    const obs = (await api(g, "POST", "/v1/observe", { depth: true, cameras: ["front"] })).body;
    const rgb = (await api(g, "GET", obs.frames[0].rgb)).body as Buffer;
    expect((await sharp(rgb).metadata()).width).toBe(640);
    const depthPng = (await api(g, "GET", obs.frames[0].depth)).body as Buffer;
    const { data } = await sharp(depthPng)
      .toColourspace("grey16")
      .raw({ depth: "ushort" })
      .toBuffer({ resolveWithObject: true });
    const d = new Uint16Array(data.buffer, data.byteOffset, data.length / 2);
    const centre = d[240 * 640 + 320]!;
    // the front camera looks at the bench from about a metre away
    expect(centre).toBeGreaterThan(300);
    expect(centre).toBeLessThan(3000);
  });

  it("doing nothing scores 0", async () => {
    const { g } = await simBench(1);
    await api(g, "POST", "/v1/observe", { advance_s: 1 });
    const fin = (await api(g, "POST", "/v1/finish")).body;
    expect(fin.episode.reason).toBe("finished");
    const r = g.gateway.requireEpisode().result as EpisodeResult;
    expect(r.progress).toBe(0);
    expect(r.progress_quantised).toBe(0);
    expect(r.success).toBe(false);
  });

  for (const seed of [1, 2, 3, 4, 5]) {
    it(`the reference path threads the wire without contact and scores 100 % (seed ${seed})`, async () => {
      const ctx = await simBench(seed);
      const r0 = ctx.g.gateway.bench.backend.read();
      const { rows, dtS } = referenceRows(ctx, r0.q, r0.gripperWidthM);
      const last = await actRows(ctx.g, rows, dtS);
      const events = last.events as { type: string }[];
      expect(events.filter((e) => e.type === "contact")).toEqual([]);
      expect(last.episode).toMatchObject({ status: "ended", reason: "success" });
      const result = ctx.g.gateway.requireEpisode().result as EpisodeResult;
      expect(result.progress).toBeCloseTo(1, 9);
      expect(result.progress_quantised).toBe(1);
      expect(Object.values(result.stages).every((t) => typeof t === "number")).toBe(true);
    });
  }

  it("a sweep into the wire closes the circuit, ends the trial and lights the lamp", async () => {
    const ctx = await simBench(2);
    const r0 = ctx.g.gateway.bench.backend.read();
    const before = (await api(ctx.g, "POST", "/v1/observe", { cameras: ["front"] })).body;
    const redBefore = await redPixels((await api(ctx.g, "GET", before.frames[0].rgb)).body as Buffer);
    const { rows, dtS } = sidewaysRows(ctx.g, r0.q, r0.gripperWidthM, 0.03, 2);
    const res = (await api(ctx.g, "POST", "/v1/act", { type: "joint_position", dt: dtS, rows })).body;
    expect(res.episode).toMatchObject({ status: "ended", reason: "task_failed" });
    const contact = res.events.find((e: any) => e.type === "contact" && e.data.closed === true);
    expect(contact).toBeDefined();
    // the arm stopped within one control period of the contact
    const lastReading = res.readings[res.readings.length - 1];
    expect(lastReading.t - contact.t).toBeLessThanOrEqual(0.001 + 1e-9);
    expect(res.executed_rows).toBeLessThan(rows.length);
    const after = (await api(ctx.g, "POST", "/v1/observe", { cameras: ["front"] })).body;
    const redAfter = await redPixels((await api(ctx.g, "GET", after.frames[0].rgb)).body as Buffer);
    expect(redAfter).toBeGreaterThan(redBefore + 20);
    // every later motion call is refused with the end reason
    const again = await api(ctx.g, "POST", "/v1/act", {
      type: "joint_position",
      dt: dtS,
      rows: rows.slice(0, 1),
    });
    expect(again.status).toBe(409);
    expect(again.body.error.details.reason).toBe("task_failed");
  });

  it("a touch half-way scores that position (continuous) and its checkpoint floor (quantised)", async () => {
    const ctx = await simBench(3);
    const r0 = ctx.g.gateway.bench.backend.read();
    const { rows, dtS } = referenceRows(ctx, r0.q, r0.gripperWidthM, 0.5);
    const mid = await actRows(ctx.g, rows, dtS);
    expect(mid.episode.status).toBe("running");
    const rHalf = ctx.g.gateway.bench.backend.read();
    const sweep = sidewaysRows(ctx.g, rHalf.q, rHalf.gripperWidthM, 0.03, 2);
    const res = (
      await api(ctx.g, "POST", "/v1/act", { type: "joint_position", dt: sweep.dtS, rows: sweep.rows })
    ).body;
    expect(res.episode.reason).toBe("task_failed");
    const result = ctx.g.gateway.requireEpisode().result as EpisodeResult;
    // the reference rows are evenly spaced in arc length: half the rows ≈ half the course
    expect(result.progress).toBeGreaterThan(0.45);
    expect(result.progress).toBeLessThan(0.55);
    expect(result.progress_quantised).toBe(Math.floor(result.progress * 5) / 5);
  });

  it("cheats get nothing: no agent response reveals the wire, the score or privileged state", async () => {
    const ctx = await simBench(4);
    const bodies: string[] = [];
    const call = async (method: "GET" | "POST", url: string, body?: unknown) => {
      const r = await api(ctx.g, method, url, body);
      if (!Buffer.isBuffer(r.body)) bodies.push(JSON.stringify(r.body));
      return r;
    };
    await call("GET", "/v1/task");
    await call("GET", "/v1/spec");
    await call("POST", "/v1/observe", { advance_s: 0.5, depth: true });
    const r0 = ctx.g.gateway.bench.backend.read();
    const { rows, dtS } = referenceRows(ctx, r0.q, r0.gripperWidthM, 0.3);
    // with frames: every frame carries its reading (tool pose) — scanned too
    await call("POST", "/v1/act", {
      type: "joint_position",
      dt: dtS,
      rows: rows.slice(0, 30),
      frames: { fps: 5, cameras: ["front"] },
    });
    // the agent token cannot reach operator or privileged calls, nor invent routes
    for (const url of ["/v1/admin/state", "/v1/admin/privileged/state", "/v1/admin/episodes"]) {
      expect((await call("GET", url)).status).toBe(403);
    }
    for (const url of ["/v1/state", "/v1/world", "/v1/objects", "/v1/success", "/v1/score"]) {
      expect((await call("GET", url)).status).toBe(404);
    }
    await call("POST", "/v1/finish");
    const all = bodies.join("\n");
    for (const key of [
      "pointsBase",
      "startMarkM",
      "endMarkM",
      "wireRadiusM",
      "progress",
      "stages",
      "centreline",
    ]) {
      expect(all).not.toContain(key);
    }
    // the task card's bench facts and safety volumes are there, and name no mark or length
    expect(all).toContain("inner_radius_m");
    expect(all).toContain('"keep_out"');
    const w = ctx.calibration.wire;
    for (const v of [w.startMarkM, w.endMarkM, centreline(w.pointsBase).lengthM]) {
      expect(all).not.toContain(v.toFixed(6));
    }
    // no wire coordinate appears in any response (to the printed precision)
    for (const p of ctx.calibration.wire.pointsBase.filter((_, i) => i % 5 === 0)) {
      for (const v of p) expect(all).not.toContain(v.toFixed(6));
    }
  });
});
