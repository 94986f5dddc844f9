/**
 * A farm worker: one bench, one gateway, one trial at a time. It serves the BullMQ queue of its
 * bench kind and runs each trial through `robot-gateway run`'s own trial function (cli/run.ts
 * runTrial: start the episode, run the agent in the bubblewrap sandbox, end it, read result.json),
 * then stores the result once under the trial's id (farm/store.ts).
 *
 * - Exclusive benches: a real bench (backend type other than `sim`) is leased in Redis for as
 *   long as the worker lives (renewed every heartbeat); a second worker on the same bench refuses
 *   to start (RB_ERR_FARM_LEASE_HELD). Every worker runs one trial at a time (concurrency 1).
 * - Operator pause/resume: `farm pause --worker ID` lets the current trial finish and takes no
 *   more; `farm resume --worker ID` takes trials again (also after a drain).
 * - A worker killed mid-trial holds a BullMQ job lock that is no longer renewed; when it expires
 *   (lockDuration) another worker's stalled check moves the trial back to the queue, and the next
 *   attempt marks the lost one an infrastructure failure (no result).
 * - A bench fault (the episode cannot start, ends as `fault`, or the gateway stops answering)
 *   is an infrastructure failure too: the attempt stores no result, the job fails and BullMQ
 *   retries it on another worker, and this worker is drained: it takes no trials until an
 *   operator resumes it; `farm status` shows it with the reason.
 */
import { readFileSync, statSync } from "node:fs";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import { type Job, UnrecoverableError, Worker } from "bullmq";
import type { Redis } from "ioredis";
import {
  type AgentJail,
  inProcessTarget,
  ProgressDisplay,
  type RunOptions,
  remoteTarget,
  runTrial,
  type Target,
} from "../cli/run.ts";
import type { CpuAffinityOverride, RtPriorityOverride } from "../cli/scheduling.ts";
import { assertSandboxAvailable, checkAgentDir, defaultAgentDir, gatewayBridge } from "../cli/sandbox.ts";
import { DEFAULT_BENCH, loadBenchFile } from "../compose/bench-config.ts";
import type { TrialRecord } from "../gateway/report/types.ts";
import { CodedError } from "../seam/errors.ts";
import { type RunSpec, queueName, type TrialSpec } from "./plan.ts";
import {
  connectRedis,
  FarmStore,
  redisClient,
  type StoredResult,
  type WorkerMode,
  type WorkerState,
} from "./store.ts";

/** Records larger than this stay on the worker host (their path is in the report). */
const MAX_RECORD_BLOB = 256 * 1024 * 1024;
const LEASE_TTL_MS = 30_000;

export interface FarmWorkerOptions {
  /** the farm's Redis, e.g. redis://10.0.0.1:6379 */
  redis: string;
  /** bench file of this worker's gateway (default: the built-in sim bench) */
  bench?: string;
  /** a running gateway instead of an in-process one (needs both tokens and `kind`) */
  url?: string;
  operatorToken?: string;
  agentToken?: string;
  /** the bench kind served (default: the bench's name) */
  kind?: string;
  /** real-time scheduling of the in-process gateway: overrides the bench file's `scheduling.rtPriority` (as serve's and run's --rt-priority) */
  rtPriority?: RtPriorityOverride;
  /** CPUs of the in-process gateway's threads, the agents on the rest: overrides the bench file's `scheduling.cpuAffinity` */
  cpuAffinity?: CpuAffinityOverride;
  /** worker id (default `<host>.<pid>`) */
  id?: string;
  /** where trial folders and records go on this host */
  workDir: string;
  /** folders the sandboxed agents may read besides their own */
  sandboxReadOnly?: string[];
  /** the agents' working directory (default process.cwd()) */
  cwd?: string;
  /** BullMQ job lock, ms (default 30 000): a killed worker's trial is re-queued after about this */
  lockDurationMs?: number;
  /** BullMQ stalled-job check interval, ms (default 30 000) */
  stalledIntervalMs?: number;
  /** heartbeat and control poll, ms (default 1000) */
  heartbeatMs?: number;
  progress?: NodeJS.WritableStream & { isTTY?: boolean };
  /**
   * The trial function (default cli/run.ts runTrial). Tests of the fault paths put a failing
   * bench here; everything else about the worker stays real.
   */
  trialFn?: typeof runTrial;
}

