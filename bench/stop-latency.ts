/**
 * Stop latency per stop source, through the gateway's public path: event → the backend's
 * `stop()` being called (a spy on the composed backend's `stop`), p50 / p99, printed beside the
 * control period (1 ms); target p99 ≤ 2 ms (issue #10, "every stop source stops at once").
 *
 *   npx tsx bench/stop-latency.ts [--samples N] [--only contact-buzzbox,estop,...] [--slow-ms X] [--signal-warm] [--pool-probe] [--rt-priority N|off]
 *   npm run bench -- stop-latency
 *
 * Every gateway is built by compose/testing.ts `testGateway` (the composition serve uses), with
 * the free-motion task and the recorder on, and served on a loopback port: the agent's acts and
 * the operator's e-stops come over real sockets from a client child process (this file,
 * `--client-child`), so what the gateway does on a socket read is measured and the client's work
 * is not on the gateway's event loop; the child stamps each request's write on CLOCK_MONOTONIC
 * (process.hrtime), the parent maps it onto performance.now(). While a 3 s chunk runs (POST
 * /v1/act, joint_position rows holding the pose), one stop source fires:
 * - contact-buzzbox: a real gateway (RealBackend: arm over the rosbridge rig, which serves a
 *   MirrorBackend under franka_ros2's names in a child process — bench/rig-child.ts —, as
 *   a robot runs on its own computer: the rig's pacing and JSON work do not share the gateway's
 *   event loop) whose contact device is the buzz box on a socat pty pair; the board side
 *   (FakeBuzzbox, the firmware's protocol) writes a `$C` line. Event = the board writing the edge.
 * - contact-firmata: the same with the Firmata board (FakeFirmata, StandardFirmata's protocol)
 *   writing a DIGITAL_MESSAGE.
 * - estop: POST /v1/admin/estop (operator) on the buzz-box gateway. Event = the client child's
 *   write of the request (until round 5 the request was an in-process inject(): its client side
 *   ran on the gateway's loop and was counted).
 * - estop-start: the same, written while a chunk starts (0–5 ms after the backend's execute call:
 *   the FollowJointTrajectory goal's build, JSON and send), not 30 ms into the motion.
 * - watchdog: the rig stops publishing joint states (told over the child's IPC channel); the
 *   gateway's stale-reading limit runs out. Event = the last reading's time + staleReadingTimeoutMs (the moment the limit passed,
 *   on the clock the monitor judges: backend time, performance.now() on the real backend).
 * - estop-sim: POST /v1/admin/estop on a simulated gateway (sim backend).
 * - estop-planning: on the simulated gateway, no chunk running: the agent writes an act of 300
 *   tool poses (3 s, a 2 cm min-jerk move; an IK solve per row, then interpolation and the
 *   pre-check of 3,000 samples; ~7–20 ms of planning warm)
 *   and the client child writes the e-stop a random 0.5–8 ms later, while the act's request is
 *   parsed and its chunk planned. Event = the e-stop's write; a sample counts when it was written
 *   before the act's motion began. The act's answers are tallied (RB_ERR_ESTOP: refused while
 *   planning, nothing moved).
 * - signal: a child process (this file, `--signal-child`) runs a simulated gateway with serve's
 *   signal handling (cli/serve.ts `exitOnSignals`); the parent sends SIGTERM mid-chunk. Event =
 *   the kill() call, 30 ms into the motion like every other source; both sides read
 *   CLOCK_MONOTONIC (process.hrtime). One child per sample.
 * - firmata-hang: the Firmata board hangs (process paused, port open); event = its pause; the
 *   figure is hang → stop call (detection by the driver's heartbeat watchdog, target ≤ 100 ms).
 * Beside each: "motion told" = event → the running motion learnt it must stop (its abort signal
 * fired or its onTick answered "stop"), and for contacts "driver event" = board write → the
 * contact driver's event reaching a listener subscribed after the backend's (pty transit, parse,
 * the gateway's synchronous handling; the floor under the stop). A source whose stop never reaches backend.stop() within 5 s counts
 * as missed; a sample whose episode ended for another reason than the source's (e.g. the rig
 * stalled on a loaded machine: a stale reading) as disturbed, left out of the figures. Needs socat.
 *
 * Scheduling: the gateway runs as the example real benches ask (`scheduling.rtPriority: 50`, as
 * ros2_control's control thread): its process under SCHED_FIFO 50 (event loop) / 49 (its other
 * threads) through cli/scheduling.ts, the one `serve` uses, and so does the signal source's child
 * gateway; `--rt-priority off` measures under the normal scheduler, `--rt-priority N` at N. The
 * socat relays of the pty pairs stand in for the kernel's tty path of a USB serial adapter, which
 * preempts every user thread: with a real-time gateway they run at SCHED_FIFO N + 1. The rig
 * (the robot's own computer) and the client (agent, operator) run under the normal scheduler,
 * in sessions of their own at nice 0 (bench/other-computer.ts), not with the bench's raised
 * autogroup and nice below.
 * Run it as the launchers start a gateway (`npm run bench -- stop-latency` does:
 * `node --single-threaded-gc --max-semi-space-size=2 --expose-gc --import tsx bench/stop-latency.ts`); the scheduling line says when
 * they are missing.
 *
 * Priority: `nice` orders processes only inside one autogroup (Linux, sched_autogroup_enabled=1:
 * one per session), so on a machine shared with other sessions `nice -n -15` alone does not
 * give the bench the CPU. A quiet measurement runs in its own session with its autogroup raised:
 *   setsid sh -c 'echo -15 > /proc/self/autogroup; exec nice -n -15 node --import tsx bench/stop-latency.ts --samples 200'
 * The bench prints its autogroup line.
 *
 * Profiling a slow sample: each e-stop's slow line ends with the event's CLOCK_MONOTONIC time;
 * `perf record -k mono -g --tid <gateway pid>` with node's `--perf-basic-prof` stamps its samples
 * on the same clock (`perf script --time A,B`). node's own `--cpu-prof` loses samples while the
 * loop runs at SCHED_FIFO (its sampler thread starves: 98 ms gaps were seen).
 *
 * Reference: the machine's own wake-up latency over the same run (bench/stats.ts
 * machineWakeReference: cyclictest, a SCHED_FIFO 80 thread per CPU woken every 1 ms; Debian
 * rt-tests, installed by `npm run setup`), the floor under any stop latency a process shows here.
 *
 * Figures: p50 / p90 / p99 / max per source (nearest rank, bench/stats.ts: of 100 samples p99 is
 * the second largest, of 200 the third). Every sample is attributed, stage by stage:
 * event → the gateway got it ("recv": the gateway's SerialPort `data` event for a contact, the
 * e-stop call for an e-stop, the signal handler for a signal) → backend.stop() called ("stop") →
 * the backend's stop settled ("confirmed": the goal's end on the rig). For contacts the board's
 * side is split off too: event → the board's write handed to the kernel ("board"). Beside the
 * stages, what the process did in the sample's window [event, stop]: the longest gap between two
 * turns of a 1 ms probe timer (the event loop was busy, or the process was not scheduled — the
 * CPU the process used in that gap tells which — and the bench phase it began in) and the GC
 * pauses (PerformanceObserver "gc") that overlap it. Samples over the target are listed with
 * that attribution (`--slow-ms X` lists every sample over X ms instead). A long gap is labelled
 * with the bench phase it began in ("a → b" when the phase changed inside it). After the table: the loop gaps over 2 ms that began
 * during an act's start (its write → its motion running 30 ms, or its refusal), with their CPU —
 * what a stop arriving then waits for — the first sample of each gateway (cold code) apart.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { connect, type Socket } from "node:net";
import { closeSync, fstat, openSync, readFileSync, readSync } from "node:fs";
import { cpus, getPriority as osPriority, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { type TestGateway, testGateway } from "../compose/testing.ts";
import {
  applyRealtimeScheduling,
  benchScheduling,
  LATENCY_NODE_ARGS,
  rtPriorityArg,
} from "../cli/scheduling.ts";
import { FakeFirmata } from "../drivers/firmata/fake-firmata.ts";
import type { SerialPort } from "serialport";
import { FakeBuzzbox } from "../drivers/serial/fake-buzzbox.ts";
import { openPtyPair, type PtyPair } from "../drivers/serial/pty-pair.ts";
import { openSerialPort } from "../drivers/serial/transport-serialport.ts";
import type { SerialTransport } from "../drivers/serial/transport.ts";
import { monitorEventLoopDelay, PerformanceObserver, constants as perfConstants } from "node:perf_hooks";
import { FR3 } from "../robots/franka/models.ts";
import type { Backend, ExecuteOptions, JointTrajectory, SensorEvent } from "../seam/types.ts";
import { api } from "../test-support/api.ts";
import { sleep } from "../test-support/wait.ts";
import { crossProcessReference, machineWakeReference, pct } from "./stats.ts";
import { exitWithBench, spawnOtherComputer } from "./other-computer.ts";
import { type RigChild, startRigChild } from "./rig-child.ts";
import { minJerkToolRows } from "./tool-rows.ts";

const CONTROL_PERIOD_MS = FR3.controlPeriodS * 1000;
const TARGET_P99_MS = 2;
const HANG_TARGET_MS = 100;
const CHUNK_S = 3;
const DT_S = 0.01;
/** stale-reading limit of the real gateways: a shared machine stalls the in-process rig for long */
const STALE_MS = 1000;

