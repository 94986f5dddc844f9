/**
 * The MCP front end with the SDK's own client, over both transports: streamable HTTP at /mcp on
 * a gateway listening on a loopback port, and stdio to a `robot-gateway mcp` child process.
 * A scripted session through MCP alone plays a buzz-wire trial to success on the sim and must get
 * the same result.json as the same moves sent over plain HTTP.
 */
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMarkJoints } from "../../calibration/wire-pose.ts";
import { type ActResponse, OperatorClient, type Spec, type TaskCard } from "../client/client.ts";
import { FR3 } from "../../robots/franka/models.ts";
import { poseToMat4 } from "../../robots/math.ts";
import { sampleBenchCalibration } from "../../sim/buzzwire/bench.ts";
import { wireReferencePath } from "../../sim/buzzwire/reference-path.ts";
import { HANDLE_GRIP_WIDTH_M } from "../../sim/sim-backend.ts";
import type { ErrorBody } from "../errors.ts";
import type { EpisodeResult } from "../recorder/result.ts";
import { AGENT_TOKEN, OPERATOR_TOKEN, type TestGateway, testGateway } from "../../compose/testing.ts";
import { injectFetch } from "./plugin.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const T0 = [
  "get_task_spec",
  "get_observation",
  "get_robot_state",
  "set_gripper",
  "wait",
  "solve_ik",
  "submit_result",
];

let g: TestGateway;
let url: string;
let op: OperatorClient;

beforeAll(async () => {
  g = await testGateway({
    robot: "fr3",
    backend: { type: "sim" },
    task: { id: "buzz-wire", seed: 1, level: "joint_position" },
  });
  url = await g.app.listen({ host: "127.0.0.1", port: 0 });
  op = new OperatorClient({ url, token: OPERATOR_TOKEN });
});
afterAll(async () => {
  await g.close();
});

type Transport = "http" | "stdio";

async function connect(kind: Transport): Promise<Client> {
  const client = new Client({ name: "mcp-test", version: "0" });
  if (kind === "http") {
    await client.connect(
      new StreamableHTTPClientTransport(new URL("/mcp", url), {
        requestInit: { headers: { authorization: `Bearer ${AGENT_TOKEN}` } },
      }),
    );
  } else {
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: ["--import", "tsx", "cli/main.ts", "mcp", "--url", url, "--token", AGENT_TOKEN],
        cwd: ROOT,
        stderr: "ignore",
      }),
    );
  }
  return client;
}

/** The JSON of a tool result (its first text content), and whether it is an error. */
/** A JSON Schema node, as far as these tests read it. */
interface JsonSchema {
  [k: string]: unknown;
  properties?: Record<string, JsonSchema>;
  required?: string[];
}

/** The JSON tools answer with: what these tests read of it. */
interface ToolJson {
  t: number;
  time_left_s: number;
  error: { code: string; message: string; details: Record<string, unknown> };
  episode: { id: string; status: string; reason?: string };
  events: { type: string }[];
  observation_id: string;
  tool_pose: unknown;
  task: TaskCard;
  spec: Spec;
}

function json(r: unknown): { isError: boolean; body: ToolJson } {
  const res = r as CallToolResult;
  const first = res.content[0];
  if (first?.type !== "text") throw new Error(`tool result without text: ${JSON.stringify(res)}`);
  return { isError: !!res.isError, body: JSON.parse(first.text) };
}

async function call(c: Client, name: string, args: Record<string, unknown> = {}) {
  return json(await c.callTool({ name, arguments: args }));
}

const names = async (c: Client) => (await c.listTools()).tools.map((t) => t.name).sort();

