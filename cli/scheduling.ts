/**
 * Real-time CPU scheduling of the gateway process (Linux SCHED_FIFO).
 *
 * Every stop source reaches the backend's stop() on the gateway's event-loop thread. Under the
 * normal scheduler (CFS) that thread waits on a run queue whenever other processes want the CPU
 * (the agent, its tools, a compiler, a browser), for milliseconds at a time. A robot controller
 * does not run that way: ros2_control's controller_manager configures SCHED_FIFO priority 50 for
 * its control thread "independent of the kernel installed", and franka_ros2 runs on it. The
 * gateway does the same when the bench file asks (`scheduling.rtPriority`, or
 * `serve --rt-priority N`):
 *
 * - the event-loop thread gets SCHED_FIFO at `rtPriority`: it runs the moment a contact byte, an
 *   e-stop request or a signal makes it runnable, ahead of every normal process;
 * - every other thread of the process (V8's GC and compiler helpers, libuv's file threadpool)
 *   gets SCHED_FIFO one below: the event loop waits on them (a GC's parallel phase, a
 *   threadpool hand-off), so they must not wait behind normal processes either, yet they never
 *   preempt the loop. libuv's pool is started first, so its threads exist when the priorities
 *   are set;
 * - SCHED_RESET_ON_FORK on every thread: processes the gateway starts (agents under `run`,
 *   ffmpeg for act videos, ROS tools) run under the normal scheduler, never real-time. The
 *   kernel applies it to every clone, threads included: a thread made later starts under the
 *   normal scheduler too. So the threads a bench's drivers start while it is composed (a native
 *   ROS 2 transport's executor and DDS threads, on the readings' path) are raised to the
 *   helpers' priority once it is composed (`raiseNewThreads`, by serve and run); threads made
 *   after that stay under the normal scheduler — sharp's libvips pool, made at the first image
 *   encode: CPU-bound work on no stop's path, which under SCHED_FIFO would take a core from the
 *   agent and be throttled by the kernel (below).
 *
 * Linux keeps 5 % of each second for normal tasks (kernel.sched_rt_runtime_us), so a runaway
 * real-time gateway cannot lock the machine. Memory is not locked (Node has no mlockall); a
 * page fault can still stall the loop.
 *
 * Two node options keep the event loop's GC pauses short and its own, whatever the scheduling.
 * V8's `--single-threaded-gc`: user stacks of the main thread's off-CPU time while a stop was
 * pending (`perf record -e sched:sched_switch --call-graph dwarf`, docs/decisions.md "Real-time
 * scheduling") showed a scavenge joining its helper threads for up to 14 ms (a helper that had
 * not got a CPU yet) and handing them tasks (glibc's condition variable waits for an earlier-woken
 * waiter); on the loop thread alone a scavenge is its own work, and no slower on two cores
 * (bench/gateway-overhead.ts). Then a scavenge's length was what was alive in the young
 * generation when it filled (2.5–7 ms when that was a chunk's start being prepared): a young
 * generation of at most 2 MB a semi-space (`--max-semi-space-size=2`, V8's default grows to 16)
 * bounds what one scavenge can copy (longest 6 ms, average 0.75 ms instead of 2.9, in the stop
 * bench), for ~2× the total GC time and ~12 % of the simulator's steps per second
 * (bench/sim-abort-poll.ts, one run each: 58,400 → 51,400; it still runs ~50× real time). Both
 * must be set when node starts: the launchers (bin/robot-gateway.mjs, `npm start`) pass them
 * (LATENCY_NODE_ARGS) and `latencySettings()` says whether this process has them. A third,
 * `--expose-gc`, gives the gateway V8's `gc`: the realtime loop collects the young generation
 * right after a commit, before V8 would at a worse moment (gateway/episode/young-gc.ts), and each
 * episode start collects the old generation while nothing moves (gateway/episode/old-gc.ts). Not used:
 * libuv's io_uring for file operations (UV_USE_IO_URING=1
 * removed the threadpool's mutex waits, but libuv's ring polls its submission queue from a kernel
 * thread that spun 36 s of CPU in a 4-minute bench run — a core a robot PC's agent needs).
 *
 * The priorities are set with util-linux's `chrt` (Node has no sched_setscheduler) and read back
 * from /proc. Setting them needs CAP_SYS_NICE or an RLIMIT_RTPRIO of at least the priority (the
 * `rtprio` line of /etc/security/limits.conf, as ros2_control's docs describe). A bench that asks
 * and cannot get it is refused with RB_ERR_RT_SCHEDULING: a lab that configured real-time
 * scheduling must not silently run without it (`--rt-priority off` runs normally, on purpose).
 */