const args = process.argv.slice(2);
const arg = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const SAMPLES = Number(arg("--samples") ?? 30);
/** the gateway's SCHED_FIFO priority (the example real benches' 50), or "off" */
const RT = rtPriorityArg(arg("--rt-priority") ?? "50");
/** the slow sources (watchdog: ≥ 1 s a sample; signal: a child process a sample) take at most this many */
const CAPPED = 120;
/** the signal child runs the stop path once before the measured signal */
const WARM_SIGNAL = args.includes("--signal-warm");
/**
 * probe the libuv threadpool (an fstat in flight from every probe turn). Off by default: at 1 kHz
 * it blocked the gateway's main thread itself — each job's submission signals the pool's
 * condition variable, and glibc's pthread_cond_signal waits for an earlier-woken pool thread that
 * has not got a CPU yet (strace of the main thread over 40 s of estop-sim at load ~3: 49 futex
 * waits on libuv's `cond`, 27 over 1 ms, 131 ms in all; without the probe 3, 0.04 ms). Those
 * waits were the "main thread asleep (blocked)" + "threadpool job waited" samples of round 4.
 */
const POOL_PROBE = args.includes("--pool-probe");
/** list every sample slower than this, ms (default: the target) */
const SLOW_MS = Number(arg("--slow-ms") ?? TARGET_P99_MS);
const ONLY = arg("--only")?.split(",");
const wanted = (name: string) => !ONLY || ONLY.includes(name);

/**
 * What the process did, for attributing each sample: a 1 ms probe timer's turns (performance.now()
 * and the process's CPU time, µs) in a ring, and every GC pause (PerformanceObserver "gc").
 */
class Probe {
  private readonly n = 1 << 16;
  private readonly at = new Float64Array(this.n);
  /**
   * CPU time (process.cpuUsage: the process's threads, read precisely) and the main thread's wait
   * on a run queue (/proc/thread-self/schedstat), ns. Not schedstat's run time: for the running
   * thread it is only brought up to date at a scheduler tick (4 ms here) or a switch, so a 1.5 ms
   * busy stretch read 0.01–3.1 ms. A gap's CPU is capped at the gap less its run-queue wait
   * (GC and compiler threads run beside the main thread).
   */
  private readonly onCpu = new Float64Array(this.n);
  private readonly runq = new Float64Array(this.n);
  /** the bench phase at each probe turn */
  private readonly phaseAt: string[] = new Array(this.n).fill("");
  private k = 0;
  private fd = -1;
  private readonly buf = Buffer.alloc(128);
  /**
   * the libuv threadpool (the recorder's writes and fdatasyncs), with --pool-probe: one fstat in
   * flight at a time, issued from the probe turn; issue and completion times
   */
  private readonly poolIssued = new Float64Array(this.n);
  private readonly poolDone = new Float64Array(this.n);
  private pk = 0;
  private poolBusy = false;
  /** what the bench is doing (labels the long gaps) */
  phase = "setup";
  /** the phase at the last probe turn: a gap is labelled with the phase it began in (→ the one it ended in) */
  private lastPhase = "setup";
  /** every gap between probe turns over 2 ms: start, length, main thread on CPU / run queue (ms), phase */
  readonly longGaps: { start: number; ms: number; cpuMs: number; runqMs: number; phase: string }[] = [];
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly gcs: { start: number; ms: number; kind: number }[] = [];
  private readonly obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0;
      this.gcs.push({ start: e.startTime, ms: e.duration, kind });
    }
  });

  start(): void {
    this.obs.observe({ entryTypes: ["gc"] });
    this.fd = openSync("/proc/thread-self/schedstat", "r");
    const turn = () => {
      const i = this.k++ & (this.n - 1);
      const at = (this.at[i] = performance.now());
      const [run, wait] = this.schedstat();
      this.onCpu[i] = run;
      this.runq[i] = wait;
      this.phaseAt[i] = this.phase;
      if (POOL_PROBE && !this.poolBusy) {
        this.poolBusy = true;
        const j = this.pk++ & (this.n - 1);
        this.poolIssued[j] = at;
        this.poolDone[j] = Number.NaN;
        fstat(this.fd, () => {
          this.poolDone[j] = performance.now();
          this.poolBusy = false;
        });
      }
      const p = (i - 1) & (this.n - 1);
      if (this.k > 1 && at - this.at[p]! > 2)
        this.longGaps.push({
          start: this.at[p]!,
          ms: at - this.at[p]!,
          cpuMs: capCpu(at - this.at[p]!, (run - this.onCpu[p]!) / 1e6, (wait - this.runq[p]!) / 1e6),
          runqMs: (wait - this.runq[p]!) / 1e6,
          phase: this.lastPhase === this.phase ? this.phase : `${this.lastPhase} → ${this.phase}`,
        });
      this.lastPhase = this.phase;
    };
    turn();
    this.timer = setInterval(turn, 1);
  }

  /** [the process on CPU, the main thread waiting on a run queue], ns */
  private schedstat(): [number, number] {
    const len = readSync(this.fd, this.buf, 0, this.buf.length, 0);
    const wait = this.buf.toString("latin1", 0, len).split(" ")[1];
    const cpu = process.cpuUsage();
    return [(cpu.user + cpu.system) * 1000, Number(wait)];
  }

  /** GC pauses overlapping [from, to]: sum (ms) and kinds */
  gcIn(from: number, to: number): { ms: number; kinds: string } {
    let ms = 0;
    const kinds = new Set<string>();
    for (let j = this.gcs.length - 1; j >= 0; j--) {
      const g = this.gcs[j]!;
      if (g.start + g.ms < from - 200) break;
      if (g.start > to || g.start + g.ms < from) continue;
      ms += g.ms;
      kinds.add(GC_KIND[g.kind] ?? String(g.kind));
    }
    return { ms, kinds: [...kinds].join("+") };
  }

  stop(): void {
    clearInterval(this.timer);
    this.obs.disconnect();
    closeSync(this.fd);
  }

  /**
   * The window [from, to]: the longest gap between probe turns that overlaps it (ms; how much of
   * it the main thread ran and waited on a run queue, ms) and the GC pauses that overlap it (sum,
   * ms; kinds).
   */
  window(from: number, to: number): Attribution {
    let gapMs = 0;
    let gapCpuMs = 0;
    let gapRunqMs = 0;
    let gapStart = Number.NaN;
    let gapPhase = "";
    const last = this.k - 1;
    for (let j = last; j > Math.max(0, this.k - this.n + 1); j--) {
      const b = this.at[j & (this.n - 1)]!;
      const a = this.at[(j - 1) & (this.n - 1)]!;
      if (b < from) break;
      if (a > to) continue;
      if (b - a > gapMs) {
        gapMs = b - a;
        gapStart = a;
        gapPhase = this.phaseAt[(j - 1) & (this.n - 1)]!;
        gapRunqMs = (this.runq[j & (this.n - 1)]! - this.runq[(j - 1) & (this.n - 1)]!) / 1e6;
        gapCpuMs = capCpu(
          gapMs,
          (this.onCpu[j & (this.n - 1)]! - this.onCpu[(j - 1) & (this.n - 1)]!) / 1e6,
          gapRunqMs,
        );
      }
    }
    // a gap still open at `to` (no probe turn since): from the last turn to `to`
    const lastAt = this.at[last & (this.n - 1)]!;
    if (lastAt < to && to - Math.max(lastAt, from) > gapMs) {
      const [run, wait] = this.schedstat();
      gapMs = to - lastAt;
      gapStart = lastAt;
      gapPhase = this.phaseAt[last & (this.n - 1)]!;
      gapRunqMs = (wait - this.runq[last & (this.n - 1)]!) / 1e6;
      gapCpuMs = capCpu(gapMs, (run - this.onCpu[last & (this.n - 1)]!) / 1e6, gapRunqMs);
    }
    const gc = this.gcIn(from, to);
    // the slowest threadpool job that was in flight during the window (still open: until `to`)
    let poolMs = 0;
    for (let j = this.pk - 1; j >= Math.max(0, this.pk - this.n); j--) {
      const a = this.poolIssued[j & (this.n - 1)]!;
      const b = this.poolDone[j & (this.n - 1)]!;
      const end = Number.isNaN(b) ? to : b;
      if (end < from - 100) break;
      if (a > to || end < from) continue;
      poolMs = Math.max(poolMs, end - a);
    }
    return {
      gapMs,
      gapCpuMs,
      gapRunqMs,
      gapStartMs: gapStart - from,
      gapPhase,
      gcMs: gc.ms,
      gcKinds: gc.kinds,
      poolMs,
    };
  }

  /**
   * The old generation's GC pauses (mark-compact, incremental marking) inside and outside the
   * given motion windows [start, end]: each is a stop's possible wait while the arm moves.
   */
  majorGcIn(windows: readonly (readonly [number, number])[]): string {
    const major = this.gcs.filter(
      (g) => (GC_KIND[g.kind] ?? "") !== "scavenge" && GC_KIND[g.kind] !== "weakcb",
    );
    const inside = major.filter((g) => windows.some(([a, b]) => g.start < b && g.start + g.ms > a));
    const part = (l: typeof major) =>
      `${l.length} (total ${l.reduce((t, g) => t + g.ms, 0).toFixed(1)} ms, longest ${l.reduce((m, g) => Math.max(m, g.ms), 0).toFixed(2)} ms)`;
    return `during a motion ${part(inside)}, between motions ${part(major.filter((g) => !inside.includes(g)))}`;
  }

  /** GC pauses over the whole run per kind: "scavenge 120 (total 150 ms, longest 3.1 ms), …" */
  gcSummary(): string {
    const by = new Map<string, { n: number; total: number; max: number }>();
    for (const g of this.gcs) {
      const k = GC_KIND[g.kind] ?? String(g.kind);
      const s = by.get(k) ?? { n: 0, total: 0, max: 0 };
      s.n++;
      s.total += g.ms;
      s.max = Math.max(s.max, g.ms);
      by.set(k, s);
    }
    return [...by]
      .map(([k, s]) => `${k} ×${s.n} (total ${s.total.toFixed(0)} ms, longest ${s.max.toFixed(2)} ms)`)
      .join(", ");
  }
}