describe("MCP over streamable HTTP at /mcp", () => {
  it("lists the T0 tools the level opens, and no operator tool, at every level", async () => {
    const c = await connect("http");
    try {
      const expected: Record<string, string[]> = {
        joint_position: [...T0, "execute_joint_trajectory"],
        ee_pose: [...T0, "execute_joint_trajectory", "execute_tool_poses"],
        jog: [...T0.filter((n) => n !== "set_gripper"), "jog"],
      };
      for (const [level, tools] of Object.entries(expected)) {
        await op.startEpisode({ task: "buzz-wire", seed: 1, level });
        expect(await names(c), level).toEqual([...tools].sort());
        // the level's own motion tool runs
        const st = (await call(c, "get_robot_state")).body as ToolJson & {
          reading: { gripper_width_m: number };
          tool_pose: { xyz: number[]; quat_xyzw: number[] };
        };
        const moved =
          level === "jog"
            ? await call(c, "jog", { dt: 0.05, commands: ["stay", "stay"] })
            : level === "ee_pose"
              ? await call(c, "execute_tool_poses", {
                  dt: 0.05,
                  rows: [[...st.tool_pose.xyz, ...st.tool_pose.quat_xyzw, st.reading.gripper_width_m]],
                })
              : await call(c, "set_gripper", { width_m: st.reading.gripper_width_m, duration_s: 0.2 });
        expect(moved.isError, `${level}: ${JSON.stringify(moved.body).slice(0, 300)}`).toBe(false);
        expect((moved.body as unknown as { executed_rows: number }).executed_rows).toBeGreaterThan(0);
        expect(moved.body.t).toBeGreaterThan(st.t);
      }
      const listed = (await c.listTools()).tools;
      for (const t of listed) expect(t.inputSchema.type).toBe("object");
      // input schemas are the API's zod schemas as JSON Schema
      const byName = new Map(listed.map((t) => [t.name, t.inputSchema as unknown as JsonSchema]));
      const ik = byName.get("solve_ik")!;
      expect(ik.required).toEqual(["pose"]);
      expect(ik.properties!.pose!.properties!.quat_xyzw).toMatchObject({ minItems: 4, maxItems: 4 });
      expect(ik.additionalProperties).toBe(false);
      expect(byName.get("wait")!.properties!.seconds).toMatchObject({
        type: "number",
        minimum: 0,
        maximum: 30,
      });
      expect(byName.get("get_observation")!.properties).toHaveProperty("cameras");
      // jog's command words come from the spec
      const jog = listed.find((t) => t.name === "jog")!;
      const cmd = (jog.inputSchema.properties as { commands: { items: { enum: string[] } } }).commands.items;
      expect(cmd.enum).toContain("+x");
      expect(cmd.enum).toContain("stay");
      // a tool of another level is refused by the gateway with its code
      const moved = await call(c, "execute_joint_trajectory", {
        dt: 0.01,
        rows: [[0, 0, 0, -1, 0, 1, 0, 0.01]],
      });
      expect(moved.isError).toBe(true);
      expect(moved.body.error.code).toBe("RB_ERR_ACTION_TYPE");
    } finally {
      await c.close();
      await op.startEpisode({ task: "buzz-wire", seed: 1, level: "joint_position" });
    }
  });

  it("returns images as JPEG image content with the observation id, and t / time_left_s on every result", async () => {
    const c = await connect("http");
    try {
      const res = (await c.callTool({
        name: "get_observation",
        arguments: { cameras: ["front", "wrist"] },
      })) as CallToolResult;
      const data = json(res).body;
      expect(data.observation_id).toMatch(/./);
      expect(typeof data.t).toBe("number");
      const images = res.content.filter((x) => x.type === "image");
      expect(images.map((x) => x.mimeType)).toEqual(["image/jpeg", "image/jpeg"]);
      const bytes = Buffer.from((images[0] as { data: string }).data, "base64");
      expect([...bytes.subarray(0, 3)]).toEqual([0xff, 0xd8, 0xff]);
      const withDepth = (await c.callTool({
        name: "get_observation",
        arguments: { cameras: ["top"], depth: true },
      })) as CallToolResult;
      expect(withDepth.content.filter((x) => x.type === "image").map((x) => x.mimeType)).toEqual([
        "image/jpeg",
        "image/png",
      ]);
      for (const [name, args] of [
        ["get_task_spec", {}],
        ["get_robot_state", {}],
        ["wait", { seconds: 0.05 }],
        ["solve_ik", { pose: json(await c.callTool({ name: "get_robot_state" })).body.tool_pose }],
      ] as const) {
        const r = await call(c, name, args);
        expect(r.isError, `${name}: ${JSON.stringify(r.body).slice(0, 300)}`).toBe(false);
        expect(typeof r.body.t, name).toBe("number");
        expect(typeof r.body.time_left_s, name).toBe("number");
      }
      const spec = (await call(c, "get_task_spec")).body;
      expect(spec.task.task_id).toBe("buzz-wire");
      expect(spec.spec.cameras).toHaveLength(4);
    } finally {
      await c.close();
    }
  });

  it("errors are tool errors carrying the RB_ERR code (gateway refusals and bad arguments)", async () => {
    const c = await connect("http");
    try {
      const dt = await call(c, "execute_joint_trajectory", {
        dt: 0.0105,
        rows: [[0, 0, 0, -1, 0, 1, 0, 0.01]],
      });
      expect(dt.isError).toBe(true);
      expect(dt.body.error).toMatchObject({ code: "RB_ERR_DT", details: { dt: 0.0105 } });
      expect(typeof dt.body.t).toBe("number");
      expect(typeof dt.body.time_left_s).toBe("number");
      const bad = await call(c, "wait", { seconds: 31 });
      expect(bad.isError).toBe(true);
      expect(bad.body.error.code).toBe("RB_ERR_BAD_REQUEST");
      expect(bad.body.error.message).toMatch(/seconds/);
      const extra = await call(c, "get_robot_state", { secret: true });
      expect(extra.body.error.code).toBe("RB_ERR_BAD_REQUEST");
      const ik = await call(c, "solve_ik", { pose: { xyz: [3, 0, 0], quat_xyzw: [0, 0, 0, 1] } });
      expect(ik.body.error.code).toBe("RB_ERR_IK_UNREACHABLE");
      const none = await call(c, "get_privileged_state");
      expect(none.body.error.code).toBe("RB_ERR_NOT_FOUND");
      const sub = await call(c, "submit_result", { answer: 3, evidence: [] });
      expect(sub.body.error.code).toBe("RB_ERR_NO_SUBMISSION");
    } finally {
      await c.close();
    }
  });

  it("takes the agent token only", async () => {
    const post = (auth?: string) =>
      fetch(new URL("/mcp", url), {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...(auth ? { authorization: `Bearer ${auth}` } : {}),
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
    const asOperator = await post(OPERATOR_TOKEN);
    expect(asOperator.status).toBe(403);
    expect(((await asOperator.json()) as ErrorBody).error.code).toBe("RB_ERR_FORBIDDEN");
    const anonymous = await post();
    expect(anonymous.status).toBe(401);
    expect(((await anonymous.json()) as ErrorBody).error.code).toBe("RB_ERR_UNAUTHORIZED");
    const get = await fetch(new URL("/mcp", url), { headers: { authorization: `Bearer ${AGENT_TOKEN}` } });
    expect(get.status).toBe(405);
    // the tool layer's in-process fetch never reaches an operator path, whatever token it holds
    const inner = injectFetch(g.app);
    const admin = await inner("http://gateway.inject/v1/admin/state", {
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}` },
    });
    expect(admin.status).toBe(403);
    const task = await inner("http://gateway.inject/v1/task", {
      headers: { authorization: `Bearer ${AGENT_TOKEN}` },
    });
    expect(task.status).toBe(200);
  });
});

// ------------------------------------------------------------------ a whole trial through MCP

const SEED = 4;

/** Test-only knowledge: the reference path along the seed's wire from the sim's start pose. */
function referenceChunks(maxCallS: number) {
  const cal = sampleBenchCalibration(FR3, SEED);
  const startQ = startMarkJoints(FR3, cal.wire, poseToMat4(cal.tool.loopPoseFlange), FR3.homeQ);
  if (!startQ) throw new Error("start mark unreachable");
  const ref = wireReferencePath(FR3, cal, {
    gripperWidthM: HANDLE_GRIP_WIDTH_M,
    seedQ: startQ,
    speedMps: 0.02,
  });
  const per = Math.max(1, Math.floor(maxCallS / ref.dtS + 1e-9));
  const chunks: number[][][] = [];
  for (let i = 0; i < ref.rows.length; i += per) chunks.push(ref.rows.slice(i, i + per));
  return { chunks, dtS: ref.dtS };
}

/** result.json without what differs between any two runs: the episode id and the wall clock. */
function comparable(r: EpisodeResult) {
  const { episode_id: _id, timing, ...rest } = r;
  return { ...rest, timing: { episode_s: timing.episode_s } };
}

async function resultOf(id: string): Promise<EpisodeResult> {
  for (let i = 0; i < 50; i++) {
    const s = await op.episode(id);
    if (s.result) return s.result as unknown as EpisodeResult;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`episode ${id} has no result`);
}

describe("a buzz-wire trial through MCP alone", () => {
  let overHttp: EpisodeResult;

  beforeAll(async () => {
    // the same moves over plain HTTP with the agent token
    const ep = await op.startEpisode({ task: "buzz-wire", seed: SEED, level: "joint_position" });
    const H = { authorization: `Bearer ${AGENT_TOKEN}`, "content-type": "application/json" };
    const task = (await (await fetch(`${url}/v1/task`, { headers: H })).json()) as TaskCard;
    const { chunks, dtS } = referenceChunks(task.budgets.max_call_s);
    for (const rows of chunks) {
      const res = (await (
        await fetch(`${url}/v1/act`, {
          method: "POST",
          headers: H,
          body: JSON.stringify({ type: "joint_position", dt: dtS, rows }),
        })
      ).json()) as ActResponse;
      if (res.episode.status === "ended") break;
    }
    overHttp = await resultOf(ep.id);
    expect(overHttp).toMatchObject({ success: true, end_reason: "success", progress_quantised: 1 });
  });

  for (const kind of ["stdio", "http"] as const) {
    it(`plays to success over ${kind} and gets the same result.json as over HTTP`, async () => {
      const ep = await op.startEpisode({ task: "buzz-wire", seed: SEED, level: "joint_position" });
      const c = await connect(kind);
      try {
        expect(await names(c)).toContain("execute_joint_trajectory");
        const spec = (await call(c, "get_task_spec")).body;
        const { chunks, dtS } = referenceChunks(spec.task.budgets.max_call_s);
        const start = (await call(c, "get_robot_state")).body;
        expect(start.episode).toMatchObject({ id: ep.id, status: "running" });
        let last: ToolJson | undefined;
        for (const rows of chunks) {
          const r = await call(c, "execute_joint_trajectory", { dt: dtS, rows });
          expect(r.isError, JSON.stringify(r.body).slice(0, 300)).toBe(false);
          last = r.body;
          if (last.episode.status === "ended") break;
        }
        expect(last?.episode).toMatchObject({ status: "ended", reason: "success" });
        expect(last?.events.filter((e: { type: string }) => e.type === "contact")).toEqual([]);
        const after = await call(c, "execute_joint_trajectory", { dt: dtS, rows: chunks[0]!.slice(0, 1) });
        expect(after.body.error.code).toBe("RB_ERR_EPISODE_ENDED");
      } finally {
        await c.close();
      }
      expect(comparable(await resultOf(ep.id))).toEqual(comparable(overHttp));
    });
  }
});
