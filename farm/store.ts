/**
 * The farm's results store: the same Redis that carries the BullMQ queues (one service to run,
 * back up and make durable: AOF with fsync on every write, farm/redis.conf). Every write is
 * keyed by the stable trial id and is idempotent:
 * - a trial's result is written with HSETNX, so a trial run twice (a worker that lost its lock
 *   but still finished, a job re-run after a Redis restart) is stored once: the first one wins;
 * - the agent log and the episode record (MCAP) are blobs under the trial id, written with SET NX.
 * Attempts are kept beside the results: one entry per start of a trial on a worker, ending as
 * `done`, `duplicate` (the result was already stored) or `infra_failure` (the worker died or its
 * bench faulted: no result, the trial is re-queued).
 *
 * Keys (prefix `rgfarm:`): runs (set), run:<run> (spec JSON), run:<run>:trials (hash id → spec),
 * run:<run>:results (hash id → StoredResult), run:<run>:attempts (hash `<id>#<n>` → Attempt),
 * run:<run>:attempt-seq (hash id → n), blob:<id>:log, blob:<id>:record, workers (hash id →
 * WorkerState), worker:<id>:control (`pause` | `resume`), lease:<bench> (worker id, with a TTL).
 */
import { Redis } from "ioredis";
import type { TrialRecord } from "../gateway/report/types.ts";
import { CodedError } from "../seam/errors.ts";
import type { RunSpec, TrialSpec } from "./plan.ts";

const P = "rgfarm:";

/** A Redis connection as BullMQ wants it (no per-command retry limit: commands wait out a restart). */
export function redisClient(url: string): Redis {
  const r = new Redis(url, { maxRetriesPerRequest: null, lazyConnect: true });
  // connection errors surface as waiting commands (they resume on reconnect) and in farm status
  r.on("error", () => {});
  return r;
}