/** a gap's CPU time, ms: the process's, at most the gap less the main thread's run-queue wait */
const capCpu = (gapMs: number, cpuMs: number, runqMs: number) => Math.max(0, Math.min(cpuMs, gapMs - runqMs));

/** node:perf_hooks constants.NODE_PERFORMANCE_GC_* (until round 7 the table said 2 for the major GC and called 4 "incremental", 8 "weak-cb") */
const GC_KIND: Record<number, string> = {
  [perfConstants.NODE_PERFORMANCE_GC_MINOR]: "scavenge",
  [perfConstants.NODE_PERFORMANCE_GC_MAJOR]: "mark-compact",
  [perfConstants.NODE_PERFORMANCE_GC_INCREMENTAL]: "incremental",
  [perfConstants.NODE_PERFORMANCE_GC_WEAKCB]: "weak-cb",
};

interface Attribution {
  /**
   * longest gap between probe turns overlapping the window, ms; of it, the main thread on a CPU
   * (the loop was busy) and runnable but waiting for a CPU (machine load); the rest it slept
   * (blocked in a system call or a page fault, or idle)
   */
  gapMs: number;
  gapCpuMs: number;
  gapRunqMs: number;
  /** where that gap began, relative to the event, ms */
  gapStartMs: number;
  /** the bench phase that gap began in (e.g. "contact-firmata: chunk start (sample 3)") */
  gapPhase: string;
  /** GC pauses overlapping the window, ms, and their kinds */
  gcMs: number;
  gcKinds: string;
  /** the slowest libuv threadpool job (a probe fstat) in flight during the window, ms */
  poolMs: number;
  /** contacts: socat's run-queue wait during the window, ms */
  socatRunqMs?: number;
  /** the gateway's file operations in flight during the window */
  fileOps?: string;
}

/** One stop, stage by stage (ms from the event; NaN where the source has no such stage). */
interface Trace {
  /** the event's time, performance.now() (e-stops), for matching a sample with a system profile */
  at?: number;
  board: number;
  /** e-stops: node's http server parsed the request's headers (its 'request' event) */
  http?: number;
  recv: number;
  told: number;
  stop: number;
  confirmed: number;
  why: Attribution;
}

/** performance.now() of every call of the backend's stop() and of the motion learning of a stop */
interface Spy {
  stops: number[];
  /** performance.now() at which each stop() call's promise settled (index as `stops`) */
  confirmed: number[];
  told: number[];
  motions: number;
  /** performance.now() of every backend.execute call (a motion beginning) */
  motionAt: number[];
  /** performance.now() at which each motion's execute settled (index as `motionAt`; NaN while it runs) */
  motionEnd: number[];
  /** when the gateway got the event of the current sample (set by the source's hook) */
  recvAt: number;
  /** which hook may set recvAt in the current sample */
  source: "contact" | "estop" | "none";
  /** recvAt as it was when stop() was first called in the sample */
  recvAtStop: number[];
  /** e-stops: `estopHttpAt` (node's http server parsed the request's headers) at each stop() call */
  httpAtStop: number[];
  /** called right after a stop() call is timed (contacts read socat's scheduling figures) */
  onStop?: () => void;
}

/** CLOCK_MONOTONIC (process.hrtime) less performance.now(), ms */
const MONO_MINUS_NOW = Number(process.hrtime.bigint()) / 1e6 - performance.now();

/** every gateway's spy (motion windows over the run) */
const spies: Spy[] = [];

/** Wrap the composed backend: stop() calls and the running motion's stop signals are timed. */
function spyOn(backend: Backend): Spy {
  const spy: Spy = {
    stops: [],
    confirmed: [],
    told: [],
    motions: 0,
    motionAt: [],
    motionEnd: [],
    recvAt: Number.NaN,
    recvAtStop: [],
    httpAtStop: [],
    source: "none",
  };
  spies.push(spy);
  const stop = backend.stop.bind(backend);
  backend.stop = (reason: string) => {
    const i = spy.stops.length;
    spy.stops.push(performance.now());
    spy.recvAtStop.push(spy.recvAt);
    spy.httpAtStop.push(estopHttpAt);
    spy.confirmed.push(Number.NaN);
    spy.onStop?.();
    const p = stop(reason);
    p.then(
      () => {
        spy.confirmed[i] = performance.now();
      },
      () => {},
    );
    return p;
  };
  const execute = backend.execute.bind(backend);
  backend.execute = (traj: JointTrajectory, opts: ExecuteOptions = {}) => {
    spy.motions++;
    const m = spy.motionAt.push(performance.now()) - 1;
    spy.motionEnd.push(Number.NaN);
    const ended = () => {
      spy.motionEnd[m] = performance.now();
    };
    let told = false;
    const tell = () => {
      if (told) return;
      told = true;
      spy.told.push(performance.now());
    };
    opts.signal?.addEventListener("abort", tell);
    const run = execute(traj, {
      ...opts,
      onTick: (r, k) => {
        const v = opts.onTick ? opts.onTick(r, k) : "ok";
        if (v === "stop") tell();
        return v;
      },
    });
    run.then(ended, ended);
    return run;
  };
  return spy;
}

interface Row {
  name: string;
  traces: Trace[];
  missed: number;
  /** samples whose episode ended for another reason (e.g. a stall of the rig: stale reading) */
  disturbed: number;
  /** why the disturbed samples ended (episode end detail, first 60 characters) → count */
  disturbances: Map<string, number>;
  /**
   * "fault": the source's episodes end as faults (watchdog, hung board); "no-fault": they end
   * any other way (how a contact or an e-stop ends is the episode's business) — a fault there
   * means something else stopped the sample (a stalled rig: a stale reading)
   */
  expect: "fault" | "no-fault";
  note?: string;
  targetMs: number;
}

const rows: Row[] = [];
const row = (name: string, expect: Row["expect"], targetMs = TARGET_P99_MS, note?: string): Row => {
  const r: Row = {
    name,
    traces: [],
    missed: 0,
    disturbed: 0,
    disturbances: new Map(),
    expect,
    targetMs,
    ...(note ? { note } : {}),
  };
  rows.push(r);
  return r;
};

const probe = new Probe();

/**
 * The gateway's own threadpool users: every FileHandle datasync / write / close and every
 * fs.promises writeFile / open (the recorder's), as [start, end] intervals, so a slow serial read
 * (serialport reads and writes run on the same libuv threadpool) can be matched with them.
 */
const fileOps: { op: string; start: number; end: number }[] = [];
async function trackFileOps(): Promise<void> {
  const fsp = await import("node:fs/promises");
  const h = await fsp.open("/dev/null", "r");
  const proto = Object.getPrototypeOf(h) as Record<string, (...a: unknown[]) => Promise<unknown>>;
  await h.close();
  const wrap = (obj: Record<string, (...a: unknown[]) => Promise<unknown>>, name: string, label: string) => {
    const orig = obj[name]!;
    obj[name] = function (this: unknown, ...a: unknown[]) {
      const x = { op: label, start: performance.now(), end: Number.NaN };
      if (fileOps.push(x) > 20_000) fileOps.splice(0, 10_000);
      const p = orig.apply(this, a);
      p.then(
        () => {
          x.end = performance.now();
        },
        () => {
          x.end = performance.now();
        },
      );
      return p;
    };
  };
  for (const m of ["datasync", "sync", "write", "writev", "close"]) wrap(proto, m, m);
  // fs.promises' own functions are read through the module namespace: patch the default export
  const def = (fsp as unknown as { default: Record<string, (...a: unknown[]) => Promise<unknown>> }).default;
  for (const m of ["writeFile", "open", "mkdir", "rename"]) wrap(def, m, m);
}

/** file operations in flight during [from, to]: "datasync×2 (longest 31 ms), write×1 …" */
function fileOpsIn(from: number, to: number): string {
  const by = new Map<string, { n: number; max: number }>();
  for (let j = fileOps.length - 1; j >= 0; j--) {
    const x = fileOps[j]!;
    const end = Number.isNaN(x.end) ? to : x.end;
    if (x.start > to || end < from) continue;
    const s = by.get(x.op) ?? { n: 0, max: 0 };
    s.n++;
    s.max = Math.max(s.max, end - x.start);
    by.set(x.op, s);
  }
  return [...by].map(([k, s]) => `${k}×${s.n} (longest ${s.max.toFixed(1)} ms)`).join(", ");
}

/** An episode that can move (at `level`): a new one when the last ended, none runs or it is at another level. */
async function freshEpisode(g: TestGateway, level = "joint_position"): Promise<void> {
  if (g.gateway.bench.backend.lifecycle === "error") {
    const rec = await api(g, "POST", "/v1/admin/recover", {}, "operator");
    if (rec.status !== 200) throw new Error(`recover: ${rec.status} ${rec.text}`);
  }
  const ep = g.gateway.episode;
  if (ep && !ep.isEnded && ep.config.level === level) return;
  const res = await api(g, "POST", "/v1/admin/episodes", { task: "free-motion", level }, "operator");
  if (res.status !== 200) throw new Error(`new episode: ${res.status} ${res.text}`);
}