const REPO = resolve(import.meta.dirname, "..");

export class FarmWorker {
  readonly id: string;
  readonly host = hostname();
  private store!: FarmStore;
  private redis!: Redis;
  private bull?: Worker<TrialSpec>;
  /** BullMQ's connection: handed in as a client, so BullMQ leaves closing it to us */
  private bullRedis?: Redis;
  private target?: Target;
  private bridge?: { socketDir: string; close(): Promise<void> };
  private port = 0;
  private timer?: NodeJS.Timeout;
  private readonly runs = new Map<string, RunSpec>();
  private busyWith?: string;
  private pause: "no" | "pausing" | "paused" = "no";
  private drainNote?: string;
  private note?: string;
  private trialsDone = 0;
  private sandboxChecked = false;
  private readonly startedAt = new Date().toISOString();
  private benchName = "";
  private kind = "";
  private real = false;
  private readonly log: NodeJS.WritableStream;

  constructor(private readonly o: FarmWorkerOptions) {
    this.id = o.id ?? `${this.host}.${process.pid}`;
    this.log = o.progress ?? process.stderr;
  }

  private say(text: string): void {
    this.log.write(`farm worker ${this.id}: ${text}\n`);
  }

  /** This worker's gateway (its URL and operator client), once started: for operators and tests. */
  gateway(): Pick<Target, "url" | "operator"> | undefined {
    return this.target;
  }

  get mode(): WorkerMode {
    if (!this.bull) return "starting";
    if (this.drainNote) return "drained";
    if (this.pause === "paused") return "paused";
    if (this.pause === "pausing") return "pausing";
    return this.busyWith ? "busy" : "idle";
  }

  state(): WorkerState {
    const note = this.drainNote ?? this.note;
    return {
      id: this.id,
      host: this.host,
      bench: this.benchName,
      kind: this.kind,
      real: this.real,
      mode: this.mode,
      ...(this.busyWith ? { trial: this.busyWith } : {}),
      ...(note ? { note } : {}),
      trials_done: this.trialsDone,
      heartbeat_at: Date.now(),
      started_at: this.startedAt,
    };
  }

  /** Connect, lease (real bench), start the gateway and take trials. */
  async start(): Promise<void> {
    const o = this.o;
    if (o.url) {
      if (!o.kind) throw new CodedError("RB_ERR_BAD_REQUEST", { issues: "farm worker --url needs --kind" });
      this.benchName = o.url;
      this.real = true; // a running gateway: its bench may be real; lease it by URL
    } else {
      const cfg = o.bench ? loadBenchFile(o.bench).config : DEFAULT_BENCH;
      this.benchName = cfg.name;
      this.real = cfg.backend.type !== "sim";
    }
    this.kind = o.kind ?? this.benchName;
    this.redis = await connectRedis(o.redis);
    this.store = new FarmStore(this.redis);
    if (this.real) {
      const holder = await this.store.lease(this.benchName, this.id, LEASE_TTL_MS);
      if (holder) {
        this.redis.disconnect();
        throw new CodedError("RB_ERR_FARM_LEASE_HELD", { bench: this.benchName, holder });
      }
    }
    const runOpts: RunOptions = {
      agent: "",
      trials: 1,
      ...(o.bench ? { bench: o.bench } : {}),
      ...(o.url ? { url: o.url, operatorToken: o.operatorToken, agentToken: o.agentToken } : {}),
      // with --url, remoteTarget refuses these: the scheduling is that gateway's own
      ...(o.rtPriority !== undefined ? { rtPriority: o.rtPriority } : {}),
      ...(o.cpuAffinity !== undefined ? { cpuAffinity: o.cpuAffinity } : {}),
    };
    try {
      this.target = o.url ? remoteTarget(runOpts) : await inProcessTarget(runOpts, o.workDir);
    } catch (e) {
      // e.g. RB_ERR_RT_SCHEDULING (the bench asks for real-time scheduling this host refuses),
      // or --rt-priority with --url:
      // nothing started, so give the bench back and let the process end
      if (this.real) await this.store.releaseLease(this.benchName, this.id).catch(() => {});
      this.redis.disconnect();
      throw e;
    }
    const u = new URL(this.target.url);
    this.port = Number(u.port || (u.protocol === "https:" ? 443 : 80));
    this.bridge = await gatewayBridge(u.hostname, this.port);
    this.bullRedis = redisClient(o.redis);
    this.bull = new Worker<TrialSpec>(queueName(this.kind), (job) => this.process(job), {
      connection: this.bullRedis,
      concurrency: 1,
      name: this.id,
      lockDuration: o.lockDurationMs ?? 30_000,
      stalledInterval: o.stalledIntervalMs ?? 30_000,
      // a trial may outlive several dead workers before it is given up
      maxStalledCount: 10,
      autorun: false,
    });
    this.bull.on("error", (e) => this.say(`queue error: ${e.message}`));
    await this.store.clearControl(this.id);
    await this.store.putWorker(this.state());
    this.timer = setInterval(
      () => void this.heartbeat().catch((e) => this.say(`heartbeat: ${e}`)),
      o.heartbeatMs ?? 1000,
    );
    void this.bull.run().catch((e: unknown) => this.say(`stopped: ${e instanceof Error ? e.message : e}`));
    this.say(
      `serving ${queueName(this.kind)} on ${this.benchName} (${this.target.url})${this.real ? ", bench leased" : ""}`,
    );
  }

