/**
 * Bad input never ends an episode or answers 5xx (issue 10, items 8, 9, 11, 13, 15; issue 13,
 * item 4): deep or hostile JSON, hostile level names, strictness of poses, finish and
 * start_step, cameras: [] for no image, depth from a camera without it, frame capacity.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type TestGateway, testGateway } from "../../compose/testing.ts";
import { MirrorBackend, mirrorCamera } from "../../drivers/mirror/mirror-backend.ts";
import { api } from "../../test-support/api.ts";
import { CaptureAdmission } from "./capacity.ts";
import { FrameStore } from "../frames/frame-store.ts";

let g: TestGateway;
beforeEach(async () => {
  g = await testGateway({ backend: { type: "mirror" } });
});
afterEach(async () => {
  await g.close();
});

const nested = (depth: number, leaf: unknown = 1): unknown => {
  let v: unknown = leaf;
  for (let i = 0; i < depth; i++) v = [v];
  return v;
};
const row = () => {
  const r = g.gateway.bench.backend.read();
  return [...r.q, r.gripperWidthM];
};
/** A nested array as JSON text (JSON.stringify of it would overflow the test's own stack). */
const nestedText = (depth: number) => `${"[".repeat(depth)}1${"]".repeat(depth)}`;
const postText = (url: string, text: string) =>
  g.app.inject({
    method: "POST",
    url,
    payload: text,
    headers: { ...g.agent, "content-type": "application/json" },
  });
const running = () => expect(g.gateway.requireEpisode().isEnded).toBe(false);

