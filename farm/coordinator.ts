/**
 * The farm's coordinator side: submit a run (its trials become BullMQ jobs whose job id is the
 * trial id, so adding a trial again adds nothing), read its status, and write its report: the
 * same report.json / report.md / progress.svg / index.html that `robot-gateway run` writes (one
 * set per cell: agent × task × level × bench kind), each trial naming the worker that ran it.
 */
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Queue } from "bullmq";
import type { Redis } from "ioredis";
import { trialSeed } from "../cli/run.ts";
import { type ReportFile, writeReport } from "../gateway/report/render.ts";
import { RUN_REPORT_FORMAT, type RunReport, summarize } from "../gateway/report/types.ts";
import { expandRun, queueName, type RunSpec, type TrialSpec } from "./plan.ts";
import { type Attempt, FarmStore, type StoredResult, type WorkerState } from "./store.ts";

/** BullMQ retries a trial whose attempt failed (a bench fault) up to this many starts in all. */
export const JOB_ATTEMPTS = 5;

export interface SubmitResult {
  run: string;
  trials: number;
  /** false: the run existed; its trials were offered again and BullMQ kept the existing jobs */
  created: boolean;
}

/** Record the run and enqueue its trials, one job per trial, job id = trial id. */
export async function submitRun(redis: Redis, spec: RunSpec): Promise<SubmitResult> {
  const store = new FarmStore(redis);
  const created = await store.putRun(spec, expandRun(spec));
  // a re-submitted run keeps its first spec (and so its seeds and trial ids)
  const run = created ? spec : await store.run(spec.run);
  const trials = expandRun(run);
  for (const kind of run.benchKinds) {
    const q = new Queue<TrialSpec>(queueName(kind), { connection: redis });
    await q.addBulk(
      trials
        .filter((t) => t.benchKind === kind)
        .map((t) => ({
          name: "trial",
          data: t,
          opts: { jobId: t.id, attempts: JOB_ATTEMPTS, removeOnComplete: false, removeOnFail: false },
        })),
    );
    await q.close();
  }
  return { run: run.run, trials: trials.length, created };
}

export interface WorkerView extends WorkerState {
  /** seconds since the last heartbeat */
  heartbeat_age_s: number;
  /** no heartbeat for a while and not stopped: the worker died or lost its network */
  lost: boolean;
}

export interface RunStatus {
  run: string;
  planned: number;
  /** trials with a stored result (each exactly once) */
  stored: number;
  /** BullMQ job counts over the run's bench kinds (all runs of those kinds) */
  queue: Record<string, number>;
  attempts: number;
  /** attempts in progress (on a lost worker: to be re-queued when its lock expires) */
  running: Attempt[];
  infra_failures: Attempt[];
  /** trials BullMQ gave up on, with the last reason */
  failed: { id: string; reason: string }[];
}

export interface FarmStatus {
  runs: RunStatus[];
  workers: WorkerView[];
}

/** A worker whose heartbeat is older than this is shown as lost. */
export const LOST_AFTER_S = 15;

export async function farmStatus(redis: Redis, runs?: string[]): Promise<FarmStatus> {
  const store = new FarmStore(redis);
  const ids = runs ?? (await store.runs());
  const out: RunStatus[] = [];
  for (const id of ids) {
    const spec = await store.run(id);
    const [trials, results, attempts] = await Promise.all([
      store.trials(id),
      store.results(id),
      store.attempts(id),
    ]);
    const queue: Record<string, number> = {};
    const failed: { id: string; reason: string }[] = [];
    const mine = new Set(trials.map((t) => t.id));
    for (const kind of spec.benchKinds) {
      const q = new Queue<TrialSpec>(queueName(kind), { connection: redis });
      const counts = await q.getJobCounts(
        "waiting",
        "active",
        "delayed",
        "completed",
        "failed",
        "prioritized",
      );
      for (const [k, v] of Object.entries(counts)) queue[k] = (queue[k] ?? 0) + v;
      for (const j of await q.getFailed()) {
        if (j.id && mine.has(j.id) && !results.some((r) => r.spec.id === j.id)) {
          failed.push({ id: j.id, reason: j.failedReason });
        }
      }
      await q.close();
    }
    out.push({
      run: id,
      planned: trials.length,
      stored: results.length,
      queue,
      attempts: attempts.length,
      running: attempts.filter((a) => a.status === "running"),
      infra_failures: attempts.filter((a) => a.status === "infra_failure"),
      failed,
    });
  }
  const now = Date.now();
  const workers = (await store.workers()).map((w) => {
    const age = (now - w.heartbeat_at) / 1000;
    return {
      ...w,
      heartbeat_age_s: Math.round(age * 10) / 10,
      lost: w.mode !== "stopped" && age > LOST_AFTER_S,
    };
  });
  // a running attempt whose worker is gone is no result; the operator sees it before the re-queue
  const lost = new Set(workers.filter((w) => w.lost).map((w) => w.id));
  for (const r of out)
    for (const a of r.running)
      if (lost.has(a.worker)) a.note = "its worker is LOST: re-queued when the job lock expires";
  return { runs: out, workers };
}

