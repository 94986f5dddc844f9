/**
 * The TS client against a real gateway on a loopback port (sim buzz-wire bench): every call,
 * typed errors with the gateway's codes, frames, and the camera helpers checked against the
 * simulator's own depth images.
 */
import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { calibrationSchema } from "../../calibration/schema.ts";
import { centreline, pointAt } from "../../calibration/wire-geometry.ts";
import { AGENT_TOKEN, OPERATOR_TOKEN, type TestGateway, testGateway } from "../../compose/testing.ts";
import { mat4Point, mat4RigidInverse, poseToMat4, type Vec3 } from "../../robots/math.ts";
import { AgentClient, cameraView, depthAt, OperatorClient, RobotGatewayError, type Spec } from "./client.ts";

let g: TestGateway;
let url: string;
let agent: AgentClient;

beforeAll(async () => {
  g = await testGateway({
    robot: "fr3",
    backend: { type: "sim" },
    task: { id: "buzz-wire", seed: 1, level: "joint_position" },
  });
  url = await g.app.listen({ host: "127.0.0.1", port: 0 });
  agent = new AgentClient({ url, token: AGENT_TOKEN });
});
afterAll(async () => {
  await g.close();
});

async function rejection(p: Promise<unknown>): Promise<RobotGatewayError> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(RobotGatewayError);
  return e as RobotGatewayError;
}

describe("AgentClient on a live gateway", () => {
  it("reads the task card and the spec (kept after the first fetch)", async () => {
    const card = await agent.task();
    expect(card.task_id).toBe("buzz-wire");
    expect(card.actions).toEqual(["joint_position"]);
    const spec = await agent.spec();
    expect(spec.protocol).toBe("robot-gateway/1");
    expect(spec.cameras.map((c) => c.name)).toEqual(["front", "side", "top", "wrist"]);
    expect(await agent.spec()).toBe(spec);
  });

  it("observes, fetches a JPEG frame and decodes a depth frame", async () => {
    const obs = await agent.observe({ cameras: ["front"], depth: true });
    expect(obs.observation_id).toMatch(/./);
    expect(obs.frames).toHaveLength(1);
    const rgb = await agent.frame(obs.frames[0]!.rgb);
    expect(rgb.contentType).toBe("image/jpeg");
    expect([...rgb.data.subarray(0, 3)]).toEqual([0xff, 0xd8, 0xff]);
    // the same frame by an absolute URL
    expect((await agent.frame(url + obs.frames[0]!.rgb)).data.equals(rgb.data)).toBe(true);
    const img = await agent.rgb(obs.frames[0]!.rgb);
    expect([img.width, img.height, img.data.length]).toEqual([640, 480, 640 * 480 * 3]);
    // a lit scene, not a blank buffer
    expect(img.data.reduce((a, b) => a + b, 0) / img.data.length).toBeGreaterThan(20);
    const depth = await agent.depth(obs.frames[0]!.depth!);
    expect([depth.width, depth.height]).toEqual([640, 480]);
    const centre = depthAt(depth, 320, 240)!;
    expect(centre).toBeGreaterThan(0.3);
    expect(centre).toBeLessThan(3);
    expect(depthAt(depth, -1, 0)).toBeNull();
  });

  it("observes without any image when cameras is []", async () => {
    const before = g.gateway.requireEpisode().counters.framesServed;
    const obs = await agent.observe({ cameras: [] });
    expect(obs.frames).toEqual([]);
    expect(obs.readings).toHaveLength(1);
    expect(g.gateway.requireEpisode().counters.framesServed).toBe(before);
  });

  it("acts, and FK / IK agree", async () => {
    const r0 = (await agent.observe({ cameras: [] })).readings[0]!;
    const fk = await agent.fk(r0.q);
    const ik = await agent.ik({ pose: fk.tool, q_seed: r0.q });
    expect(ik.position_residual_m).toBeLessThan(1e-4);
    const spec = await agent.spec();
    const dt = spec.control.control_period_s * 10;
    const act = await agent.act({ type: "joint_position", dt, rows: [[...r0.q, r0.gripper_width_m]] });
    expect(act.executed_rows).toBe(1);
    expect(act.t).toBeGreaterThan(r0.t);
    expect(act.time_left_s).toBeGreaterThan(0);
  });

  it("turns gateway errors into RobotGatewayError with the RB_ERR code, status and details", async () => {
    const bad = await rejection(
      agent.act({ type: "joint_position", dt: 0.0105, rows: [[0, 0, 0, 0, 0, 0, 0, 0]] }),
    );
    expect([bad.code, bad.status, bad.call]).toEqual(["RB_ERR_DT", 422, "POST /v1/act"]);
    expect(bad.details).toMatchObject({ dt: 0.0105 });
    expect(bad.hint).toMatch(/never rounded/);
    const inst = await rejection(agent.instrument("voltmeter"));
    expect([inst.code, inst.status]).toEqual(["RB_ERR_UNKNOWN_INSTRUMENT", 404]);
    expect((await rejection(agent.reset())).code).toBe("RB_ERR_NO_RESETS");
    expect((await rejection(agent.submit(1, []))).code).toBe("RB_ERR_NO_SUBMISSION");
    expect((await rejection(agent.frame("/v1/frames/nope"))).code).toBe("RB_ERR_FRAME_NOT_FOUND");
    expect((await rejection(agent.ik({ pose: { xyz: [3, 0, 0], quat_xyzw: [0, 0, 0, 1] } }))).code).toBe(
      "RB_ERR_IK_UNREACHABLE",
    );
  });

  it("the agent token opens no operator call", async () => {
    const asAgent = new OperatorClient({ url, token: AGENT_TOKEN });
    const e = await rejection(asAgent.state());
    expect([e.code, e.status]).toEqual(["RB_ERR_FORBIDDEN", 403]);
    const wrong = await rejection(new AgentClient({ url, token: "nope" }).task());
    expect(wrong.code).toBe("RB_ERR_UNAUTHORIZED");
  });

  it("a gateway that is not there is RB_ERR_GATEWAY_UNREACHABLE", async () => {
    // a port that was free a moment ago
    const port = await new Promise<number>((res) => {
      const s = createServer().listen(0, "127.0.0.1", () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => res(p));
      });
    });
    const e = await rejection(new AgentClient({ url: `http://127.0.0.1:${port}`, token: "x" }).task());
    expect([e.code, e.status]).toEqual(["RB_ERR_GATEWAY_UNREACHABLE", 502]);
    expect(e.message).toContain(`127.0.0.1:${port}`);
  });

  it("an answer that does not match the schema is RB_ERR_BAD_RESPONSE, unless validation is off", async () => {
    const fake: typeof fetch = async () =>
      new Response(JSON.stringify({ task_id: 7 }), {
        status: 200,
        headers: { "content-type": "application/json" },
      });
    const e = await rejection(new AgentClient({ url, token: "x", fetch: fake }).task());
    expect(e.code).toBe("RB_ERR_BAD_RESPONSE");
    expect(e.message).toMatch(/task_id/);
    const loose = await new AgentClient({ url, token: "x", fetch: fake, validate: false }).task();
    expect(loose).toEqual({ task_id: 7 });
  });
});

