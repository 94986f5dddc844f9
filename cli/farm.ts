/**
 * `robot-gateway farm`: runs of trials across many machines, on BullMQ over Redis (farm/).
 *
 *   farm submit --redis URL --agent CMD [--agent CMD2] --trials 30 [--task T] [--level L]
 *               [--bench-kind sim-buzzwire] [--seed 1] [--run ID]
 *   farm worker --redis URL [--bench FILE] [--work-dir DIR]      (one per bench, on its host)
 *               [--rt-priority N|off] [--cpu-affinity LIST|off]  (as serve's: override the bench file)
 *   farm status --redis URL [--run ID] [--json]
 *   farm report --redis URL --run ID --out DIR
 *   farm pause|resume --redis URL --worker ID
 *
 * Register in cli/main.ts with `program.addCommand(farmCommand())`; also runs on its own:
 * `npx tsx cli/farm.ts worker --redis redis://127.0.0.1:6379`.
 */
import { randomBytes } from "node:crypto";
import { resolve } from "node:path";
import { Command, InvalidArgumentError } from "commander";
import { isEntryPoint } from "./entry.ts";
import { farmStatus, statusText, submitRun, writeFarmReport } from "../farm/coordinator.ts";
import { isFarmId, type RunSpec } from "../farm/plan.ts";
import { connectRedis, FarmStore } from "../farm/store.ts";
import { FarmWorker } from "../farm/worker.ts";
import {
  CPU_AFFINITY_HELP,
  type CpuAffinityOverride,
  cpuAffinityArg,
  RT_PRIORITY_HELP,
  type RtPriorityOverride,
  rtPriorityArg,
} from "./scheduling.ts";
import { DEFAULT_BENCH } from "../compose/bench-config.ts";
import { CodedError } from "../seam/errors.ts";

const repeat = (v: string, prev: string[] = []) => [...prev, v];

function int(name: string, min: number) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min)
      throw new InvalidArgumentError(`${name} must be an integer ≥ ${min}`);
    return n;
  };
}

function positive(name: string) {
  return (v: string): number => {
    const n = Number(v);
    if (!(n > 0)) throw new InvalidArgumentError(`${name} must be a positive number`);
    return n;
  };
}

function farmId(name: string) {
  return (v: string): string => {
    if (!isFarmId(v)) throw new InvalidArgumentError(`${name} must be letters, digits, - _ . (≤ 64)`);
    return v;
  };
}

const repeatId =
  (name: string) =>
  (v: string, prev: string[] = []) => [...prev, farmId(name)(v)];

/** Run an action; a coded refusal (Redis unreachable, bench leased) is a message and exit code 2. */
function coded(prefix: string, fn: () => Promise<void>): Promise<void> {
  return fn().catch((e: unknown) => {
    if (!(e instanceof CodedError)) throw e;
    process.stderr.write(`${prefix}: ${e.code}: ${e.message}\n  ${e.hint}\n`);
    process.exitCode = 2;
  });
}

/** --redis: default $ROBOT_GATEWAY_FARM_REDIS (keeps the password off the command line). */
const redisOption = [
  "--redis <url>",
  "the farm's Redis, redis://[:password@]host:port (default $ROBOT_GATEWAY_FARM_REDIS or redis://127.0.0.1:6379)",
  process.env.ROBOT_GATEWAY_FARM_REDIS ?? "redis://127.0.0.1:6379",
] as const;
// agents started with --no-sandbox inherit the environment: they must not learn the password
delete process.env.ROBOT_GATEWAY_FARM_REDIS;