import { spawnSync } from "node:child_process";
import { InvalidArgumentError } from "commander";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { stat } from "node:fs/promises";
import { CodedError } from "../seam/errors.ts";

/** node options the gateway's launchers pass (bin/robot-gateway.mjs's shebang, package.json's start) */
export const LATENCY_NODE_ARGS = ["--single-threaded-gc", "--max-semi-space-size=2", "--expose-gc"] as const;

/** Whether this process runs with the launchers' latency settings (all of LATENCY_NODE_ARGS). */
export function latencySettings(): { nodeArgs: boolean } {
  return { nodeArgs: LATENCY_NODE_ARGS.every((a) => process.execArgv.includes(a)) };
}

/** Linux scheduling policies by number (sched.h), as /proc/<pid>/stat reports them. */
const POLICY = ["other", "fifo", "rr", "batch", "iso", "idle", "deadline"] as const;
export type SchedPolicy = (typeof POLICY)[number] | "unknown";

export interface ThreadScheduling {
  tid: number;
  /** the thread's name (comm) */
  name: string;
  policy: SchedPolicy;
  /** real-time priority, 1–99 (0 under a normal policy) */
  rtPriority: number;
}

/**
 * The scheduling of every thread of a process, read from /proc/<pid>/task/<tid>/stat (fields 40
 * rt_priority and 41 policy; the name in parentheses may hold spaces, so fields are counted
 * after its closing parenthesis).
 */
export function readThreadScheduling(pid: number = process.pid): ThreadScheduling[] {
  const out: ThreadScheduling[] = [];
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/task/${t}/stat`, "latin1");
    } catch {
      continue; // the thread ended meanwhile
    }
    const close = text.lastIndexOf(")");
    const rest = text.slice(close + 2).split(" ");
    // rest[0] is field 3 (state): field n is rest[n - 3]
    const rtPriority = Number(rest[40 - 3]);
    const policy = POLICY[Number(rest[41 - 3])] ?? "unknown";
    out.push({ tid: Number(t), name: text.slice(text.indexOf("(") + 1, close), policy, rtPriority });
  }
  return out;
}

export interface AppliedScheduling {
  /** the event loop's priority */
  rtPriority: number;
  /** every thread after the change */
  threads: ThreadScheduling[];
  /** one line for the log */
  summary: string;
}

/**
 * Run a util-linux tool (chrt, taskset: Node has neither system call); its failure, or its
 * absence, becomes the refusal `refuse` makes of the reason
 */
function utilLinux(tool: string, args: string[], refuse: (reason: string) => CodedError): void {
  const r = spawnSync(tool, args, { encoding: "utf8" });
  if (r.error) {
    throw refuse(
      `${tool} could not run (${(r.error as NodeJS.ErrnoException).code ?? r.error.message}); it is util-linux's ${tool}`,
    );
  }
  if (r.status !== 0)
    throw refuse((r.stderr || r.stdout || `${tool} exited ${r.status}`).trim().replace(/\s+/g, " "));
}

/** `chrt` with its failure turned into the coded refusal */
function chrt(args: string[], priority: number): void {
  utilLinux("chrt", args, (reason) => new CodedError("RB_ERR_RT_SCHEDULING", { priority, reason }));
}

/** what this process's GC runs with, for the log lines */
function latencyText(): string {
  const missing = LATENCY_NODE_ARGS.filter((a) => !process.execArgv.includes(a));
  if (!missing.length)
    return "GC on the loop thread, young generation ≤ 2 MB, collected between realtime steps, old generation before each episode";
  const pauses = missing.some((a) => a !== "--expose-gc");
  return (
    `started without node ${missing.join(" ")} (the launchers pass ${missing.length > 1 ? "them" : "it"}): ` +
    (pauses ? "GC pauses can wait for helper threads and run long" : "") +
    (pauses && missing.includes("--expose-gc") ? "; " : "") +
    (missing.includes("--expose-gc")
      ? "the realtime loop leaves its young-generation collections to V8, and the old generation's fall where V8 puts them (also inside a motion)"
      : "")
  );
}

