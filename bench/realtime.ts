/**
 * The realtime setting (issue 14), a 50 Hz agent loop over real HTTP (127.0.0.1:0), then over the
 * WebSocket /v1/stream, sending a 2 ms one-row chunk every 20 ms, each at a phase drawn evenly
 * over one control slot (seeded; it starts at the earliest step allowed), N/2 control steps each
 * (default N = 10,000 = 10 s), on two benches side by side:
 * - sim: the sim at S = 1 (stepped drive);
 * - rig: the real backend wired to the rigs (hil-tests/real-bench.ts: the rosbridge rig in a child
 *   process, paced to the wall clock; streamed drive, FollowJointTrajectory goal replacement).
 *
 *   npx tsx bench/realtime.ts [--steps 10000] [--bench sim|rig|both] [--diag] [--record]
 *                             [--agent child|inproc] [--heap [--heap-out FILE]] [--rt-priority N|off]
 *                             [--cpu-affinity LIST|last] [--load N]
 *
 * The agent runs in a process of its own (as a real agent does: its JSON, sockets and GC do not
 * share the gateway's event loop); `--agent inproc` runs it in the gateway's process, and the
 * figures then say so. Times are CLOCK_MONOTONIC (process.hrtime's clock, the same in both
 * processes): the agent stamps each chunk sent and its answer received, the gateway's process
 * stamps when each step is committed (sim: when the driver hands it to the backend; rig: the
 * wake-up that committed it).
 *
 * Prints late steps per 10,000 (sim: steps that could not start within the late tolerance of
 * their slot; rig: steps a splice's controller ran from the old queue because the new goal came
 * late; target 0 on an idle machine) and the splice latency from the chunk sent to its first
 * target committed (sim: to the sim — its margin is 0, so that is the request's handling, the
 * rest of the slot the chunk arrived in and the driver's precise wake-up; rig: the step due by
 * the wall clock, which includes the stream margin by construction), p50/p99 per transport
 * (target p99 ≤ 2 control periods over the WebSocket), and sent → answer received. On the rig
 * also: chunk sent → the controller certainly runs the new goal (the first answer about it: an
 * upper bound of the transport's latency, which the margin must cover).
 *
 * Always: the allocation in the gateway's process over the agent loops, bytes per control step
 * and scavenges per 10,000 steps (v8's GC profiler: the heap's growth between collections). With
 * --diag that includes --diag's own bookkeeping per wake-up (a few hundred bytes).
 * --record: the episode is recorded (the bench file's recorder, as a deployed gateway does).
 * --heap: the v8 sampling heap profiler over the loops (every allocation sampled, collected or
 * not), attributed by allocating function and by the nearest repository function (it slows the
 * gateway: timing figures of that run mean little).
 *
 * --cpu-affinity: the gateway's process on those CPUs (cli/scheduling.ts applyCpuAffinity, as
 * `serve --cpu-affinity` and a bench file's `scheduling.cpuAffinity` set it; `last`: the last CPU
 * this process may use) and the agent child on the others, as `run` places its agents. Set once
 * the benches are up, before the agent loops: the rig's child process (the robot's own computer)
 * and the machine reference keep every CPU. Without it the agent and the gateway share the CPUs:
 * each chunk the agent writes wakes the gateway's SCHED_FIFO loop, which may preempt the agent in
 * the middle of its own send (the "agent's serialisation and write" segment).
 *
 * --load N: N busy processes (a spin loop each, under the normal scheduler, free to use every
 * CPU) over the run, for the figures under load (issue 14: late steps "reported under load too").
 *
 * --diag also prints where late wake-ups come from: the driver's wake-up lateness (its wall
 * clock wrapped), the time each backend execute (or stepped runNow) takes and its steps, each act's synchronous
 * slice (plan, pre-check, splice) and the WebSocket message's parse + schema check, the event
 * loop's delay (perf_hooks.monitorEventLoopDelay), GC pauses by kind, and when each wake-up
 * > 20 ms late and each GC pause > 5 ms happened (ms from the bench's start); and each WebSocket
 * splice over 2 periods with its longest segment (socket transit, route, the act's slice, the
 * rest of the slot) and whether a GC pause of the gateway overlapped it.
 */
