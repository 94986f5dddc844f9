import { afterEach, beforeEach, describe, expect, it } from "vitest";
import sharp from "sharp";
import type { z } from "zod";
import {
  ActResponseSchema,
  EpisodeResponseSchema,
  EpisodeSummarySchema,
  ErrorResponseSchema,
  FkResponseSchema,
  IkResponseSchema,
  ObserveResponseSchema,
  SpecSchema,
  TaskCardSchema,
} from "./api/schemas.ts";
import { type TestGateway, testGateway } from "../compose/testing.ts";

// Published limits, typed in independently of robots/franka/models.ts (DESIGN.md §5).
const PUBLISHED = {
  panda: {
    upper: [2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973],
    lower: [-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973],
    vel: [2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61],
    acc: [15, 7.5, 10, 12.5, 15, 20, 20],
    jerk: [7500, 3750, 5000, 6250, 7500, 10000, 10000],
  },
  fr3: {
    upper: [2.9007, 1.8361, 2.9007, -0.1169, 2.8763, 4.6216, 3.0508],
    lower: [-2.9007, -1.8361, -2.9007, -3.077, -2.8763, 0.4398, -3.0508],
    vel: [2.62, 2.62, 2.62, 2.62, 5.26, 4.18, 5.26],
    acc: [10, 10, 10, 10, 10, 10, 10],
    jerk: [5000, 5000, 5000, 5000, 5000, 5000, 5000],
  },
};
const EFFORT = [87, 87, 87, 87, 12, 12, 12];

let g: TestGateway;
beforeEach(async () => {
  g = await testGateway({ backend: { type: "mirror" } });
});
afterEach(async () => {
  await g.close();
});

const post = (url: string, payload: unknown, headers = g.agent) =>
  g.app.inject({ method: "POST", url, payload: payload as object, headers });
const get = (url: string, headers = g.agent) => g.app.inject({ method: "GET", url, headers });

function home(): number[] {
  return g.gateway.bench.backend.read().q;
}
function row(q: number[], grip = 0.04): number[] {
  return [...q, grip];
}

describe("response contract", () => {
  it("every response matches its zod schema (the server serialises plain JSON)", async () => {
    const q = home();
    const checks: [z.ZodType, Awaited<ReturnType<typeof get>>][] = [
      [SpecSchema, await get("/v1/spec")],
      [TaskCardSchema, await get("/v1/task")],
      [ObserveResponseSchema, await post("/v1/observe", { advance_s: 0.1, depth: true })],
      [
        ActResponseSchema,
        await post("/v1/act", { type: "joint_position", dt: 0.5, rows: [row(q)], frames: { fps: 4 } }),
      ],
      [FkResponseSchema, await post("/v1/kinematics/fk", { q })],
      [
        IkResponseSchema,
        await post("/v1/kinematics/ik", {
          pose: (await post("/v1/kinematics/fk", { q })).json().tool,
          q_seed: q,
        }),
      ],
      [EpisodeSummarySchema, await get(`/v1/admin/episodes/${g.gateway.requireEpisode().id}`, g.operator)],
      [ErrorResponseSchema, await post("/v1/act", { type: "joint_position", dt: 0.0105, rows: [row(q)] })],
      [EpisodeResponseSchema, await post("/v1/finish", {})],
    ];
    for (const [schema, res] of checks) {
      const r = schema.safeParse(res.json());
      expect(r.success, `${res.raw.req.url}: ${r.error?.message}`).toBe(true);
    }
  });
});

describe("spec", () => {
  it("returns both robots' published limits exactly", async () => {
    const res = await get("/v1/spec");
    expect(res.statusCode).toBe(200);
    const spec = res.json();
    expect(spec.protocol).toBe("robot-gateway/1");
    for (const id of ["panda", "fr3"] as const) {
      const r = spec.supported_robots.find((x: { id: string }) => x.id === id);
      const p = PUBLISHED[id];
      expect(r.joints.map((j: { upper: number }) => j.upper)).toEqual(p.upper);
      expect(r.joints.map((j: { lower: number }) => j.lower)).toEqual(p.lower);
      expect(r.joints.map((j: { max_velocity: number }) => j.max_velocity)).toEqual(p.vel);
      expect(r.joints.map((j: { max_acceleration: number }) => j.max_acceleration)).toEqual(p.acc);
      expect(r.joints.map((j: { max_jerk: number }) => j.max_jerk)).toEqual(p.jerk);
      expect(r.joints.map((j: { max_effort: number }) => j.max_effort)).toEqual(EFFORT);
    }
    expect(spec.robot.id).toBe("fr3");
    expect(spec.control.control_period_s).toBe(0.001);
    expect(spec.control.actions.map((a: { type: string }) => a.type)).toEqual([
      "joint_position",
      "ee_pose",
      "jog",
    ]);
  });
});

