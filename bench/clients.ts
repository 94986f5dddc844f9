/**
 * Per-call latency of the agent front ends beside the raw HTTP call, on one sim buzz-wire gateway
 * in one run (joint_position level, a real server on a loopback port):
 * - raw HTTP: the same request(s) with fetch and JSON.parse (the reference);
 * - TS client: AgentClient (responses checked against the zod schemas), and with validate off;
 * - MCP over streamable HTTP (/mcp, the SDK's client; the tool layer serves it in-process);
 * - MCP over stdio (the SDK's client to a `robot-gateway mcp` child, which calls the gateway
 *   over loopback HTTP).
 * An MCP tool is set beside the raw HTTP calls it makes (e.g. get_robot_state = observe without
 * images + FK). Motion calls hold the arm (one row, 10 ms), so the trial never ends by itself;
 * a fresh episode is started outside the timed part when the time budget runs out.
 * Usage: npx tsx bench/clients.ts [calls=200]
 */
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { AgentClient, OperatorClient } from "../gateway/client/client.ts";
import { AGENT_TOKEN, OPERATOR_TOKEN, testGateway } from "../compose/testing.ts";
import { pct } from "./stats.ts";

const calls = Number(process.argv[2] ?? 200);
// no recorder: the figures are the front ends' cost, not the MCAP writer's
const g = await testGateway(
  { robot: "fr3", backend: { type: "sim" }, task: { id: "buzz-wire", seed: 1, level: "joint_position" } },
  { recorder: false },
);
const url = await g.app.listen({ host: "127.0.0.1", port: 0 });
const op = new OperatorClient({ url, token: OPERATOR_TOKEN });
await op.startEpisode({ task: "buzz-wire", seed: 1, level: "joint_position" });

const H = { authorization: `Bearer ${AGENT_TOKEN}`, "content-type": "application/json" };
/** What the raw calls read of an answer. */
interface RawJson {
  readings: { q: number[] }[];
  frames: { rgb: string }[];
}