/**
 * Put this process under SCHED_FIFO (see the module note): the event-loop thread at `priority`,
 * every other thread at `priority − 1`, all with SCHED_RESET_ON_FORK. Throws
 * RB_ERR_RT_SCHEDULING when the system refuses (its callers, serve and run, then end: a
 * process left with its helpers raised and its loop not is never served from).
 */
export async function applyRealtimeScheduling(priority: number): Promise<AppliedScheduling> {
  if (!Number.isInteger(priority) || priority < 2 || priority > 99) {
    throw new CodedError("RB_ERR_RT_SCHEDULING", {
      priority,
      reason: "the priority must be a whole number 2–99",
    });
  }
  if (process.platform !== "linux") {
    throw new CodedError("RB_ERR_RT_SCHEDULING", { priority, reason: `not Linux (${process.platform})` });
  }
  // libuv starts all its pool threads at the first job: start them now, so that they take the
  // helpers' priority below instead of inheriting the loop's when they are made later
  await stat(".");
  const pid = String(process.pid);
  chrt(["--all-tasks", "--reset-on-fork", "--fifo", "--pid", String(priority - 1), pid], priority);
  // the event loop runs on the main thread, whose thread id is the process id
  chrt(["--reset-on-fork", "--fifo", "--pid", String(priority), pid], priority);
  const threads = readThreadScheduling();
  const main = threads.find((t) => t.tid === process.pid);
  if (main?.policy !== "fifo" || main.rtPriority !== priority) {
    throw new CodedError("RB_ERR_RT_SCHEDULING", {
      priority,
      reason: `the event loop's thread reads ${main?.policy ?? "?"} ${main?.rtPriority ?? "?"} after chrt`,
    });
  }
  const helpers = threads.filter((t) => t.tid !== process.pid);
  const fifoHelpers = helpers.filter((t) => t.policy === "fifo").length;
  return {
    rtPriority: priority,
    threads,
    summary:
      `SCHED_FIFO ${priority} for the event loop, ${priority - 1} for ${fifoHelpers} of ${helpers.length} ` +
      `other threads; processes it starts run under the normal scheduler; ${latencyText()}`,
  };
}

/**
 * Raise the threads made since `applied` was set (or last raised) to its helpers' priority,
 * `rtPriority − 1`, with SCHED_RESET_ON_FORK (see the module note: the kernel starts each of them
 * under the normal scheduler). serve and run call it once the bench is composed. Throws
 * RB_ERR_RT_SCHEDULING as applyRealtimeScheduling does; a thread that ends meanwhile is passed over.
 * @returns the threads after the change, and how many were raised
 */
export function raiseNewThreads(applied: AppliedScheduling): AppliedScheduling & { raised: number } {
  const helper = applied.rtPriority - 1;
  let raised = 0;
  for (const t of readThreadScheduling()) {
    if (t.tid === process.pid || t.policy === "fifo") continue;
    try {
      chrt(["--reset-on-fork", "--fifo", "--pid", String(helper), String(t.tid)], applied.rtPriority);
      raised++;
    } catch (e) {
      if (existsSync(`/proc/self/task/${t.tid}`)) throw e;
    }
  }
  const threads = readThreadScheduling();
  return { ...applied, threads, raised };
}

/**
 * After a bench is composed under `applied`: raise the threads its drivers started meanwhile
 * (raiseNewThreads) and say so; when that is refused, the gateway is closed and the refusal thrown
 * (no gateway serves with part of its threads raised).
 */
export async function raiseComposedThreads(
  applied: AppliedScheduling,
  gateway: { close(): Promise<void> },
  logPrefix: string,
): Promise<void> {
  try {
    const r = raiseNewThreads(applied);
    if (r.raised) {
      console.error(
        `${logPrefix}: ${r.raised} thread(s) the bench started while composed raised to SCHED_FIFO ${applied.rtPriority - 1}`,
      );
    }
  } catch (e) {
    await gateway.close();
    throw e;
  }
}

/** `--rt-priority`: a whole number 2–99, or "off" (the normal scheduler whatever the bench says) */
export type RtPriorityOverride = number | "off";

/** parse `--rt-priority` (commander's argument parser: a bad value is a usage error) */
export function rtPriorityArg(value: string): RtPriorityOverride {
  if (value === "off") return "off";
  const n = Number(value);
  if (!Number.isInteger(n) || n < 2 || n > 99)
    throw new InvalidArgumentError(`--rt-priority: ${value} is not a whole number 2–99 or "off"`);
  return n;
}

