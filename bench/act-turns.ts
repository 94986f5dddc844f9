/**
 * The longest synchronous turn of the gateway's event loop while an act of 300 tool poses is
 * received, parsed, validated, planned and its motion started (issue #10: an e-stop or a
 * contact's bytes that arrive meanwhile wait for the turn that is running; target about SLICE_MS,
 * 0.5 ms, per turn).
 *
 *   node --import tsx bench/act-turns.ts [--acts N] [--rows R] [--backend sim|rig]
 *   npm run bench -- act-turns
 *
 * A gateway (compose/testing.ts, recorder on) on a loopback port: simulated (default), or
 * `--backend rig` the real backend over rosbridge to the rig in a child process (bench/rig-child.ts,
 * as bench/stop-latency.ts), whose chunk start builds, serialises and sends a FollowJointTrajectory
 * goal of 300 points. Each act is written on a keep-alive socket by a child process (the client's
 * work is not on the gateway's loop), each in a new episode (the e-stop that ends it, START_MS
 * into the motion, ends the episode). A probe re-arms setImmediate while the act is in flight,
 * so every turn of the loop lies between two probe callbacks: the gap is the synchronous work of
 * that turn (the probe keeps the loop from sleeping, so a gap is work or the process not being
 * scheduled), printed also less the GC pauses inside it (PerformanceObserver "gc") and less the
 * main thread's run-queue waits (/proc/thread-self/schedstat: on 2 cores the goal's receiver, the
 * rig child, woken by the send, can take the gateway's CPU). Per act: the longest turn until the
 * route handed the act to the episode ("parse": socket read, JSON parse, body checks, schema
 * validation, chunk rules), the longest while it was planned (runSliced,
 * turns that ended before the backend's execute was called), and the longest from the turn that
 * called execute to START_MS later ("start": the motion's start; on the rig the goal's build,
 * JSON and send); then the body's JSON.parse, the turn it ran in, the turn that handed the act to
 * the episode, the turn that called execute and, on the rig, the turn that sent the goal.
 *
 * On a shared machine run it in its own autogroup (see bench/stop-latency.ts):
 *   setsid sh -c 'echo -15 > /proc/self/autogroup; exec nice -n -15 node --import tsx bench/act-turns.ts'
 */
import { spawn } from "node:child_process";
import { pct } from "./stats.ts";
import { openSync, readFileSync, readSync } from "node:fs";
import { loadavg } from "node:os";
import { PerformanceObserver } from "node:perf_hooks";
import { AGENT_TOKEN, testGateway } from "../compose/testing.ts";
import { startRigChild } from "./rig-child.ts";
import { minJerkToolRows } from "./tool-rows.ts";

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const ACTS = arg("--acts", 200);
const ROWS = arg("--rows", 300);
const DT_S = 0.01;
const BACKEND = process.argv.includes("--backend")
  ? process.argv[process.argv.indexOf("--backend") + 1]
  : "sim";
if (BACKEND !== "sim" && BACKEND !== "rig") throw new Error(`--backend sim|rig, not ${BACKEND}`);
/** the motion's start is measured this long, ms (as bench/stop-latency.ts's act start) */
const START_MS = 30;