export function farmCommand(): Command {
  const farm = new Command("farm").description(
    "evaluation farm: trials of agents × tasks × levels × bench kinds across many workers (BullMQ over Redis)",
  );

  farm
    .command("submit")
    .description("enqueue a run: every trial one BullMQ job, job id = the stable trial id")
    .option(...redisOption)
    .requiredOption("--agent <command>", "agent command (repeatable: one cell per agent)", repeat)
    .option("--task <id>", "task id (repeatable; default: the bench's task)", repeat)
    .option("--level <name>", "task level (repeatable; default: the task's default)", repeat)
    .option(
      "--bench-kind <name>",
      `bench kind = bench name the workers serve (repeatable; default ${DEFAULT_BENCH.name})`,
      repeatId("--bench-kind"),
    )
    .option("--trials <n>", "trials per cell", int("--trials", 1), 1)
    .option(
      "--seed <n>",
      "seed of trial 1 (trial i gets seed + i − 1; default: derived from a random run secret)",
      int("--seed", 0),
    )
    .option(
      "--run <id>",
      "run id (default: farm-<timestamp>-<random>); submitting the same id again adds nothing",
      farmId("--run"),
    )
    .option("--trial-timeout <s>", "seconds a trial may take", positive("--trial-timeout"), 900)
    .option("--no-sandbox", "run the agents unconfined on every worker (logged)")
    .action(
      (o: {
        redis: string;
        agent: string[];
        task?: string[];
        level?: string[];
        benchKind?: string[];
        trials: number;
        seed?: number;
        run?: string;
        trialTimeout: number;
        sandbox: boolean;
      }) =>
        coded("farm submit", async () => {
          const now = new Date();
          const spec: RunSpec = {
            run:
              o.run ??
              `farm-${now.toISOString().replace(/[-:]|\.\d+Z$/g, "")}-${randomBytes(3).toString("hex")}`,
            agents: o.agent,
            tasks: o.task ?? [null],
            levels: o.level ?? [null],
            benchKinds: o.benchKind ?? [DEFAULT_BENCH.name],
            trials: o.trials,
            ...(o.seed !== undefined ? { seed: o.seed } : {}),
            secret: randomBytes(32).toString("hex"),
            trialTimeoutS: o.trialTimeout,
            sandbox: o.sandbox,
            created_at: now.toISOString(),
          };
          if (!o.sandbox)
            process.stderr.write("farm submit: --no-sandbox: agents will run UNCONFINED on the workers\n");
          const redis = await connectRedis(o.redis);
          try {
            const r = await submitRun(redis, spec);
            process.stderr.write(
              r.created
                ? `farm submit: run ${r.run}: ${r.trials} trial(s) queued\n`
                : `farm submit: run ${r.run} exists; its ${r.trials} trial(s) are queued once (nothing added)\n`,
            );
            process.stdout.write(`${r.run}\n`);
          } finally {
            await redis.quit();
          }
        }),
    );

  farm
    .command("worker")
    .description("serve trials on this host's bench, one at a time, until SIGINT/SIGTERM")
    .option(...redisOption)
    .option("--bench <file>", "bench file of this worker's gateway (default: the built-in sim bench)")
    .option("--url <url>", "use a running gateway instead of starting one (with --kind and both tokens)")
    .option("--operator-token <token>", "operator token of the running gateway")
    .option("--agent-token <token>", "agent token of the running gateway")
    .option("--kind <name>", "bench kind served (default: the bench's name)", farmId("--kind"))
    .option("--id <id>", "worker id (default <host>.<pid>)", farmId("--id"))
    .option("--work-dir <dir>", "trial folders and records on this host", "farm-work")
    .option("--sandbox-ro <dir>", "another folder the sandboxed agents may read; repeatable", repeat)
    .option(
      "--lock-ms <ms>",
      "BullMQ job lock: a dead worker's trial is re-queued after about this",
      int("--lock-ms", 1000),
      30_000,
    )
    .option("--stalled-ms <ms>", "BullMQ stalled-job check interval", int("--stalled-ms", 1000), 30_000)
    .option("--rt-priority <n|off>", RT_PRIORITY_HELP, rtPriorityArg)
    .option("--cpu-affinity <list|off>", CPU_AFFINITY_HELP, cpuAffinityArg)
    .action(
      (o: {
        redis: string;
        bench?: string;
        url?: string;
        operatorToken?: string;
        agentToken?: string;
        kind?: string;
        id?: string;
        workDir: string;
        sandboxRo?: string[];
        lockMs: number;
        stalledMs: number;
        rtPriority?: RtPriorityOverride;
        cpuAffinity?: CpuAffinityOverride;
      }) =>
        coded("farm worker", async () => {
          const w = new FarmWorker({
            redis: o.redis,
            ...(o.bench ? { bench: o.bench } : {}),
            ...(o.url ? { url: o.url, operatorToken: o.operatorToken, agentToken: o.agentToken } : {}),
            ...(o.kind ? { kind: o.kind } : {}),
            ...(o.id ? { id: o.id } : {}),
            workDir: resolve(o.workDir),
            ...(o.sandboxRo ? { sandboxReadOnly: o.sandboxRo } : {}),
            lockDurationMs: o.lockMs,
            stalledIntervalMs: o.stalledMs,
            ...(o.rtPriority !== undefined ? { rtPriority: o.rtPriority } : {}),
            ...(o.cpuAffinity !== undefined ? { cpuAffinity: o.cpuAffinity } : {}),
          });
          await w.start();
          await new Promise<void>((res) => {
            const stop = () => {
              process.stderr.write(`farm worker ${w.id}: stopping after the current trial\n`);
              res();
            };
            process.once("SIGINT", stop);
            process.once("SIGTERM", stop);
          });
          await w.close();
          process.stderr.write(`farm worker ${w.id}: stopped\n`);
          // whatever a bench driver left scheduled, a stopped worker is done
          process.exit(0);
        }),
    );

  farm
    .command("status")
    .description(
      "runs (stored/planned trials, queue, infrastructure failures) and workers (state, drained, lost)",
    )
    .option(...redisOption)
    .option("--run <id>", "only this run (repeatable)", repeat)
    .option("--json", "print JSON")
    .action((o: { redis: string; run?: string[]; json?: boolean }) =>
      coded("farm status", async () => {
        const redis = await connectRedis(o.redis);
        try {
          const s = await farmStatus(redis, o.run);
          process.stdout.write(o.json ? `${JSON.stringify(s, null, 2)}\n` : statusText(s));
        } finally {
          await redis.quit();
        }
      }),
    );

  farm
    .command("report")
    .description(
      "write the run's report (report.json, report.md, progress.svg, index.html per cell) from the store",
    )
    .option(...redisOption)
    .requiredOption("--run <id>", "run id")
    .requiredOption("--out <dir>", "report folder")
    .action((o: { redis: string; run: string; out: string }) =>
      coded("farm report", async () => {
        const redis = await connectRedis(o.redis);
        try {
          const r = await writeFarmReport(redis, o.run, resolve(o.out));
          for (const c of r.cells) {
            const s = c.report.summary;
            process.stderr.write(
              `farm report: ${c.report.agent} on ${c.report.task} (${c.report.bench}): ${s.trials} trial(s), ${s.successes} success(es); ${c.files["index.html"]}\n`,
            );
          }
          if (r.missing.length)
            process.stderr.write(`farm report: ${r.missing.length} trial(s) have no result yet\n`);
          process.exitCode = r.missing.length ? 1 : 0;
        } finally {
          await redis.quit();
        }
      }),
    );

  for (const verb of ["pause", "resume"] as const) {
    farm
      .command(verb)
      .description(
        verb === "pause"
          ? "pause a worker: its current trial finishes, it takes no new one"
          : "resume a paused or drained worker",
      )
      .option(...redisOption)
      .requiredOption("--worker <id>", "worker id (farm status lists them)")
      .action((o: { redis: string; worker: string }) =>
        coded(`farm ${verb}`, async () => {
          const redis = await connectRedis(o.redis);
          try {
            const store = new FarmStore(redis);
            if (!(await store.workers()).some((w) => w.id === o.worker)) {
              throw new InvalidArgumentError(`no worker ${o.worker} (farm status lists them)`);
            }
            await store.setControl(o.worker, verb);
            process.stderr.write(`farm ${verb}: sent to ${o.worker}; it acts within a heartbeat\n`);
          } finally {
            await redis.quit();
          }
        }),
      );
  }
  return farm;
}

if (isEntryPoint(import.meta.url)) {
  await farmCommand().name("farm").parseAsync(process.argv);
}
