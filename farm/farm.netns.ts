/**
 * The farm across hosts (CI suite scripts/ci-suites/farm.sh; needs root for `ip netns`):
 * Redis in one network namespace, three worker hosts in three more, each joined to the Redis
 * namespace by its own veth pair with addresses of the benchmarking test range 198.18.0.0/15
 * (RFC 2544) on those veths only; the coordinator (this process) reaches Redis over one more
 * veth pair. Each worker serves a sim gateway on its own loopback and runs the scripted agent in
 * the bubblewrap sandbox. 30 trials; one worker is killed (SIGKILL) in the middle of a trial;
 * every trial is reported exactly once, and the report equals the one a single-machine
 * `robot-gateway run` of the same trials writes (seed, outcome, progress, end reason, …).
 *
 * Everything is a child process; namespaces, veths and processes are removed before (left over
 * from an earlier run) and after, pass or fail.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunReport, TrialRecord } from "../gateway/report/types.ts";
import { type RedisProc, startRedis, waitAsync, writeScriptedAgent } from "../test-support/farm.ts";
import { connectRedis, FarmStore } from "./store.ts";

const ROOT = resolve(import.meta.dirname, "..");
const NS_REDIS = "rgfarm-r";
const WORKERS = ["w1", "w2", "w3"] as const;
const nsOf = (w: string) => `rgfarm-${w}`;
const NET = "198.18.77";
const PORT = 6390;
const TRIALS = 30;
const SEED = 100;
/** off the loopback Redis wants a password (protected mode); the workers get it in their environment */
const PASSWORD = randomBytes(12).toString("hex");
const RUN = "netns";
/** the coordinator's side of its link to Redis, and Redis's side */
const HOST_IP = `${NET}.1`;
const REDIS_HOST_IP = `${NET}.2`;
/** worker i (1-based): its /30 is NET.4i; Redis at .4i+1, the worker at .4i+2 */
const redisIpFor = (i: number) => `${NET}.${4 * i + 1}`;
const workerIp = (i: number) => `${NET}.${4 * i + 2}`;

const sh = (cmd: string, args: string[]) =>
  execFileSync(cmd, args, { stdio: ["ignore", "pipe", "pipe"] }).toString();
const shQuiet = (cmd: string, args: string[]) => {
  try {
    return sh(cmd, args);
  } catch {
    return "";
  }
};

/** Remove what an earlier (or this) run left: processes in our namespaces, the namespaces, the host veth. */
function cleanup(): void {
  for (const ns of [NS_REDIS, ...WORKERS.map(nsOf)]) {
    for (const pid of shQuiet("ip", ["netns", "pids", ns]).split(/\s+/).filter(Boolean)) {
      try {
        process.kill(Number(pid), "SIGKILL");
      } catch {
        // gone
      }
    }
    shQuiet("ip", ["netns", "del", ns]);
  }
  shQuiet("ip", ["link", "del", "rgf-h0"]);
}

function network(): void {
  sh("ip", ["netns", "add", NS_REDIS]);
  sh("ip", ["-n", NS_REDIS, "link", "set", "lo", "up"]);
  // coordinator ↔ Redis
  sh("ip", ["link", "add", "rgf-h0", "type", "veth", "peer", "name", "rgf-r0", "netns", NS_REDIS]);
  sh("ip", ["addr", "add", `${HOST_IP}/30`, "dev", "rgf-h0"]);
  sh("ip", ["link", "set", "rgf-h0", "up"]);
  sh("ip", ["-n", NS_REDIS, "addr", "add", `${REDIS_HOST_IP}/30`, "dev", "rgf-r0"]);
  sh("ip", ["-n", NS_REDIS, "link", "set", "rgf-r0", "up"]);
  WORKERS.forEach((w, k) => {
    const i = k + 1;
    const ns = nsOf(w);
    sh("ip", ["netns", "add", ns]);
    sh("ip", ["-n", ns, "link", "set", "lo", "up"]);
    sh("ip", [
      "-n",
      ns,
      "link",
      "add",
      `rgf-${w}`,
      "type",
      "veth",
      "peer",
      "name",
      `rgf-r${i}`,
      "netns",
      NS_REDIS,
    ]);
    sh("ip", ["-n", ns, "addr", "add", `${workerIp(i)}/30`, "dev", `rgf-${w}`]);
    sh("ip", ["-n", ns, "link", "set", `rgf-${w}`, "up"]);
    sh("ip", ["-n", NS_REDIS, "addr", "add", `${redisIpFor(i)}/30`, "dev", `rgf-r${i}`]);
    sh("ip", ["-n", NS_REDIS, "link", "set", `rgf-r${i}`, "up"]);
  });
}