import { parseArgs } from "node:util";
import {
  allowedCpus,
  applyCpuAffinity,
  benchScheduling,
  type CpuPlacement,
  cpuAffinityArg,
  onCpus,
  rtPriorityArg,
} from "../cli/scheduling.ts";
import { parseBenchConfig } from "../compose/bench-config.ts";
import { WebSocket } from "ws";
import { startGateway } from "../compose/start.ts";
import { crossProcessReference, machineWakeReference, pct } from "./stats.ts";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RealtimeStatus } from "../gateway/episode/view.ts";
import type { Backend, RealtimeDrive } from "../seam/types.ts";
import { ActRequestSchema } from "../gateway/api/schemas.ts";
import { startRealBench } from "../hil-tests/real-bench.ts";
import { constants, monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { GCProfiler, getHeapStatistics } from "node:v8";
import { systemWallClock, type WallClock } from "../gateway/episode/realtime.ts";
import { Session } from "node:inspector/promises";
import { findSourceMap } from "node:module";

const { values } = parseArgs({
  options: {
    steps: { type: "string", default: "10000" },
    bench: { type: "string", default: "both" },
    diag: { type: "boolean", default: false },
    heap: { type: "boolean", default: false },
    /** where the agent loop runs: its own process (default; as a real agent) or the gateway's */
    agent: { type: "string", default: "child" },
    /** record the episode (the bench file's recorder, as a deployed gateway does) */
    record: { type: "boolean", default: false },
    /** internal: run only the agent against this gateway URL and print its samples */
    "agent-child": { type: "string" },
    /** --heap: also write the profile (a .heapprofile DevTools opens) */
    "heap-out": { type: "string" },
    /**
     * the gateway process's SCHED_FIFO priority (cli/scheduling.ts, as `serve` sets it for a bench
     * that asks: the example real benches' 50), or "off" (the normal scheduler); the agent child
     * and the rig run under the normal scheduler
     */
    "rt-priority": { type: "string", default: "50" },
    /** the gateway's CPUs (a CPU list, or `last`); the agent child runs on the others */
    "cpu-affinity": { type: "string" },
    /** N busy processes (normal scheduler, every CPU) over the run: the figures under load */
    load: { type: "string", default: "0" },
  },
});
const steps = Number(values.steps);

/**
 * --diag: where late wake-ups come from — the driver's wake-up lateness (clock wrapped), the time
 * each backend execute takes, the event loop's delay (perf_hooks) and GC pauses over the run.
 */
class Diag {
  readonly wakeLateMs: number[] = [];
  /** of them, the precise sleeps' (to a splice's first step) */
  readonly preciseLateMs: number[] = [];
  /** wall ms of each wake-up more than 20 ms late, and by how much */
  readonly stalls: { atMs: number; lateMs: number; sleptMs: number; cpuMs: number }[] = [];
  readonly t0 = performance.now();
  readonly execMs: number[] = [];
  readonly execSteps: number[] = [];
  /** each act's synchronous slice (plan, pre-check, splice; up to its first await): wall ms and process CPU ms */
  readonly actSyncMs: number[] = [];
  readonly actSyncCpuMs: number[] = [];
  /** when each act began and its synchronous slice ended, CLOCK_MONOTONIC ms (in order: the agent sends one at a time) */
  readonly actEnterMs: number[] = [];
  readonly actExitMs: number[] = [];
  /** the last bytes that arrived on any of the gateway's sockets before each act began, CLOCK_MONOTONIC ms */
  readonly actDataMs: number[] = [];
  lastDataMs = Number.NaN;
  /** the WebSocket splices' latency split: sent → act begins, the act's slice, slice end → committed */
  readonly splitLines: string[] = [];
  /** parse + validate of the WebSocket act message, µs per chunk (measured after the run) */
  parseUs = Number.NaN;
  /** CPU µs (all threads) of each execute */
  readonly execCpuUs: number[] = [];
  private readonly eld = monitorEventLoopDelay({ resolution: 1 });
  readonly gc: { kind: number; ms: number; atMs: number }[] = [];
  private readonly obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0;
      this.gc.push({ kind, ms: e.duration, atMs: e.startTime - this.t0 });
    }
  });
  readonly clock: WallClock = {
    now: systemWallClock.now,
    sleepUntil: async (tS, signal, precise, wakeup) => {
      const w0 = performance.now();
      const c0 = process.cpuUsage();
      await systemWallClock.sleepUntil(tS, signal, precise, wakeup);
      const late = performance.now() - tS * 1000;
      this.wakeLateMs.push(late);
      if (precise && !signal.aborted) this.preciseLateMs.push(late);
      if (late > 20) {
        const c = process.cpuUsage(c0);
        this.stalls.push({
          atMs: tS * 1000 - this.t0,
          lateMs: late,
          sleptMs: performance.now() - w0,
          cpuMs: (c.user + c.system) / 1000,
        });
      }
    },
  };
  start(): void {
    this.eld.enable();
    this.obs.observe({ entryTypes: ["gc"] });
  }
  private cpuPerStep(from: number, to: number): string {
    const cpu = this.execCpuUs.slice(from, to).reduce((a, b) => a + b, 0);
    const n = this.execSteps.slice(from, to).reduce((a, b) => a + b, 0);
    return n > 0 ? (cpu / n).toFixed(0) : "-";
  }
  lines(tag: string): string[] {
    this.eld.disable();
    this.obs.disconnect();
    const f = (xs: number[]) =>
      `p50 ${pct(xs, 50).toFixed(3)} p99 ${pct(xs, 99).toFixed(3)} max ${Math.max(...xs).toFixed(3)} ms`;
    const over = (xs: number[], ms: number) => xs.filter((x) => x > ms).length;
    const e = this.eld;
    const byKind = new Map<number, number[]>();
    for (const g of this.gc) byKind.set(g.kind, [...(byKind.get(g.kind) ?? []), g.ms]);
    const names: Record<number, string> = {
      [constants.NODE_PERFORMANCE_GC_MINOR]: "minor",
      [constants.NODE_PERFORMANCE_GC_MAJOR]: "major",
      [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: "incremental",
      [constants.NODE_PERFORMANCE_GC_WEAKCB]: "weakcb",
    };
    return [
      `[${tag}] diag: wake-up lateness (${this.wakeLateMs.length} wakes) ${f(this.wakeLateMs)}; ` +
        `> 2 ms ${over(this.wakeLateMs, 2)}, > 5 ms ${over(this.wakeLateMs, 5)}, > 20 ms ${over(this.wakeLateMs, 20)}`,
      `[${tag}] diag: of them precise (a splice's first step; ${this.preciseLateMs.length}) ${f(this.preciseLateMs)}`,
      `[${tag}] diag: the first 10 wake-ups' lateness, ms: ${this.wakeLateMs
        .slice(0, 10)
        .map((x) => x.toFixed(2))
        .join(" ")}`,
      `[${tag}] diag: execute per wake (${this.execMs.length}) ${f(this.execMs)}; steps per wake ` +
        `p50 ${pct(this.execSteps, 50)} p99 ${pct(this.execSteps, 99)} max ${Math.max(...this.execSteps)}`,
      `[${tag}] diag: execute CPU per step (all threads): wakes 1–10 ${this.cpuPerStep(0, 10)}, 11–100 ` +
        `${this.cpuPerStep(10, 100)}, 101–1000 ${this.cpuPerStep(100, 1000)}, the rest ${this.cpuPerStep(1000, Infinity)} µs`,
      `[${tag}] diag: act's synchronous slice (plan, pre-check, splice; ${this.actSyncMs.length} chunks): wall ${f(this.actSyncMs)}; ` +
        `process CPU p50 ${pct(this.actSyncCpuMs, 50).toFixed(3)} p99 ${pct(this.actSyncCpuMs, 99).toFixed(3)} ms; ` +
        `the WebSocket message's JSON.parse + schema check ${this.parseUs.toFixed(1)} µs per chunk`,
      `[${tag}] diag: event-loop delay p50 ${(e.percentile(50) / 1e6).toFixed(2)} p99 ${(e.percentile(99) / 1e6).toFixed(2)} ` +
        `max ${(e.max / 1e6).toFixed(2)} ms`,
      ...[...byKind].map(
        ([k, xs]) =>
          `[${tag}] diag: GC ${names[k] ?? k}: ${xs.length}, total ${xs.reduce((a, b) => a + b, 0).toFixed(1)} ms, ${f(xs)}`,
      ),
      `[${tag}] diag: wake-ups > 20 ms late: ${this.stalls.length}, the process's CPU time (all threads) over their sleeps ` +
        `${this.stalls.reduce((a, s) => a + s.cpuMs, 0).toFixed(1)} ms of ${this.stalls.reduce((a, s) => a + s.sleptMs, 0).toFixed(1)} ms ` +
        "(near the sleeps' length: the process was busy; far below: it was off the CPU)",
      `[${tag}] diag: wake-ups > 20 ms late (at ms: late ms): ` +
        this.stalls.map((s) => `${s.atMs.toFixed(0)}: ${s.lateMs.toFixed(1)}`).join(", "),
      `[${tag}] diag: GC pauses > 5 ms (at ms: ms): ` +
        this.gc
          .filter((g) => g.ms > 5)
          .map((g) => `${g.atMs.toFixed(0)}: ${g.ms.toFixed(1)}`)
          .join(", "),
    ];
  }
}