/** Connect, or fail with RB_ERR_FARM_REDIS within `timeoutMs`. */
export async function connectRedis(url: string, timeoutMs = 10_000): Promise<Redis> {
  const r = redisClient(url);
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      r.connect().then(() => r.ping()),
      new Promise((_, rej) => {
        timer = setTimeout(() => rej(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
  } catch (e) {
    r.disconnect();
    throw new CodedError("RB_ERR_FARM_REDIS", { url, reason: e instanceof Error ? e.message : String(e) });
  } finally {
    clearTimeout(timer);
  }
  return r;
}

/** Where a stored result came from. */
export interface Provenance {
  trial_id: string;
  worker: string;
  host: string;
  /** 1-based attempt number of this trial */
  attempt: number;
}

export interface StoredResult {
  spec: TrialSpec;
  record: TrialRecord;
  /** the task and level the episode ran (as the gateway reported them) */
  task: string | null;
  level: string | null;
  /** the bench's name as the worker's gateway reports it */
  bench: string;
  provenance: Provenance;
  stored_at: string;
  /** wall seconds of the trial function (episode, agent, result) on the worker */
  wall_s: number;
  /** wall seconds the worker spent on the farm's own work around it (attempt, blobs, store) */
  overhead_s: number;
}

export type AttemptStatus = "running" | "done" | "duplicate" | "infra_failure";

export interface Attempt {
  trial_id: string;
  attempt: number;
  worker: string;
  host: string;
  status: AttemptStatus;
  started_at: string;
  ended_at?: string;
  note?: string;
}

export type WorkerMode = "starting" | "idle" | "busy" | "pausing" | "paused" | "drained" | "stopped";

export interface WorkerState {
  id: string;
  host: string;
  bench: string;
  kind: string;
  /** real benches are leased exclusively */
  real: boolean;
  mode: WorkerMode;
  trial?: string;
  /** why the worker is drained or paused: shown to the operator by farm status */
  note?: string;
  trials_done: number;
  heartbeat_at: number;
  started_at: string;
}

export class FarmStore {
  constructor(readonly redis: Redis) {}

  // ---------------------------------------------------------------- runs

  /** Record a run and its trials; a run that exists already is left as it is (returns false). */
  async putRun(spec: RunSpec, trials: readonly TrialSpec[]): Promise<boolean> {
    const created = await this.redis.set(`${P}run:${spec.run}`, JSON.stringify(spec), "NX");
    if (created !== "OK") return false;
    await this.redis.sadd(`${P}runs`, spec.run);
    if (trials.length) {
      await this.redis.hset(
        `${P}run:${spec.run}:trials`,
        ...trials.flatMap((t) => [t.id, JSON.stringify(t)]),
      );
    }
    return true;
  }

  async run(run: string): Promise<RunSpec> {
    const s = await this.redis.get(`${P}run:${run}`);
    if (!s) throw new CodedError("RB_ERR_FARM_UNKNOWN_RUN", { run });
    return JSON.parse(s) as RunSpec;
  }

  async runs(): Promise<string[]> {
    return (await this.redis.smembers(`${P}runs`)).sort();
  }

  async trials(run: string): Promise<TrialSpec[]> {
    const h = await this.redis.hgetall(`${P}run:${run}:trials`);
    return Object.values(h)
      .map((s) => JSON.parse(s) as TrialSpec)
      .sort((a, b) => (a.cell === b.cell ? a.index - b.index : a.cell < b.cell ? -1 : 1));
  }

  // ---------------------------------------------------------------- results

  /** Store a trial's result once: false when it was stored already (the first one stays). */
  async putResult(r: StoredResult, blobs: { log?: Buffer; record?: Buffer }): Promise<boolean> {
    const id = r.spec.id;
    // blobs first: a result that is visible always has its files
    if (blobs.log) await this.redis.set(`${P}blob:${id}:log`, blobs.log, "NX");
    if (blobs.record) await this.redis.set(`${P}blob:${id}:record`, blobs.record, "NX");
    return (await this.redis.hsetnx(`${P}run:${r.spec.run}:results`, id, JSON.stringify(r))) === 1;
  }

  async hasResult(t: TrialSpec): Promise<boolean> {
    return (await this.redis.hexists(`${P}run:${t.run}:results`, t.id)) === 1;
  }

  async results(run: string): Promise<StoredResult[]> {
    const h = await this.redis.hgetall(`${P}run:${run}:results`);
    return Object.values(h).map((s) => JSON.parse(s) as StoredResult);
  }

  async blob(trialId: string, kind: "log" | "record"): Promise<Buffer | null> {
    return this.redis.getBuffer(`${P}blob:${trialId}:${kind}`);
  }

  // ---------------------------------------------------------------- attempts

  /**
   * A worker starts a trial: a new attempt. Earlier attempts still marked running belong to a
   * worker that stopped mid-trial (BullMQ re-queued the job when its lock expired): they become
   * infrastructure failures.
   */
  async beginAttempt(t: TrialSpec, worker: string, host: string): Promise<Attempt> {
    const key = `${P}run:${t.run}:attempts`;
    const n = await this.redis.hincrby(`${P}run:${t.run}:attempt-seq`, t.id, 1);
    const now = new Date().toISOString();
    for (let i = 1; i < n; i++) {
      const s = await this.redis.hget(key, `${t.id}#${i}`);
      if (!s) continue;
      const a = JSON.parse(s) as Attempt;
      if (a.status !== "running") continue;
      a.status = "infra_failure";
      a.ended_at = now;
      a.note = `worker ${a.worker} stopped mid-trial (its BullMQ lock expired and the trial was re-queued); no result`;
      await this.redis.hset(key, `${t.id}#${i}`, JSON.stringify(a));
    }
    const a: Attempt = { trial_id: t.id, attempt: n, worker, host, status: "running", started_at: now };
    await this.redis.hset(key, `${t.id}#${n}`, JSON.stringify(a));
    return a;
  }

  async endAttempt(
    run: string,
    a: Attempt,
    status: Exclude<AttemptStatus, "running">,
    note?: string,
  ): Promise<void> {
    const done: Attempt = { ...a, status, ended_at: new Date().toISOString(), ...(note ? { note } : {}) };
    await this.redis.hset(`${P}run:${run}:attempts`, `${a.trial_id}#${a.attempt}`, JSON.stringify(done));
  }

  async attempts(run: string): Promise<Attempt[]> {
    const h = await this.redis.hgetall(`${P}run:${run}:attempts`);
    return Object.values(h)
      .map((s) => JSON.parse(s) as Attempt)
      .sort((a, b) => (a.started_at < b.started_at ? -1 : a.started_at > b.started_at ? 1 : 0));
  }

  // ---------------------------------------------------------------- workers

  async putWorker(w: WorkerState): Promise<void> {
    await this.redis.hset(`${P}workers`, w.id, JSON.stringify(w));
  }

  async workers(): Promise<WorkerState[]> {
    const h = await this.redis.hgetall(`${P}workers`);
    return Object.values(h)
      .map((s) => JSON.parse(s) as WorkerState)
      .sort((a, b) => (a.id < b.id ? -1 : 1));
  }

  /** Operator control of one worker: `pause` (after the current trial) or `resume`. */
  async setControl(worker: string, c: "pause" | "resume"): Promise<void> {
    await this.redis.set(`${P}worker:${worker}:control`, c);
  }

  async control(worker: string): Promise<"pause" | "resume" | null> {
    return (await this.redis.get(`${P}worker:${worker}:control`)) as "pause" | "resume" | null;
  }

  async clearControl(worker: string): Promise<void> {
    await this.redis.del(`${P}worker:${worker}:control`);
  }

  // ---------------------------------------------------------------- bench leases

  /** Take or renew the exclusive lease of a real bench; returns the holder when someone else has it. */
  async lease(bench: string, worker: string, ttlMs: number): Promise<string | null> {
    const key = `${P}lease:${bench}`;
    const held = (await this.redis.eval(
      // renew when we hold it, take it when free; else report the holder
      "local v = redis.call('GET', KEYS[1]) if v == false or v == ARGV[1] then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return false end return v",
      1,
      key,
      worker,
      String(ttlMs),
    )) as string | null;
    return held ?? null;
  }

  async releaseLease(bench: string, worker: string): Promise<void> {
    await this.redis.eval(
      "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
      1,
      `${P}lease:${bench}`,
      worker,
    );
  }
}
