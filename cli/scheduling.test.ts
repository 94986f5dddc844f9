/**
 * Real-time scheduling of the gateway process (cli/scheduling.ts), always in child processes
 * (the test worker itself never turns real-time): `serve` with a bench file that asks for
 * SCHED_FIFO runs its event loop at that priority and every other thread one below; processes
 * it starts run under the normal scheduler; `--rt-priority off` overrides the bench file; a
 * gateway that may not raise its priority refuses to start with RB_ERR_RT_SCHEDULING and serves
 * nothing. Permission is taken away with util-linux's setpriv (no CAP_SYS_NICE) and prlimit
 * (RLIMIT_RTPRIO 0).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { BenchConfigError, parseBenchConfig } from "../compose/bench-config.ts";
import { childJson } from "../test-support/child-json.ts";
import { waitFor } from "../test-support/wait.ts";
import {
  allowedCpus,
  cpuAffinityArg,
  formatCpuList,
  LATENCY_NODE_ARGS,
  parseCpuList,
  readThreadScheduling,
} from "./scheduling.ts";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
/** run a command without CAP_SYS_NICE and with an rtprio limit of 0 */
const UNPRIVILEGED = ["setpriv", "--bounding-set=-sys_nice", "--inh-caps=-sys_nice", "prlimit", "--rtprio=0"];

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});

function benchFile(extra: object): string {
  const dir = mkdtempSync(join(tmpdir(), "rg-sched-"));
  const file = join(dir, "bench.json");
  writeFileSync(
    file,
    JSON.stringify({
      version: 1,
      name: "sched",
      backend: { type: "sim", scene: "pendulum" },
      recordsDir: join(dir, "records"),
      ...extra,
    }),
  );
  return file;
}

/**
 * `serve` in a child process (optionally under a wrapper command; `launcher`: through
 * bin/robot-gateway.mjs as installed, else node --import tsx cli/main.ts); its output and exit
 */