/**
 * Start a CHUNK_S chunk holding the current pose, sent over HTTP by the client child (the act
 * reaches the gateway as a socket read, as an agent's does); resolves once the backend runs it.
 */
async function startChunk(g: TestGateway, spy: Spy): Promise<{ answer: Promise<unknown> }> {
  const r = g.gateway.bench.backend.read();
  const row = [...r.q, r.gripperWidthM];
  const rows = Array.from({ length: Math.round(CHUNK_S / DT_S) }, () => row);
  const before = spy.motions;
  const { answer } = client().send(g, "agent", "/v1/act", { type: "joint_position", dt: DT_S, rows });
  const end = performance.now() + 5000;
  while (spy.motions === before && performance.now() < end) await sleep(1);
  if (spy.motions === before) throw new Error(`the chunk did not start: ${JSON.stringify(await answer)}`);
  await sleep(30); // well inside the motion
  return { answer };
}

/**
 * One sample: `fire()` triggers the source and returns the event time (performance.now());
 * records event → first stop() call after it, event → motion told, the stages and what the
 * process did meanwhile. `board()` (contacts) answers when the board's write reached the kernel.
 */
async function sample(
  g: TestGateway,
  spy: Spy,
  r: Row,
  fire: () => Promise<number> | number,
  after?: () => Promise<void>,
  board?: () => number,
  annotate?: (why: Attribution) => void,
): Promise<void> {
  const k = r.traces.length + r.missed + r.disturbed;
  probe.phase = `${r.name}: new episode`;
  await freshEpisode(g);
  probe.phase = `${r.name}: chunk start (sample ${k})`;
  const { answer } = await startChunk(g, spy);
  probe.phase = `${r.name}: event → stop`;
  const stops0 = spy.stops.length;
  const told0 = spy.told.length;
  const ep = g.gateway.episode;
  spy.recvAt = Number.NaN;
  estopHttpAt = Number.NaN;
  spy.source = r.name.startsWith("contact") ? "contact" : r.name.startsWith("estop") ? "estop" : "none";
  const t0 = await fire();
  const end = performance.now() + 5000;
  while (spy.stops.length === stops0 && performance.now() < end) await sleep(1);
  spy.source = "none";
  probe.phase = `${r.name}: chunk end, answer`;
  await answer;
  const endedAsFault = ep?.endReason === "fault";
  if (!ep?.isEnded || endedAsFault !== (r.expect === "fault")) {
    r.disturbed++;
    const why = (ep?.endDetail ?? ep?.endReason ?? "not ended").slice(0, 60);
    r.disturbances.set(why, (r.disturbances.get(why) ?? 0) + 1);
  } else if (spy.stops.length === stops0) r.missed++;
  else {
    const stopAt = spy.stops[stops0]!;
    const why = probe.window(t0, stopAt);
    why.fileOps = fileOpsIn(t0, stopAt);
    annotate?.(why);
    r.traces.push({
      board: (board?.() ?? Number.NaN) - t0,
      http: spy.httpAtStop[stops0]! - t0,
      recv: spy.recvAtStop[stops0]! - t0,
      told: spy.told.length > told0 ? spy.told[told0]! - t0 : Number.NaN,
      stop: stopAt - t0,
      confirmed: spy.confirmed[stops0]! - t0,
      why,
    });
  }
  probe.phase = `${r.name}: after the sample`;
  await after?.();
  probe.phase = `${r.name}: between samples`;
}

// ───────────── real gateways: contact devices on pty pairs, arm over the rosbridge rig ─────────────

interface Board {
  kind: "buzzbox" | "firmata";
  pair: PtyPair;
  port: SerialTransport;
  /** drive the contact; returns performance.now() just before the board writes the edge */
  contact(closed: boolean): number;
  /** performance.now() at which the board's first write issued at or after `t` reached the kernel */
  writtenAt(t: number): number;
  firmata?: FakeFirmata;
  dispose(): void;
}

/** test-harness knowledge: the serialport@13 SerialPort under our SerialTransport adapter */
const serialPortOf = (t: SerialTransport) => (t as unknown as { port: SerialPort }).port;