/**
 * --heap: the v8 sampling heap profiler over the agent loops (every sampled allocation, collected
 * or not), attributed by the allocating function and by the nearest repository file on its stack.
 */
class HeapSampler {
  private readonly session = new Session();
  async start(): Promise<void> {
    this.session.connect();
    await this.session.post("HeapProfiler.startSampling", {
      samplingInterval: 256,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
  }
  async lines(tag: string, stepsRun: number): Promise<string[]> {
    const { profile } = (await this.session.post("HeapProfiler.getSamplingProfile")) as unknown as {
      profile: { head: HeapNode };
    };
    await this.session.post("HeapProfiler.stopSampling");
    if (values["heap-out"]) writeFileSync(values["heap-out"], JSON.stringify(profile));
    this.session.disconnect();
    const root = `${process.cwd()}/`;
    const short = (url: string) => url.replace(/^file:\/\//, "").replace(root, "");
    // tsx's generated positions, mapped back to the source's lines where it has a map
    const where = (cf: HeapNode["callFrame"]) => {
      const url = short(cf.url);
      if (!cf.url.startsWith("file://")) return `${url}:${cf.lineNumber + 1}`;
      const e = findSourceMap(cf.url.replace(/^file:\/\//, ""))?.findEntry(cf.lineNumber, cf.columnNumber);
      return e && "originalLine" in e
        ? `${url}:${e.originalLine + 1}`
        : `${url}:${cf.lineNumber + 1}:${cf.columnNumber}`;
    };
    const bySelf = new Map<string, number>();
    const byFile = new Map<string, number>();
    let total = 0;
    const walk = (n: HeapNode, owner: string) => {
      const cf = n.callFrame;
      const url = short(cf.url);
      const mine = url !== "" && !url.startsWith("node:") && !url.includes("node_modules/");
      const o = mine ? `${url}:${cf.functionName || "(anonymous)"}` : owner;
      if (n.selfSize > 0) {
        total += n.selfSize;
        const self = `${cf.functionName || "(anonymous)"} ${where(cf)}`;
        bySelf.set(self, (bySelf.get(self) ?? 0) + n.selfSize);
        byFile.set(o, (byFile.get(o) ?? 0) + n.selfSize);
      }
      for (const c of n.children) walk(c, o);
    };
    walk(profile.head, "(no repository frame)");
    const per = (b: number) => `${(b / stepsRun).toFixed(0)} B/step`;
    const top = (m: Map<string, number>, n: number) =>
      [...m]
        .sort((a, b) => b[1] - a[1])
        .slice(0, n)
        .map(([k, b]) => `[${tag}] heap:   ${per(b).padStart(12)}  ${k}`);
    return [
      `[${tag}] heap: sampled allocation over the agent loops ${(total / 1e6).toFixed(1)} MB, ${stepsRun} steps: ${per(total)}`,
      `[${tag}] heap: by allocating function (self):`,
      ...top(bySelf, 30),
      `[${tag}] heap: by the nearest repository function on the stack:`,
      ...top(byFile, 30),
    ];
  }
}
interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  selfSize: number;
  children: HeapNode[];
}

interface Res {
  /** sent → first target committed, ms */
  latMs: number[];
  /** WebSocket: written to the socket → first target committed, ms (the gateway's part) */
  fromWriteMs: number[];
  /** WebSocket: sent → written, ms (the agent's serialisation and write) */
  writeMs: number[];
  /** sent → answer received, ms */
  answerMs: number[];
  refused: number;
  switchMs: number[];
}

interface Row {
  bench: string;
  diag?: string[];
  /** the episode ended before the steps were run (why) */
  ended?: string;
  st: RealtimeStatus;
  periodS: number;
  http: Res;
  ws: Res;
}

async function runBench(name: "sim" | "rig"): Promise<Row> {
  // the stale-reading limit of the rig realtime suite (1.5 s): the rig simulates the arm on the same
  // shared machine and its joint-state stream can pause longer than franka_ros2's at 1 kHz
  const rb =
    name === "rig"
      ? await startRealBench({ seed: 1, safety: { staleReadingTimeoutMs: 1500 }, startTimeoutS: 180 })
      : undefined;
  const diag = values.diag ? new Diag() : undefined;
  const config = parseBenchConfig(
    rb
      ? { version: 1, ...rb.bench, recordsDir: mkdtempSync(join(tmpdir(), "rt-bench-")) }
      : { version: 1, name: "rt-bench", backend: { type: "sim" }, task: { id: "free-motion", seed: 1 } },
    "bench",
  );
  const stamps = new CommitStamps(diag?.clock ?? systemWallClock);
  const streamed = name === "rig";
  const g = await startGateway({
    config,
    agentToken: "rt-agent",
    operatorToken: "rt-op",
    observers: values.record ? undefined : null,
    realtime: {
      ...(rb ? { commandGapS: 5 } : { slowdown: 1 }),
      ...(streamed ? { clock: stamps.clock } : diag ? { clock: diag.clock } : {}),
    },
    firstEpisode: { task: "free-motion", setting: "realtime", seed: 1 },
    listen: { host: "127.0.0.1", port: 0 },
  });
  const ep = g.gateway.requireEpisode();
  stamps.episode = ep;
  // rig: the controller's first answer about each streamed replacement (backend s = performance.now()/1000)
  const switches: { calledMs: number; switchedByS?: number }[] = [];
  const backend = g.bench.backend;
  const drive = backend.realtimeDrive?.();
  if (drive?.kind === "streamed") {
    const motion = drive.motion;
    const replace = motion.replace.bind(motion);
    backend.realtimeDrive = () => ({
      kind: "streamed",
      motion: {
        leadS: motion.leadS,
        follow: (o) => motion.follow(o),
        replace: (traj, startS, before) => {
          const rec: { calledMs: number; switchedByS?: number } = { calledMs: monoMs() };
          switches.push(rec);
          const p = replace(traj, startS, before);
          p.then((s) => (rec.switchedByS = s.switchedByS)).catch(() => {});
          return p;
        },
      },
    });
  }
  if (!streamed) stamps.wrapExecute(backend);
  if (diag) {
    const execute = backend.execute.bind(backend);
    const timed = (t: number, c0: NodeJS.CpuUsage, count: number) => {
      diag.execMs.push(performance.now() - t);
      const c = process.cpuUsage(c0);
      diag.execCpuUs.push(c.user + c.system);
      diag.execSteps.push(count);
    };
    backend.execute = async (traj, opts) => {
      const t = performance.now();
      const c0 = process.cpuUsage();
      const res = await execute(traj, opts);
      timed(t, c0, traj.count);
      return res;
    };
    wrapRunNow(backend, (run) => (traj, opts) => {
      const t = performance.now();
      const c0 = process.cpuUsage();
      const res = run(traj, opts);
      timed(t, c0, traj.count);
      return res;
    });
    // the arrival of bytes on the gateway's sockets (before the HTTP parser or ws sees them)
    g.app.server.on("connection", (sock: import("node:net").Socket) =>
      sock.prependListener("data", () => {
        diag.lastDataMs = monoMs();
      }),
    );
    const act = ep.act.bind(ep);
    ep.act = (req) => {
      const t = performance.now();
      const c0 = process.cpuUsage();
      const p = act(req);
      const t1 = performance.now();
      diag.actEnterMs.push(t + monoOffsetMs);
      diag.actDataMs.push(diag.lastDataMs);
      diag.actExitMs.push(t1 + monoOffsetMs);
      diag.actSyncMs.push(t1 - t);
      const c = process.cpuUsage(c0);
      diag.actSyncCpuMs.push((c.user + c.system) / 1000);
      return p;
    };
    diag.start();
  }
  const base = g.url!;
  const periodS = backend.describe().controlPeriodS;
  const heap = values.heap ? new HeapSampler() : undefined;
  const step0 = ep.realtimeCommitted;
  const gc = new GcCount();
  await heap?.start();
  // the gateway onto its CPUs once the benches are up (the rig's child keeps every CPU)
  if (CPUS && !placed) placed = applyCpuAffinity(CPUS);
  const agent = values.agent === "inproc" ? await agentLoops(base, steps) : await agentInChild(base, steps);
  const stepsRun = ep.realtimeCommitted - step0;
  const gcLine = gc.line(name, stepsRun);
  const heapLines = await heap?.lines(name, stepsRun);
  // each accepted chunk's streamed replacement: the first one made after it was sent (the agent
  // sends one chunk at a time)
  let k = 0;
  const toRes = (xs: Sample[]): Res => {
    const r: Res = { latMs: [], fromWriteMs: [], writeMs: [], answerMs: [], refused: 0, switchMs: [] };
    for (const x of xs) {
      r.answerMs.push(x.answeredMs - x.sentMs);
      if (x.startStep === undefined) {
        r.refused++;
        continue;
      }
      const c = stamps.committedAt(x.startStep);
      if (c !== undefined) r.latMs.push(c - x.sentMs);
      if (x.writtenMs !== undefined) {
        r.writeMs.push(x.writtenMs - x.sentMs);
        if (c !== undefined) r.fromWriteMs.push(c - x.writtenMs);
      }
      while (k < switches.length && switches[k]!.calledMs < x.sentMs) k++;
      const rec = switches[k];
      if (rec && rec.calledMs <= x.answeredMs) {
        k++;
        if (rec.switchedByS !== undefined) r.switchMs.push(rec.switchedByS * 1000 + monoOffsetMs - x.sentMs);
      }
    }
    return r;
  };
  const http = toRes(agent.http);
  const wsRes = toRes(agent.ws);
  if (diag) {
    diag.parseUs = parseCostUs();
    // acts in the order sent: the HTTP chunks, then the WebSocket ones
    const all = [...agent.http, ...agent.ws];
    const seg = {
      write: [] as number[],
      socket: [] as number[],
      route: [] as number[],
      slice: [] as number[],
      toCommit: [] as number[],
      /** the splices over 2 periods, described */
      over: [] as string[],
      overGc: 0,
    };
    for (let i = agent.http.length; i < all.length; i++) {
      const x = all[i]!;
      const enter = diag.actEnterMs[i];
      const exit = diag.actExitMs[i];
      const c = x.startStep === undefined ? undefined : stamps.committedAt(x.startStep);
      if (enter === undefined || exit === undefined || c === undefined) continue;
      const data = diag.actDataMs[i]!;
      const written = x.writtenMs ?? x.sentMs;
      seg.write.push(written - x.sentMs);
      seg.socket.push(data - written);
      seg.route.push(enter - data);
      seg.slice.push(exit - enter);
      seg.toCommit.push(c - exit);
      // a splice over 2 periods: which segment took the time, and did a GC pause of the
      // gateway's overlap it (the tails' usual suspects: GC, socket transit, the wake-up)
      const total = c - x.sentMs;
      if (total > 2 * periodS * 1000) {
        const a = x.sentMs - monoOffsetMs - diag.t0;
        const b = c - monoOffsetMs - diag.t0;
        const gcMs = diag.gc.filter((e) => e.atMs < b && e.atMs + e.ms > a).reduce((m, e) => m + e.ms, 0);
        const parts = [written - x.sentMs, data - written, enter - data, exit - enter, c - exit];
        const names = ["agent's write", "socket", "route", "slice", "to commit"];
        const worst = parts.indexOf(Math.max(...parts));
        seg.over.push(
          `${total.toFixed(2)} ms (${names[worst]} ${parts[worst]!.toFixed(2)}${gcMs > 0 ? `, GC ${gcMs.toFixed(2)}` : ""})`,
        );
        if (gcMs > 0) seg.overGc++;
      }
    }
    const q = (xs: number[]) =>
      `p50 ${pct(xs, 50).toFixed(2)} p99 ${pct(xs, 99).toFixed(2)} max ${Math.max(...xs).toFixed(2)}`;
    diag.splitLines.push(
      `[${name}] diag: WebSocket splice latency split (${seg.route.length}), ms: sent → written (the agent's serialisation and write) ${q(seg.write)}; ` +
        `written → bytes at the gateway's socket ${q(seg.socket)}; ` +
        `→ act begins (ws, parse, schema) ${q(seg.route)}; ` +
        `the act's slice ${q(seg.slice)}; slice end → committed (rest of the slot + wake-up) ${q(seg.toCommit)}`,
      `[${name}] diag: WebSocket splices over 2 periods: ${seg.over.length} of ${seg.route.length}, ${seg.overGc} with a GC pause of the gateway inside; ` +
        `each (its longest segment): ${seg.over.join("; ")}`,
    );
  }
  const st = ep.realtimeStatus()!;
  const diagLines = [gcLine, ...(diag?.lines(name) ?? []), ...(diag?.splitLines ?? []), ...(heapLines ?? [])];
  const ended = ep.isEnded ? `${ep.endReason}: ${ep.endDetail ?? ""}` : undefined;
  await fetch(`${base}/v1/finish`, { method: "POST", headers: AGENT_HEADERS, body: "{}" });
  await g.close();
  await rb?.close();
  return {
    bench: name,
    st,
    periodS,
    http,
    ws: wsRes,
    ...(ended ? { ended } : {}),
    diag: diagLines,
  };
}

/** The WebSocket route's parse and schema check of the bench's act message, µs each (warm). */
function parseCostUs(): number {
  const msg = JSON.stringify({
    type: "act",
    action_type: "joint_position",
    dt: 0.002,
    rows: [[0, 0, 0, -2, 0, 2, 0.8, 0.04]],
  });
  const once = () => {
    const { type: _t, action_type, ...body } = JSON.parse(msg) as Record<string, unknown>;
    if (!ActRequestSchema.safeParse({ ...body, type: action_type }).success) throw new Error("bad message");
  };
  for (let i = 0; i < 2000; i++) once();
  const n = 5000;
  const t = performance.now();
  for (let i = 0; i < n; i++) once();
  return ((performance.now() - t) / n) * 1000;
}

/** CLOCK_MONOTONIC in ms (process.hrtime's clock: the same in every process) = performance.now() + this */
const monoOffsetMs = Number(process.hrtime.bigint()) / 1e6 - performance.now();
const monoMs = () => performance.now() + monoOffsetMs;

/** one control slot of the benches here (1 ms control period, S = 1), ms: the agent's send phases span it */
const SLOT_MS = 1;

const AGENT_HEADERS = { authorization: "Bearer rt-agent", "content-type": "application/json" };

/** One chunk the agent sent: when (CLOCK_MONOTONIC ms), when its answer came, its start step (absent: refused). */
interface Sample {
  sentMs: number;
  /** WebSocket: when ws.send() returned, the frame written to the socket (the agent's own
   * serialisation and write lie between sentMs and this) */
  writtenMs?: number;
  answeredMs: number;
  startStep?: number;
}

/** When each step was committed, on CLOCK_MONOTONIC (typed arrays: no allocation per wake-up). */
type RunNow = NonNullable<Extract<RealtimeDrive, { kind: "stepped" }>["runNow"]>;

/** Wrap a stepped backend's runNow (the episode asks for the drive when its realtime loop starts). */
function wrapRunNow(backend: Backend, wrap: (run: RunNow) => RunNow): void {
  const drive = backend.realtimeDrive?.bind(backend);
  if (!drive) return;
  backend.realtimeDrive = () => {
    const d = drive();
    return d.kind === "stepped" && d.runNow ? { kind: "stepped", runNow: wrap(d.runNow) } : d;
  };
}

class CommitStamps {
  episode: { readonly realtimeCommitted: number } | undefined;
  private atMs = new Float64Array(1 << 16);
  private upTo = new Float64Array(1 << 16);
  private n = 0;
  private wokeMs = Number.NaN;
  /**
   * Streamed drive (a wake-up hands nothing to the backend): the driver's clock wrapped, each
   * wake-up's time kept and, at the next sleep (that wake-up's steps taken), the count reached.
   */
  readonly clock: WallClock;
  constructor(inner: WallClock) {
    this.clock = {
      now: inner.now,
      sleepUntil: async (tS, signal, precise, wakeup) => {
        if (!Number.isNaN(this.wokeMs) && this.episode)
          this.push(this.wokeMs, this.episode.realtimeCommitted);
        await inner.sleepUntil(tS, signal, precise, wakeup);
        this.wokeMs = monoMs();
      },
    };
  }
  /**
   * Stepped drive: the backend's execute wrapped (no promise of its own: nothing allocated per
   * wake-up in the gateway's heap); the steps are committed when the driver hands them over.
   */
  wrapExecute(backend: Backend): void {
    const execute = backend.execute.bind(backend);
    backend.execute = (traj, opts) => {
      if (this.episode) this.push(monoMs(), this.episode.realtimeCommitted);
      return execute(traj, opts);
    };
    // and the drive's synchronous runNow, the driver's path when the backend has one
    wrapRunNow(backend, (run) => (traj, opts) => {
      if (this.episode) this.push(monoMs(), this.episode.realtimeCommitted);
      return run(traj, opts);
    });
  }
  push(atMs: number, upTo: number): void {
    if (this.n === this.atMs.length) {
      const grow = (a: Float64Array) => {
        const b = new Float64Array(a.length * 2);
        b.set(a);
        return b;
      };
      this.atMs = grow(this.atMs);
      this.upTo = grow(this.upTo);
    }
    this.atMs[this.n] = atMs;
    this.upTo[this.n] = upTo;
    this.n++;
  }
  /** when step `s` was committed (the first wake-up whose steps reached past it), mono ms */
  committedAt(s: number): number | undefined {
    let lo = 0;
    let hi = this.n;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.upTo[mid]! > s) hi = mid;
      else lo = mid + 1;
    }
    return lo < this.n ? this.atMs[lo] : undefined;
  }
}

/**
 * Allocation and scavenges in this (the gateway's) process over the agent loops, from v8's GC
 * profiler: bytes allocated = the heap's growth between collections plus what each collected.
 */
class GcCount {
  private readonly p = new GCProfiler();
  private readonly used0 = getHeapStatistics().used_heap_size;
  constructor() {
    this.p.start();
  }
  line(tag: string, stepsRun: number): string {
    const used1 = getHeapStatistics().used_heap_size;
    const stats = this.p.stop()?.statistics ?? [];
    let allocated = 0;
    let prev = this.used0;
    let scavenges = 0;
    let promoted = 0;
    let others = 0;
    for (const s of stats) {
      allocated += Math.max(0, s.beforeGC.heapStatistics.usedHeapSize - prev);
      prev = s.afterGC.heapStatistics.usedHeapSize;
      if (s.gcType === "Scavenge") {
        scavenges++;
        const old = (x: typeof s.beforeGC) =>
          x.heapSpaceStatistics.find((h) => h.spaceName === "old_space")?.spaceUsedSize ?? 0;
        promoted += old(s.afterGC) - old(s.beforeGC);
      } else others++;
    }
    allocated += Math.max(0, used1 - prev);
    const per10k = (x: number) => ((x / Math.max(1, stepsRun)) * 10_000).toFixed(1);
    return (
      `[${tag}] allocation in the gateway's process over the agent loops (${stepsRun} steps): ` +
      `${(allocated / Math.max(1, stepsRun)).toFixed(0)} B per control step; scavenges ${per10k(scavenges)} per 10,000 steps ` +
      `(promoted ${(promoted / Math.max(1, scavenges) / 1024).toFixed(0)} KB each), other GCs ${per10k(others)} per 10,000`
    );
  }
}

/**
 * The agent: a 50 Hz loop over HTTP, then over the WebSocket, a 2 ms one-row chunk every 20 ms
 * (the queue is empty when the next is sent: it starts at the earliest step allowed, the latency
 * of a replacement rather than of an append), until the chunks start at `steps / 2` and `steps`.
 */
async function agentLoops(base: string, steps: number): Promise<{ http: Sample[]; ws: Sample[] }> {
  const first = (await (
    await fetch(`${base}/v1/observe`, {
      method: "POST",
      headers: AGENT_HEADERS,
      body: JSON.stringify({ advance_s: 0, cameras: [] }),
    })
  ).json()) as { readings: { q: number[]; gripper_width_m: number }[] };
  const r0 = first.readings[0]!;
  const row = [...r0.q, r0.gripper_width_m];

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
  /** the last WebSocket send's return (the frame written) */
  let writtenMs: number | undefined;
  const overHttp: Sender = async () => {
    const res = await fetch(`${base}/v1/act`, {
      method: "POST",
      headers: AGENT_HEADERS,
      body: JSON.stringify({ type: "joint_position", dt: 0.002, rows: [row] }),
    });
    const body = (await res.json()) as { start_step: number };
    return res.status === 200 ? body.start_step : undefined;
  };
  const overWs: Sender = () =>
    new Promise((resolve) => {
      answers.push((m) => resolve(m.type === "act_result" ? m.start_step : undefined));
      ws.send(JSON.stringify({ type: "act", action_type: "joint_position", dt: 0.002, rows: [row] }));
      writtenMs = monoMs();
    });
  // Each chunk goes out 20 ms after the last plus a phase drawn evenly over one control slot
  // (1 ms at S = 1): the splice latency includes the rest of the slot the chunk lands in, and a
  // fixed cadence would sample one phase of the agent's timer against the bench's slot grid per
  // run (the timer fires on whole milliseconds), so p50 and p99 would move with that phase from
  // run to run. Seeded: the same phases every run. The send time is met by a spin after a timer
  // (the agent's own process and CPU).
  let seed = 0x2545f491;
  const phaseMs = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return (seed / 2 ** 32) * SLOT_MS;
  };
  async function loop(send: Sender, until: number): Promise<Sample[]> {
    const out: Sample[] = [];
    const w0 = performance.now();
    for (let i = 0; ; i++) {
      writtenMs = undefined;
      const sentMs = monoMs();
      const s = await send();
      out.push({
        sentMs,
        ...(writtenMs !== undefined ? { writtenMs } : {}),
        answeredMs: monoMs(),
        ...(s !== undefined ? { startStep: s } : {}),
      });
      // a refused chunk (the episode ended) ends the loop too
      if (s === undefined || s >= until) break;
      const at = w0 + (i + 1) * 20 + phaseMs();
      const wait = at - performance.now() - 2;
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      while (performance.now() < at) {}
    }
    return out;
  }
  const http = await loop(overHttp, steps / 2);
  const wsRes = await loop(overWs, steps);
  ws.close();
  return { http, ws: wsRes };
}

/** The agent in a process of its own (as a real agent runs): its samples come back on stdout as JSON. */
async function agentInChild(base: string, steps: number): Promise<{ http: Sample[]; ws: Sample[] }> {
  // on the CPUs the gateway's affinity left, as `run` places its agents
  const argv = onCpus(placed?.others, [
    process.execPath,
    "--import",
    "tsx",
    fileURLToPath(import.meta.url),
    "--agent-child",
    base,
    "--steps",
    String(steps),
  ]);
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  // "close", not "exit": the process can exit before its stdout's last bytes reach us (a long
  // run's samples line was cut at 256 KB)
  const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
  const line = out.split("\n").find((l) => l.startsWith("SAMPLES "));
  if (code !== 0 || !line) throw new Error(`the agent process failed (exit ${code}): ${out.slice(0, 500)}`);
  return JSON.parse(line.slice("SAMPLES ".length)) as { http: Sample[]; ws: Sample[] };
}

if (values["agent-child"]) {
  const res = await agentLoops(values["agent-child"], steps);
  // exit once the line is written: process.exit() right after write() cut a long run's line
  process.stdout.write(`SAMPLES ${JSON.stringify(res)}\n`, () => process.exit(0));
  // and nothing of the bench below runs meanwhile: a long run's line is written asynchronously,
  // and the machine reference started below outlived this process (a cyclictest left running)
  await new Promise<never>(() => {});
}

const RT = rtPriorityArg(values["rt-priority"]!);
console.log(`scheduling: ${await benchScheduling(RT)}`);
/** --cpu-affinity: the gateway's CPUs (applied once the benches are up), and the placement set */
const CPUS = (() => {
  const v = values["cpu-affinity"];
  if (v === undefined) return undefined;
  if (values.agent === "inproc") {
    console.log("--cpu-affinity places the agent's own process: it needs --agent child");
    process.exit(2);
  }
  if (v !== "last") {
    const c = cpuAffinityArg(v);
    return c === "off" ? undefined : c;
  }
  const all = allowedCpus();
  if (all.length < 2) {
    console.log(
      `--cpu-affinity last: this process may use one CPU (${all[0]}); nothing is left for the agent`,
    );
    process.exit(0);
  }
  return [all.at(-1)!];
})();
let placed: CpuPlacement | undefined;

// the rig first: its child process starts on a quieter machine than after the sim's 10 s of physics
const which =
  values.bench === "both" ? (["rig", "sim"] as const) : ([values.bench as "sim" | "rig"] as const);
const AGENT_WHERE =
  values.agent === "inproc"
    ? "agent IN the gateway's process: its work and GC share the loop"
    : "agent in its own process";
const rows: Row[] = [];
// the machine's cost of one message between processes, measured first (nothing else runs yet)
const crossLine = await crossProcessReference();
// the machine's own wake-up latency over the run: the reference beside the figures
const machine = machineWakeReference();
// --load: busy processes started before any affinity is set (they may use every CPU), as other
// work on a lab's robot PC does (a compiler, a browser, the agent's own tools)
const LOAD = Number(values.load);
const loaders = Array.from({ length: LOAD }, () =>
  spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }),
);
try {
  for (const b of which) rows.push(await runBench(b));
} finally {
  for (const l of loaders) l.kill("SIGKILL");
}
const machineLine = machine
  ? await machine.stop()
  : "machine reference: unavailable (cyclictest: apt-get install rt-tests)";