  private async heartbeat(): Promise<void> {
    if (!this.bull) return;
    if (this.real) {
      const holder = await this.store.lease(this.benchName, this.id, LEASE_TTL_MS);
      if (holder && !this.drainNote) await this.drain(`the bench lease is held by ${holder}`);
    }
    const c = await this.store.control(this.id);
    if (c === "pause" && this.pause === "no") {
      await this.store.clearControl(this.id);
      this.pause = "pausing";
      this.note = "paused by the operator";
      this.say("pausing (operator): the current trial finishes, no new one starts");
      void this.bull.pause().then(() => {
        if (this.pause === "pausing") this.pause = "paused";
      });
    } else if (c === "resume") {
      await this.store.clearControl(this.id);
      if (this.pause !== "no" || this.drainNote) {
        this.say(
          this.drainNote ? `resumed by the operator after: ${this.drainNote}` : "resumed by the operator",
        );
        this.pause = "no";
        this.drainNote = undefined;
        this.note = undefined;
        this.bull.resume();
      }
    }
    await this.store.putWorker(this.state());
  }

  /** Take no more trials and tell the operator (farm status; this worker's log). */
  private async drain(why: string): Promise<void> {
    this.drainNote = `drained: ${why}; check the bench, then: robot-gateway farm resume --worker ${this.id}`;
    this.say(this.drainNote);
    await this.bull?.pause(true);
    await this.store.putWorker(this.state());
  }

  private async runSpec(run: string): Promise<RunSpec> {
    let s = this.runs.get(run);
    if (!s) {
      s = await this.store.run(run);
      this.runs.set(run, s);
    }
    return s;
  }

  private jailFor(spec: TrialSpec, run: RunSpec): AgentJail | undefined {
    if (!run.sandbox) return undefined;
    if (!this.sandboxChecked) {
      assertSandboxAvailable();
      this.sandboxChecked = true;
    }
    const cwd = this.o.cwd ?? process.cwd();
    const agentDir = defaultAgentDir(spec.agent, cwd);
    const readOnly = (this.o.sandboxReadOnly ?? []).map((d) => resolve(cwd, d));
    const forbidden = [resolve(this.o.workDir), REPO, ...(this.o.bench ? [resolve(this.o.bench)] : [])];
    for (const d of [...(agentDir ? [agentDir] : []), ...readOnly]) checkAgentDir(d, forbidden);
    return {
      ...(agentDir ? { agentDir } : {}),
      readOnly,
      socketDir: this.bridge!.socketDir,
      port: this.port,
      close: async () => {},
    };
  }

