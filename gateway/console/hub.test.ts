import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MirrorBackend } from "../../drivers/mirror/mirror-backend.ts";
import { type TestGateway, testGateway } from "../../compose/testing.ts";
import { api } from "../../test-support/api.ts";
import { calibrationSchema } from "../../calibration/schema.ts";
import { wireReferencePath } from "../../sim/buzzwire/reference-path.ts";

let g: TestGateway;
beforeAll(async () => {
  g = await testGateway({ backend: { type: "sim" }, task: { id: "buzz-wire", seed: 2 } });
});
afterAll(async () => {
  await g.close();
});

describe("console live state on the buzz-wire bench", () => {
  it("reports joints against the episode's limits, the tool, the buzz box and the operator's progress", async () => {
    const s = g.gateway.console.snapshot(g.gateway);
    expect(s.joints).toHaveLength(7);
    for (const j of s.joints) {
      expect(j.q).toBeGreaterThanOrEqual(j.lower);
      expect(j.q).toBeLessThanOrEqual(j.upper);
    }
    expect(s.tool.speed_mps).toBeCloseTo(0, 3);
    expect(s.buzzbox.contact).toBe(false);
    expect(s.episode?.status).toBe("running");
    expect(s.episode?.progress?.progress).toBe(0);
    expect(s.cameras.map((c) => c.name)).toContain("front");
  });

  it("draws the tool path into every world camera it can see, from the calibrated camera model", async () => {
    const hub = g.gateway.console;
    hub.snapshot(g.gateway);
    // a still tool is one point of the path; a moving one draws a line (a point per mm)
    const { body: still } = await api(g, "POST", "/v1/observe", { advance_s: 0.2, cameras: [] });
    expect(still.episode.status).toBe("running");
    expect(hub.snapshot(g.gateway).tool_path_px.front?.length ?? 0).toBeLessThanOrEqual(1);
    const r = g.gateway.bench.backend.read();
    const ref = wireReferencePath(
      g.gateway.bench.backend.describe().robot,
      calibrationSchema.parse(g.gateway.bench.taskBench(2)),
      { gripperWidthM: r.gripperWidthM, seedQ: r.q, speedMps: 0.02 },
    );
    const { body } = await api(g, "POST", "/v1/act", {
      type: "joint_position",
      dt: ref.dtS,
      rows: ref.rows.slice(0, 4),
    });
    expect(body.episode.status, JSON.stringify(body.episode)).toBe("running");
    const s = hub.snapshot(g.gateway);
    const front = s.tool_path_px.front ?? [];
    expect(front.length).toBeGreaterThanOrEqual(2);
    const cam = s.cameras.find((c) => c.name === "front")!;
    for (const [u, v] of front) {
      expect(u).toBeGreaterThanOrEqual(0);
      expect(u).toBeLessThan(cam.width);
      expect(v).toBeGreaterThanOrEqual(0);
      expect(v).toBeLessThan(cam.height);
    }
    // no wrist (tool-mounted) camera gets a path: the tool is fixed in its view
    for (const c of g.gateway.bench.backend.describe().cameras.filter((c) => c.frame === "tool"))
      expect(s.tool_path_px[c.name]).toBeUndefined();
  });

  it("the agent token cannot read the live state or a camera", async () => {
    for (const url of ["/v1/admin/live", "/v1/admin/cameras/front/image"]) {
      const r = await api(g, "GET", url);
      expect(r.status).toBe(403);
      expect(r.body.error.code).toBe("RB_ERR_FORBIDDEN");
    }
  });

  it("serves a camera capture as JPEG, depth as a colour map, and a coded error for a camera without depth", async () => {
    const rgb = await g.app.inject({ url: "/v1/admin/cameras/front/image", headers: g.operator });
    expect(rgb.statusCode).toBe(200);
    expect(rgb.headers["content-type"]).toBe("image/jpeg");
    expect(rgb.rawPayload.subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
    const cams = g.gateway.bench.backend.describe().cameras;
    const withDepth = cams.find((c) => c.depth);
    if (withDepth) {
      const d = await g.app.inject({
        url: `/v1/admin/cameras/${withDepth.name}/image?depth=1`,
        headers: g.operator,
      });
      expect(d.statusCode).toBe(200);
    }
    const without = cams.find((c) => !c.depth);
    if (without) {
      const d = await g.app.inject({
        url: `/v1/admin/cameras/${without.name}/image?depth=1`,
        headers: g.operator,
      });
      expect(d.statusCode).toBe(422);
      expect(d.json().error.code).toBe("RB_ERR_NO_DEPTH");
    }
    const unknown = await g.app.inject({ url: "/v1/admin/cameras/nope/image", headers: g.operator });
    expect(unknown.json().error.code).toBe("RB_ERR_UNKNOWN_CAMERA");
  });
});

describe("console buzz-box state from the backend's own events", () => {
  it("sees contact edges and device links between episodes, on the last episode's clock", async () => {
    const m = await testGateway({ backend: { type: "mirror" } });
    try {
      const backend = m.gateway.bench.backend as MirrorBackend;
      const ep = m.gateway.requireEpisode();
      await m.gateway.stopAndEnd({ source: "operator", detail: "test" });
      expect(m.gateway.episode?.isEnded).toBe(true);
      const t = backend.now();
      backend.emit({ type: "contact", t, closed: true, source: "buzzbox" });
      backend.emit({ type: "fault", t, device: "buzzbox", message: "port closed" });
      let s = m.gateway.console.snapshot(m.gateway);
      expect(s.buzzbox).toMatchObject({
        contact: true,
        lamp: true,
        source: "buzzbox",
        links: { buzzbox: false },
      });
      const last = s.sensor_events.at(-1)!;
      expect(last.episode).toBe(ep.id.slice(0, 8));
      expect(last.t).toBeCloseTo(t - ep.t0S, 6);
      backend.emit({ type: "instrument", t, name: "buzzbox.link", values: { up: 1 }, source: "buzzbox" });
      backend.emit({ type: "contact", t, closed: false, source: "buzzbox" });
      s = m.gateway.console.snapshot(m.gateway);
      expect(s.buzzbox).toMatchObject({ contact: false, lamp: false, links: { buzzbox: true } });
      expect(s.sensor_events.map((e) => e.kind)).toEqual(["contact", "fault", "link", "contact"]);
    } finally {
      await m.close();
    }
  });
});