function serveChild(args: string[], wrapper: string[] = [], launcher = false) {
  const node = launcher
    ? [join(ROOT, "bin", "robot-gateway.mjs")]
    : [process.execPath, "--import", "tsx", "cli/main.ts"];
  const cmd = [...wrapper, ...node, "serve", "--port", "0", ...args];
  const proc = spawn(cmd[0]!, cmd.slice(1), { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  children.push(proc);
  let out = "";
  let err = "";
  proc.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  proc.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((r) => proc.on("exit", (code) => r(code)));
  return { proc, out: () => out, err: () => err, exited };
}

describe("real-time scheduling (SCHED_FIFO)", () => {
  it("serve: the bench file's rtPriority for the event loop, one below for every other thread", async () => {
    const s = serveChild(["--bench", benchFile({ scheduling: { rtPriority: 40 } })], [], true);
    await waitFor(() => s.out().includes("ROBOT_GATEWAY_URL="), "serve's URL line", 60_000);
    expect(s.err()).toMatch(/SCHED_FIFO 40 for the event loop, 39 for \d+ of \d+ other threads/);
    // started by the launcher: GC on the loop thread, a small young generation
    expect(s.err()).toMatch(/; GC on the loop thread, young generation ≤ 2 MB/);
    const threads = readThreadScheduling(s.proc.pid);
    const main = threads.find((t) => t.tid === s.proc.pid);
    expect(main).toMatchObject({ policy: "fifo", rtPriority: 40 });
    const others = threads.filter((t) => t.tid !== s.proc.pid);
    expect(others.length).toBeGreaterThan(3);
    // every other thread (V8's helpers, libuv's pool, any the bench made while composed) one below
    for (const t of others)
      expect(t, `thread ${t.tid} ${t.name}`).toMatchObject({ policy: "fifo", rtPriority: 39 });
  }, 90_000);

  it("the launchers (bin shebang, npm start) pass the latency settings; a process without them says so", () => {
    const shebang = readFileSync(join(ROOT, "bin", "robot-gateway.mjs"), "utf8").split("\n")[0]!;
    const start = (
      JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: { start: string } }
    ).scripts.start;
    for (const line of [shebang, start]) {
      for (const a of LATENCY_NODE_ARGS) expect(line).toContain(` ${a} `.trimEnd());
    }
    const s = serveChild(["--bench", benchFile({ scheduling: { rtPriority: 40 } })]);
    return waitFor(() => s.out().includes("ROBOT_GATEWAY_URL="), "serve's URL line", 60_000).then(() =>
      expect(s.err()).toMatch(/started without node --single-threaded-gc --max-semi-space-size=2/),
    );
  }, 90_000);

  it("a process started by a real-time gateway runs under the normal scheduler (reset on fork)", () => {
    const r = childJson<{ own: string[]; child: string[] }>(
      `import { applyRealtimeScheduling } from "./cli/scheduling.ts";
         import { execFileSync } from "node:child_process";
         import { readFileSync } from "node:fs";
         await applyRealtimeScheduling(30);
         const own = readFileSync("/proc/self/stat", "latin1");
         const child = execFileSync("cat", ["/proc/self/stat"], { encoding: "utf8" });
         const f = (s) => s.slice(s.lastIndexOf(")") + 2).split(" ");
         console.log(JSON.stringify({ own: [f(own)[37], f(own)[38]], child: [f(child)[37], f(child)[38]] }));`,
    );
    // fields 40 (rt_priority) and 41 (policy: 1 = SCHED_FIFO, 0 = SCHED_OTHER)
    expect(r.own).toEqual(["30", "1"]);
    expect(r.child).toEqual(["0", "0"]);
  }, 60_000);

  it("threads made after the priorities are set start normal (the kernel resets them too); raiseNewThreads raises those made until then", () => {
    const r = childJson<{
      beforeRaise: string[];
      raised: number;
      afterRaise: [string, number][];
      later: string[];
      again: number;
    }>(
      `import { applyRealtimeScheduling, raiseNewThreads, readThreadScheduling } from "./cli/scheduling.ts";
         import { Worker } from "node:worker_threads";
         const tids = () => new Set(readThreadScheduling().map((t) => t.tid));
         const made = async (before) => {
           const w = new Worker("setInterval(() => {}, 1000)", { eval: true });
           await new Promise((r) => w.once("online", r));
           return { w, threads: readThreadScheduling().filter((t) => !before.has(t.tid)) };
         };
         const applied = await applyRealtimeScheduling(30);
         const a = await made(tids());
         const beforeRaise = a.threads.map((t) => t.policy);
         const r = raiseNewThreads(applied);
         const raisedA = r.threads.filter((t) => a.threads.some((n) => n.tid === t.tid));
         const b = await made(tids());
         console.log(JSON.stringify({
           beforeRaise,
           raised: r.raised,
           afterRaise: raisedA.map((t) => [t.policy, t.rtPriority]),
           later: b.threads.map((t) => t.policy),
           again: raiseNewThreads(applied).raised,
         }));
         await a.w.terminate();
         await b.w.terminate();`,
    );
    // a Worker's own thread (and any its isolate starts), under the normal scheduler when made
    expect(r.beforeRaise.length).toBeGreaterThan(0);
    expect(new Set(r.beforeRaise)).toEqual(new Set(["other"]));
    expect(r.raised).toBe(r.beforeRaise.length);
    expect(r.afterRaise.length).toBe(r.beforeRaise.length);
    for (const t of r.afterRaise) expect(t).toEqual(["fifo", 29]);
    // made after the raise: normal again, until the next raise
    expect(r.later.length).toBeGreaterThan(0);
    expect(new Set(r.later)).toEqual(new Set(["other"]));
    expect(r.again).toBe(r.later.length);
  }, 60_000);

  it("--rt-priority off runs the normal scheduler whatever the bench file asks", async () => {
    const s = serveChild(["--bench", benchFile({ scheduling: { rtPriority: 40 } }), "--rt-priority", "off"]);
    await waitFor(() => s.out().includes("ROBOT_GATEWAY_URL="), "serve's URL line", 60_000);
    expect(s.err()).not.toMatch(/SCHED_FIFO/);
    for (const t of readThreadScheduling(s.proc.pid)) expect(t.policy).toBe("other");
  }, 90_000);

  it("without the permission to raise it, serve refuses to start with RB_ERR_RT_SCHEDULING and serves nothing", async () => {
    const s = serveChild(["--bench", benchFile({}), "--rt-priority", "50"], UNPRIVILEGED);
    expect(await s.exited).toBe(2);
    expect(s.err()).toMatch(
      /RB_ERR_RT_SCHEDULING: Real-time scheduling \(SCHED_FIFO 50\) could not be set: .*not permitted/,
    );
    expect(s.err()).toMatch(/CAP_SYS_NICE or an rtprio limit/);
    expect(s.out()).not.toMatch(/ROBOT_GATEWAY_URL/);
  }, 90_000);

  it("bad priorities are refused: on the command line as a usage error, in the bench file with its path", async () => {
    const s = serveChild(["--rt-priority", "1"]);
    expect(await s.exited).not.toBe(0);
    expect(s.err()).toMatch(/--rt-priority: 1 is not a whole number 2–99 or "off"/);
    for (const bad of [{ rtPriority: 100 }, { rtPriority: 1.5 }, { rtPriorty: 50 }]) {
      const e = (() => {
        try {
          parseBenchConfig({ version: 1, name: "x", backend: { type: "sim" }, scheduling: bad });
        } catch (err) {
          return err;
        }
      })();
      expect(e).toBeInstanceOf(BenchConfigError);
      expect((e as BenchConfigError).issues[0]!.path).toMatch(/^scheduling/);
    }
  }, 60_000);
});

describe("CPU affinity (scheduling.cpuAffinity, --cpu-affinity)", () => {
  /** the CPUs this test process may use (the child processes below start with the same) */
  const mine = allowedCpus();
  /** every thread of a process: its CPU list */
  const threadCpus = (pid: number) =>
    readThreadScheduling(pid).map((t) => ({
      tid: t.tid,
      name: t.name,
      cpus: formatCpuList(allowedCpus(pid, t.tid)),
    }));

  it("CPU lists read and print as taskset and /proc write them; bad ones are usage errors", () => {
    expect(parseCpuList("0")).toEqual([0]);
    expect(parseCpuList("3,0-1, 1")).toEqual([0, 1, 3]);
    expect(formatCpuList([5, 0, 1, 2, 7, 8])).toBe("0-2,5,7-8");
    expect(formatCpuList(parseCpuList("0-2,5,7-8"))).toBe("0-2,5,7-8");
    expect(cpuAffinityArg("off")).toBe("off");
    expect(cpuAffinityArg("1-2")).toEqual([1, 2]);
    for (const bad of ["", "a", "-1", "2-1", "1,,2", "1.5"])
      expect(() => cpuAffinityArg(bad), bad).toThrow(/--cpu-affinity/);
    for (const bad of [
      { cpuAffinity: [] },
      { cpuAffinity: [-1] },
      { cpuAffinity: [0.5] },
      { cpuAffinity: "0" },
    ]) {
      expect(() =>
        parseBenchConfig({ version: 1, name: "x", backend: { type: "sim" }, scheduling: bad }),
      ).toThrow(BenchConfigError);
    }
  });

  it("serve: every thread of the gateway on the bench file's CPUs, the rest named for the agents", async () => {
    const cpu = mine.at(-1)!;
    const s = serveChild(
      ["--bench", benchFile({ scheduling: { cpuAffinity: [cpu], rtPriority: 40 } })],
      [],
      true,
    );
    await waitFor(() => s.out().includes("ROBOT_GATEWAY_URL="), "serve's URL line", 60_000);
    const rest = mine.filter((c) => c !== cpu);
    expect(s.err()).toContain(
      rest.length
        ? `CPU ${cpu} for the gateway's threads; agents it starts on CPU ${formatCpuList(rest)}`
        : `CPU ${cpu} for the gateway's threads; no other CPU is allowed`,
    );
    const threads = threadCpus(s.proc.pid!);
    expect(threads.length).toBeGreaterThan(3);
    // the ones the bench made while composed and later ones included: they inherit the mask
    for (const t of threads) expect(t, `thread ${t.tid} ${t.name}`).toMatchObject({ cpus: String(cpu) });
    // --cpu-affinity off: every CPU whatever the bench file asks
    const off = serveChild([
      "--bench",
      benchFile({ scheduling: { cpuAffinity: [cpu] } }),
      "--cpu-affinity",
      "off",
    ]);
    await waitFor(() => off.out().includes("ROBOT_GATEWAY_URL="), "serve's URL line", 60_000);
    expect(off.err()).not.toMatch(/for the gateway's threads/);
    for (const t of threadCpus(off.proc.pid!)) expect(t.cpus).toBe(formatCpuList(mine));
  }, 120_000);

  it("a CPU the process may not use refuses the start with RB_ERR_CPU_AFFINITY and serves nothing", async () => {
    // under taskset the process may use one CPU of ours alone; the next number is refused
    // whether or not the machine has that CPU
    const [own, other] = [mine[0]!, mine[0]! + 1];
    const s = serveChild(["--cpu-affinity", String(other)], ["taskset", "--cpu-list", String(own)]);
    expect(await s.exited).toBe(2);
    expect(s.err()).toContain(
      `RB_ERR_CPU_AFFINITY: The CPU affinity ${other} could not be set: CPU ${other} is not one this process may run on (${own})`,
    );
    expect(s.err()).toMatch(/--cpu-affinity off/);
    expect(s.out()).not.toMatch(/ROBOT_GATEWAY_URL/);
  }, 60_000);

  it("run: the agent runs on the CPUs the gateway's affinity left (all of them when none is left)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "rg-affinity-"));
    const cpu = mine[0]!;
    // unconfined (the agent writes into the run's folder) and in the sandbox (into its workspace)
    const r = childJson<{ open: string; sandboxed: string }>(
      `import { runTrials } from "./cli/run.ts";
         import { readFileSync } from "node:fs";
         import { join } from "node:path";
         const dir = ${JSON.stringify(dir)};
         const trial = (sandbox, file) => runTrials({
           agent: "grep Cpus_allowed_list /proc/self/status > " + file,
           trials: 1, sandbox, cpuAffinity: [${cpu}], out: join(dir, sandbox ? "sandboxed" : "open"),
           bench: ${JSON.stringify(benchFile({}))}, trialTimeoutS: 60, graceS: 1, cwd: dir,
           progress: { write() { return true; } },
         });
         const cpus = (f) => readFileSync(f, "utf8").split(":")[1].trim();
         await trial(false, join(dir, "agent.txt"));
         await trial(true, "/workspace/agent.txt");
         console.log(JSON.stringify({
           open: cpus(join(dir, "agent.txt")),
           sandboxed: cpus(join(dir, "sandboxed", "trials", "1", "workspace", "agent.txt")),
         }));`,
    );
    const rest = mine.filter((c) => c !== cpu);
    const expected = formatCpuList(rest.length ? rest : [cpu]);
    // the second run in the process leaves its agent the same CPUs as the first
    expect(r).toEqual({ open: expected, sandboxed: expected });
  }, 120_000);
});