const rig = BACKEND === "rig" ? await startRigChild() : undefined;
const g = await testGateway({
  robot: "fr3",
  backend: rig
    ? { type: "real", ros: { type: "rosbridge", url: rig.url }, allowMotion: true }
    : { type: "sim" },
  task: { id: "free-motion" },
  // a loaded shared machine stalls the rig child for long
  ...(rig ? { safety: { staleReadingTimeoutMs: 1000 } } : {}),
});
const url = new URL(await g.app.listen({ host: "127.0.0.1", port: 0 }));
const backend = g.gateway.bench.backend;
let motionAt = Number.NaN;
const execute = backend.execute.bind(backend);
backend.execute = (traj, opts) => {
  motionAt = performance.now();
  return execute(traj, opts);
};
// rig: when the trajectory goal went to the socket (test-harness knowledge: the real backend's
// transport, its roslib Ros, roslib's transport of the connection; looked up at each act)
let goalSentAt = Number.NaN;
const hookGoalSend = () => {
  const ros = (backend as unknown as { transport?: { ros?: { transport?: { send(m: unknown): void } } } })
    .transport?.ros;
  const socket = ros?.transport;
  if (!socket || (socket as { hooked?: boolean }).hooked) return;
  const send = socket.send.bind(socket);
  socket.send = (m: unknown) => {
    const op = m as { op?: string; action_type?: string };
    if (op.op === "send_action_goal" && op.action_type?.endsWith("FollowJointTrajectory")) {
      goalSentAt = performance.now();
    }
    send(m);
  };
  (socket as { hooked?: boolean }).hooked = true;
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

/**
 * one turn: [start, end] ms, how long the main thread waited on a run queue in it, and how long
 * the process ran on a CPU in it (all threads), ms
 */
interface Gap {
  start: number;
  end: number;
  runq: number;
  cpu: number;
}
// the main thread's run-queue wait (ns, /proc/thread-self/schedstat's second field): a turn that
// took long without work waited for a CPU (on 2 cores, e.g. for the rig child woken by the goal).
// And the process's time on a CPU (getrusage, exact to the µs; schedstat's own runtime field
// moves only at scheduler ticks, 4 ms here): on a VM whose kernel accounts steal time
// (PARAVIRT_TIME_ACCOUNTING, as here) it leaves out what the host took from the VM's CPUs, so a
// turn much longer than it lost its time to the host, to a run queue or asleep.
const schedFd = openSync("/proc/thread-self/schedstat", "r");
const schedBuf = Buffer.alloc(128);
const sched = (): [number, number] => {
  const f = schedBuf.toString("latin1", 0, readSync(schedFd, schedBuf, 0, 128, 0)).split(" ");
  const c = process.cpuUsage();
  return [(c.user + c.system) * 1000, Number(f[1])];
};
/** the machine's steal time so far, ms (/proc/stat, all CPUs; USER_HZ ticks of 10 ms) */
const stealMs = () => Number(readFileSync("/proc/stat", "latin1").split("\n")[0]!.trim().split(/\s+/)[8]) * 10;
function probe(): { stop(): Gap[] } {
  const gaps: Gap[] = [];
  let on = true;
  let last = performance.now();
  let [lastCpu, lastRunq] = sched();
  const tick = () => {
    const now = performance.now();
    const [cpu, runq] = sched();
    gaps.push({ start: last, end: now, runq: (runq - lastRunq) / 1e6, cpu: (cpu - lastCpu) / 1e6 });
    last = now;
    lastRunq = runq;
    lastCpu = cpu;
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
const acts: { gaps: Gap[]; actAt: number; bodyParse: number[]; motionAt: number; goalSentAt: number }[] = [];
const phases = ["parse", "planning", "start"] as const;
const figures = Object.fromEntries(
  phases.map((k) => [k, { turn: [] as number[], lessGc: [] as number[], work: [] as number[], cpu: [] as number[] }]),
) as Record<(typeof phases)[number], { turn: number[]; lessGc: number[]; work: number[]; cpu: number[] }>;
const steal0 = stealMs();
const wall0 = performance.now();
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
  goalSentAt = Number.NaN;
  bodyParse = [Number.NaN, Number.NaN];
  hookGoalSend();
  const answered = answers;
  const p = probe();
  const t0 = performance.now();
  agent.send(req);
  const end = t0 + 5000;
  while (Number.isNaN(motionAt) && answers === answered && performance.now() < end)
    await new Promise((r) => setTimeout(r, 1));
  if (Number.isNaN(motionAt)) throw new Error(`act ${k}: no motion (answers ${answers - answered})`);
  while (performance.now() < motionAt + START_MS) await new Promise((r) => setTimeout(r, 1));
  const gaps = p.stop().filter((x) => x.end > t0 && x.start < motionAt + START_MS);
  acts.push({ gaps, actAt, bodyParse, motionAt, goalSentAt });
  await op("POST", "/v1/admin/estop", { reason: "bench" });
  while (answers === answered) await new Promise((r) => setTimeout(r, 1));
  await op("POST", "/v1/admin/release", {});
}
const stealOver = stealMs() - steal0;
const wallOver = performance.now() - wall0;
agent.send("end");
await g.close();
await rig?.close();

// the GC entries arrive asynchronously: the turns are judged once the run is over
const turnOf = (gaps: Gap[], t: number) => gaps.find((x) => x.start <= t && t <= x.end);
const named = {
  json: [] as number[],
  jsonTurn: [] as number[],
  validate: [] as number[],
  execute: [] as number[],
  send: [] as number[],
  sendWork: [] as number[],
};
const lessGc = (x: Gap | undefined) => (x ? x.end - x.start - gcIn(x) : Number.NaN);
const lessGcRunq = (x: Gap | undefined) => (x ? Math.max(0, x.end - x.start - gcIn(x) - x.runq) : Number.NaN);
for (const { gaps, actAt, bodyParse, motionAt, goalSentAt } of acts) {
  named.json.push(bodyParse[1]! - bodyParse[0]!);
  named.jsonTurn.push(lessGc(turnOf(gaps, bodyParse[1]!)));
  named.validate.push(lessGc(turnOf(gaps, actAt)));
  named.execute.push(lessGc(turnOf(gaps, motionAt)));
  named.send.push(lessGc(turnOf(gaps, goalSentAt)));
  named.sendWork.push(lessGcRunq(turnOf(gaps, goalSentAt)));
  const longest = { parse: [0, 0, 0, 0], planning: [0, 0, 0, 0], start: [0, 0, 0, 0] };
  for (const x of gaps) {
    // the turn that handed the act to the episode, and every turn before it, is the parse's; the
    // turn that called the backend's execute, and every later one, the motion's start
    const phase = x.start <= actAt || Number.isNaN(actAt) ? "parse" : x.end < motionAt ? "planning" : "start";
    const l = longest[phase];
    const d = x.end - x.start;
    l[0] = Math.max(l[0]!, d);
    l[1] = Math.max(l[1]!, d - gcIn(x));
    l[2] = Math.max(l[2]!, lessGcRunq(x));
    l[3] = Math.max(l[3]!, x.cpu);
  }
  for (const k of phases) {
    figures[k].turn.push(longest[k][0]!);
    figures[k].lessGc.push(longest[k][1]!);
    figures[k].work.push(longest[k][2]!);
    figures[k].cpu.push(longest[k][3]!);
  }
}

const q = (xs: number[]) =>
  `p50 ${pct(xs, 50).toFixed(3)}  p90 ${pct(xs, 90).toFixed(3)}  p99 ${pct(xs, 99).toFixed(3)}  max ${pct(xs, 100).toFixed(3)}`;
gcObs.disconnect();
console.log(
  `act turns: ${ACTS} acts of ${ROWS} tool poses on the ${BACKEND === "rig" ? "real backend over rosbridge (rig child)" : "sim"} (first act left out: cold code); load ${loadavg()[0]!.toFixed(2)}; target ≤ 0.5 ms per turn`,
);
for (const k of phases) {
  console.log(`${k.padEnd(9)} longest turn per act, ms: ${q(figures[k].turn.slice(1))}`);
  console.log(`${"".padEnd(9)}   less its GC pauses, ms: ${q(figures[k].lessGc.slice(1))}`);
  console.log(`${"".padEnd(9)}   less GC and run-queue waits, ms: ${q(figures[k].work.slice(1))}`);
  console.log(`${"".padEnd(9)}   the process's time on a CPU in it (all threads, GC included, steal not), ms: ${q(figures[k].cpu.slice(1))}`);
}
console.log(`the body's JSON.parse, ms: ${q(named.json.slice(1))}`);
console.log(`  the turn it ran in, less GC, ms: ${q(named.jsonTurn.slice(1))}`);
console.log(`the turn that handed the act to the episode, less GC, ms: ${q(named.validate.slice(1))}`);
console.log(`the turn that called the backend's execute, less GC, ms: ${q(named.execute.slice(1))}`);
if (rig) {
  console.log(`the turn that sent the trajectory goal, less GC, ms: ${q(named.send.slice(1))}`);
  console.log(`  less GC and run-queue waits, ms: ${q(named.sendWork.slice(1))}`);
}
console.log(
  `steal: the host took ${stealOver.toFixed(0)} ms of CPU from this VM over the ${(wallOver / 1000).toFixed(1)} s of acts (both CPUs; /proc/stat)`,
);
console.log(
  `first act (cold): parse ${figures.parse.turn[0]!.toFixed(2)} ms, planning ${figures.planning.turn[0]!.toFixed(2)} ms; GC pauses over the run: ${gcs.length}, longest ${Math.max(...gcs.map(([a, b]) => b - a)).toFixed(2)} ms`,
);