describe("routing and auth", () => {
  it("answers unknown paths with the JSON 404 shape", async () => {
    const res = await get("/v1/nope");
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe("RB_ERR_NOT_FOUND");
    // a known path with a wrong method is a 405 naming the allowed methods (issue 10, item 10)
    const res2 = await g.app.inject({ method: "DELETE", url: "/v1/act", headers: g.agent });
    expect(res2.statusCode).toBe(405);
    expect(res2.json().error.code).toBe("RB_ERR_METHOD_NOT_ALLOWED");
    expect(res2.headers.allow).toBe("POST");
  });

  it("refuses missing tokens and keeps the agent token out of operator calls", async () => {
    expect((await get("/v1/spec", {} as never)).json().error.code).toBe("RB_ERR_UNAUTHORIZED");
    const res = await post("/v1/admin/estop", {}, g.agent);
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe("RB_ERR_FORBIDDEN");
    expect(g.gateway.estop.engaged).toBe(false);
    expect((await get("/v1/admin/state", g.agent)).statusCode).toBe(403);
    expect((await get("/v1/admin/state", g.operator)).statusCode).toBe(200);
  });

  it("serves an OpenAPI document generated from the schemas", async () => {
    const res = await g.app.inject({ method: "GET", url: "/v1/openapi.json" });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toMatch(/^3/);
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(["/v1/act", "/v1/observe", "/v1/spec", "/v1/task"]),
    );
    expect(
      doc.paths["/v1/act"].post.requestBody.content["application/json"].schema.properties.dt,
    ).toBeDefined();
  });

  it("refuses bodies above the limit and malformed JSON with coded errors", async () => {
    const big = { type: "joint_position", dt: 0.01, rows: Array.from({ length: 40_000 }, () => row(home())) };
    const res = await post("/v1/act", big);
    expect(res.statusCode).toBe(413);
    expect(res.json().error.code).toBe("RB_ERR_BODY_TOO_LARGE");
    const bad = await g.app.inject({
      method: "POST",
      url: "/v1/act",
      payload: "{not json",
      headers: { ...g.agent, "content-type": "application/json" },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.code).toBe("RB_ERR_BAD_JSON");
  });
});