export const RT_PRIORITY_HELP =
  "SCHED_FIFO priority of the gateway's event loop (2–99; its other threads one below), or off (default: the bench file's scheduling.rtPriority)";

/**
 * The scheduling a bench file asks for (`scheduling.rtPriority`), overridden from the command
 * line; applied to this process when it asks for one (see applyRealtimeScheduling). Returns
 * what was set, or undefined under the normal scheduler.
 */
export async function applyBenchScheduling(
  scheduling: { readonly rtPriority?: number | undefined },
  override?: RtPriorityOverride,
): Promise<AppliedScheduling | undefined> {
  const priority = override ?? scheduling.rtPriority;
  if (priority === undefined || priority === "off") return undefined;
  return applyRealtimeScheduling(priority);
}

/**
 * For benches: apply `--rt-priority` to this process (a number) or leave the normal scheduler
 * ("off"), and say what the process runs with, in one line.
 */
export async function benchScheduling(rt: RtPriorityOverride): Promise<string> {
  if (rt !== "off") return (await applyRealtimeScheduling(rt)).summary;
  return `the normal scheduler (--rt-priority off); ${latencyText()}`;
}

/**
 * CPU affinity (`scheduling.cpuAffinity`, `--cpu-affinity`), as ros2_control_node's
 * `cpu_affinity` binds the controller manager to chosen cores. Real-time priority decides who
 * runs first on a CPU; it does not keep the gateway and the agent off each other's CPU. On a
 * shared CPU each message the agent writes wakes the gateway's SCHED_FIFO loop, which then
 * preempts the agent in the middle of its own send (bench/realtime.ts, 2 CPUs: the agent's
 * serialisation and write p99 1.1–1.8 ms shared, 0.25–0.41 ms with the gateway on a CPU of its
 * own). With an affinity set, every thread of the gateway process runs on those CPUs (threads it
 * makes later inherit it), and the agents `run` starts run on the CPUs the process could use
 * before minus those (on all of them when none is left). Processes the gateway starts for its
 * own work (ffmpeg for act videos) stay on its CPUs: they never take the agent's. Set with
 * util-linux's `taskset` (Node has no sched_setaffinity) and read back from /proc. The CPUs are
 * not isolated from other processes by this alone: a lab that wants them to itself boots with
 * `isolcpus=` or gives them a cpuset.
 */

/** A CPU affinity set on this process: the gateway's CPUs and the ones left for the agents. */
export interface CpuPlacement {
  /** the CPUs every thread of this process runs on */
  gateway: number[];
  /** the CPUs for the agents `run` starts (empty: no CPU was left; they share the gateway's) */
  others: number[];
  /** one line for the log */
  summary: string;
}

/** A Linux CPU list ("0,2-3", as taskset and /proc print it) as sorted CPU numbers. */
export function parseCpuList(text: string): number[] {
  const out = new Set<number>();
  for (const part of text.trim().split(",")) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) throw new Error(`"${part}" is not a CPU number or range (a CPU list reads like 0,2-3)`);
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    if (hi < lo) throw new Error(`the range ${part} runs backwards`);
    if (hi - lo > 4096) throw new Error(`the range ${part} is longer than any machine's CPU count`);
    for (let c = lo; c <= hi; c++) out.add(c);
  }
  return [...out].sort((a, b) => a - b);
}

/** CPU numbers as a CPU list ("0,2-3") */
export function formatCpuList(cpus: readonly number[]): string {
  const s = [...new Set(cpus)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < s.length; ) {
    let j = i;
    while (j + 1 < s.length && s[j + 1] === s[j]! + 1) j++;
    parts.push(j > i ? `${s[i]}-${s[j]}` : String(s[i]));
    i = j + 1;
  }
  return parts.join(",");
}

/** The CPUs a thread may run on (its Cpus_allowed_list in /proc), by default this process's main thread. */
export function allowedCpus(pid: number = process.pid, tid: number = pid): number[] {
  const status = readFileSync(`/proc/${pid}/task/${tid}/status`, "latin1");
  const line = /^Cpus_allowed_list:\s*(.*)$/m.exec(status);
  if (!line) throw new Error(`no Cpus_allowed_list in /proc/${pid}/task/${tid}/status`);
  return parseCpuList(line[1]!);
}

/** the CPUs this process could use before applyCpuAffinity first changed them */
let cpusAtStart: number[] | undefined;