interface Proc {
  child: ChildProcess;
  exit: Promise<number | null>;
  log: string;
}
const procs: Proc[] = [];

/** A child in its own process group (so a kill reaches everything it started), output to a log. */
function start(args: string[], log: string, env: NodeJS.ProcessEnv = {}): Proc {
  const fd = openSync(log, "a");
  const child = spawn(args[0]!, args.slice(1), {
    cwd: ROOT,
    detached: true,
    stdio: ["ignore", fd, fd],
    env: { ...process.env, ...env },
  });
  const p: Proc = { child, log, exit: new Promise((r) => child.once("exit", (c) => r(c))) };
  procs.push(p);
  return p;
}

function killGroup(p: Proc, signal: NodeJS.Signals): void {
  if (p.child.pid === undefined || p.child.exitCode !== null || p.child.signalCode !== null) return;
  try {
    process.kill(-p.child.pid, signal);
  } catch {
    // gone
  }
}

const cli = (...args: string[]) => [
  process.execPath,
  "--import",
  "tsx",
  join(ROOT, "cli", "main.ts"),
  ...args,
];

let dir: string;
let redis: RedisProc | undefined;
let conn: Redis | undefined;
let agentCmd: string;
const workerProcs = new Map<string, Proc>();

beforeAll(async () => {
  if (process.getuid?.() !== 0) throw new Error("the farm netns suite needs root (ip netns, veth)");
  cleanup();
  dir = mkdtempSync(join(tmpdir(), "rg-farm-netns-"));
  agentCmd = `node ${writeScriptedAgent(join(dir, "agent"))}`;
  network();
  redis = await startRedis(
    join(dir, "redis"),
    PORT,
    [REDIS_HOST_IP, ...WORKERS.map((_, k) => redisIpFor(k + 1))],
    ["ip", "netns", "exec", NS_REDIS],
    PASSWORD,
  );
  conn = await connectRedis(redis.url);
  WORKERS.forEach((w, k) => {
    const p = start(
      [
        "ip",
        "netns",
        "exec",
        nsOf(w),
        ...cli(
          "farm",
          "worker",
          "--id",
          w,
          "--work-dir",
          join(dir, w),
          // a dead worker's trial goes back to the queue some 10 s after its last lock renewal
          "--lock-ms",
          "10000",
          "--stalled-ms",
          "3000",
        ),
      ],
      join(dir, `${w}.log`),
      { ROBOT_GATEWAY_FARM_REDIS: `redis://:${PASSWORD}@${redisIpFor(k + 1)}:${PORT}` },
    );
    workerProcs.set(w, p);
  });
}, 180_000);