/** farm status as text for the operator. */
export function statusText(s: FarmStatus): string {
  const lines: string[] = [];
  for (const r of s.runs) {
    const q = Object.entries(r.queue)
      .filter(([, v]) => v > 0)
      .map(([k, v]) => `${k} ${v}`)
      .join(", ");
    lines.push(
      `run ${r.run}: ${r.stored}/${r.planned} trials stored; ${r.attempts} attempts, ${r.infra_failures.length} infrastructure failure(s); queue: ${q || "empty"}`,
    );
    for (const a of r.running)
      lines.push(
        `  running: ${a.trial_id} attempt ${a.attempt} on ${a.worker}${a.note ? ` (${a.note})` : ""}`,
      );
    for (const a of r.infra_failures)
      lines.push(`  infra failure: ${a.trial_id} attempt ${a.attempt} on ${a.worker}: ${a.note ?? ""}`);
    for (const f of r.failed) lines.push(`  FAILED (not retried): ${f.id}: ${f.reason}`);
  }
  if (!s.runs.length) lines.push("no runs");
  for (const w of s.workers) {
    const state = w.lost
      ? `LOST (no heartbeat for ${w.heartbeat_age_s} s; was ${w.mode})`
      : w.mode.toUpperCase();
    lines.push(
      `worker ${w.id} on ${w.host}: ${state}; bench ${w.bench} (kind ${w.kind}${w.real ? ", leased" : ""}); ${w.trials_done} trial(s) done${w.trial ? `; running ${w.trial}` : ""}${w.note ? `\n  ${w.note}` : ""}`,
    );
  }
  if (!s.workers.length) lines.push("no workers");
  return `${lines.join("\n")}\n`;
}

// ---------------------------------------------------------------------------- report

export interface CellReport {
  cell: string;
  /** folder of the cell's report, relative to the farm report folder ("" for a one-cell run) */
  dir: string;
  report: RunReport;
  files: Record<ReportFile, string>;
}

export interface FarmReport {
  run: string;
  outDir: string;
  cells: CellReport[];
  /** trials without a stored result (still queued, running, or given up) */
  missing: string[];
  attempts: Attempt[];
}

/** The cell's run report from its stored results (pure): trials in trial order. */
export function cellReport(
  spec: RunSpec,
  trials: readonly TrialSpec[],
  results: readonly StoredResult[],
): RunReport {
  const first = trials[0]!;
  const recs = [...results].sort((a, b) => a.spec.index - b.spec.index);
  const any = recs[0];
  const times = recs.map((r) => r.stored_at).sort();
  return {
    format: RUN_REPORT_FORMAT,
    task: any?.task ?? first.task ?? "unknown",
    level: any?.level ?? first.level,
    bench: any?.bench ?? first.benchKind,
    agent: first.agent,
    seed_base: trialSeed(spec.seed === undefined ? {} : { seed: spec.seed }, spec.secret, 0),
    ...(spec.seed === undefined ? { seed_secret: spec.secret } : {}),
    sandbox: spec.sandbox ? "bubblewrap" : "none",
    started_at: spec.created_at,
    ended_at: times[times.length - 1] ?? spec.created_at,
    trials: recs.map((r) => r.record),
    summary: summarize(recs.map((r) => r.record)),
  };
}

/** Write the run's report(s) into `outDir`, with each trial's agent log and record from the store. */
export async function writeFarmReport(redis: Redis, run: string, outDir: string): Promise<FarmReport> {
  const store = new FarmStore(redis);
  const spec = await store.run(run);
  const [trials, results, attempts] = await Promise.all([
    store.trials(run),
    store.results(run),
    store.attempts(run),
  ]);
  const byId = new Map(results.map((r) => [r.spec.id, r]));
  const cellIds = [...new Set(trials.map((t) => t.cell))];
  const cells: CellReport[] = [];
  mkdirSync(outDir, { recursive: true, mode: 0o700 });
  for (const cell of cellIds) {
    const ts = trials.filter((t) => t.cell === cell).sort((a, b) => a.index - b.index);
    const dir = cellIds.length === 1 ? "" : cell;
    const cellDir = join(outDir, dir);
    const rs: StoredResult[] = [];
    for (const t of ts) {
      const r = byId.get(t.id);
      if (!r) continue;
      const rec = structuredClone(r.record);
      const log = await store.blob(t.id, "log");
      if (log) {
        const p = join(cellDir, rec.agent.log);
        mkdirSync(join(p, ".."), { recursive: true, mode: 0o700 });
        writeFileSync(p, log, { mode: 0o600 });
      }
      const mcap = await store.blob(t.id, "record");
      if (mcap) {
        const rel = join("records", `${t.id}.mcap`);
        mkdirSync(join(cellDir, "records"), { recursive: true, mode: 0o700 });
        writeFileSync(join(cellDir, rel), mcap, { mode: 0o600 });
        rec.record_path = rel;
      }
      rs.push({ ...r, record: rec });
    }
    const report = cellReport(spec, ts, rs);
    const files = writeReport(cellDir, report);
    for (const f of Object.values(files)) chmodSync(f, 0o600);
    cells.push({ cell, dir, report, files });
  }
  const missing = trials.filter((t) => !byId.has(t.id)).map((t) => t.id);
  writeFileSync(
    join(outDir, "farm.json"),
    `${JSON.stringify(
      {
        run,
        spec: { ...spec, secret: undefined },
        cells: cells.map((c) => ({
          cell: c.cell,
          dir: c.dir,
          agent: c.report.agent,
          task: c.report.task,
          level: c.report.level,
          bench: c.report.bench,
          summary: c.report.summary,
        })),
        missing,
        attempts,
      },
      null,
      2,
    )}\n`,
    { mode: 0o600 },
  );
  return { run, outDir, cells, missing, attempts };
}