/** `taskset` with its failure turned into the coded refusal */
function taskset(args: string[], cpus: readonly number[]): void {
  utilLinux(
    "taskset",
    args,
    (reason) => new CodedError("RB_ERR_CPU_AFFINITY", { cpus: formatCpuList(cpus), reason }),
  );
}

/**
 * Bind every thread of this process to `cpus` (see the note above) and say which CPUs are left
 * for the agents. Throws RB_ERR_CPU_AFFINITY when a CPU is not one this process may use (nothing
 * changed then), or when taskset fails or a thread reads other CPUs afterwards (a thread that
 * ended or began while taskset ran: some threads may be bound by then; serve and run end on the
 * refusal).
 */
export function applyCpuAffinity(cpus: readonly number[]): CpuPlacement {
  const want = [...new Set(cpus)].sort((a, b) => a - b);
  const list = formatCpuList(want);
  if (process.platform !== "linux") {
    throw new CodedError("RB_ERR_CPU_AFFINITY", { cpus: list, reason: `not Linux (${process.platform})` });
  }
  if (!want.length || want.some((c) => !Number.isInteger(c) || c < 0)) {
    throw new CodedError("RB_ERR_CPU_AFFINITY", {
      cpus: list,
      reason: "give one or more CPU numbers (0, 1, …)",
    });
  }
  // the CPUs the process could use before its first affinity (a second `run` in one process
  // leaves its agents the same CPUs as the first)
  const before = (cpusAtStart ??= allowedCpus());
  const missing = want.filter((c) => !before.includes(c));
  if (missing.length) {
    throw new CodedError("RB_ERR_CPU_AFFINITY", {
      cpus: list,
      reason: `CPU ${formatCpuList(missing)} is not one this process may run on (${formatCpuList(before)})`,
    });
  }
  taskset(["--all-tasks", "--cpu-list", "--pid", list, String(process.pid)], want);
  for (const t of readdirSync(`/proc/${process.pid}/task`)) {
    let got: number[];
    try {
      got = allowedCpus(process.pid, Number(t));
    } catch {
      continue; // the thread ended meanwhile
    }
    if (formatCpuList(got) !== list) {
      throw new CodedError("RB_ERR_CPU_AFFINITY", {
        cpus: list,
        reason: `thread ${t} reads CPUs ${formatCpuList(got)} after taskset`,
      });
    }
  }
  const others = before.filter((c) => !want.includes(c));
  return {
    gateway: want,
    others,
    summary: others.length
      ? `CPU ${list} for the gateway's threads; agents it starts on CPU ${formatCpuList(others)}`
      : `CPU ${list} for the gateway's threads; no other CPU is allowed, agents it starts share them`,
  };
}

/**
 * The command line that runs `argv` on `cpus` (util-linux's taskset, which then executes the
 * command in its own place: the same process, pid and group); `argv` as it is when `cpus` is
 * empty or absent.
 */
export function onCpus(cpus: readonly number[] | undefined, argv: readonly string[]): string[] {
  return cpus?.length ? ["taskset", "--cpu-list", formatCpuList(cpus), ...argv] : [...argv];
}

/** `--cpu-affinity`: a CPU list ("1", "2-3"), or "off" (every CPU whatever the bench says) */
export type CpuAffinityOverride = number[] | "off";

/** parse `--cpu-affinity` (commander's argument parser: a bad value is a usage error) */
export function cpuAffinityArg(value: string): CpuAffinityOverride {
  if (value === "off") return "off";
  try {
    return parseCpuList(value);
  } catch (e) {
    throw new InvalidArgumentError(`--cpu-affinity: ${(e as Error).message}`);
  }
}

export const CPU_AFFINITY_HELP =
  "CPUs the gateway's threads run on, as a CPU list (1 or 2-3; agents run starts get the rest), or off (default: the bench file's scheduling.cpuAffinity)";

/**
 * The CPU affinity a bench file asks for (`scheduling.cpuAffinity`), overridden from the command
 * line; applied to this process when it asks for one (applyCpuAffinity). Undefined: every CPU.
 */
export function applyBenchCpuAffinity(
  scheduling: { readonly cpuAffinity?: readonly number[] | undefined },
  override?: CpuAffinityOverride,
): CpuPlacement | undefined {
  const cpus = override ?? scheduling.cpuAffinity;
  if (cpus === undefined || cpus === "off") return undefined;
  return applyCpuAffinity(cpus);
}
