/**
 * The realtime setting end to end on the sim at S = 1, over the HTTP routes, on the wall clock.
 * No timing thresholds: every assertion is about behaviour (queue executed, splice applied,
 * refusals, counts recorded), whatever the machine's load.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseBenchConfig } from "../../compose/bench-config.ts";
import { type StartedGateway, startGateway } from "../../compose/start.ts";

let g: StartedGateway;
const agent = { authorization: "Bearer rt-agent" };

async function post(url: string, payload: unknown) {
  const res = await g.app.inject({ method: "POST", url, headers: agent, payload: payload as object });
  return { status: res.statusCode, body: res.json() };
}

/** the arm's start pose (read at the first observe) */
let HOME: number[] = [];
let GRIP = 0.04;
/** `n` rows moving joint 0 linearly from `from` by `step` rad per row */
function ramp(from: number, step: number, n: number): number[][] {
  return Array.from({ length: n }, (_, i) => {
    const q = [...HOME];
    q[0] = from + step * (i + 1);
    return [...q, GRIP];
  });
}

beforeAll(async () => {
  const config = parseBenchConfig(
    { version: 1, name: "rt", backend: { type: "sim" }, task: { id: "free-motion", seed: 1 } },
    "test",
  );
  g = await startGateway({
    config,
    agentToken: "rt-agent",
    operatorToken: "rt-op",
    observers: null,
    // the command watchdog has its own fake-clock tests; here a loaded machine's slow requests
    // must not look like an agent that went quiet
    realtime: { slowdown: 1, commandGapS: 30 },
    firstEpisode: { task: "free-motion", setting: "realtime", seed: 1 },
  });
});

afterAll(async () => {
  await g?.close();
});