describe("OperatorClient", () => {
  it("starts, reads and ends an episode; the result is there once it has ended", async () => {
    const op = new OperatorClient({ url, token: OPERATOR_TOKEN });
    const ep = await op.startEpisode({ task: "buzz-wire", seed: 2 });
    expect(ep).toMatchObject({ task: "buzz-wire", seed: 2, status: "running" });
    expect((await op.episodes()).map((e) => e.id)).toContain(ep.id);
    const ended = await op.endEpisode(ep.id, { reason: "finished", detail: "test" });
    expect(ended.status).toBe("ended");
    const again = await rejection(op.endEpisode(ep.id));
    expect(again.code).toBe("RB_ERR_EPISODE_ENDED");
    expect((await op.episode(ep.id)).result).toMatchObject({ end_reason: "finished" });
    expect((await op.tasks()).tasks.map((t) => t.id)).toContain("buzz-wire");
    // the e-stop latches: no new episode until released
    await op.estop({ reason: "client test" });
    expect((await op.state()).estop).toMatchObject({ engaged: true });
    expect((await rejection(op.startEpisode({ task: "buzz-wire", seed: 1 }))).code).toBe("RB_ERR_ESTOP");
    await op.release();
    // leave a running episode for the other tests
    await op.startEpisode({ task: "buzz-wire", seed: 1, level: "joint_position" });
  });
});