afterAll(async () => {
  conn?.disconnect();
  for (const p of procs) killGroup(p, "SIGKILL");
  await Promise.all(procs.map((p) => p.exit));
  await redis?.stop("SIGKILL");
  cleanup();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

/** What must agree between the farm's report and the single-machine run's. */
function deterministic(t: TrialRecord) {
  return {
    trial: t.trial,
    seed: t.seed,
    outcome: t.outcome,
    success: t.success,
    end_reason: t.end_reason,
    ended_by: t.ended_by,
    run_note: t.run_note,
    progress: t.progress,
    progress_quantised: t.progress_quantised,
    exit_code: t.agent.exit_code,
  };
}

describe("farm across three netns hosts", () => {
  it("runs 30 trials with a worker killed mid-trial; each reported once; report = run's", async () => {
    const store = new FarmStore(conn!);
    const logs = () =>
      WORKERS.map((w) => `--- ${w}\n${shQuiet("tail", ["-n", "15", join(dir, `${w}.log`)])}`).join("\n");
    await waitAsync(
      async () => (await store.workers()).filter((w) => w.mode === "idle").length === 3,
      `three idle workers\n${logs()}`,
      180_000,
    );
    // the single-machine run of the same trials, beside the farm (same agent, same seeds)
    const single = start(
      cli(
        "run",
        "--agent",
        agentCmd,
        "--trials",
        String(TRIALS),
        "--seed",
        String(SEED),
        "--out",
        join(dir, "single"),
      ),
      join(dir, "single.log"),
    );
    const submit = start(
      cli(
        "farm",
        "submit",
        "--redis",
        redis!.url,
        "--agent",
        agentCmd,
        "--trials",
        String(TRIALS),
        "--seed",
        String(SEED),
        "--run",
        RUN,
      ),
      join(dir, "submit.log"),
    );
    expect(await submit.exit).toBe(0);

    // kill w2 (SIGKILL: no goodbye) while it runs its second or later trial
    let victim: string | undefined;
    await waitAsync(
      async () => {
        const ws = await store.workers();
        const w2 = ws.find((w) => w.id === "w2");
        if (!w2 || w2.trials_done < 1) return false;
        const running = (await store.attempts(RUN)).find((a) => a.worker === "w2" && a.status === "running");
        if (!running) return false;
        killGroup(workerProcs.get("w2")!, "SIGKILL");
        victim = running.trial_id;
        return true;
      },
      `w2 mid-trial\n${logs()}`,
      600_000,
    );
    await workerProcs.get("w2")!.exit;

    await waitAsync(
      async () => (await store.results(RUN)).length === TRIALS,
      `all ${TRIALS} results`,
      900_000,
    );
    // the farm's report, written by the CLI from the store
    const report = start(
      cli("farm", "report", "--redis", redis!.url, "--run", RUN, "--out", join(dir, "farm-report")),
      join(dir, "report.log"),
    );
    expect(await report.exit).toBe(0);
    expect(await single.exit).toBe(0);

    const farm = JSON.parse(readFileSync(join(dir, "farm-report", "report.json"), "utf8")) as RunReport;
    const run = JSON.parse(readFileSync(join(dir, "single", "report.json"), "utf8")) as RunReport;

    // every trial exactly once, in order
    expect(farm.trials.map((t) => t.trial)).toEqual(Array.from({ length: TRIALS }, (_, i) => i + 1));
    const attempts = await store.attempts(RUN);
    expect(attempts.filter((a) => a.status === "done")).toHaveLength(TRIALS);
    // the killed attempt: an infrastructure failure, re-run and stored by another worker
    const lost = attempts.filter((a) => a.status === "infra_failure");
    expect(lost.map((a) => [a.trial_id, a.worker])).toContainEqual([victim, "w2"]);
    const rerun = farm.trials.find((t) => t.farm?.trial_id === victim)!;
    expect(["w1", "w3"]).toContain(rerun.farm!.worker);
    expect(rerun.farm!.attempt).toBeGreaterThan(1);
    // per-worker provenance: all three workers ran trials
    expect(new Set(farm.trials.map((t) => t.farm!.worker))).toEqual(new Set(["w1", "w2", "w3"]));

    // the same report as the single-machine run
    expect(farm.trials.map(deterministic)).toEqual(run.trials.map(deterministic));
    expect({ ...farm.summary }).toEqual({ ...run.summary });
    for (const k of ["format", "task", "level", "bench", "agent", "seed_base", "sandbox"] as const) {
      expect(farm[k]).toEqual(run[k]);
    }
    for (const f of ["report.md", "progress.svg", "index.html"]) {
      expect(readFileSync(join(dir, "farm-report", f), "utf8").length).toBeGreaterThan(0);
    }

    // the operator sees the dead worker
    await waitAsync(
      async () => (await store.workers()).some((w) => w.id === "w2" && Date.now() - w.heartbeat_at > 16_000),
      "w2's heartbeat to age",
      120_000,
    );
    const status = start(cli("farm", "status", "--redis", redis!.url), join(dir, "status.log"));
    expect(await status.exit).toBe(0);
    const text = readFileSync(join(dir, "status.log"), "utf8");
    expect(text).toMatch(/worker w2 on .*: LOST/);
    expect(text).toContain(`run ${RUN}: ${TRIALS}/${TRIALS} trials stored`);
  }, 1_500_000);
});