describe("realtime setting on the sim (S = 1, wall clock)", () => {
  it("the task card states S, the margin and the watchdog gap", async () => {
    const res = await g.app.inject({ method: "GET", url: "/v1/task", headers: agent });
    expect(res.statusCode).toBe(200);
    const card = res.json();
    expect(card.setting).toBe("realtime");
    expect(card.realtime).toMatchObject({
      drive: "stepped",
      slowdown: 1,
      control_period_s: 0.001,
      margin_steps: 0,
      command_gap_s: 30,
    });
    expect(card.episode.realtime).toMatchObject({ slowdown: 1, committed_step: 0, late_steps: 0 });
  });

  it("act answers at once, splices replace the queue, the queue runs, counts are recorded", async () => {
    // observe without advance_s: does not start the clock, does not block
    const o0 = await post("/v1/observe", { advance_s: 0, cameras: [] });
    expect(o0.status).toBe(200);
    expect(o0.body.episode.realtime.committed_step).toBe(0);
    HOME = [...(o0.body.readings[0].q as number[])];
    GRIP = o0.body.readings[0].gripper_width_m as number;
    const q0 = HOME[0]!;

    // chunk A: joint 0 forward 0.02 rad over 1 s (20 rows at 50 ms)
    const a = await post("/v1/act", { type: "joint_position", dt: 0.05, rows: ramp(q0, 0.001, 20) });
    expect(a.status, JSON.stringify(a.body)).toBe(200);
    expect(a.body.executed_rows).toBe(0);
    expect(Number.isInteger(a.body.start_step)).toBe(true);
    expect(a.body.episode.realtime.queue_rows).toBeGreaterThan(0);

    // a jump far away is refused by the pre-check of the spliced trajectory
    const jump = ramp(q0, 0.5, 1);
    const unsafe = await post("/v1/act", { type: "joint_position", dt: 0.01, rows: jump });
    expect(unsafe.status).toBe(422);
    expect(unsafe.body.error.code).toBe("RB_ERR_UNSAFE_CHUNK");
    expect(typeof unsafe.body.error.details.start_step).toBe("number");

    // frames during a chunk are not captured in the realtime setting
    const frames = await post("/v1/act", {
      type: "joint_position",
      dt: 0.01,
      rows: ramp(q0, 0, 1),
      frames: { fps: 10 },
    });
    expect(frames.status).toBe(422);
    expect(frames.body.error.code).toBe("RB_ERR_REALTIME_NO_CAPTURE");

    // advance_s waits for the steps
    const o1 = await post("/v1/observe", { advance_s: 0.05, cameras: [] });
    expect(o1.status).toBe(200);
    const committed = o1.body.episode.realtime.committed_step as number;
    expect(committed).toBeGreaterThanOrEqual(50);

    // a start step already committed is refused with its code
    const past = await post("/v1/act", {
      type: "joint_position",
      dt: 0.01,
      rows: ramp(q0, 0, 1),
      start_step: committed - 1,
    });
    expect(past.status).toBe(409);
    expect(past.body.error.code).toBe("RB_ERR_SPLICE_PAST");

    // chunk B replaces A from a step well ahead: joint 0 goes back to where it started. On a
    // loaded machine the wall clock may have run past that step: the refusal names the earliest
    // step, and the agent splices there (what a realtime agent does)
    let at = committed + 100;
    let b: Awaited<ReturnType<typeof post>> = { status: 0, body: {} };
    for (let attempt = 0; attempt < 20; attempt++) {
      const along = Math.min(1, (at - a.body.start_step) / 1000); // A's path at that step (approx.)
      const qAt = q0 + 0.02 * along;
      b = await post("/v1/act", {
        type: "joint_position",
        dt: 0.05,
        rows: ramp(qAt, (q0 - qAt) / 20, 20),
        start_step: at,
      });
      if (b.status !== 409 || b.body.error.code !== "RB_ERR_SPLICE_MARGIN") break;
      at = (b.body.error.details.earliest as number) + 200;
    }
    expect(b.status, JSON.stringify(b.body)).toBe(200);
    expect(b.body.start_step).toBe(at);

    // wait out the queue, then a little hold
    for (let i = 0; i < 40; i++) {
      const o = await post("/v1/observe", { advance_s: 0.05, cameras: [] });
      if (o.body.episode.realtime.queue_rows === 0) break;
    }
    const end = await post("/v1/observe", { advance_s: 0.2, cameras: [] });
    const rt = end.body.episode.realtime;
    expect(rt.queue_rows).toBe(0);
    expect(rt.committed_step).toBeGreaterThan(at + 1000);
    expect(Number.isInteger(rt.late_steps)).toBe(true);
    expect(rt.stood_still_s).toBeGreaterThanOrEqual(0);
    // the splice was applied: joint 0 came back near its start, not to A's end (q0 + 0.02)
    const qEnd = end.body.readings[0].q[0] as number;
    expect(Math.abs(qEnd - q0)).toBeLessThan(0.002);

    const fin = await post("/v1/finish", {});
    expect(fin.status, JSON.stringify(fin.body)).toBe(200);
    expect(fin.body.episode).toMatchObject({ status: "ended", reason: "finished" });
  });

  it("start_step in the standard setting stays RB_ERR_REALTIME_ONLY", async () => {
    await g.gateway.startEpisode({ task: "free-motion", setting: "standard", seed: 1 });
    const q = (await post("/v1/observe", { advance_s: 0, cameras: [] })).body.readings[0].q as number[];
    HOME = [...q];
    const res = await post("/v1/act", {
      type: "joint_position",
      dt: 0.01,
      rows: ramp(q[0]!, 0, 1),
      start_step: 5,
    });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe("RB_ERR_REALTIME_ONLY");
  });

  it("a backend without a realtime drive refuses the setting with a clear coded error", async () => {
    const backend = g.bench.backend;
    const without = Object.create(backend, { realtimeDrive: { value: undefined } }) as typeof backend;
    const gw = new (g.gateway.constructor as typeof import("../gateway.ts").Gateway)(
      { ...g.bench, backend: without },
      {},
    );
    await expect(gw.startEpisode({ task: "free-motion", setting: "realtime" })).rejects.toMatchObject({
      code: "RB_ERR_SETTING_UNAVAILABLE",
      details: { setting: "realtime", reason: expect.stringMatching(/has no realtime drive/) },
    });
    const unavailable = Object.create(backend, {
      realtimeDrive: { value: () => ({ kind: "unavailable", reason: "not on this transport" }) },
    }) as typeof backend;
    const gw2 = new (g.gateway.constructor as typeof import("../gateway.ts").Gateway)(
      { ...g.bench, backend: unavailable },
      {},
    );
    await expect(gw2.startEpisode({ task: "free-motion", setting: "realtime" })).rejects.toMatchObject({
      code: "RB_ERR_SETTING_UNAVAILABLE",
      details: { setting: "realtime", reason: "not on this transport" },
    });
  });

  it("a streamed drive (a real arm) runs at S = 1 with the margin its lead needs; another S is refused", async () => {
    // the sim backend, told to say it streams (its own method shadowed on the instance, then restored)
    const backend = g.bench.backend;
    const never = (): Promise<never> => Promise.reject(new Error("not called: no chunk is sent"));
    backend.realtimeDrive = () => ({
      kind: "streamed",
      motion: { leadS: 0.0305, replace: never, follow: never },
    });
    try {
      const Gw = g.gateway.constructor as typeof import("../gateway.ts").Gateway;
      const slow = new Gw(g.bench, { realtime: { slowdown: 2 } });
      await expect(slow.startEpisode({ task: "free-motion", setting: "realtime" })).rejects.toMatchObject({
        code: "RB_ERR_SETTING_UNAVAILABLE",
        details: { setting: "realtime", reason: expect.stringMatching(/S = 1 .*S = 2/) },
      });
      const gw = new Gw(g.bench, {});
      const ep = await gw.startEpisode({ task: "free-motion", setting: "realtime", seed: 1 });
      expect(ep.config.realtime).toMatchObject({ drive: "streamed", slowdown: 1, marginSteps: 31 });
      expect(ep.config.realtime!.measuredSpeed).toBeUndefined();
      await ep.stopAndEnd({ source: "operator", detail: "test over" });
    } finally {
      delete (backend as { realtimeDrive?: unknown }).realtimeDrive;
    }
    expect(g.bench.backend.realtimeDrive?.()).toMatchObject({ kind: "stepped" });
  });

  it("without a fixed S the sim's speed is measured once at the start and picks S", async () => {
    const gw = new (g.gateway.constructor as typeof import("../gateway.ts").Gateway)(g.bench, {});
    const before = g.bench.backend.now();
    const ep = await gw.startEpisode({ task: "free-motion", setting: "realtime", seed: 1 });
    const rt = ep.config.realtime!;
    expect(rt.measuredSpeed).toBeGreaterThan(0);
    expect(rt.slowdown).toBe(rt.measuredSpeed! >= 3 ? 1 : Math.ceil(3 / rt.measuredSpeed!));
    // the sim warmed up (200 ms held, then 800 one-step trajectories) and was probed (50 ms)
    expect(ep.config.backend.now() - before).toBeCloseTo(1.05, 9);
    await ep.stopAndEnd({ source: "operator", detail: "test over" });
  });

  it("with S fixed the sim still warms up before the schedule starts (its first steps are slow)", async () => {
    const gw = new (g.gateway.constructor as typeof import("../gateway.ts").Gateway)(g.bench, {
      realtime: { slowdown: 1 },
    });
    const before = g.bench.backend.now();
    const ep = await gw.startEpisode({ task: "free-motion", setting: "realtime", seed: 1 });
    expect(ep.config.realtime!.measuredSpeed).toBeUndefined();
    expect(ep.config.backend.now() - before).toBeCloseTo(1.0, 9);
    expect(ep.realtimeStatus()).toMatchObject({ committed_step: 0 });
    await ep.stopAndEnd({ source: "operator", detail: "test over" });
  });
});
