/**
 * The evaluation farm's throughput on this machine: trials per hour of the scripted agent
 * (test-support/farm.ts; sandboxed, sim bench) with 1, 2 and 3 farm workers (each its own
 * process with its own in-process sim gateway, as on separate hosts) on a loopback Redis with the
 * farm's config (AOF, fsync always), beside the single-machine reference `robot-gateway run` of
 * the same trials. Then the coordinator's overhead per trial: the farm's own time inside a
 * worker (attempt bookkeeping, log and record blobs, the idempotent result write), the submit
 * time per trial, and the 1-worker farm's wall time per trial minus run's.
 * Run: npx tsx bench/farm.ts [trials per configuration, default 12]
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, openSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Writable } from "node:stream";
import { runTrials } from "../cli/run.ts";
import { submitRun } from "../farm/coordinator.ts";
import { connectRedis, FarmStore } from "../farm/store.ts";
import { freePort, startRedis, waitAsync, writeScriptedAgent } from "../test-support/farm.ts";
import { pct } from "./stats.ts";

const N = Number(process.argv[2] ?? 12);
const ROOT = resolve(import.meta.dirname, "..");
const dir = mkdtempSync(join(tmpdir(), "rg-bench-farm-"));
const agent = `node ${writeScriptedAgent(join(dir, "agent"))}`;
const port = await freePort();
const redis = await startRedis(join(dir, "redis"), port);
const conn = await connectRedis(redis.url);
const store = new FarmStore(conn);
const perHour = (trials: number, s: number) => (trials / s) * 3600;

// the reference: one machine, one gateway, trials one after the other, timed from the moment its
// gateway is up (run prints "run: N trial(s) of …") as the farm's workers are up before its clock
let gatewayUp = 0;
const progress = new Writable({
  write(chunk, _e, cb) {
    if (!gatewayUp && String(chunk).includes(" trial(s) of ")) gatewayUp = performance.now();
    cb();
  },
});
await runTrials({ agent, trials: N, seed: 1, out: join(dir, "single"), progress });
const runS = (performance.now() - gatewayUp) / 1000;
const perTrialS = runS / N;
console.log(
  `machine: ${cpus().length} cores, load ${loadavg()
    .map((x) => x.toFixed(1))
    .join(" ")}`,
);
console.log(
  `reference  run (1 machine, sequential): ${(perTrialS * 1000).toFixed(0)} ms per trial = ${perHour(1, perTrialS).toFixed(0)} trials/h (from its gateway up)`,
);

const children: ChildProcess[] = [];
const results: { workers: number; s: number }[] = [];
let overheads: number[] = [];
let submitMs = 0;
try {
  for (const k of [1, 2, 3]) {
    const ids = Array.from({ length: k }, (_, i) => `b${k}-${i + 1}`);
    for (const id of ids) {
      const fd = openSync(join(dir, `${id}.log`), "a");
      children.push(
        spawn(
          process.execPath,
          [
            "--import",
            "tsx",
            join(ROOT, "cli", "main.ts"),
            "farm",
            "worker",
            "--redis",
            redis.url,
            "--id",
            id,
            "--work-dir",
            join(dir, id),
          ],
          { cwd: ROOT, stdio: ["ignore", fd, fd] },
        ),
      );
    }
    await waitAsync(
      async () => (await store.workers()).filter((w) => ids.includes(w.id) && w.mode === "idle").length === k,
      `${k} idle workers`,
      180_000,
    );
    const run = `bench-${k}`;
    const t1 = performance.now();
    await submitRun(conn, {
      run,
      agents: [agent],
      tasks: [null],
      levels: [null],
      benchKinds: ["sim-buzzwire"],
      trials: N,
      seed: 1,
      secret: "bench",
      trialTimeoutS: 120,
      sandbox: true,
      created_at: new Date().toISOString(),
    });
    if (k === 1) submitMs = performance.now() - t1;
    await waitAsync(async () => (await store.results(run)).length === N, `${N} results`, 1_800_000);
    const s = (performance.now() - t1) / 1000;
    results.push({ workers: k, s });
    if (k === 1) overheads = (await store.results(run)).map((r) => r.overhead_s * 1000);
    console.log(
      `farm  ${k} worker(s): ${N} trials in ${s.toFixed(1)} s = ${perHour(N, s).toFixed(0)} trials/h (× ${(runS / s).toFixed(2)} of run)`,
    );
    for (const c of children.splice(0)) {
      c.kill("SIGTERM");
      await new Promise((r) => (c.exitCode === null ? c.once("exit", r) : r(null)));
    }
  }
} finally {
  for (const c of children) c.kill("SIGKILL");
}
const one = results.find((r) => r.workers === 1)!;
console.log(
  `coordinator overhead per trial: in the worker p50 ${pct(overheads, 50).toFixed(1)} ms p90 ${pct(overheads, 90).toFixed(1)} ms (attempt, blobs, result; n=${overheads.length}); submit ${(submitMs / N).toFixed(2)} ms; 1-worker farm − run: ${(((one.s - runS) / N) * 1000).toFixed(0)} ms (queue hand-off, stored record)`,
);
console.log(
  `reference: trials/h grows with workers only while cores are free; here (${cpus().length} cores, load ${loadavg()[0]!.toFixed(1)}) every trial's agent start and sim already compete for them`,
);
conn.disconnect();
await redis.stop();
rmSync(dir, { recursive: true, force: true });