describe("camera helpers", () => {
  it("project and back-project agree with the simulator's depth images, world and wrist cameras", async () => {
    const cal = calibrationSchema.parse(g.gateway.bench.taskBench(1));
    const spec = await agent.spec();
    const obs = await agent.observe({ depth: true });
    const tool = (await agent.fk(obs.readings[0]!.q)).tool;
    // test-only knowledge: points on the wire and on the board top
    const cl = centreline(cal.wire.pointsBase);
    const baseFromWorld = mat4RigidInverse(poseToMat4(spec.robot.base_pose));
    const board = poseToMat4(cal.board.poseWorld);
    const points: Vec3[] = [];
    for (let s = 0; s <= 1.0001; s += 0.05) points.push(pointAt(cl, cl.lengthM * s));
    for (const dx of [-0.15, -0.1, -0.05, 0.05, 0.1, 0.15])
      for (const dy of [-0.1, -0.05, 0.05, 0.1])
        points.push(mat4Point(baseFromWorld, mat4Point(board, [dx, dy, 0])));
    for (const f of obs.frames) {
      const view = cameraView(spec, f.camera, tool);
      const depth = await agent.depth(f.depth!);
      let seen = 0;
      let agree = 0;
      for (const p of points) {
        const pr = view.project(p);
        if (!pr?.inImage) continue;
        seen++;
        const u = Math.round(pr.u);
        const v = Math.round(pr.v);
        const back = view.backProject(u, v, depthAt(depth, u, v));
        // a point hidden behind something else back-projects elsewhere; most are in plain view
        if (back && Math.hypot(back[0] - p[0], back[1] - p[1], back[2] - p[2]) < 0.004) agree++;
      }
      expect(seen, f.camera).toBeGreaterThan(0);
      expect(agree / seen, `${f.camera}: ${agree} of ${seen}`).toBeGreaterThanOrEqual(0.6);
    }
  });

  const spec = (
    over: Partial<Spec["cameras"][number]> = {},
    base = { xyz: [0, 0, 0], quat_xyzw: [0, 0, 0, 1] },
  ) =>
    ({
      robot: { base_pose: base },
      cameras: [
        {
          name: "cam",
          width: 640,
          height: 480,
          fx: 500,
          fy: 500,
          cx: 319.5,
          cy: 239.5,
          distortion: [0, 0, 0, 0, 0],
          frame: "world",
          // 1 m above the world origin looking straight down (optical z = world −z)
          pose: { xyz: [0, 0, 1], quat_xyzw: [1, 0, 0, 0] },
          depth: true,
          ...over,
        },
      ],
    }) as unknown as Spec;

  it("puts the robot base where the spec says (base_pose is world ← base)", () => {
    // base 0.2 m along world x: the base origin is 0.2 m off the optical axis
    const view = cameraView(spec({}, { xyz: [0.2, 0, 0], quat_xyzw: [0, 0, 0, 1] }), "cam");
    const pr = view.project([0, 0, 0])!;
    expect(pr.u).toBeCloseTo(319.5 + 500 * 0.2, 9);
    expect(pr.v).toBeCloseTo(239.5, 9);
    expect(pr.depthM).toBeCloseTo(1, 12);
    expect(view.project([0, 0, 2])).toBeNull();
    const back = view.backProject(319.5, 239.5, 1)!;
    expect(back.map((x) => Number(x.toFixed(12)))).toEqual([-0.2, 0, 0]);
  });

  it("inverts plumb-bob distortion: back-project(project(p)) = p", () => {
    const view = cameraView(spec({ distortion: [-0.28, 0.07, 0.001, -0.0005, 0.01] }), "cam");
    for (const p of [
      [0.3, 0.2, 0.1],
      [-0.25, 0.1, 0],
      [0, 0, 0.5],
    ]) {
      const pr = view.project(p)!;
      const back = view.backProject(pr.u, pr.v, pr.depthM)!;
      expect(Math.hypot(back[0] - p[0]!, back[1] - p[1]!, back[2] - p[2]!)).toBeLessThan(1e-7);
    }
    // barrel distortion pulls an off-axis point towards the centre
    const plain = cameraView(spec(), "cam").project([0.3, 0.2, 0])!;
    const bent = view.project([0.3, 0.2, 0])!;
    expect(Math.abs(bent.u - 319.5)).toBeLessThan(Math.abs(plain.u - 319.5));
  });

  it("a wrist camera needs the tool pose; no return is null", () => {
    expect(() => cameraView(spec({ frame: "tool" }), "cam")).toThrow(/tool pose/);
    expect(() => cameraView(spec(), "nope")).toThrow(/no camera nope; cameras: cam/);
    expect(cameraView(spec(), "cam").backProject(10, 10, null)).toBeNull();
    expect(cameraView(spec(), "cam").backProject(10, 10, 0)).toBeNull();
  });
});
