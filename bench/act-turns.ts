/**
 * The longest synchronous turn of the gateway's event loop while an act of 300 tool poses is
 * received, parsed, validated and planned (issue #10: an e-stop or a contact's bytes that arrive
 * meanwhile wait for the turn that is running; target about SLICE_MS, 0.5 ms, per turn).
 *
 *   node --import tsx bench/act-turns.ts [--acts N] [--rows R]
 *   npm run bench -- act-turns
 *
 * A simulated gateway (compose/testing.ts, recorder on) on a loopback port; each act is written
 * on a keep-alive socket by a child process (the client's work is not on the gateway's loop),
 * each in a new episode (the e-stop that ends it ends the episode). A probe re-arms setImmediate
 * while the act is in flight, so every turn of the loop lies between two probe callbacks: the
 * gap is the synchronous work of that turn (the probe keeps the loop from sleeping, so a gap is
 * work or the process not being scheduled), printed also less the GC pauses inside it
 * (PerformanceObserver "gc"). Per act: the longest turn until the route handed the act to the
 * episode ("parse": socket read, JSON parse, body checks, schema validation, chunk rules) and the
 * longest while it was planned (runSliced), until its motion began; then the body's JSON.parse,
 * the turn it ran in and the turn that handed the act to the episode.
 *
 * On a shared machine run it in its own autogroup (see bench/stop-latency.ts):
 *   setsid sh -c 'echo -15 > /proc/self/autogroup; exec nice -n -15 node --import tsx bench/act-turns.ts'
 */
import { spawn } from "node:child_process";
import { loadavg } from "node:os";
import { PerformanceObserver } from "node:perf_hooks";
import { AGENT_TOKEN, testGateway } from "../compose/testing.ts";
import { minJerkToolRows } from "./tool-rows.ts";

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const ACTS = arg("--acts", 200);
const ROWS = arg("--rows", 300);
const DT_S = 0.01;

const g = await testGateway({ robot: "fr3", backend: { type: "sim" }, task: { id: "free-motion" } });
const url = new URL(await g.app.listen({ host: "127.0.0.1", port: 0 }));
const backend = g.gateway.bench.backend;
let motionAt = Number.NaN;
const execute = backend.execute.bind(backend);
backend.execute = (traj, opts) => {
  motionAt = performance.now();
  return execute(traj, opts);
};

// when the act's body was parsed (fastify's JSON parser calls JSON.parse)
let bodyParse = [Number.NaN, Number.NaN];
const jsonParse = JSON.parse;
JSON.parse = (text: string, reviver?: Parameters<typeof JSON.parse>[1]) => {
  const a = performance.now();
  const v = jsonParse(text, reviver);
  if (text.length > 8192) bodyParse = [a, performance.now()];
  return v;
};

const op = (method: "POST", path: string, payload: object) =>
  g.app.inject({ method, url: path, headers: g.operator, payload });

/** one turn: [start, end] ms */
interface Gap {
  start: number;
  end: number;
}
function probe(): { stop(): Gap[] } {
  const gaps: Gap[] = [];
  let on = true;
  let last = performance.now();
  const tick = () => {
    const now = performance.now();
    gaps.push({ start: last, end: now });
    last = now;
    if (on) setImmediate(tick);
  };
  setImmediate(tick);
  return {
    stop() {
      on = false;
      return gaps;
    },
  };
}

/** GC pauses, [start, end] ms (performance.now()) */
const gcs: [number, number][] = [];
const gcObs = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcs.push([e.startTime, e.startTime + e.duration]);
});
gcObs.observe({ entryTypes: ["gc"] });
const gcIn = (x: Gap) =>
  gcs.reduce((ms, [a, b]) => ms + Math.max(0, Math.min(b, x.end) - Math.max(a, x.start)), 0);

// the agent: a child process with one keep-alive socket; it writes each request it is handed
// (over its IPC channel) and reports each response's status line
const agent = spawn(
  process.execPath,
  [
    "-e",
    `const s = require("node:net").connect(${Number(url.port)}, "127.0.0.1");
     s.setNoDelay(true);
     s.on("data", (b) => process.send(b.toString("latin1").split("HTTP/1.1 ").length - 1));
     process.on("message", (m) => (m === "end" ? (s.end(), process.disconnect()) : s.write(m)));`,
  ],
  { stdio: ["ignore", "inherit", "inherit", "ipc"] },
);
let answers = 0;
agent.on("message", (n: number) => {
  answers += n;
});

