/**
 * The evaluation farm on loopback: a real redis-server (farm/redis.conf: AOF, fsync always),
 * real BullMQ queues, workers with real in-process sim gateways and the scripted agent in the
 * bubblewrap sandbox. The three-host run with a killed worker is farm/farm.netns.ts (CI suite).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Queue } from "bullmq";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { trialSeed } from "../cli/run.ts";
import { readThreadScheduling } from "../cli/scheduling.ts";
import { freePort, type RedisProc, startRedis, waitAsync, writeScriptedAgent } from "../test-support/farm.ts";
import { farmStatus, statusText, submitRun, writeFarmReport } from "./coordinator.ts";
import { expandRun, queueName, type RunSpec } from "./plan.ts";
import { connectRedis, FarmStore } from "./store.ts";
import { FarmWorker } from "./worker.ts";

let dir: string;
let port: number;
let redis: RedisProc;
let conn: Redis;
let store: FarmStore;
let agent: string;
const workers: FarmWorker[] = [];

function spec(run: string, trials: number, extra: Partial<RunSpec> = {}): RunSpec {
  return {
    run,
    agents: [`node ${agent}`],
    tasks: [null],
    levels: [null],
    benchKinds: ["sim-buzzwire"],
    trials,
    seed: 40,
    secret: "s",
    trialTimeoutS: 120,
    sandbox: true,
    created_at: new Date().toISOString(),
    ...extra,
  };
}

async function worker(id: string): Promise<FarmWorker> {
  const w = new FarmWorker({
    redis: redis.url,
    id,
    workDir: join(dir, id),
    lockDurationMs: 5000,
    stalledIntervalMs: 2000,
    heartbeatMs: 300,
    progress: { write: () => true } as unknown as NodeJS.WritableStream,
  });
  workers.push(w);
  await w.start();
  return w;
}

async function stopWorker(w: FarmWorker): Promise<void> {
  workers.splice(workers.indexOf(w), 1);
  await w.close();
}

const stored = async (run: string) => (await store.results(run)).length;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "rg-farm-"));
  port = await freePort();
  redis = await startRedis(join(dir, "redis"), port);
  conn = await connectRedis(redis.url);
  store = new FarmStore(conn);
  agent = writeScriptedAgent(join(dir, "agent"));
}, 60_000);

afterAll(async () => {
  for (const w of [...workers]) await w.close().catch(() => {});
  conn?.disconnect();
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe("farm plan", () => {
  it("expands cells into stable trial ids with run's seeds", () => {
    const s = spec("p1", 3, { agents: ["a", "b"], seed: 7 });
    const t = expandRun(s);
    expect(t.map((x) => x.id)).toEqual(expandRun({ ...s, created_at: "later" }).map((x) => x.id));
    expect(new Set(t.map((x) => x.id)).size).toBe(6);
    expect(new Set(t.map((x) => x.cell)).size).toBe(2);
    expect(t.filter((x) => x.agent === "a").map((x) => x.seed)).toEqual([7, 8, 9]);
    const secret = expandRun({ ...s, seed: undefined, secret: "k" });
    expect(secret.slice(0, 3).map((x) => x.seed)).toEqual([0, 1, 2].map((i) => trialSeed({}, "k", i)));
  });
});

describe("farm on a real Redis", () => {
  it("stores every trial once across a Redis restart, and a re-submit adds nothing", async () => {
    const a = await worker("ra");
    const b = await worker("rb");
    const s = spec("restart", 6);
    expect(await submitRun(conn, s)).toMatchObject({ created: true, trials: 6 });
    await waitAsync(async () => (await stored("restart")) >= 2, "two results", 120_000);
    // a hard stop mid-run: no shutdown save; what survives is the AOF (fsync on every write)
    const before = await stored("restart");
    await redis.stop("SIGKILL");
    expect(before).toBeLessThan(6);
    redis = await startRedis(join(dir, "redis"), port);
    await waitAsync(async () => (await stored("restart")) === 6, "six results", 240_000);
    const again = await submitRun(conn, { ...s, created_at: "again" });
    expect(again).toMatchObject({ created: false, trials: 6 });
    const q = new Queue(queueName("sim-buzzwire"), { connection: conn });
    const ids = (await q.getJobs(["completed", "waiting", "active", "failed", "delayed"]))
      .map((j) => j.id)
      .filter((id) => id?.startsWith("restart."));
    await q.close();
    expect(ids.sort()).toEqual(
      expandRun(s)
        .map((t) => t.id)
        .sort(),
    );
    const results = await store.results("restart");
    expect(results.map((r) => r.spec.index).sort()).toEqual([0, 1, 2, 3, 4, 5]);
    const out = join(dir, "restart-report");
    const rep = await writeFarmReport(conn, "restart", out);
    expect(rep.missing).toEqual([]);
    const report = JSON.parse(readFileSync(join(out, "report.json"), "utf8"));
    expect(report.trials.map((t: { trial: number }) => t.trial)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(report.trials.map((t: { seed: number }) => t.seed)).toEqual([40, 41, 42, 43, 44, 45]);
    for (const t of report.trials) {
      expect(["ra", "rb"]).toContain(t.farm.worker);
      expect(t.record_path).toMatch(/^records\/restart\..+\.mcap$/);
      expect(readFileSync(join(out, t.agent.log), "utf8")).toBeTypeOf("string");
    }
    expect(readFileSync(join(out, "report.md"), "utf8")).toContain("| worker |");
    await stopWorker(a);
    await stopWorker(b);
  }, 400_000);

  it("drains a worker whose bench faults, re-runs its trial elsewhere and tells the operator", async () => {
    const a = await worker("fa");
    // a latched e-stop on fa's bench: no episode can start there
    await a.gateway()!.operator.estop({ reason: "test: bench fault" });
    await submitRun(conn, spec("fault", 2));
    await waitAsync(
      async () => (await store.workers()).some((w) => w.id === "fa" && w.mode === "drained"),
      "fa drained",
    );
    const text = statusText(await farmStatus(conn, ["fault"]));
    expect(text).toMatch(/worker fa on .*: DRAINED/);
    expect(text).toContain("farm resume --worker fa");
    expect(text).toMatch(/infra failure: fault\.\S+ attempt 1 on fa/);
    const b = await worker("fb");
    await waitAsync(async () => (await stored("fault")) === 2, "both results", 120_000);
    const results = await store.results("fault");
    expect(results.map((r) => r.provenance.worker)).toEqual(["fb", "fb"]);
    const attempts = await store.attempts("fault");
    const failed = attempts.filter((x) => x.status === "infra_failure");
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ worker: "fa", attempt: 1 });
    expect(attempts.filter((x) => x.status === "done").map((x) => x.worker)).toEqual(["fb", "fb"]);
    // the operator fixes the bench and resumes the worker
    await a.gateway()!.operator.release();
    await store.setControl("fa", "resume");
    await waitAsync(
      async () => (await store.workers()).some((w) => w.id === "fa" && w.mode === "idle"),
      "fa idle",
    );
    await stopWorker(a);
    await stopWorker(b);
  }, 300_000);

  it("pauses a worker between trials and resumes it on the operator's word", async () => {
    const w = await worker("pa");
    await store.setControl("pa", "pause");
    await waitAsync(
      async () => (await store.workers()).some((x) => x.id === "pa" && x.mode === "paused"),
      "pa paused",
    );
    await submitRun(conn, spec("pause", 1));
    const q = new Queue(queueName("sim-buzzwire"), { connection: conn });
    // several heartbeats later the paused worker has not taken it
    await new Promise((r) => setTimeout(r, 2000));
    expect(await q.getJobState(expandRun(spec("pause", 1))[0]!.id)).toBe("waiting");
    await q.close();
    await store.setControl("pa", "resume");
    await waitAsync(async () => (await stored("pause")) === 1, "the result", 120_000);
    expect((await store.results("pause"))[0]!.provenance.worker).toBe("pa");
    await stopWorker(w);
  }, 300_000);

  it("leases a real bench to one worker only", async () => {
    expect(await store.lease("bench-x", "w1", 30_000)).toBeNull();
    expect(await store.lease("bench-x", "w2", 30_000)).toBe("w1");
    expect(await store.lease("bench-x", "w1", 30_000)).toBeNull(); // renewal
    await store.releaseLease("bench-x", "w2"); // not the holder: no effect
    expect(await store.lease("bench-x", "w2", 30_000)).toBe("w1");
    await store.releaseLease("bench-x", "w1");
    expect(await store.lease("bench-x", "w2", 30_000)).toBeNull();
    // a worker for a real bench someone else holds refuses before touching the hardware
    const bench = join(import.meta.dirname, "..", "examples", "benches", "real-franka-buzzbox.yaml");
    const name = (await import("../compose/bench-config.ts")).loadBenchFile(bench).config.name;
    expect(await store.lease(name, "other-host.1", 30_000)).toBeNull();
    const w = new FarmWorker({ redis: redis.url, id: "real", bench, workDir: join(dir, "real") });
    await expect(w.start()).rejects.toMatchObject({ code: "RB_ERR_FARM_LEASE_HELD" });
    await store.releaseLease(name, "other-host.1");
  });

  it("takes serve's scheduling overrides: --rt-priority off wins over the bench file; with --url they are that gateway's", async () => {
    const benchDir = join(dir, "sched-bench");
    mkdirSync(benchDir, { recursive: true });
    const bench = join(benchDir, "bench.json");
    writeFileSync(
      bench,
      JSON.stringify({
        version: 1,
        name: "sched-farm",
        backend: { type: "sim", scene: "pendulum" },
        recordsDir: join(benchDir, "records"),
        scheduling: { rtPriority: 40 },
      }),
    );
    const w = new FarmWorker({
      redis: redis.url,
      id: "sched",
      bench,
      workDir: join(dir, "sched"),
      rtPriority: "off",
      progress: { write: () => true } as unknown as NodeJS.WritableStream,
    });
    workers.push(w);
    await w.start();
    // the bench file asks for SCHED_FIFO 40; the worker's override keeps this process normal
    const main = readThreadScheduling().find((t) => t.tid === process.pid);
    expect(main).toMatchObject({ policy: "other" });
    await stopWorker(w);
    // a running gateway schedules itself (serve --rt-priority): the worker refuses and lets go of Redis
    const remote = new FarmWorker({
      redis: redis.url,
      id: "sched-url",
      url: "http://127.0.0.1:9",
      kind: "sim-buzzwire",
      operatorToken: "o".repeat(32),
      agentToken: "a".repeat(32),
      workDir: join(dir, "sched-url"),
      rtPriority: 40,
    });
    await expect(remote.start()).rejects.toThrow(/--rt-priority is for the gateway run starts itself/);
  }, 120_000);

  it("shows a lost worker and the attempt it left running", async () => {
    const s = spec("lost", 1);
    await store.putRun(s, expandRun(s));
    const [t] = expandRun(s);
    await store.putWorker({
      id: "gone",
      host: "h",
      bench: "sim-buzzwire",
      kind: "sim-buzzwire",
      real: false,
      mode: "busy",
      trial: t!.id,
      trials_done: 3,
      heartbeat_at: Date.now() - 60_000,
      started_at: new Date().toISOString(),
    });
    await store.beginAttempt(t!, "gone", "h");
    const text = statusText(await farmStatus(conn, ["lost"]));
    expect(text).toMatch(/worker gone on h: LOST \(no heartbeat for 6\d(\.\d)? s; was busy\)/);
    expect(text).toContain(`running: ${t!.id} attempt 1 on gone (its worker is LOST`);
    await conn.hdel("rgfarm:workers", "gone");
  });

  it("names an unknown run with a coded error", async () => {
    await expect(writeFarmReport(conn, "no-such-run", join(dir, "none"))).rejects.toMatchObject({
      code: "RB_ERR_FARM_UNKNOWN_RUN",
    });
    await expect(farmStatus(conn, ["no-such-run"])).rejects.toMatchObject({
      code: "RB_ERR_FARM_UNKNOWN_RUN",
    });
  });

  it("refuses an unreachable Redis with a coded error", async () => {
    const dead = await freePort();
    await expect(connectRedis(`redis://127.0.0.1:${dead}`, 3000)).rejects.toMatchObject({
      code: "RB_ERR_FARM_REDIS",
    });
  });
});