async function board(kind: "buzzbox" | "firmata"): Promise<Board> {
  const pair = await openPtyPair();
  // socat stands in for the kernel's tty path, which preempts the gateway's threads
  if (RT !== "off" && pair.pid !== undefined) {
    const r = spawnSync("chrt", ["--fifo", "--pid", String(RT + 1), String(pair.pid)], { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`chrt socat: ${r.stderr || r.error?.message}`);
  }
  const port = await openSerialPort({ path: pair.b, baudRate: kind === "buzzbox" ? 115200 : 57600 });
  const sp = serialPortOf(port);
  // the board's writes with serialport's completion callback (fs.write done: bytes in the pty)
  const writes: { issued: number; done: number }[] = [];
  const write = (d: string | Uint8Array) => {
    const w = { issued: performance.now(), done: Number.NaN };
    if (writes.push(w) > 64) writes.shift();
    sp.write(typeof d === "string" ? Buffer.from(d, "latin1") : d, () => {
      w.done = performance.now();
    });
  };
  const writtenAt = (t: number) => writes.find((w) => w.issued >= t)?.done ?? Number.NaN;
  if (kind === "buzzbox") {
    const b = new FakeBuzzbox({ write });
    port.onData((d) => b.receive(d));
    b.startHeartbeat(100);
    return {
      kind,
      pair,
      port,
      contact: (c) => {
        const t = performance.now();
        b.contact(c);
        return t;
      },
      writtenAt,
      dispose: () => b.stopHeartbeat(),
    };
  }
  const f = new FakeFirmata({ write });
  port.onData((d) => f.receive(d));
  return {
    kind,
    pair,
    port,
    firmata: f,
    contact: (c) => {
      const t = performance.now();
      f.setInput(2, c ? 0 : 1);
      return t;
    },
    writtenAt,
    dispose: () => f.dispose(),
  };
}

async function realGateway(rigUrl: string, b: Board): Promise<TestGateway> {
  const contact =
    b.kind === "buzzbox"
      ? // a loaded shared machine stalls the event loop longer than the 350 ms default
        { type: "buzzbox", path: b.pair.a, heartbeatTimeoutMs: 2000 }
      : {
          type: "firmata",
          path: b.pair.a,
          contactPin: 2,
          lampPin: 9,
          buzzerPin: 8,
          reportVersionTimeoutMs: 50,
        };
  return listen(
    await testGateway({
      robot: "fr3",
      backend: { type: "real", ros: { type: "rosbridge", url: rigUrl }, contact, allowMotion: true },
      task: { id: "free-motion" },
      safety: { stopOnEvents: ["contact"], staleReadingTimeoutMs: STALE_MS },
    }),
  );
}

/**
 * Stamp `spy.recvAt` when bytes reach the gateway's side of the contact port: a listener put
 * before the driver's on the serialport@13 SerialPort the driver opened (test-harness knowledge
 * of the drivers' private fields; looked up again after a reconnect).
 */
function hookContactPort(g: TestGateway, spy: Spy): () => void {
  const d = contactDriver(g) as unknown as {
    transport?: SerialTransport;
    link?: { stream: { serial: SerialTransport } };
  };
  let hooked: SerialPort | undefined;
  const stamp = () => {
    if (spy.source === "contact") spy.recvAt = performance.now();
  };
  return () => {
    const t = d.transport ?? d.link?.stream.serial;
    const sp = t ? serialPortOf(t) : undefined;
    if (!sp || sp === hooked) return;
    sp.prependListener("data", stamp);
    hooked = sp;
  };
}

/** The contact driver behind a real gateway, for the bare-listener reference. */
function contactDriver(g: TestGateway): { onEvent(l: (e: SensorEvent) => void): () => void } {
  const drivers = (
    g.gateway.bench.backend as unknown as {
      drivers: { contact?: { onEvent(l: (e: SensorEvent) => void): () => void } };
    }
  ).drivers;
  if (!drivers.contact) throw new Error("no contact driver");
  return drivers.contact;
}

async function contactRows(rig: RigChild, kind: "buzzbox" | "firmata"): Promise<void> {
  const b = await board(kind);
  const g = await realGateway(rig.url, b);
  const spy = spyOn(g.gateway.bench.backend);
  hookEstop(g, spy);
  const hook = hookContactPort(g, spy);
  const r = wanted(`contact-${kind}`) ? row(`contact-${kind}`, "no-fault") : undefined;
  // socat's run-queue wait (ns) at the event and at the stop: did the pty relay wait for a CPU?
  const socatRunq = () => {
    try {
      return Number(readFileSync(`/proc/${b.pair.pid}/schedstat`, "latin1").split(" ")[1]);
    } catch {
      return Number.NaN;
    }
  };
  let socatAtEvent = Number.NaN;
  let socatAtStop = Number.NaN;
  spy.onStop = () => {
    if (spy.source === "contact") socatAtStop = socatRunq();
  };
  let opened = 0;
  contactDriver(g).onEvent((e) => {
    if (e.type === "contact" && !e.closed) opened++;
  });
  try {
    if (r) {
      for (let k = 0; k < SAMPLES; k++) {
        hook();
        let t0 = Number.NaN;
        await sample(
          g,
          spy,
          r,
          () => {
            socatAtStop = Number.NaN;
            socatAtEvent = socatRunq();
            t0 = b.contact(true);
            return t0;
          },
          async () => {
            const n = opened;
            b.contact(false);
            const end = performance.now() + 2000;
            while (opened === n && performance.now() < end) await sleep(1);
          },
          () => b.writtenAt(t0),
          (why) => {
            why.socatRunqMs = (socatAtStop - socatAtEvent) / 1e6;
          },
        );
      }
    }
    if (kind === "buzzbox") await otherRealRows(g, spy, rig);
    if (kind === "firmata" && wanted("firmata-hang")) await hangRows(g, spy, b);
  } finally {
    await g.close().catch((e: unknown) => console.log(`(close: ${e instanceof Error ? e.message : e})`));
    b.dispose();
    await b.port.close();
    await b.pair.kill();
  }
}

/**
 * estop-start: the e-stop written while a chunk starts on the real backend (the FollowJointTrajectory
 * goal of 300 points built, serialised and sent). The client child writes an act of CHUNK_S holding
 * the pose, and the e-stop a delay after it aimed at the motion's start: the act's write → execute
 * lag seen so far (median) − 1 … + 3 ms (the child's timer adds up to ~1 ms). A sample counts
 * when the e-stop was written at or after the execute call and at most START_WINDOW_MS after it;
 * others are tallied apart. Also tallied: samples whose goal was never sent (a stop between the
 * goal's slices).
 */
const START_WINDOW_MS = 5;
async function startRows(g: TestGateway, spy: Spy): Promise<void> {
  const r = row("estop-start", "no-fault");
  // when the trajectory goal went to the socket (test-harness knowledge: the real backend's
  // transport, its roslib Ros, roslib's transport of the connection; looked up at each sample)
  let goalSentAt = Number.NaN;
  const hookGoalSend = () => {
    const be = g.gateway.bench.backend as unknown as {
      transport?: { ros?: { transport?: { send(m: unknown): void; benchHooked?: boolean } } };
    };
    const socket = be.transport?.ros?.transport;
    if (!socket || socket.benchHooked) return;
    const send = socket.send.bind(socket);
    socket.send = (m: unknown) => {
      const msg = m as { op?: string; action_type?: string };
      if (msg.op === "send_action_goal" && msg.action_type?.endsWith("FollowJointTrajectory")) {
        goalSentAt = performance.now();
      }
      send(m);
    };
    socket.benchHooked = true;
  };
  const lags: number[] = [];
  const outside = { before: 0, after: 0 };
  let unsent = 0;
  for (let k = 0; k < SAMPLES * 4 && r.traces.length < SAMPLES; k++) {
    probe.phase = "estop-start: new episode";
    await freshEpisode(g);
    hookGoalSend();
    const b = g.gateway.bench.backend.read();
    const hold = [...b.q, b.gripperWidthM];
    const rows = Array.from({ length: Math.round(CHUNK_S / DT_S) }, () => hold);
    const lag = lags.length ? pct(lags, 50) : 5;
    const stops0 = spy.stops.length;
    const motions0 = spy.motionAt.length;
    goalSentAt = Number.NaN;
    spy.recvAt = Number.NaN;
    estopHttpAt = Number.NaN;
    spy.source = "estop";
    probe.phase = `estop-start: act start (sample ${k})`;
    const a = client().send(g, "agent", "/v1/act", { type: "joint_position", dt: DT_S, rows });
    const e = client().send(
      g,
      "operator",
      "/v1/admin/estop",
      { reason: "bench" },
      // the child's timer ends up to ~1 ms late
      { id: a.id, delayMs: Math.max(0, lag - 1 + 4 * Math.random()) },
    );
    const actAt = await a.sent;
    const t0 = await e.sent;
    const end = performance.now() + 5000;
    while (spy.stops.length === stops0 && performance.now() < end) await sleep(1);
    spy.source = "none";
    probe.phase = "estop-start: answers";
    await a.answer;
    await e.answer;
    const movedAt = spy.motionAt[motions0];
    if (movedAt !== undefined) lags.push(movedAt - actAt);
    if (movedAt === undefined || t0 < movedAt) outside.before++;
    else if (t0 > movedAt + START_WINDOW_MS) outside.after++;
    else if (spy.stops.length === stops0) r.missed++;
    else {
      if (Number.isNaN(goalSentAt)) unsent++;
      r.traces.push(estopTrace(spy, stops0, t0));
    }
    probe.phase = "estop-start: between samples";
    await api(g, "POST", "/v1/admin/release", {}, "operator");
  }
  r.note = `real backend; e-stop written 0–${START_WINDOW_MS} ms after the execute call of a ${CHUNK_S} s chunk (lag act write → execute p50 ${lags.length ? pct(lags, 50).toFixed(1) : "–"} ms); left out: ${outside.before} written before it, ${outside.after} later; goal never sent in ${unsent} of ${r.traces.length}`;
}

/** e-stop through the operator API and the stale-reading watchdog, on the buzz-box gateway. */
async function otherRealRows(g: TestGateway, spy: Spy, rig: RigChild): Promise<void> {
  if (wanted("estop-start")) await startRows(g, spy);
  if (wanted("estop")) {
    const r = row("estop", "no-fault");
    for (let k = 0; k < SAMPLES; k++)
      await sample(g, spy, r, estop(g), async () => {
        await api(g, "POST", "/v1/admin/release", {}, "operator");
      });
  }
  if (wanted("watchdog")) {
    const r = row("watchdog", "fault", TARGET_P99_MS, `stale-reading limit ${STALE_MS} ms`);
    const arm = (
      g.gateway.bench.backend as unknown as {
        drivers: { arm?: { onReading(l: (x: { t: number }) => void): () => void } };
      }
    ).drivers.arm!;
    // the monitor's clock: a reading's backend time (its stamp on the gateway clock)
    let lastReadingMs = Number.NaN;
    arm.onReading((x) => {
      lastReadingMs = x.t * 1000;
    });
    for (let k = 0; k < Math.min(SAMPLES, CAPPED); k++) {
      await sample(
        g,
        spy,
        r,
        async () => {
          await rig.jointStates(false);
          // the event is the limit running out after the last reading that got through
          await sleep(STALE_MS / 2);
          return lastReadingMs + STALE_MS;
        },
        async () => {
          await rig.jointStates(true);
          await sleep(50);
        },
      );
    }
  }
}

/** Stamp `spy.recvAt` when the e-stop request reaches the gateway (Gateway.engageEstop called). */
function hookEstop(g: TestGateway, spy: Spy): void {
  const gw = g.gateway;
  const engage = gw.engageEstop.bind(gw);
  gw.engageEstop = (reason: string, by?: string) => {
    if (spy.source === "estop") spy.recvAt = performance.now();
    return engage(reason, by);
  };
}

/** POST /v1/admin/estop from the client child; the event is its write to the socket (CLOCK_MONOTONIC). */
const estop = (g: TestGateway) => () =>
  client().send(g, "operator", "/v1/admin/estop", { reason: "bench" }).sent;

/** Firmata board hangs with its port open → the driver's heartbeat watchdog → stop. */
async function hangRows(g: TestGateway, spy: Spy, b: Board): Promise<void> {
  const r = row(
    "firmata-hang",
    "fault",
    HANG_TARGET_MS,
    "hang → stop; heartbeat A0 every 19 ms, limit 60 ms",
  );
  const driver = contactDriver(g) as unknown as { linkUp: boolean };
  const real = g.gateway.bench.backend as unknown as { recover(timeoutS?: number): Promise<void> };
  for (let k = 0; k < Math.min(SAMPLES, 20); k++) {
    await sample(
      g,
      spy,
      r,
      () => {
        const t = performance.now();
        b.firmata!.pause();
        return t;
      },
      async () => {
        b.firmata!.resume();
        const end = performance.now() + 20_000;
        while (!driver.linkUp && performance.now() < end) await sleep(10);
        await api(g, "POST", "/v1/admin/recover", {}, "operator").catch(() => undefined);
        if (g.gateway.bench.backend.lifecycle !== "active") await real.recover(10).catch(() => undefined);
      },
    );
  }
}

// ───────────── simulated gateway: e-stop, and the signal in a child process ─────────────

/** Event-loop turns while a sim chunk runs: each the sim's slice of steps plus one turn, ms. */
const simTurns: number[] = [];

/** Gaps between event-loop turns for `ms` (a setImmediate chain: one callback per turn). */
async function loopTurns(ms: number, into: number[]): Promise<void> {
  const end = performance.now() + ms;
  let last = performance.now();
  while (last < end) {
    await new Promise<void>((r) => setImmediate(r));
    const now = performance.now();
    into.push(now - last);
    last = now;
  }
}

async function simRows(): Promise<void> {
  if (!wanted("estop-sim") && !wanted("estop-planning")) return;
  const g = await listen(
    await testGateway({ robot: "fr3", backend: { type: "sim" }, task: { id: "free-motion" } }),
  );
  const spy = spyOn(g.gateway.bench.backend);
  hookEstop(g, spy);
  const r = wanted("estop-sim") ? row("estop-sim", "no-fault") : undefined;
  const fire = estop(g);
  try {
    for (let k = 0; r && k < SAMPLES; k++)
      await sample(
        g,
        spy,
        r,
        async () => {
          // the sim's slices, measured inside the running chunk just before the e-stop
          await loopTurns(10, simTurns);
          return fire();
        },
        async () => {
          await api(g, "POST", "/v1/admin/release", {}, "operator");
        },
      );
    if (wanted("estop-planning")) await planningRows(g, spy);
  } finally {
    await g.close().catch(() => undefined);
  }
}

/** tool-pose rows of the act the e-stop-while-planning source sends: 3 s at DT_S, an IK solve each */
const PLAN_ROWS = Math.round(CHUNK_S / DT_S);

/** An e-stop sample's trace: its write at `t0` → the HTTP request parsed → the handler → the stop (the `stops0`-th), attributed. */
function estopTrace(spy: Spy, stops0: number, t0: number): Trace {
  const stopAt = spy.stops[stops0]!;
  const why = probe.window(t0, stopAt);
  why.fileOps = fileOpsIn(t0, stopAt);
  return {
    at: t0,
    board: Number.NaN,
    http: spy.httpAtStop[stops0]! - t0,
    recv: spy.recvAtStop[stops0]! - t0,
    told: Number.NaN,
    stop: stopAt - t0,
    confirmed: spy.confirmed[stops0]! - t0,
    why,
  };
}

/**
 * e-stop while an act is being planned (sim gateway): the agent's act (PLAN_ROWS tool-pose rows:
 * an IK solve each, then the interpolation and pre-check of 3,000 samples) and, a random
 * 0.5–8 ms after its write, the operator's e-stop, both from the client child. Event = the
 * e-stop's write. A sample counts when the e-stop was written before the act's motion began (or
 * the act never moved); the act's answers are tallied in the row's note.
 */
async function planningRows(g: TestGateway, spy: Spy): Promise<void> {
  const r = row("estop-planning", "no-fault");
  const answers = new Map<string, number>();
  let beforeAct = 0;
  for (let k = 0; k < SAMPLES; k++) {
    probe.phase = "estop-planning: new episode";
    await freshEpisode(g, "ee_pose");
    const ep = g.gateway.episode!;
    // when the route handed the act to the episode (its body parsed and validated)
    let actAt = Number.NaN;
    const act = ep.act.bind(ep);
    ep.act = (...a: Parameters<typeof act>) => {
      actAt = performance.now();
      return act(...a);
    };
    const q = g.gateway.bench.backend.read();
    const tool = g.gateway.fk(q.q).tool;
    const rows = minJerkToolRows(tool, q.gripperWidthM, PLAN_ROWS);
    const stops0 = spy.stops.length;
    const motions0 = spy.motionAt.length;
    spy.recvAt = Number.NaN;
    estopHttpAt = Number.NaN;
    spy.source = "estop";
    probe.phase = `estop-planning: act start (sample ${k})`;
    const a = client().send(g, "agent", "/v1/act", { type: "ee_pose", dt: DT_S, rows });
    const e = client().send(
      g,
      "operator",
      "/v1/admin/estop",
      { reason: "bench" },
      { id: a.id, delayMs: 0.5 + 7.5 * Math.random() },
    );
    const t0 = await e.sent;
    const end = performance.now() + 5000;
    while (spy.stops.length === stops0 && performance.now() < end) await sleep(1);
    spy.source = "none";
    probe.phase = "estop-planning: answers";
    const ans = await a.answer;
    await e.answer;
    const code =
      ans.status === 200
        ? "200 (it moved)"
        : `${ans.status} ${/"(RB_ERR_\w+)"/.exec(ans.text)?.[1] ?? ans.text.slice(0, 40)}`;
    answers.set(code, (answers.get(code) ?? 0) + 1);
    const movedAt = spy.motionAt[motions0];
    if (!ep.isEnded || (movedAt !== undefined && movedAt < t0)) {
      r.disturbed++;
      const why = !ep.isEnded ? "episode not ended" : "e-stop written after the act's motion began";
      r.disturbances.set(why, (r.disturbances.get(why) ?? 0) + 1);
    } else if (spy.stops.length === stops0) r.missed++;
    else {
      if (!(actAt < t0)) beforeAct++;
      r.traces.push(estopTrace(spy, stops0, t0));
    }
    probe.phase = "estop-planning: between samples";
    await api(g, "POST", "/v1/admin/release", {}, "operator");
  }
  r.note =
    `sim; e-stop written 0.5–8 ms after an act of ${PLAN_ROWS} tool poses; ${beforeAct} of ${r.traces.length} before the act reached the episode (body parse, validation); act answers: ` +
    [...answers].map(([c, n]) => `${c} ×${n}`).join(", ");
}

const nowNs = () => process.hrtime.bigint();

/**
 * Child: a sim gateway with serve's signal handling; prints READY mid-chunk, then on stop()
 * `RECV <ns>` (stamped by a SIGTERM listener put before serve's), `STOP <ns> <attribution json>`
 * (stamped first thing in the outermost stop() wrapper; the probe's window from READY to the
 * stop) and `CONFIRMED <ns>` when the stop settled.
 */
async function signalChild(): Promise<void> {
  // as serve does for a bench that asks for it, before the gateway is composed
  if (RT !== "off") await applyRealtimeScheduling(RT);
  const serveMod = (await import("../cli/serve.ts")) as Record<string, unknown>;
  const exitOnSignals = serveMod.exitOnSignals as
    | ((s: { url: string; gateway: unknown; close(): Promise<void> }, log?: (l: string) => void) => void)
    | undefined;
  if (typeof exitOnSignals !== "function") {
    console.log("UNAVAILABLE cli/serve.ts has no exitOnSignals: no signal stop path on this branch");
    process.exit(0);
  }
  probe.start();
  const g = await testGateway({ robot: "fr3", backend: { type: "sim" }, task: { id: "free-motion" } });
  const backend = g.gateway.bench.backend;
  let reported = false;
  let readyAt = Number.NaN;
  let recvAt: bigint | undefined;
  exitOnSignals({ url: "", gateway: g.gateway, close: () => g.close() }, () => {});
  // only a stamp in the window: its line is written with the stop's (a write here ran before
  // serve's handler, ~0.1-0.2 ms of the bench's own in the figure until round 6)
  process.prependListener("SIGTERM", () => {
    recvAt ??= nowNs();
  });
  // a fresh process's first sim steps are slow once (WebAssembly, JIT: 0.1–3 s): a gateway that
  // gets a signal has run for a while, so the sim is warmed first; the stop path stays cold (a
  // signal comes once per process)
  await backend.hold(0.2);
  if (args.includes("--signal-warm")) {
    // the stop path run once before (an e-stop mid-chunk, released, a new episode): how much of
    // the signal's figure is a cold path (first calls compiled lazily); not reported
    reported = true;
    const r0 = backend.read();
    const rows0 = Array.from({ length: 30 }, () => [...r0.q, r0.gripperWidthM]);
    const act = api(g, "POST", "/v1/act", { type: "joint_position", dt: DT_S, rows: rows0 });
    await sleep(5);
    await api(g, "POST", "/v1/admin/estop", { reason: "warm-up" }, "operator");
    await act;
    await api(g, "POST", "/v1/admin/release", {}, "operator");
    await api(g, "POST", "/v1/admin/episodes", { task: "free-motion" }, "operator");
    reported = false;
  }
  const spy = spyOn(backend);
  // the stamp outermost: the spy's bookkeeping (cold code in this process) is not in the figure
  const stop = backend.stop.bind(backend);
  backend.stop = (reason: string) => {
    const at = nowNs();
    const atMs = performance.now();
    const p = stop(reason);
    if (!reported) {
      reported = true;
      const why = probe.window(readyAt, atMs);
      if (recvAt !== undefined) process.stdout.write(`RECV ${recvAt}\n`);
      process.stdout.write(`STOP ${at} ${JSON.stringify(why)}\n`);
      p.then(() => process.stdout.write(`CONFIRMED ${nowNs()}\n`)).catch(() => {});
    }
    return p;
  };
  const r = backend.read();
  const rows = Array.from({ length: Math.round(CHUNK_S / DT_S) }, () => [...r.q, r.gripperWidthM]);
  void api(g, "POST", "/v1/act", { type: "joint_position", dt: DT_S, rows });
  while (spy.motions === 0) await sleep(1);
  await sleep(30); // well inside the motion, as for every other source
  readyAt = performance.now();
  process.stdout.write("READY\n");
}

async function signalRows(): Promise<void> {
  if (!wanted("signal")) return;
  const r = row(
    "signal",
    "no-fault",
    TARGET_P99_MS,
    `sim gateway in a child process, SIGTERM mid-chunk; stop path ${WARM_SIGNAL ? "warm (--signal-warm)" : "cold"}`,
  );
  const self = fileURLToPath(import.meta.url);
  for (let k = 0; k < Math.min(SAMPLES, CAPPED); k++) {
    const childArgs = [
      "--import",
      "tsx",
      self,
      "--signal-child",
      "--rt-priority",
      String(RT),
      ...(WARM_SIGNAL ? ["--signal-warm"] : []),
    ];
    // started as serve's launcher starts it (its node options)
    const child = spawn(process.execPath, [...LATENCY_NODE_ARGS, ...childArgs], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    let sent: bigint | undefined;
    const done = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      if (sent === undefined && out.includes("READY\n")) {
        sent = nowNs();
        child.kill("SIGTERM");
      }
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    await done;
    clearTimeout(timer);
    const unavailable = /UNAVAILABLE (.*)/.exec(out);
    if (unavailable) {
      r.note = `unavailable: ${unavailable[1]}`;
      return;
    }
    const stopAt = /STOP (\d+) (.*)/.exec(out);
    if (sent === undefined || !stopAt) {
      r.missed++;
      continue;
    }
    const ms = (re: RegExp) => {
      const m = re.exec(out);
      return m ? Number(BigInt(m[1]!) - sent!) / 1e6 : Number.NaN;
    };
    r.traces.push({
      board: Number.NaN,
      recv: ms(/RECV (\d+)/),
      told: Number.NaN,
      stop: Number(BigInt(stopAt[1]!) - sent) / 1e6,
      confirmed: ms(/CONFIRMED (\d+)/),
      why: JSON.parse(stopAt[2]!) as Attribution,
    });
  }
}

// ───────────── the HTTP client, in a child process ─────────────

/**
 * The agent's and the operator's HTTP requests (acts, e-stops) come from a child process over
 * real sockets, as a lab's clients do: the request's parse and the e-stop's receipt are the
 * gateway's work on a socket read, and the client's own work (building, writing, reading the
 * answer) does not run on the gateway's event loop. One keep-alive connection per lane (agent,
 * operator, per gateway); the child stamps each request's write to the socket on CLOCK_MONOTONIC
 * (process.hrtime, as the signal source does) and the parent maps it onto performance.now().
 */
interface ClientReq {
  id: number;
  lane: string;
  url: string;
  path: string;
  authorization: string;
  body: unknown;
  /** send this long after the request `afterId` was written (the child's timer), ms */
  afterId?: number;
  delayMs?: number;
}

interface ClientAnswer {
  status: number;
  text: string;
}

interface Client {
  /** POST `path` with `body` as the agent or the operator: when it was written (performance.now()) and the answer */
  send(
    g: TestGateway,
    who: "agent" | "operator",
    path: string,
    body: unknown,
    after?: { id: number; delayMs: number },
  ): { id: number; sent: Promise<number>; answer: Promise<ClientAnswer> };
  close(): void;
}

/** performance.now() of a CLOCK_MONOTONIC stamp (ns): both clocks are libuv's hrtime */
const perfBase = performance.now();
const hrBase = process.hrtime.bigint();
const hrToPerf = (ns: bigint) => perfBase + Number(ns - hrBase) / 1e6;

const urls = new Map<TestGateway, string>();
/** Serve `g` on a loopback port as well (the client child's requests). */
async function listen(g: TestGateway): Promise<TestGateway> {
  urls.set(g, await g.app.listen({ host: "127.0.0.1", port: 0 }));
  g.app.server.prependListener("request", (req: { url?: string }) => {
    if (req.url === "/v1/admin/estop") estopHttpAt = performance.now();
  });
  return g;
}

/** when node's http server last parsed an e-stop request's headers (performance.now()) */
let estopHttpAt = Number.NaN;

let clientProcess: Client | undefined;
const client = (): Client => {
  if (!clientProcess) throw new Error("the client child is not running");
  return clientProcess;
};

function startClientChild(): Client {
  // the agent and the operator run under the normal scheduler, not at the bench's priority
  const child: ChildProcess = spawnOtherComputer(
    ["--import", "tsx", fileURLToPath(import.meta.url), "--client-child"],
    { stdio: ["ignore", "inherit", "inherit", "ipc"] },
  );
  let next = 0;
  const sent = new Map<number, (t: number) => void>();
  const answered = new Map<number, (a: ClientAnswer) => void>();
  child.on("message", (m: { id: number; sentNs?: string; status?: number; text?: string }) => {
    if (m.sentNs !== undefined) sent.get(m.id)?.(hrToPerf(BigInt(m.sentNs)));
    else answered.get(m.id)?.({ status: m.status!, text: m.text! });
  });
  return {
    send(g, who, path, body, after) {
      const id = next++;
      const url = urls.get(g);
      if (!url) throw new Error("gateway not listening");
      const req: ClientReq = {
        id,
        lane: `${who} ${url}`,
        url,
        path,
        authorization: who === "agent" ? g.agent.authorization : g.operator.authorization,
        body,
        ...(after ? { afterId: after.id, delayMs: after.delayMs } : {}),
      };
      const s = new Promise<number>((r) => sent.set(id, r));
      const a = new Promise<ClientAnswer>((r) => answered.set(id, r));
      child.send(req);
      return { id, sent: s, answer: a };
    },
    close: () => child.kill(),
  };
}

/** One keep-alive HTTP/1.1 connection, one request at a time. */
class Lane {
  private sock: Socket | undefined;
  private buf: Buffer = Buffer.alloc(0);
  private pending: ((a: ClientAnswer) => void) | undefined;
  private lastUsed = 0;

  constructor(private readonly url: URL) {}

  /** connected, and not idle long enough for the server to close it (keepAliveTimeoutMs 5 s) */
  async ready(): Promise<void> {
    if (this.sock && !this.sock.destroyed && performance.now() - this.lastUsed < 3000) return;
    this.sock?.destroy();
    const sock = connect({ host: this.url.hostname, port: Number(this.url.port) });
    sock.setNoDelay(true);
    await new Promise<void>((resolve, reject) => {
      sock.once("connect", resolve);
      sock.once("error", reject);
    });
    sock.on("data", (d: Buffer) => this.onData(d));
    sock.on("close", () => {
      this.pending?.({ status: 0, text: "connection closed" });
      this.pending = undefined;
    });
    sock.on("error", () => {});
    this.sock = sock;
    this.buf = Buffer.alloc(0);
  }

  /** write the request; returns the CLOCK_MONOTONIC time just before the write */
  send(
    path: string,
    authorization: string,
    body: unknown,
  ): { sentNs: bigint; answer: Promise<ClientAnswer> } {
    const json = Buffer.from(JSON.stringify(body));
    const head =
      `POST ${path} HTTP/1.1\r\nHost: ${this.url.host}\r\nAuthorization: ${authorization}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${json.length}\r\n\r\n`;
    const msg = Buffer.concat([Buffer.from(head, "latin1"), json]);
    const answer = new Promise<ClientAnswer>((resolve) => {
      this.pending = resolve;
    });
    const sentNs = process.hrtime.bigint();
    this.sock!.write(msg);
    this.lastUsed = performance.now();
    return { sentNs, answer };
  }

  private onData(d: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
    const end = this.buf.indexOf("\r\n\r\n");
    if (end < 0 || !this.pending) return;
    const head = this.buf.toString("latin1", 0, end);
    const len = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
    if (this.buf.length < end + 4 + len) return;
    const status = Number(head.slice(9, 12));
    const text = this.buf.toString("utf8", end + 4, end + 4 + len);
    this.buf = this.buf.subarray(end + 4 + len);
    this.lastUsed = performance.now();
    const p = this.pending;
    this.pending = undefined;
    p({ status, text });
  }
}

async function clientChild(): Promise<void> {
  const lanes = new Map<string, Lane>();
  const sentAt = new Map<number, bigint>();
  const go = async (m: ClientReq) => {
    let lane = lanes.get(m.lane);
    if (!lane) lanes.set(m.lane, (lane = new Lane(new URL(m.url))));
    await lane.ready();
    if (m.afterId !== undefined) {
      // the delay counts from the earlier request's write
      while (!sentAt.has(m.afterId)) await sleep(0);
      const due = sentAt.get(m.afterId)! + BigInt(Math.round((m.delayMs ?? 0) * 1e6));
      const wait = Number(due - process.hrtime.bigint()) / 1e6;
      if (wait > 0) await sleep(wait);
    }
    const { sentNs, answer } = lane.send(m.path, m.authorization, m.body);
    sentAt.set(m.id, sentNs);
    process.send!({ id: m.id, sentNs: String(sentNs) });
    const a = await answer;
    process.send!({ id: m.id, status: a.status, text: a.text });
  };
  process.on("message", (m: ClientReq) => {
    void go(m);
  });
  exitWithBench();
}

// ───────────── main ─────────────

const f = (x: number) => (Number.isNaN(x) ? "    –  " : x.toFixed(3).padStart(8));
const g1 = (x: number | null) => (x === null || Number.isNaN(x) ? "–" : x.toFixed(1));
const col = (ts: Trace[], key: (t: Trace) => number) => ts.map(key).filter((x) => !Number.isNaN(x));

/** What made one sample slow, from its stages and the probe's window. */
function attribute(t: Trace): string {
  const w = t.why;
  const parts: string[] = [];
  if (w.gapMs > 1.5) {
    const cpu = w.gapCpuMs ?? Number.NaN;
    const runq = w.gapRunqMs ?? Number.NaN;
    const slept = w.gapMs - cpu - runq;
    const main = Number.isNaN(cpu)
      ? "loop gap"
      : cpu >= Math.max(runq, slept)
        ? "loop busy"
        : runq >= slept
          ? "waiting for a CPU (machine load)"
          : "main thread asleep (blocked)";
    parts.push(
      `${main} ${g1(w.gapMs)} ms from +${g1(w.gapStartMs)} (on CPU ${g1(cpu)}, run queue ${g1(runq)}, asleep ${g1(slept)}) in "${w.gapPhase}"`,
    );
  }
  if (w.gcMs > 0) parts.push(`GC ${w.gcMs.toFixed(2)} ms (${w.gcKinds})`);
  if (w.poolMs > 1.5) parts.push(`threadpool job waited ${g1(w.poolMs)} ms`);
  if (w.fileOps) parts.push(`file ops in flight: ${w.fileOps}`);
  if ((w.socatRunqMs ?? 0) > 0.5) parts.push(`socat waited ${g1(w.socatRunqMs!)} ms for a CPU`);
  if (parts.length === 0) parts.push("no loop gap > 1.5 ms, no GC, threadpool prompt");
  return parts.join("; ");
}

/** event → board write → gateway got it → stop → confirmed, for one sample */
function stages(t: Trace): string {
  const out = [`stop ${g1(t.stop)}`];
  if (!Number.isNaN(t.board)) out.push(`board ${g1(t.board)}`);
  const http = t.http ?? Number.NaN;
  if (!Number.isNaN(http)) out.push(`→ http ${g1(http)} → handler ${g1(t.recv - http)}`);
  else if (!Number.isNaN(t.recv)) out.push(`→ recv ${g1(t.recv - (Number.isNaN(t.board) ? 0 : t.board))}`);
  if (!Number.isNaN(t.recv)) {
    out.push(`→ gateway ${g1(t.stop - t.recv)}`);
  }
  out.push(`| confirmed +${g1(t.confirmed - t.stop)}`);
  return out.join(" ");
}

function print(): void {
  console.log(
    `\nevent → backend.stop() call, ms (control period ${CONTROL_PERIOD_MS} ms; target p99 ≤ ${TARGET_P99_MS} ms; nearest rank: p99 = max while n ≤ 100)`,
  );
  for (const r of rows) {
    const lat = col(r.traces, (t) => t.stop);
    const ok = lat.length > 0 && r.missed === 0 && pct(lat, 99) <= r.targetMs;
    console.log(
      `${r.name.padEnd(16)} n=${String(lat.length).padStart(3)}${r.missed ? ` missed=${r.missed}` : ""}${r.disturbed ? ` disturbed=${r.disturbed}` : ""}` +
        `  p50 ${f(pct(lat, 50))}  p90 ${f(pct(lat, 90))}  p99 ${f(pct(lat, 99))}  max ${f(lat.length ? Math.max(...lat) : Number.NaN)}` +
        `  ${lat.length ? (ok ? "OK" : "OVER") : ""} (target p99 ≤ ${r.targetMs} ms)` +
        (r.note ? `  [${r.note}]` : ""),
    );
    const stage = (label: string, xs: number[]) =>
      xs.length ? `${label} p50 ${g1(pct(xs, 50))}/p99 ${g1(pct(xs, 99))}` : "";
    const line = [
      stage(
        "board write",
        col(r.traces, (t) => t.board),
      ),
      stage(
        "→ gateway got it",
        col(r.traces, (t) => t.recv - (Number.isNaN(t.board) ? 0 : t.board)),
      ),
      stage(
        "(of it: → HTTP request parsed",
        col(r.traces, (t) => t.http ?? Number.NaN),
      ),
      stage(
        "→ e-stop handler)",
        col(r.traces, (t) => t.recv - (t.http ?? Number.NaN)),
      ),
      stage(
        "→ stop (in the gateway)",
        col(r.traces, (t) => t.stop - t.recv),
      ),
      stage(
        "motion told",
        col(r.traces, (t) => t.told),
      ),
      stage(
        "stop → confirmed",
        col(r.traces, (t) => t.confirmed - t.stop),
      ),
    ].filter((x) => x);
    console.log(`${"".padEnd(17)}stages ms: ${line.join(", ")}`);
    for (const [why, n] of r.disturbances) console.log(`${"".padEnd(17)}disturbed ×${n}: ${why}`);
    // the slowest first
    const slow = r.traces
      .filter((t) => t.stop > Math.min(SLOW_MS, r.targetMs))
      .sort((a, b) => b.stop - a.stop);
    for (const t of slow.slice(0, 12))
      console.log(
        `${"".padEnd(17)}slow: ${stages(t)} — ${attribute(t)}` +
          // CLOCK_MONOTONIC of the event, s: `perf record -k mono` stamps its samples on that clock
          (t.at !== undefined
            ? ` [event at CLOCK_MONOTONIC ${((t.at + MONO_MINUS_NOW) / 1000).toFixed(6)} s]`
            : ""),
      );
    if (slow.length > 12) console.log(`${"".padEnd(17)}(${slow.length - 12} more slow samples)`);
  }
}

if (args.includes("--signal-child")) {
  await signalChild();
} else if (args.includes("--client-child")) {
  await clientChild();
} else {
  let autogroup = "no autogroup";
  try {
    autogroup = readFileSync("/proc/self/autogroup", "latin1").trim();
  } catch {
    // not Linux, or autogroups off
  }
  console.log(
    `stop latency per source, ${SAMPLES} samples each (watchdog and signal at most ${CAPPED}, firmata-hang 20); ${cpus().length} CPUs, load ${loadavg()[0]!.toFixed(2)}; ${autogroup}, nice ${osPriority()}`,
  );
  console.log(
    `scheduling: ${await benchScheduling(RT)}${RT === "off" ? "" : `; socat relays at SCHED_FIFO ${RT + 1}`}`,
  );
  // the machine's cost of one message between processes (an e-stop's write wakes the gateway),
  // measured before anything else starts
  const crossLine = await crossProcessReference();
  // the machine's own wake-up latency over the run: the reference beside the figures
  const machine = machineWakeReference();
  // how long this process's event loop was kept from running (the floor under every stop)
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  probe.start();
  await trackFileOps();
  clientProcess = startClientChild();
  const realWanted = [
    "contact-buzzbox",
    "contact-firmata",
    "estop",
    "estop-start",
    "watchdog",
    "firmata-hang",
  ].some(wanted);
  if (realWanted) {
    const rig = await startRigChild();
    try {
      if (["contact-buzzbox", "estop", "estop-start", "watchdog"].some(wanted))
        await contactRows(rig, "buzzbox");
      if (["contact-firmata", "firmata-hang"].some(wanted)) await contactRows(rig, "firmata");
    } finally {
      await rig.close();
    }
  }
  await simRows();
  clientProcess.close();
  await signalRows();
  loop.disable();
  probe.stop();
  print();
  if (simTurns.length)
    console.log(
      `sim chunk: event-loop turn (the sim's slice of control steps, yieldSliceMs 0.25, + one turn) p50 ${pct(simTurns, 50).toFixed(3)} p99 ${pct(simTurns, 99).toFixed(3)} max ${Math.max(...simTurns).toFixed(3)} ms over ${simTurns.length} turns; the abort is checked at every control step`,
    );
  console.log(`GC pauses of the gateway process over the run: ${probe.gcSummary()}`);
  // the in-process gateways' motions (execute → settled; the signal source's are in its children)
  const motions = spies.flatMap((sp) =>
    sp.motionAt.map(
      (a, i) => [a, Number.isNaN(sp.motionEnd[i]!) ? performance.now() : sp.motionEnd[i]!] as const,
    ),
  );
  console.log(
    `old-generation GC pauses (mark-compact, incremental marking) of the gateway process: ${probe.majorGcIn(motions)}; ${motions.length} motions`,
  );
  // an act's start (the act's write → its motion running 30 ms, or its refusal): what a stop that
  // arrives then waits for at most; the first sample of a gateway runs cold code (compiled on first use)
  const actStart = probe.longGaps.filter((x) => /^[^→]*(chunk|act) start \(sample [1-9]/.test(x.phase));
  const cpu = actStart.map((x) => x.cpuMs).sort((a, b) => b - a);
  // of the gaps with over 2 ms of CPU: how many a GC pause overlaps, and that CPU less the GC
  const busy = actStart
    .filter((x) => x.cpuMs > 2)
    .map((x) => ({ x, gc: probe.gcIn(x.start, x.start + x.ms).ms }));
  const noGc = busy.map((b) => Math.max(0, b.x.cpuMs - b.gc)).sort((a, b) => b - a);
  console.log(
    `act start (samples after the first of each gateway): ${actStart.length} loop gaps over 2 ms; process on CPU in them: max ${cpu.length ? cpu[0]!.toFixed(1) : "–"} ms, ${busy.length} over 2 ms of CPU` +
      (cpu.length
        ? `; the longest: ${cpu
            .slice(0, 5)
            .map((c) => c.toFixed(1))
            .join(
              ", ",
            )} ms; ${busy.filter((b) => b.gc > 0).length} of those overlap a GC pause; CPU less GC: max ${noGc.length ? noGc[0]!.toFixed(1) : "–"} ms, ${noGc.filter((c) => c > 2).length} over 2 ms`
        : ""),
  );
  const firsts = probe.longGaps.filter((x) => /^[^→]*(chunk|act) start \(sample 0\)/.test(x.phase));
  if (firsts.length)
    console.log(
      `act start, first sample of each gateway (cold code): longest gaps ${firsts
        .sort((a, b) => b.cpuMs - a.cpuMs)
        .slice(0, 4)
        .map((x) => `${x.ms.toFixed(1)} ms (CPU ${x.cpuMs.toFixed(1)}) in "${x.phase}"`)
        .join(", ")}`,
    );
  const long = probe.longGaps.filter((x) => x.ms > 10);
  const top = [...long].sort((a, b) => b.ms - a.ms).slice(0, 8);
  console.log(
    `longest event-loop gaps of the gateway process (probe timer, 1 ms): ${long.length} over 10 ms${top.length ? "; the longest:" : ""}`,
  );
  for (const x of top) {
    const gc = probe.gcIn(x.start, x.start + x.ms);
    console.log(
      `  ${x.ms.toFixed(1)} ms during "${x.phase}": main thread on CPU ${x.cpuMs.toFixed(1)}, run queue ${x.runqMs.toFixed(1)}, asleep ${(x.ms - x.cpuMs - x.runqMs).toFixed(1)}${gc.ms ? `; GC ${gc.ms.toFixed(1)} ms (${gc.kinds})` : ""}`,
    );
  }
  console.log(
    machine ? await machine.stop() : "machine reference: unavailable (cyclictest: apt-get install rt-tests)",
  );
  console.log(crossLine);
  console.log(
    `event-loop delay of the gateway process over the run: p50 ${(loop.percentile(50) / 1e6).toFixed(2)} ms, p99 ${(loop.percentile(99) / 1e6).toFixed(2)} ms, max ${(loop.max / 1e6).toFixed(2)} ms (1 ms resolution); load now ${loadavg()[0]!.toFixed(2)}`,
  );
  process.exit(0);
}