/** per act and phase: the longest turn, and the longest with the GC pauses inside it taken out */
const acts: { gaps: Gap[]; actAt: number; bodyParse: number[] }[] = [];
const phases = ["parse", "planning"] as const;
const figures = Object.fromEntries(
  phases.map((k) => [k, { turn: [] as number[], lessGc: [] as number[] }]),
) as Record<(typeof phases)[number], { turn: number[]; lessGc: number[] }>;
for (let k = 0; k < ACTS; k++) {
  await op("POST", "/v1/admin/episodes", { task: "free-motion", level: "ee_pose" });
  const ep = g.gateway.episode!;
  let actAt = Number.NaN;
  const act = ep.act.bind(ep);
  ep.act = (...a: Parameters<typeof act>) => {
    actAt = performance.now();
    return act(...a);
  };
  const q = backend.read();
  const tool = g.gateway.fk(q.q).tool;
  const rows = minJerkToolRows(tool, q.gripperWidthM, ROWS);
  const body = JSON.stringify({ type: "ee_pose", dt: DT_S, rows });
  const req =
    `POST /v1/act HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${AGENT_TOKEN}\r\n` +
    `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  motionAt = Number.NaN;
  bodyParse = [Number.NaN, Number.NaN];
  const answered = answers;
  const p = probe();
  const t0 = performance.now();
  agent.send(req);
  const end = t0 + 5000;
  while (Number.isNaN(motionAt) && answers === answered && performance.now() < end)
    await new Promise((r) => setTimeout(r, 1));
  const gaps = p.stop().filter((x) => x.end > t0 && x.start < motionAt);
  if (Number.isNaN(motionAt)) throw new Error(`act ${k}: no motion (answers ${answers - answered})`);
  acts.push({ gaps, actAt, bodyParse });
  await op("POST", "/v1/admin/estop", { reason: "bench" });
  while (answers === answered) await new Promise((r) => setTimeout(r, 1));
  await op("POST", "/v1/admin/release", {});
}
agent.send("end");
await g.close();

// the GC entries arrive asynchronously: the turns are judged once the run is over
const turnOf = (gaps: Gap[], t: number) => gaps.find((x) => x.start <= t && t <= x.end);
const named = { json: [] as number[], jsonTurn: [] as number[], validate: [] as number[] };
for (const { gaps, actAt, bodyParse } of acts) {
  const json = turnOf(gaps, bodyParse[1]!);
  const validate = turnOf(gaps, actAt);
  named.json.push(bodyParse[1]! - bodyParse[0]!);
  named.jsonTurn.push(json ? json.end - json.start - gcIn(json) : Number.NaN);
  named.validate.push(validate ? validate.end - validate.start - gcIn(validate) : Number.NaN);
  const longest = { parse: [0, 0], planning: [0, 0] };
  for (const x of gaps) {
    // the turn that handed the act to the episode, and every turn before it, is the parse's
    const l = longest[x.start <= actAt || Number.isNaN(actAt) ? "parse" : "planning"];
    const d = x.end - x.start;
    l[0] = Math.max(l[0]!, d);
    l[1] = Math.max(l[1]!, d - gcIn(x));
  }
  for (const k of phases) {
    figures[k].turn.push(longest[k][0]!);
    figures[k].lessGc.push(longest[k][1]!);
  }
}

const pct = (xs: number[], f: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(f * s.length) - 1)]!;
};
const q = (xs: number[]) =>
  `p50 ${pct(xs, 0.5).toFixed(3)}  p90 ${pct(xs, 0.9).toFixed(3)}  p99 ${pct(xs, 0.99).toFixed(3)}  max ${pct(xs, 1).toFixed(3)}`;
gcObs.disconnect();
console.log(
  `act turns: ${ACTS} acts of ${ROWS} tool poses (first act left out: cold code); load ${loadavg()[0]!.toFixed(2)}; target ≤ 0.5 ms per turn`,
);
for (const k of phases) {
  console.log(`${k.padEnd(9)} longest turn per act, ms: ${q(figures[k].turn.slice(1))}`);
  console.log(`${"".padEnd(9)}   less its GC pauses, ms: ${q(figures[k].lessGc.slice(1))}`);
}
console.log(`the body's JSON.parse, ms: ${q(named.json.slice(1))}`);
console.log(`  the turn it ran in, less GC, ms: ${q(named.jsonTurn.slice(1))}`);
console.log(`the turn that handed the act to the episode, less GC, ms: ${q(named.validate.slice(1))}`);
console.log(
  `first act (cold): parse ${figures.parse.turn[0]!.toFixed(2)} ms, planning ${figures.planning.turn[0]!.toFixed(2)} ms; GC pauses over the run: ${gcs.length}, longest ${Math.max(...gcs.map(([a, b]) => b - a)).toFixed(2)} ms`,
);
