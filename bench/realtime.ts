/**
 * The realtime setting on the sim at S = 1 (issue 14): a 50 Hz agent loop over real HTTP
 * (127.0.0.1:0), then over the WebSocket /v1/stream, sends a 2 ms one-row chunk every 20 ms (it
 * starts at the earliest step allowed), N/2 control steps each (default N = 10,000 = 10 s).
 *
 *   npx tsx bench/realtime.ts [--steps 10000]
 *
 * Prints late steps per 10,000 (steps that could not start within the late tolerance of their
 * slot; target 0 on an idle machine) and the splice latency from the chunk sent to its first
 * target committed to the sim, p50/p99 per transport (target p99 ≤ 2 control periods over the
 * WebSocket). The committed step is read in process (the bench shares the gateway's event loop),
 * so the figure includes the round trip and the driver's wake-up.
 */
import { parseArgs } from "node:util";
import { parseBenchConfig } from "../compose/bench-config.ts";
import { WebSocket } from "ws";
import { startGateway } from "../compose/start.ts";
import { pct } from "./stats.ts";

const { values } = parseArgs({ options: { steps: { type: "string", default: "10000" } } });
const steps = Number(values.steps);

const config = parseBenchConfig(
  { version: 1, name: "rt-bench", backend: { type: "sim" }, task: { id: "free-motion", seed: 1 } },
  "bench",
);
const g = await startGateway({
  config,
  agentToken: "rt-agent",
  operatorToken: "rt-op",
  observers: null,
  realtime: { slowdown: 1 },
  firstEpisode: { task: "free-motion", setting: "realtime", seed: 1 },
  listen: { host: "127.0.0.1", port: 0 },
});
const base = g.url!;
const headers = { authorization: "Bearer rt-agent", "content-type": "application/json" };
/** the fields of the answers this bench reads */
interface Answer {
  readings: { q: number[]; gripper_width_m: number }[];
  start_step: number;
}
const post = async (path: string, body: unknown) => {
  const res = await fetch(`${base}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Answer };
};

const ep = g.gateway.requireEpisode();
const periodS = g.bench.backend.describe().controlPeriodS;
const first = await post("/v1/observe", { advance_s: 0, cameras: [] });
const q = first.body.readings[0]!.q;
const grip = first.body.readings[0]!.gripper_width_m;
const row = [...q, grip];

const tick = () => new Promise((r) => setImmediate(r));

// the WebSocket: one connection, acts answered by act_result messages in order
const ws = new WebSocket(`${base.replace("http", "ws")}/v1/stream`, {
  headers: { authorization: "Bearer rt-agent" },
});
const answers: ((m: { type: string; start_step?: number }) => void)[] = [];
ws.on("message", (d) => {
  const m = JSON.parse(String(d)) as { type: string; start_step?: number };
  if (m.type === "act_result" || m.type === "error") answers.shift()?.(m);
});
await new Promise<void>((resolve) => ws.on("open", () => resolve()));

type Sender = () => Promise<number | undefined>;
const overHttp: Sender = async () => {
  const a = await post("/v1/act", { type: "joint_position", dt: 0.002, rows: [row] });
  return a.status === 200 ? a.body.start_step : undefined;
};
const overWs: Sender = () =>
  new Promise((resolve) => {
    answers.push((m) => resolve(m.type === "act_result" ? m.start_step : undefined));
    ws.send(JSON.stringify({ type: "act", action_type: "joint_position", dt: 0.002, rows: [row] }));
  });

/**
 * Half the steps with each transport. A 2 ms chunk every 20 ms, so the queue is empty when the
 * next is sent: it starts at the earliest step allowed (the step due + the margin), the latency of
 * a replacement rather than of an append.
 */
async function loop(send: Sender, until: number) {
  const latMs: number[] = [];
  let refused = 0;
  const w0 = performance.now();
  for (let i = 0; ; i++) {
    if (ep.realtimeStatus()!.committed_step >= until || ep.isEnded) break;
    const sent = performance.now();
    const s = await send();
    if (s === undefined) refused++;
    else {
      while ((ep.realtimeStatus()?.committed_step ?? 0) <= s && !ep.isEnded) await tick();
      latMs.push(performance.now() - sent);
    }
    const wait = w0 + (i + 1) * 20 - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  return { latMs, refused };
}
const http = await loop(overHttp, steps / 2);
const wsRes = await loop(overWs, steps);
ws.close();
const st = ep.realtimeStatus()!;
await post("/v1/finish", {});
await g.close();

const per10k = (st.late_steps / Math.max(1, st.committed_step + st.late_steps)) * 10_000;
console.log(`S = ${st.slowdown}, control period ${periodS * 1000} ms, ${st.committed_step} steps committed`);
console.log(
  "reference (issue 14 targets): 0 late steps per 10,000 on an idle machine; splice p99 ≤ 2 periods (WebSocket)",
);
console.log(
  `late steps: ${st.late_steps} (${per10k.toFixed(1)} per 10,000), stood still ${st.stood_still_s.toFixed(3)} s`,
);
for (const [name, r] of [
  ["HTTP", http],
  ["WebSocket", wsRes],
] as const) {
  const p50 = pct(r.latMs, 50);
  const p99 = pct(r.latMs, 99);
  const per = periodS * 1000;
  console.log(
    `splice latency over ${name}, sent → first target committed (${r.latMs.length} chunks, ${r.refused} refused): ` +
      `p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms (${(p50 / per).toFixed(1)} / ${(p99 / per).toFixed(1)} periods)`,
  );
}