describe("chunk rules over HTTP (each leaves the robot where it was)", () => {
  const cases: [string, () => unknown, number, string][] = [
    [
      "dt not a whole multiple of the period",
      () => ({ type: "joint_position", dt: 0.0105, rows: [row(home())] }),
      422,
      "RB_ERR_DT",
    ],
    ["dt above max_dt_s", () => ({ type: "joint_position", dt: 0.6, rows: [row(home())] }), 422, "RB_ERR_DT"],
    ["dt zero", () => ({ type: "joint_position", dt: 0, rows: [row(home())] }), 422, "RB_ERR_DT"],
    ["no rows", () => ({ type: "joint_position", dt: 0.01, rows: [] }), 400, "RB_ERR_ROWS"],
    [
      "too many rows",
      () => ({ type: "joint_position", dt: 0.001, rows: Array.from({ length: 501 }, () => row(home())) }),
      400,
      "RB_ERR_ROWS",
    ],
    ["short row", () => ({ type: "joint_position", dt: 0.01, rows: [home()] }), 400, "RB_ERR_ROW_WIDTH"],
    [
      "long row",
      () => ({ type: "joint_position", dt: 0.01, rows: [[...row(home()), 1]] }),
      400,
      "RB_ERR_ROW_WIDTH",
    ],
    [
      "null value",
      () => ({ type: "joint_position", dt: 0.01, rows: [[...home(), null]] }),
      400,
      "RB_ERR_NOT_FINITE",
    ],
    [
      "string value",
      () => ({ type: "joint_position", dt: 0.01, rows: [["0", ...home()]] }),
      400,
      "RB_ERR_NOT_FINITE",
    ],
    [
      "unknown action type",
      () => ({ type: "torque", dt: 0.01, rows: [row(home())] }),
      422,
      "RB_ERR_ACTION_TYPE",
    ],
    [
      "action not open at the level",
      () => ({ type: "ee_pose", dt: 0.01, rows: [[0.4, 0, 0.4, 1, 0, 0, 0, 0.04]] }),
      422,
      "RB_ERR_ACTION_TYPE",
    ],
    [
      "unknown field",
      () => ({ type: "joint_position", dt: 0.01, rows: [row(home())], speed: 2 }),
      400,
      "RB_ERR_BAD_REQUEST",
    ],
    [
      "too fast for the velocity limit",
      () => ({ type: "joint_position", dt: 0.01, rows: [row(home().map((v, i) => (i === 0 ? v + 1 : v)))] }),
      422,
      "RB_ERR_UNSAFE_CHUNK",
    ],
    [
      "longer than max_call_s",
      () => ({ type: "joint_position", dt: 0.1, rows: Array.from({ length: 301 }, () => row(home())) }),
      422,
      "RB_ERR_CALL_TOO_LONG",
    ],
  ];
  for (const [name, body, status, code] of cases) {
    it(`${name} → ${status} ${code}`, async () => {
      const before = g.gateway.bench.backend.read();
      const res = await post("/v1/act", body());
      expect(res.statusCode).toBe(status);
      expect(res.json().error.code).toBe(code);
      const after = g.gateway.bench.backend.read();
      expect(after).toEqual(before);
      expect(g.gateway.requireEpisode().isEnded).toBe(false);
    });
  }

  it("sends a non-finite number (1e999 → Infinity) and gets RB_ERR_NOT_FINITE", async () => {
    const before = g.gateway.bench.backend.read();
    const q = home();
    const payload = `{"type":"joint_position","dt":0.01,"rows":[[1e999,${q.slice(1).join(",")},0.04]]}`;
    const res = await g.app.inject({
      method: "POST",
      url: "/v1/act",
      payload,
      headers: { ...g.agent, "content-type": "application/json" },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe("RB_ERR_NOT_FINITE");
    expect(res.json().error.details).toMatchObject({ row: 0, column: 0 });
    expect(g.gateway.bench.backend.read()).toEqual(before);
  });

  it("names the offending row and column", async () => {
    const q = home();
    const res = await post("/v1/act", {
      type: "joint_position",
      dt: 0.01,
      rows: [row(q), [...q, null], row(q)],
    });
    expect(res.json().error.details).toMatchObject({ row: 1, column: 7 });
  });

  it("an unsafe refusal names the row, joint and limit", async () => {
    const q = home();
    const fast = q.map((v, i) => (i === 3 ? v + 0.8 : v));
    const res = await post("/v1/act", { type: "joint_position", dt: 0.05, rows: [row(q), row(fast)] });
    expect(res.statusCode).toBe(422);
    const d = res.json().error.details;
    expect(d.row).toBe(1);
    expect(d.joint).toBe("fr3_joint4");
    expect(d.limit).toBeGreaterThan(0);
    expect(d.value).toBeGreaterThan(d.limit);
  });
});

describe("motion", () => {
  it("executes a slow chunk, reports clipped entries and readings per row", async () => {
    const q = home();
    const target = q.map((v, i) => (i === 0 ? v + 0.1 : v));
    const res = await post("/v1/act", {
      type: "joint_position",
      dt: 0.5,
      rows: [row(q), row(target), row(target, 0.06), row(target, 0.5)],
    });
    expect(res.json().error).toBeUndefined();
    const body = res.json();
    expect(body.executed_rows).toBe(4);
    expect(body.readings).toHaveLength(4);
    expect(body.readings[3].t).toBeCloseTo(2, 9);
    expect(body.readings[3].q[0]).toBeCloseTo(q[0]! + 0.1, 9);
    expect(body.readings[3].gripper_width_m).toBeCloseTo(0.08, 9);
    expect(body.clipped).toEqual([{ row: 3, column: 7, requested: 0.5, applied: 0.08 }]);
    expect(body.t).toBeCloseTo(2, 9);
    expect(body.episode.status).toBe("running");
  });

  it("clips joint targets beyond the position band and reports each entry", async () => {
    const q = home();
    const spec = (await get("/v1/spec")).json();
    const upper4 = spec.robot.joints[3].upper;
    // joint 4 home is -2.356; ask for above the upper limit, slowly
    const beyond = q.map((v, i) => (i === 3 ? upper4 + 0.2 : v));
    const rows = Array.from({ length: 30 }, (_, k) =>
      row(q.map((v, i) => v + ((beyond[i]! - v) * (k + 1)) / 30)),
    );
    const res = await post("/v1/act", { type: "joint_position", dt: 0.3, rows });
    expect(res.json().error).toBeUndefined();
    const clipped = res.json().clipped;
    expect(clipped.length).toBeGreaterThan(0);
    for (const c of clipped) {
      expect(c.column).toBe(3);
      expect(c.applied).toBeLessThan(upper4);
      expect(c.requested).toBeGreaterThan(c.applied);
    }
    expect(g.gateway.bench.backend.read().q[3]).toBeLessThan(upper4);
  });

  it("observe returns decodable frames, and advance_s moves time", async () => {
    const res = await post("/v1/observe", { depth: true, advance_s: 0.25 });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.t).toBeCloseTo(0.25, 9);
    expect(body.observation_id).toMatch(/^obs-/);
    expect(body.frames).toHaveLength(1);
    const img = await get(body.frames[0].rgb);
    expect(img.headers["content-type"]).toBe("image/jpeg");
    const meta = await sharp(img.rawPayload).metadata();
    expect(meta.width).toBe(64);
    const depth = await get(body.frames[0].depth);
    expect(depth.headers["content-type"]).toBe("image/png");
    const d = await sharp(depth.rawPayload)
      .toColourspace("grey16")
      .raw({ depth: "ushort" })
      .toBuffer({ resolveWithObject: true });
    expect(d.info.channels).toBe(1);
    expect(new Uint16Array(d.data.buffer, d.data.byteOffset, 4)[0]).toBe(1000);
    expect((await get("/v1/frames/unknown-id")).json().error.code).toBe("RB_ERR_FRAME_NOT_FOUND");
  });

  it("act returns the video of the execution at the requested fps", async () => {
    const q = home();
    const res = await post("/v1/act", {
      type: "joint_position",
      dt: 0.1,
      rows: [row(q), row(q)],
      frames: { fps: 10 },
    });
    expect(res.statusCode).toBe(200);
    const frames = res.json().frames;
    expect(frames.map((f: { t: number }) => f.t)).toEqual([0, 0.1, 0.2]);
  });

  it("refuses every motion call after the episode ended, with the end reason", async () => {
    expect((await post("/v1/finish", {})).json().episode).toMatchObject({
      status: "ended",
      reason: "finished",
    });
    const before = g.gateway.bench.backend.read();
    const res = await post("/v1/act", { type: "joint_position", dt: 0.01, rows: [row(home())] });
    expect(res.statusCode).toBe(409);
    expect(res.json().error).toMatchObject({ code: "RB_ERR_EPISODE_ENDED", details: { reason: "finished" } });
    expect((await post("/v1/observe", { advance_s: 1 })).json().error.code).toBe("RB_ERR_EPISODE_ENDED");
    expect((await post("/v1/finish", {})).statusCode).toBe(409);
    expect(g.gateway.bench.backend.read()).toEqual(before);
    // observing without advancing time still works
    expect((await post("/v1/observe", {})).statusCode).toBe(200);
  });

  it("ends at the time limit", async () => {
    const ep = g.gateway.requireEpisode();
    const limit = ep.config.budgets.timeLimitS;
    const step = ep.config.budgets.maxCallS;
    for (let i = 0; i < Math.ceil(limit / step) + 1 && !ep.isEnded; i++) {
      expect((await post("/v1/observe", { advance_s: step })).statusCode).toBe(200);
    }
    expect(ep.endReason).toBe("time_limit");
    expect(Math.abs(ep.t() - limit)).toBeLessThanOrEqual(0.001 + 1e-9);
  });

  it("refuses resets when the task grants none", async () => {
    const res = await post("/v1/reset", {});
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe("RB_ERR_NO_RESETS");
  });
});

describe("e-stop", () => {
  it("latches, refuses motion with 409 until released, and is idempotent", async () => {
    const q = home();
    expect((await post("/v1/admin/estop", { reason: "test" }, g.operator)).json()).toMatchObject({
      engaged: true,
    });
    expect((await post("/v1/admin/estop", { reason: "again" }, g.operator)).json()).toMatchObject({
      engaged: true,
      reason: "test",
    });
    const res = await post("/v1/act", { type: "joint_position", dt: 0.01, rows: [row(q)] });
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe("RB_ERR_ESTOP");
    expect((await post("/v1/admin/episodes", {}, g.operator)).json().error.code).toBe("RB_ERR_ESTOP");
    expect((await post("/v1/admin/release", {}, g.operator)).json()).toEqual({ engaged: false });
    const started = await post("/v1/admin/episodes", { seed: 3 }, g.operator);
    expect(started.statusCode).toBe(200);
    expect(started.json()).toMatchObject({ seed: 3, status: "running" });
    expect((await post("/v1/act", { type: "joint_position", dt: 0.01, rows: [row(q)] })).statusCode).toBe(
      200,
    );
  });
});

describe("allow-motion switch", () => {
  it("a bench without motion allowed refuses every motion call and nothing moves", async () => {
    (g.gateway.bench as { motionAllowed: boolean }).motionAllowed = false;
    await g.gateway.startEpisode();
    const before = g.gateway.bench.backend.read();
    const res = await post("/v1/act", { type: "joint_position", dt: 0.5, rows: [row(home())] });
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe("RB_ERR_MOTION_DISABLED");
    expect((await post("/v1/observe", { advance_s: 0.5 })).json().error.code).toBe("RB_ERR_MOTION_DISABLED");
    expect((await post("/v1/observe", {})).statusCode).toBe(200);
    expect(g.gateway.bench.backend.read()).toEqual(before);
  });
});

describe("backend faults", () => {
  it("a backend that fails mid-motion ends the episode as a fault and the server keeps serving", async () => {
    const mirror = g.gateway.bench.backend as unknown as { execute: () => Promise<never> };
    mirror.execute = async () => {
      throw new Error("link lost");
    };
    const res = await post("/v1/act", { type: "joint_position", dt: 0.5, rows: [row(home())] });
    expect(res.statusCode).toBe(503);
    expect(res.json().error).toMatchObject({
      code: "RB_ERR_BACKEND_FAULT",
      details: { reason: "link lost" },
    });
    expect(g.gateway.requireEpisode().endReason).toBe("fault");
    expect((await get("/v1/spec")).statusCode).toBe(200);
  });

  it("a stop that fails after a fault is no unhandled rejection (the process keeps serving)", async () => {
    const mirror = g.gateway.bench.backend as unknown as {
      execute: () => Promise<never>;
      stop: (reason: string) => Promise<void>;
    };
    mirror.execute = async () => {
      throw new Error("link lost");
    };
    const stop = mirror.stop.bind(mirror);
    let stopCalls = 0;
    mirror.stop = async (reason) => {
      if (stopCalls++ === 0) throw new Error("stop lost too");
      return stop(reason);
    };
    const res = await post("/v1/act", { type: "joint_position", dt: 0.5, rows: [row(home())] });
    expect(res.json().error).toMatchObject({ code: "RB_ERR_BACKEND_FAULT" });
    await new Promise((r) => setImmediate(r));
    expect(stopCalls).toBeGreaterThan(0);
    expect(g.gateway.requireEpisode().endReason).toBe("fault");
    expect((await get("/v1/spec")).statusCode).toBe(200);
  });

  it("an injected execute fault (mirror failOn) ends the episode as a fault", async () => {
    const { MirrorBackend } = await import("../drivers/mirror/mirror-backend.ts");
    const b = new MirrorBackend({ robot: g.gateway.bench.backend.describe().robot, failOn: { execute: 1 } });
    await b.configure();
    await b.activate();
    const q = b.read().q;
    (g.gateway.bench as { backend: unknown }).backend = b;
    await g.gateway.startEpisode();
    const res = await post("/v1/act", { type: "joint_position", dt: 0.5, rows: [row(q)] });
    expect(res.statusCode).toBe(200);
    expect(res.json().episode).toMatchObject({ status: "ended", reason: "fault" });
    expect(b.read().q).toEqual(q);
  });
});

describe("operator", () => {
  it("lists the registered tasks and names them when an unknown one is asked for", async () => {
    const tasks = (await get("/v1/admin/tasks", g.operator)).json().tasks.map((t: { id: string }) => t.id);
    expect(tasks).toEqual(expect.arrayContaining(["buzz-wire", "free-motion", "pendulum-length"]));
    const res = await post("/v1/admin/episodes", { task: "nope" }, g.operator);
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe("RB_ERR_UNKNOWN_TASK");
  });

  it("ends an episode on request, once", async () => {
    const id = g.gateway.requireEpisode().id;
    const res = await post(
      `/v1/admin/episodes/${id}/end`,
      { reason: "aborted", detail: "bench check" },
      g.operator,
    );
    expect(res.json()).toMatchObject({ status: "ended", reason: "aborted", detail: "bench check" });
    expect((await post(`/v1/admin/episodes/${id}/end`, {}, g.operator)).json().error.code).toBe(
      "RB_ERR_EPISODE_ENDED",
    );
    expect((await post(`/v1/admin/episodes/${id}/end`, {}, g.agent)).statusCode).toBe(403);
  });

  it("lists episodes and refuses privileged calls on the mirror", async () => {
    const list = (await get("/v1/admin/episodes", g.operator)).json();
    expect(list.episodes).toHaveLength(1);
    const res = await get("/v1/admin/privileged/state", g.operator);
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe("RB_ERR_PRIVILEGED_UNAVAILABLE");
  });
});