describe("hostile JSON is a 400 and the episode runs on", () => {
  it("a /v1/submit answer 5,000 levels deep → 400, nothing recorded lost", async () => {
    const res = await postText("/v1/submit", `{"answer":${nestedText(5000)},"evidence":[]}`);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe("RB_ERR_JSON_TOO_DEEP");
    // within the body bound but deeper than the answer's own bound
    const mid = await api(g, "POST", "/v1/submit", { answer: nested(20), evidence: [] });
    expect(mid.status).toBe(400);
    expect(mid.body.error.code).toBe("RB_ERR_BAD_REQUEST");
    expect(mid.body.error.message).toMatch(/deeper than 16/);
    const big = await api(g, "POST", "/v1/submit", { answer: "x".repeat(70_000), evidence: [] });
    expect(big.status).toBe(400);
    expect(big.body.error.message).toMatch(/at most 65536/);
    running();
  });

  it('{"toString":1} or a 10,000-deep array inside a row → 400, not 500', async () => {
    const r = row();
    const obj = await api(g, "POST", "/v1/act", {
      type: "joint_position",
      dt: 0.01,
      rows: [[{ toString: 1 }, ...r.slice(1)]],
    });
    expect(obj.status).toBe(400);
    expect(obj.body.error).toMatchObject({
      code: "RB_ERR_NOT_FINITE",
      details: { row: 0, column: 0, value: "object" },
    });
    const deep = await postText(
      "/v1/act",
      `{"type":"joint_position","dt":0.01,"rows":[[${nestedText(10_000)},${r.slice(1).join(",")}]]}`,
    );
    expect(deep.statusCode).toBe(400);
    expect(deep.json().error.code).toBe("RB_ERR_JSON_TOO_DEEP");
    const shallow = await api(g, "POST", "/v1/act", {
      type: "joint_position",
      dt: 0.01,
      rows: [[nested(5), ...r.slice(1)]],
    });
    expect(shallow.body.error).toMatchObject({ code: "RB_ERR_NOT_FINITE", details: { value: "array" } });
    running();
  });

  it("frames.fps ≈ 1e-306 → 400 with the lower bound; the episode runs on", async () => {
    const res = await api(g, "POST", "/v1/act", {
      type: "joint_position",
      dt: 0.01,
      rows: [row()],
      frames: { fps: 1e-306 },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("RB_ERR_BAD_REQUEST");
    expect(res.body.error.message).toMatch(/0\.1/);
    const ok = await api(g, "POST", "/v1/act", {
      type: "joint_position",
      dt: 0.01,
      rows: [row()],
      frames: { fps: 0.1 },
    });
    expect(ok.status).toBe(200);
    expect(ok.body.frames.length).toBe(1);
    running();
  });

  it('level "constructor" / "__proto__" / "toString" is refused and the running episode is untouched', async () => {
    const id = g.gateway.requireEpisode().id;
    for (const level of ["constructor", "__proto__", "toString", "hasOwnProperty"]) {
      const res = await api(g, "POST", "/v1/admin/episodes", { level }, "operator");
      expect(res.status, level).toBe(422);
      expect(res.body.error.code).toBe("RB_ERR_LEVEL");
    }
    expect(g.gateway.requireEpisode().id).toBe(id);
    running();
  });
});

describe("strictness (issue 13, item 4)", () => {
  it("a zero quaternion is a 400 in IK poses and in ee_pose rows", async () => {
    const ik = await api(g, "POST", "/v1/kinematics/ik", {
      pose: { xyz: [0.4, 0, 0.4], quat_xyzw: [0, 0, 0, 0] },
    });
    expect(ik.status).toBe(400);
    expect(ik.body.error.message).toMatch(/zero quaternion/);
    await api(g, "POST", "/v1/admin/episodes", { level: "ee_pose" }, "operator");
    const before = g.gateway.bench.backend.read();
    const act = await api(g, "POST", "/v1/act", {
      type: "ee_pose",
      dt: 0.01,
      rows: [[0.4, 0, 0.4, 0, 0, 0, 0, 0.04]],
    });
    expect(act.status).toBe(400);
    expect(act.body.error).toMatchObject({ code: "RB_ERR_ZERO_QUATERNION", details: { row: 0 } });
    expect(g.gateway.bench.backend.read()).toEqual(before);
  });

  it("start_step in the standard setting → 422 RB_ERR_REALTIME_ONLY saying why", async () => {
    const res = await api(g, "POST", "/v1/act", {
      type: "joint_position",
      dt: 0.01,
      rows: [row()],
      start_step: 3,
    });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({
      code: "RB_ERR_REALTIME_ONLY",
      details: { field: "start_step", setting: "standard" },
    });
    expect(res.body.error.message).toMatch(/realtime setting/);
  });

  it("unknown keys on /v1/finish (and the other body-less calls) → 400", async () => {
    for (const [url, who] of [
      ["/v1/finish", "agent"],
      ["/v1/reset", "agent"],
      ["/v1/admin/release", "operator"],
      ["/v1/admin/recover", "operator"],
    ] as const) {
      const res = await api(g, "POST", url, { please: true }, who);
      expect(res.status, url).toBe(400);
      expect(res.body.error.code).toBe("RB_ERR_BAD_REQUEST");
    }
    running();
    expect((await api(g, "POST", "/v1/finish", {})).status).toBe(200);
  });

  it("cameras: [] observes without any image; omitted means every camera", async () => {
    const none = await api(g, "POST", "/v1/observe", { cameras: [] });
    expect(none.status).toBe(200);
    expect(none.body.frames).toEqual([]);
    expect(none.body.readings).toHaveLength(1);
    const all = await api(g, "POST", "/v1/observe", {});
    expect(all.body.frames.map((f: { camera: string }) => f.camera)).toEqual(["front"]);
    const act = await api(g, "POST", "/v1/act", {
      type: "joint_position",
      dt: 0.01,
      rows: [row()],
      frames: { fps: 10, cameras: [] },
    });
    expect(act.body.frames).toEqual([]);
  });
});

describe("depth from a camera without depth (issue 10, item 15)", () => {
  it("naming such a camera with depth: true is 422 RB_ERR_NO_DEPTH; omitted cameras give depth where there is some", async () => {
    const robot = g.gateway.bench.backend.describe().robot;
    const b = new MirrorBackend({
      robot,
      cameras: [mirrorCamera("front"), { ...mirrorCamera("mono"), depth: false }],
    });
    await b.configure();
    await b.activate();
    (g.gateway.bench as { backend: unknown }).backend = b;
    await g.gateway.startEpisode();
    const res = await api(g, "POST", "/v1/observe", { cameras: ["mono"], depth: true });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({
      code: "RB_ERR_NO_DEPTH",
      details: { camera: "mono", cameras: "front" },
    });
    const all = await api(g, "POST", "/v1/observe", { depth: true });
    expect(all.status).toBe(200);
    const byCam = Object.fromEntries(
      all.body.frames.map((f: { camera: string; depth?: string }) => [f.camera, f.depth]),
    );
    expect(byCam.front).toMatch(/^\/v1\/frames\//);
    expect(Object.keys(byCam).sort()).toEqual(["front", "mono"]);
  });
});

describe("frame memory and capacity (issue 10, item 13)", () => {
  const frame = (bytes: number) =>
    ({ camera: "c", t: 0, rgb: { kind: "raw", width: 1, height: 1, data: new Uint8Array(bytes) } }) as never;

  it("reservations stay within the budget; a frame is kept for its retention time, then evicted for room", () => {
    let now = 0;
    const store = new FrameStore({ maxBytes: 1000, minRetentionMs: 10_000, nowMs: () => now });
    const release = store.reserve(600)!;
    const a = store.put(frame(600), "png", false).rgb;
    release();
    expect(store.reserve(600)).toBeUndefined(); // a is younger than its retention: refused, a stays
    expect(store.get(a)).toBeDefined();
    now = 10_001;
    const r2 = store.reserve(600);
    expect(r2).toBeDefined(); // a is past its retention and makes room
    expect(store.get(a)).toBeUndefined();
    expect(store.usage.bytes + store.usage.reserved).toBeLessThanOrEqual(1000);
  });

  it("over capacity is 503 RB_ERR_OVER_CAPACITY before anything is captured; concurrent captures are capped", async () => {
    const small = new FrameStore({ maxBytes: 100, minRetentionMs: 10_000 });
    const admission = new CaptureAdmission(small, 1);
    expect(() => admission.admit(200)).toThrowError(
      expect.objectContaining({ code: "RB_ERR_OVER_CAPACITY", status: 503 }),
    );
    const done = admission.admit(50);
    expect(() => admission.admit(10)).toThrowError(
      expect.objectContaining({
        code: "RB_ERR_OVER_CAPACITY",
        details: expect.objectContaining({ resource: "concurrent captures" }),
      }),
    );
    done();
    admission.admit(10)();
  });
});