console.log(
  "reference (issue 14 targets): 0 late steps per 10,000 on an idle machine; splice p99 ≤ 2 periods (WebSocket)",
);
console.log(machineLine);
console.log(crossLine);
console.log(
  LOAD > 0
    ? `load: ${LOAD} busy process(es) (a spin loop each, normal scheduler, every CPU) over the run`
    : "load: none (an idle machine)",
);
console.log(
  `CPU affinity: ${placed ? placed.summary : "none (the gateway and the agent share every CPU; --cpu-affinity sets one)"}`,
);
for (const { bench, st, periodS, http, ws, ended, diag } of rows) {
  if (ended) console.log(`[${bench}] the episode ended early (${ended})`);
  const per10k =
    (st.late_steps / Math.max(1, st.committed_step + (bench === "sim" ? st.late_steps : 0))) * 10_000;
  console.log(
    `[${bench}] S = ${st.slowdown}, control period ${periodS * 1000} ms, ${st.committed_step} steps committed; ` +
      `late steps: ${st.late_steps} (${per10k.toFixed(1)} per 10,000, ${st.late_splices} late splices), ` +
      `stood still ${st.stood_still_s.toFixed(3)} s, ${st.hold_steps} hold steps`,
  );
  const per = periodS * 1000;
  for (const [name, r] of [
    ["HTTP", http],
    ["WebSocket", ws],
  ] as const) {
    const p50 = pct(r.latMs, 50);
    const p99 = pct(r.latMs, 99);
    console.log(
      `[${bench}] splice latency over ${name}, sent → first target committed (${r.latMs.length} chunks, ${r.refused} refused; ${AGENT_WHERE}): ` +
        `p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms (${(p50 / per).toFixed(1)} / ${(p99 / per).toFixed(1)} periods); ` +
        `sent → answer received p50 ${pct(r.answerMs, 50).toFixed(2)} p99 ${pct(r.answerMs, 99).toFixed(2)} ms`,
    );
    if (r.fromWriteMs.length > 0) {
      const w50 = pct(r.fromWriteMs, 50);
      const w99 = pct(r.fromWriteMs, 99);
      console.log(
        `[${bench}]   written to the socket → first target committed (the gateway's part; the agent's serialisation and write before it: ` +
          `p50 ${pct(r.writeMs, 50).toFixed(2)} p99 ${pct(r.writeMs, 99).toFixed(2)} ms): ` +
          `p50 ${w50.toFixed(2)} ms, p99 ${w99.toFixed(2)} ms (${(w50 / per).toFixed(1)} / ${(w99 / per).toFixed(1)} periods)`,
      );
    }
    if (r.switchMs.length > 0) {
      const s50 = pct(r.switchMs, 50);
      const s99 = pct(r.switchMs, 99);
      console.log(
        `[${bench}]   sent → controller runs the new goal (first answer, upper bound; ${r.switchMs.length}): ` +
          `p50 ${s50.toFixed(2)} ms, p99 ${s99.toFixed(2)} ms (${(s50 / per).toFixed(1)} / ${(s99 / per).toFixed(1)} periods)`,
      );
    }
  }
  for (const l of diag ?? []) console.log(l);
}