  private async process(job: Job<TrialSpec>): Promise<{ stored: boolean }> {
    const t0 = performance.now();
    const spec = job.data;
    const run = await this.runSpec(spec.run);
    this.busyWith = spec.id;
    const attempt = await this.store.beginAttempt(spec, this.id, this.host);
    await this.store.putWorker(this.state());
    try {
      if (await this.store.hasResult(spec)) {
        await this.store.endAttempt(
          spec.run,
          attempt,
          "duplicate",
          "the result was stored by an earlier attempt",
        );
        return { stored: false };
      }
      let jail: AgentJail | undefined;
      try {
        jail = this.jailFor(spec, run);
      } catch (e) {
        // the same on every worker: the run's agent cannot be sandboxed here; fail the trial for good
        const why = e instanceof CodedError ? `${e.code}: ${e.message}` : String(e);
        await this.store.endAttempt(spec.run, attempt, "infra_failure", why);
        throw new UnrecoverableError(why);
      }
      const o: RunOptions = {
        agent: spec.agent,
        trials: run.trials,
        ...(run.seed !== undefined ? { seed: run.seed } : {}),
        ...(spec.task ? { task: spec.task } : {}),
        ...(spec.level ? { level: spec.level } : {}),
        sandbox: run.sandbox,
        trialTimeoutS: run.trialTimeoutS,
        ...(this.o.cwd ? { cwd: this.o.cwd } : {}),
      };
      const dir = join(this.o.workDir, "trials", spec.id);
      const display = new ProgressDisplay(this.log, run.trials);
      const tTrial = performance.now();
      let rec: TrialRecord;
      let episode: { task: string; level: string | null } | undefined;
      try {
        rec = await (this.o.trialFn ?? runTrial)(o, this.target!, spec.index, dir, display, run.secret, jail);
        if (rec.episode_id) {
          const s = await this.target!.operator.episode(rec.episode_id);
          episode = { task: s.task, level: s.level ?? null };
        }
      } catch (e) {
        const why = `the gateway failed during trial ${spec.id}: ${e instanceof Error ? e.message : e}`;
        await this.store.endAttempt(spec.run, attempt, "infra_failure", why);
        await this.drain(why);
        throw new Error(why);
      }
      const trialS = (performance.now() - tTrial) / 1000;
      const fault = benchFault(rec);
      if (fault) {
        const why = `bench fault in trial ${spec.id}: ${fault}`;
        await this.store.endAttempt(spec.run, attempt, "infra_failure", `${why}; no result, re-queued`);
        await this.drain(why);
        throw new Error(why);
      }
      const blobs: { log?: Buffer; record?: Buffer } = {};
      try {
        blobs.log = readFileSync(join(dir, rec.agent.log));
      } catch {
        // no log: the agent never started
      }
      if (rec.record_path) {
        const p = resolve(dir, rec.record_path);
        try {
          if (statSync(p).size <= MAX_RECORD_BLOB) blobs.record = readFileSync(p);
        } catch {
          // the record is not on this host (a running gateway elsewhere): its path stays in the report
        }
      }
      const stored: StoredResult = {
        spec,
        record: {
          ...rec,
          record_path: blobs.record ? null : rec.record_path,
          farm: { trial_id: spec.id, worker: this.id, host: this.host, attempt: attempt.attempt },
        },
        task: episode?.task ?? spec.task,
        level: episode?.level ?? spec.level,
        bench: this.target!.label,
        provenance: { trial_id: spec.id, worker: this.id, host: this.host, attempt: attempt.attempt },
        stored_at: new Date().toISOString(),
        wall_s: trialS,
        overhead_s: 0,
      };
      stored.overhead_s = (performance.now() - t0) / 1000 - trialS;
      const first = await this.store.putResult(stored, blobs);
      await this.store.endAttempt(
        spec.run,
        attempt,
        first ? "done" : "duplicate",
        first ? undefined : "another attempt stored its result first",
      );
      this.trialsDone++;
      return { stored: first };
    } finally {
      this.busyWith = undefined;
      await this.store.putWorker(this.state()).catch(() => {});
    }
  }

  /** Finish the current trial, stop taking trials, release the bench. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.bull?.close();
    await this.bullRedis?.quit().catch(() => this.bullRedis?.disconnect());
    await this.bridge?.close();
    await this.target?.close();
    if (this.store) {
      if (this.real) await this.store.releaseLease(this.benchName, this.id);
      const s = this.state();
      await this.store.putWorker({ ...s, mode: "stopped" });
      await this.redis.quit();
    }
  }
}

/** Why a trial's result says the bench (not the agent) failed; undefined for a fair result. */
export function benchFault(rec: TrialRecord): string | undefined {
  if (rec.episode_id === null) return rec.run_note ?? "the episode could not be started";
  if (rec.end_reason === "fault")
    return `the episode ended as a fault${rec.end_detail ? `: ${rec.end_detail}` : ""}`;
  return undefined;
}