async function raw(method: "GET" | "POST", path: string, body?: unknown): Promise<RawJson> {
  const res = await fetch(url + path, {
    method,
    headers: H,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  if (res.headers.get("content-type")?.startsWith("application/json")) return (await res.json()) as RawJson;
  await res.arrayBuffer();
  return { readings: [], frames: [] };
}

const client = new AgentClient({ url, token: AGENT_TOKEN });
const loose = new AgentClient({ url, token: AGENT_TOKEN, validate: false });
const mcpHttp = new Client({ name: "bench", version: "0" });
await mcpHttp.connect(
  new StreamableHTTPClientTransport(new URL("/mcp", url), {
    requestInit: { headers: { authorization: H.authorization } },
  }),
);
const mcpStdio = new Client({ name: "bench", version: "0" });
await mcpStdio.connect(
  new StdioClientTransport({
    command: process.execPath,
    args: ["--import", "tsx", "cli/main.ts", "mcp", "--url", url, "--token", AGENT_TOKEN],
    cwd: fileURLToPath(new URL("../", import.meta.url)),
    stderr: "ignore",
  }),
);

const r0 = (await client.observe({ cameras: [] })).readings[0]!;
const hold = { type: "joint_position", dt: 0.01, rows: [[...r0.q, r0.gripper_width_m]] };
const toolPose = (await client.fk(r0.q)).tool;

async function tool(c: Client, name: string, args: Record<string, unknown> = {}): Promise<void> {
  const r = (await c.callTool({ name, arguments: args })) as CallToolResult;
  if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.content).slice(0, 300)}`);
}

/** Start a new episode (untimed) when the current one is near its end. */
async function fresh(): Promise<void> {
  const ep = g.gateway.requireEpisode();
  if (ep.isEnded || ep.timeLeftS() < 1)
    await op.startEpisode({ task: "buzz-wire", seed: 1, level: "joint_position" });
}

type Fn = () => Promise<unknown>;
interface Row {
  call: string;
  raw: Fn;
  client?: Fn;
  loose?: Fn;
  tool: string;
  args?: Record<string, unknown>;
}

const ROWS: Row[] = [
  {
    call: "task + spec + clock",
    raw: () =>
      Promise.all([
        raw("GET", "/v1/task"),
        raw("GET", "/v1/spec"),
        raw("POST", "/v1/observe", { cameras: [] }),
      ]),
    client: () =>
      Promise.all([client.task(), client.spec({ refresh: true }), client.observe({ cameras: [] })]),
    loose: () => Promise.all([loose.task(), loose.spec({ refresh: true }), loose.observe({ cameras: [] })]),
    tool: "get_task_spec",
  },
  {
    call: "observe (no image) + fk",
    raw: async () => {
      const o = await raw("POST", "/v1/observe", { cameras: [] });
      return raw("POST", "/v1/kinematics/fk", { q: o.readings[0]!.q });
    },
    client: async () => client.fk((await client.observe({ cameras: [] })).readings[0]!.q),
    loose: async () => loose.fk((await loose.observe({ cameras: [] })).readings[0]!.q),
    tool: "get_robot_state",
  },
  {
    call: "observe front (JPEG) + frame",
    raw: async () => {
      const o = await raw("POST", "/v1/observe", { cameras: ["front"] });
      return raw("GET", o.frames[0]!.rgb);
    },
    client: async () => client.frame((await client.observe({ cameras: ["front"] })).frames[0]!.rgb),
    loose: async () => loose.frame((await loose.observe({ cameras: ["front"] })).frames[0]!.rgb),
    tool: "get_observation",
    args: { cameras: ["front"] },
  },
  {
    call: "act, 1 row × 10 ms",
    raw: () => raw("POST", "/v1/act", hold),
    client: () => client.act(hold),
    loose: () => loose.act(hold),
    tool: "execute_joint_trajectory",
    args: { dt: hold.dt, rows: hold.rows },
  },
  {
    call: "observe, advance 10 ms (+ fk)",
    raw: async () => {
      const o = await raw("POST", "/v1/observe", { cameras: [], advance_s: 0.01 });
      return raw("POST", "/v1/kinematics/fk", { q: o.readings[0]!.q });
    },
    client: async () => client.fk((await client.observe({ cameras: [], advance_s: 0.01 })).readings[0]!.q),
    loose: async () => loose.fk((await loose.observe({ cameras: [], advance_s: 0.01 })).readings[0]!.q),
    tool: "wait",
    args: { seconds: 0.01 },
  },
  {
    call: "ik",
    raw: () => raw("POST", "/v1/kinematics/ik", { pose: toolPose, q_seed: r0.q }),
    client: () => client.ik({ pose: toolPose, q_seed: r0.q }),
    loose: () => loose.ik({ pose: toolPose, q_seed: r0.q }),
    tool: "solve_ik",
    args: { pose: toolPose, q_seed: r0.q },
  },
];

async function sample(fn: Fn, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    await fresh();
    const t0 = performance.now();
    await fn();
    out.push(performance.now() - t0);
  }
  return out;
}

const fmt = (xs: number[]) => `${pct(xs, 50).toFixed(2).padStart(6)} / ${pct(xs, 99).toFixed(2).padStart(6)}`;
console.log(
  `agent front ends on the sim buzz-wire bench, ${calls} calls each; p50 / p99 ms (raw HTTP is the reference)`,
);
console.log(
  `${"call (MCP tool)".padEnd(52)} ${"raw HTTP".padStart(15)} ${"TS client".padStart(15)} ${"client, no check".padStart(17)} ${"MCP /mcp".padStart(15)} ${"MCP stdio".padStart(15)}`,
);
for (const r of ROWS) {
  const variants: Fn[] = [
    r.raw,
    r.client ?? r.raw,
    r.loose ?? r.raw,
    () => tool(mcpHttp, r.tool, r.args),
    () => tool(mcpStdio, r.tool, r.args),
  ];
  // warm up every path, then interleave the variants in rounds so drift hits them alike
  for (const v of variants) await sample(v, 10);
  const got: number[][] = variants.map(() => []);
  const round = 20;
  for (let done = 0; done < calls; done += round) {
    for (let k = 0; k < variants.length; k++)
      got[k]!.push(...(await sample(variants[k]!, Math.min(round, calls - done))));
  }
  const [a, b, c, d, e] = got.map(fmt);
  console.log(
    `${`${r.call} (${r.tool})`.padEnd(52)} ${a!.padStart(15)} ${b!.padStart(15)} ${c!.padStart(17)} ${d!.padStart(15)} ${e!.padStart(15)}`,
  );
}
const listHttp = await sample(() => mcpHttp.listTools(), calls);
const listStdio = await sample(() => mcpStdio.listTools(), calls);
const card = await sample(() => raw("GET", "/v1/task"), calls);
console.log(
  `${"GET /v1/task (MCP tools/list)".padEnd(52)} ${fmt(card).padStart(15)} ${"".padStart(15)} ${"".padStart(17)} ${fmt(listHttp).padStart(15)} ${fmt(listStdio).padStart(15)}`,
);

await mcpHttp.close();
await mcpStdio.close();
await g.close();
