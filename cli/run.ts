/**
 * `robot-gateway run --task buzz-wire --trials 8 --agent "<command>"`: run an agent command for
 * a number of trials and write a report.
 *
 * The run starts a gateway in-process on 127.0.0.1 with fresh tokens (or uses a running one
 * given --url, --operator-token and --agent-token). For each trial it starts an episode through
 * the operator API (seed = --seed + trial index), runs the agent command in a shell with
 * ROBOT_GATEWAY_URL, ROBOT_GATEWAY_TOKEN (the agent token) and ROBOT_GATEWAY_TRIAL (1-based) in
 * its environment, and waits until the agent exits, the episode ends, or the trial times out:
 * - the agent exits while the episode still runs (a crash, or an agent that forgot to finish):
 *   the run ends the episode (end reason `finished`, detail naming why) and marks the trial
 *   `ended_by: "run"`;
 * - the episode ends first: the agent gets a grace period to exit, then it is stopped;
 * - the trial times out: the run ends the episode the same way and stops the agent.
 * The episode's result (computed by the gateway, result.json) goes into the report unchanged.
 *
 * Files in --out (default runs/<timestamp>/, owner-only): report.json, report.md, progress.svg,
 * index.html, trials/<n>/agent.log, trials/<n>/workspace/ (the sandboxed agent's workspace) and,
 * for an in-process gateway, records/<episode>/record.mcap.
 *
 * Isolation: each agent runs in a bubblewrap sandbox (cli/sandbox.ts): no records, bench files,
 * runs or repository inside, network only to the gateway. `--no-sandbox` opts out (logged).
 * Seeds: without --seed, each trial's seed is derived from a fresh random run secret (HMAC), so
 * no earlier run tells an agent the next seed; the secret is recorded in report.json.
 *
 * Register in cli/main.ts with `program.addCommand(runCommand())`; also runs on its own:
 * `npx tsx cli/run.ts --trials 3 --agent "node my-agent.mjs"`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createHmac, randomBytes } from "node:crypto";
import { chmodSync, closeSync, mkdirSync, openSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { isEntryPoint } from "./entry.ts";
import {
  assertSandboxAvailable,
  checkAgentDir,
  defaultAgentDir,
  gatewayBridge,
  spawnSandboxed,
} from "./sandbox.ts";
import { Command, InvalidArgumentError } from "commander";
import { type EpisodeSummary, OperatorClient, RobotGatewayError } from "../gateway/client/client.ts";
import { CodedError } from "../seam/errors.ts";
import { DEFAULT_BENCH, loadBenchFile, parseBenchConfig } from "../compose/bench-config.ts";
import { observersDone, startGateway } from "../compose/start.ts";
import { twinDivergenceBeside } from "../compose/twin/observer.ts";
import type { EpisodeResult } from "../gateway/recorder/result.ts";
import { type ReportFile, writeReport } from "../gateway/report/render.ts";
import {
  applyBenchCpuAffinity,
  applyBenchScheduling,
  CPU_AFFINITY_HELP,
  type CpuAffinityOverride,
  cpuAffinityArg,
  onCpus,
  RT_PRIORITY_HELP,
  raiseComposedThreads,
  type RtPriorityOverride,
  rtPriorityArg,
} from "./scheduling.ts";
import {
  RUN_REPORT_FORMAT,
  type RunReport,
  summarize,
  type TrialOutcome,
  type TrialRecord,
} from "../gateway/report/types.ts";

export interface RunOptions {
  /** task id (default: the bench's / gateway's default task) */
  task?: string;
  /** number of trials (≥ 1) */
  trials: number;
  /** the agent command, run with `sh -c` */
  agent: string;
  /** bench file for the in-process gateway (default: the built-in sim bench) */
  bench?: string;
  /** seed of trial 1; trial i gets seed + i − 1 (default: seeds derived from a random run secret) */
  seed?: number;
  /** run each agent in the bubblewrap sandbox (default true; false is the logged `--no-sandbox`) */
  sandbox?: boolean;
  /** the agent's program files, read-only in the sandbox (default: folder of the command's first file) */
  agentDir?: string;
  /** more folders the sandboxed agent may read (a venv, a client library) */
  sandboxReadOnly?: string[];
  /** task level (default: the task's default) */
  level?: string;
  /** a running gateway instead of an in-process one (needs both tokens) */
  url?: string;
  operatorToken?: string;
  agentToken?: string;
  /** report folder (default runs/<timestamp>/ under the working directory) */
  out?: string;
  /** wall-clock seconds a trial may take before the run ends it (default 900) */
  trialTimeoutS?: number;
  /** wall-clock seconds the agent may keep running after its episode ended (default 5) */
  graceS?: number;
  /** how often the episode status is polled, ms (default 200) */
  pollMs?: number;
  /** where progress goes (default process.stderr); a TTY gets one live line per trial */
  progress?: NodeJS.WritableStream & { isTTY?: boolean };
  /** the agent's working directory (default process.cwd()) */
  cwd?: string;
  /** real-time scheduling of the in-process gateway: overrides the bench file's `scheduling.rtPriority` */
  rtPriority?: RtPriorityOverride;
  /** CPUs of the in-process gateway's threads (the agents get the rest): overrides the bench file's `scheduling.cpuAffinity` */
  cpuAffinity?: CpuAffinityOverride;
}

export interface RunResult {
  report: RunReport;
  /** absolute path of the report folder */
  outDir: string;
  files: Record<ReportFile, string>;
}

/** A gateway the run talks to (exported for cli/farm's workers). */
export interface Target {
  url: string;
  /** the operator API, through the TS client (robot-gateway/client) */
  operator: OperatorClient;
  agentToken: string;
  /** bench name, or the URL of a running gateway */
  label: string;
  /** wait until everything the gateway writes for the episode is on disk */
  settle(): Promise<void>;
  close(): Promise<void>;
  /** CPUs for the agents (the ones the gateway's affinity left; absent: wherever run itself runs) */
  agentCpus?: number[];
}

/** An error as one line: `POST /v1/admin/episodes: 404 RB_ERR_UNKNOWN_TASK Unknown task nope`. */
function errorText(e: unknown): string {
  if (e instanceof RobotGatewayError) return `${e.call}: ${e.status} ${e.code} ${e.message}`;
  return e instanceof Error ? e.message : String(e);
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * End a still-running episode on behalf of the run (operator end call: stops any motion at
 * once, end reason `finished`); the detail says why. An episode that has ended meanwhile is left.
 */
async function endEpisode(t: Target, id: string, detail: string): Promise<void> {
  try {
    await t.operator.endEpisode(id, { reason: "finished", detail });
  } catch (e) {
    if (e instanceof RobotGatewayError && e.code === "RB_ERR_EPISODE_ENDED") return;
    throw e;
  }
}

/** An in-process gateway on 127.0.0.1:0 with fresh tokens; records go to `<out>/records`. */
export async function inProcessTarget(o: RunOptions, outDir: string): Promise<Target> {
  const loaded = o.bench ? loadBenchFile(o.bench) : { config: DEFAULT_BENCH, baseDir: process.cwd() };
  const cfg = structuredClone(loaded.config);
  const config = parseBenchConfig(
    {
      ...cfg,
      task: { ...cfg.task, ...(o.task ? { id: o.task } : {}), ...(o.level ? { level: o.level } : {}) },
      recordsDir: join(outDir, "records"),
    },
    "run",
  );
  // an affinity leaves the agents the other CPUs; agents are started with SCHED_RESET_ON_FORK:
  // they run under the normal scheduler
  const placed = applyBenchCpuAffinity(config.scheduling, o.cpuAffinity);
  if (placed) console.error(`robot-gateway run: ${placed.summary}`);
  const sched = await applyBenchScheduling(config.scheduling, o.rtPriority);
  if (sched) console.error(`robot-gateway run: ${sched.summary}`);
  const g = await startGateway({
    config,
    baseDir: loaded.baseDir,
    firstEpisode: false,
    listen: { host: "127.0.0.1", port: 0 },
  });
  if (sched) await raiseComposedThreads(sched, g, "robot-gateway run");
  // each trial's files are complete before the next starts: wait for the observers made since
  // (the gateway's list is bounded, so they are told apart by identity, not by index)
  const waited = new WeakSet<object>();
  return {
    url: g.url!,
    agentToken: g.agentToken,
    operator: new OperatorClient({ url: g.url!, token: g.operatorToken }),
    label: g.bench.name,
    ...(placed?.others.length ? { agentCpus: placed.others } : {}),
    async settle() {
      const fresh = g.observers.filter((o) => !waited.has(o));
      for (const o of fresh) waited.add(o);
      // a recorder that cannot finish must not hang the run
      if (fresh.length) await Promise.race([observersDone(fresh), sleep(15_000)]);
    },
    async close() {
      await g.close();
    },
  };
}

/** A running gateway. */
export function remoteTarget(o: RunOptions): Target {
  if (!o.operatorToken || !o.agentToken) {
    throw new InvalidArgumentError("--url needs --operator-token and --agent-token");
  }
  for (const [flag, given] of [
    ["--rt-priority", o.rtPriority],
    ["--cpu-affinity", o.cpuAffinity],
  ] as const) {
    // the scheduling is the gateway's own: the one at the URL sets it (serve --rt-priority, --cpu-affinity)
    if (given !== undefined) {
      throw new InvalidArgumentError(
        `${flag} is for the gateway run starts itself; with --url, give it to that gateway's serve`,
      );
    }
  }
  const url = o.url!;
  return {
    url,
    agentToken: o.agentToken,
    operator: new OperatorClient({ url, token: o.operatorToken }),
    label: url,
    async settle() {},
    async close() {},
  };
}

// ------------------------------------------------------------------ progress display

const pctText = (x: number | null | undefined) =>
  x === null || x === undefined ? "–" : `${Math.round(x * 1000) / 10} %`;

/** One live line per trial on a TTY; plain lines otherwise. */
export class ProgressDisplay {
  private readonly tty: boolean;
  private live = false;
  constructor(
    private readonly out: NodeJS.WritableStream & { isTTY?: boolean },
    private readonly total: number,
  ) {
    this.tty = !!out.isTTY;
  }

  private head(trial: number, seed: number): string {
    return `trial ${String(trial).padStart(String(this.total).length)}/${this.total} seed ${seed}`;
  }

  start(trial: number, seed: number, episodeId: string): void {
    const line = `${this.head(trial, seed)}: episode ${episodeId} started`;
    if (this.tty) this.rewrite(line);
    else this.out.write(`${line}\n`);
  }

  update(trial: number, seed: number, s: EpisodeSummary | undefined, wallS: number): void {
    if (!this.tty) return;
    const st = s ? `${s.status}, t=${s.t.toFixed(1)} s, ${s.steps} steps` : "starting";
    this.rewrite(`${this.head(trial, seed)}: ${st} (${wallS.toFixed(0)} s)`);
  }

  done(t: TrialRecord): void {
    const line =
      `${this.head(t.trial, t.seed)}: ${t.outcome} (${t.end_reason ?? "no result"}${t.ended_by === "run" ? ", ended by the run" : ""})` +
      ` score ${pctText(t.progress_quantised)} progress ${pctText(t.progress)}` +
      ` episode ${t.episode_s.toFixed(1)} s wall ${t.wall_s.toFixed(1)} s` +
      (t.run_note ? ` — ${t.run_note}` : "");
    if (this.tty) {
      this.rewrite(line);
      this.out.write("\n");
      this.live = false;
    } else this.out.write(`${line}\n`);
  }

  message(text: string): void {
    if (this.live) this.out.write("\n");
    this.live = false;
    this.out.write(`${text}\n`);
  }

  private rewrite(line: string): void {
    this.out.write(`\r\x1b[2K${line}`);
    this.live = true;
  }
}

// ------------------------------------------------------------------ one trial

interface AgentExit {
  code: number | null;
  signal: string | null;
  error?: string;
}

/** How agents are started: unconfined, or in the sandbox through a bridge to the gateway. */
export interface AgentJail {
  agentDir?: string;
  readOnly: string[];
  socketDir: string;
  port: number;
  close(): Promise<void>;
}

function startAgent(
  o: RunOptions,
  t: Target,
  trial: number,
  logPath: string,
  jail?: AgentJail,
): { child: ChildProcess; exit: Promise<AgentExit> } {
  const fd = openSync(logPath, "w", 0o600);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ROBOT_GATEWAY_URL: t.url,
    ROBOT_GATEWAY_TOKEN: t.agentToken,
    ROBOT_GATEWAY_TRIAL: String(trial),
  };
  // the agent never sees the operator token
  delete env.ROBOT_GATEWAY_OPERATOR_TOKEN;
  // the shell that runs the command (as spawn's `shell: true` does), on the agents' CPUs
  const shellCommand = onCpus(t.agentCpus, ["/bin/sh", "-c", o.agent]);
  const child = jail
    ? spawnSandboxed({
        command: o.agent,
        cwd: o.cwd ?? process.cwd(),
        ...(jail.agentDir ? { agentDir: jail.agentDir } : {}),
        readOnly: jail.readOnly,
        workspace: join(dirname(logPath), "workspace"),
        socketDir: jail.socketDir,
        gatewayPort: jail.port,
        env: {
          ROBOT_GATEWAY_URL: `http://127.0.0.1:${jail.port}`,
          ROBOT_GATEWAY_TOKEN: t.agentToken,
          ROBOT_GATEWAY_TRIAL: String(trial),
        },
        stdio: ["ignore", fd, fd],
        ...(t.agentCpus ? { cpus: t.agentCpus } : {}),
      })
    : spawn(shellCommand[0]!, shellCommand.slice(1), {
        // its own process group, so a timeout stops the shell and everything it started
        detached: true,
        cwd: o.cwd ?? process.cwd(),
        env,
        stdio: ["ignore", fd, fd],
      });
  const exit = new Promise<AgentExit>((res) => {
    child.once("error", (e) => res({ code: null, signal: null, error: e.message }));
    child.once("exit", (code, signal) => res({ code, signal }));
  }).finally(() => closeSync(fd));
  return { child, exit };
}

/** Stop the agent's process group: SIGTERM, then SIGKILL after `killAfterMs`. */
async function stopAgent(child: ChildProcess, exit: Promise<AgentExit>, killAfterMs = 2000): Promise<void> {
  const group = child.pid;
  if (group === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const signal = (s: NodeJS.Signals) => {
    try {
      process.kill(-group, s);
    } catch {
      // already gone
    }
  };
  signal("SIGTERM");
  const gone = await Promise.race([exit.then(() => true), sleep(killAfterMs).then(() => false)]);
  if (!gone) {
    signal("SIGKILL");
    await exit;
  }
}

function exitText(e: AgentExit): string {
  if (e.error) return `agent could not start (${e.error})`;
  if (e.signal) return `agent was killed by ${e.signal}`;
  return `agent exited with code ${e.code}`;
}

/** Trial `index`'s seed: --seed + index, or 31 bits of HMAC-SHA256(run secret, index). */
export function trialSeed(o: { seed?: number }, secret: string, index: number): number {
  if (o.seed !== undefined) return o.seed + index;
  return (
    createHmac("sha256", secret)
      .update(`trial ${index + 1}`)
      .digest()
      .readUInt32BE(0) >>> 1
  );
}

/** One trial: start the episode, run the agent, end it, read the result (exported for cli/farm). */
export async function runTrial(
  o: RunOptions,
  t: Target,
  index: number,
  outDir: string,
  display: ProgressDisplay,
  secret: string,
  jail?: AgentJail,
): Promise<TrialRecord> {
  const trial = index + 1;
  const seed = trialSeed(o, secret, index);
  const logRel = join("trials", String(trial), "agent.log");
  mkdirSync(join(outDir, "trials", String(trial)), { recursive: true, mode: 0o700 });
  const wall0 = Date.now();
  const wallS = () => (Date.now() - wall0) / 1000;
  const base = {
    trial,
    seed,
    agent: { exit_code: null, signal: null, log: logRel },
  };
  let started: EpisodeSummary;
  try {
    started = await t.operator.startEpisode({
      ...(o.task ? { task: o.task } : {}),
      ...(o.level ? { level: o.level } : {}),
      seed,
    });
  } catch (e) {
    const rec: TrialRecord = {
      ...base,
      episode_id: null,
      outcome: "error",
      success: false,
      end_reason: null,
      ended_by: "run",
      run_note: `the episode could not be started: ${errorText(e)}`,
      progress: 0,
      progress_quantised: null,
      episode_s: 0,
      wall_s: wallS(),
      record_path: null,
    };
    display.done(rec);
    return rec;
  }
  const id = started.id;
  display.start(trial, seed, id);
  const { child, exit } = startAgent(o, t, trial, join(outDir, logRel), jail);
  let exited: AgentExit | undefined;
  void exit.then((e) => {
    exited = e;
  });
  const timeoutS = o.trialTimeoutS ?? 900;
  const graceS = o.graceS ?? 5;
  const pollMs = o.pollMs ?? 200;
  let runNote: string | undefined;
  let endedByRun = false;
  let endedAtS: number | undefined;
  let status: EpisodeSummary = started;
  try {
    for (;;) {
      await Promise.race([exit, sleep(pollMs)]);
      status = await t.operator.episode(id);
      display.update(trial, seed, status, wallS());
      if (status.status === "ended") {
        endedAtS ??= wallS();
        if (exited) break;
        if (wallS() - endedAtS >= graceS) {
          await stopAgent(child, exit);
          runNote = `agent still running ${graceS} s after the episode ended; stopped`;
          break;
        }
        continue;
      }
      if (exited) {
        runNote = `${exitText(exited)} while the episode was running`;
        await endEpisode(t, id, `run: ${runNote}`);
        endedByRun = true;
        break;
      }
      if (wallS() >= timeoutS) {
        runNote = `trial timeout after ${timeoutS} s`;
        await endEpisode(t, id, `run: ${runNote}`);
        endedByRun = true;
        await stopAgent(child, exit);
        break;
      }
    }
  } finally {
    // never leave an agent behind, whatever went wrong above
    await stopAgent(child, exit);
  }
  const agentExit = await exit;
  // the result is there once the episode has ended; poll briefly in case the end is in flight
  let final = status;
  for (let i = 0; i < 50 && !final.result; i++) {
    final = await t.operator.episode(id);
    if (!final.result) await sleep(100);
  }
  await t.settle();
  // result.json as the gateway computed it (the summary schema types it as an open record)
  const r = final.result as EpisodeResult | undefined;
  const rec: TrialRecord = {
    ...base,
    episode_id: id,
    outcome: (r?.outcome ?? "error") as TrialOutcome,
    success: r?.success ?? false,
    end_reason: r?.end_reason ?? null,
    ...(r?.end_detail ? { end_detail: r.end_detail } : {}),
    ended_by: endedByRun ? "run" : "episode",
    ...(runNote || !r ? { run_note: runNote ?? "the episode has no result" } : {}),
    progress: r?.progress ?? 0,
    progress_quantised: r?.progress_quantised ?? null,
    episode_s: r?.timing.episode_s ?? final.t,
    wall_s: Math.round(wallS() * 1000) / 1000,
    record_path: final.record_path ? displayPath(final.record_path, outDir) : null,
    agent: { exit_code: agentExit.code, signal: agentExit.signal, log: logRel },
  };
  const twin = final.record_path ? twinDivergenceBeside(final.record_path) : null;
  if (twin) rec.twin_divergence = twin;
  display.done(rec);
  return rec;
}

/** Paths inside the report folder are written relative to it, so the folder can move. */
function displayPath(p: string, outDir: string): string {
  const rel = relative(outDir, p);
  return rel.startsWith("..") || resolve(outDir, rel) !== resolve(p) ? p : rel;
}

function timestamp(d = new Date()): string {
  return d
    .toISOString()
    .replace(/\.\d+Z$/, "Z")
    .replace(/:/g, "-");
}

/** Run the trials and write the report. */
export async function runTrials(o: RunOptions): Promise<RunResult> {
  if (!Number.isInteger(o.trials) || o.trials < 1) throw new InvalidArgumentError("--trials must be ≥ 1");
  const startedAt = new Date();
  const outDir = resolve(o.out ?? join("runs", timestamp(startedAt)));
  const display = new ProgressDisplay(o.progress ?? process.stderr, o.trials);
  const sandboxed = o.sandbox ?? true;
  // fail closed: no sandbox, no run (unless the operator opted out)
  let agentDir: string | undefined;
  const cwd = o.cwd ?? process.cwd();
  const readOnly = (o.sandboxReadOnly ?? []).map((d) => resolve(cwd, d));
  if (sandboxed) {
    assertSandboxAvailable();
    agentDir = o.agentDir ? resolve(cwd, o.agentDir) : defaultAgentDir(o.agent, cwd);
    const forbidden = [outDir, resolve(import.meta.dirname, ".."), ...(o.bench ? [resolve(o.bench)] : [])];
    for (const d of [...(agentDir ? [agentDir] : []), ...readOnly]) checkAgentDir(d, forbidden);
  }
  mkdirSync(outDir, { recursive: true, mode: 0o700 });
  const secret = randomBytes(32).toString("hex");
  const target = o.url ? remoteTarget(o) : await inProcessTarget(o, outDir);
  display.message(
    `run: ${o.trials} trial(s) of ${o.task ?? "the default task"} on ${target.label}; report in ${outDir}`,
  );
  let jail: AgentJail | undefined;
  if (sandboxed) {
    const u = new URL(target.url);
    const port = Number(u.port || (u.protocol === "https:" ? 443 : 80));
    const bridge = await gatewayBridge(u.hostname, port);
    jail = {
      ...(agentDir ? { agentDir } : {}),
      readOnly,
      socketDir: bridge.socketDir,
      port,
      close: bridge.close,
    };
    display.message(
      `run: agents run sandboxed (bubblewrap): read-only agent folder ${agentDir ?? "(none: the command names no file)"}${readOnly.length ? ` and ${readOnly.join(", ")}` : ""}, network only to the gateway`,
    );
  } else {
    display.message(
      "run: --no-sandbox: agents run UNCONFINED with this user's permissions; they can read records (the hidden task instance), bench files and the repository",
    );
  }
  const trials: TrialRecord[] = [];
  let level: string | null = o.level ?? null;
  let task = o.task;
  try {
    for (let i = 0; i < o.trials; i++) {
      const rec = await runTrial(o, target, i, outDir, display, secret, jail);
      trials.push(rec);
      if (rec.episode_id && (!task || !level)) {
        const s = await target.operator.episode(rec.episode_id);
        task ??= s.task;
        level ??= s.level;
      }
    }
  } finally {
    await jail?.close();
    await target.close();
  }
  const report: RunReport = {
    format: RUN_REPORT_FORMAT,
    task: task ?? "unknown",
    level,
    bench: target.label,
    agent: o.agent,
    seed_base: trialSeed(o, secret, 0),
    ...(o.seed === undefined ? { seed_secret: secret } : {}),
    sandbox: sandboxed ? "bubblewrap" : "none",
    started_at: startedAt.toISOString(),
    ended_at: new Date().toISOString(),
    trials,
    summary: summarize(trials),
  };
  const files = writeReport(outDir, report);
  for (const f of Object.values(files)) chmodSync(f, 0o600);
  const s = report.summary;
  display.message(
    `run: ${s.trials} trial(s), ${s.successes} success(es), mean score ${pctText(s.mean_progress_quantised)}, mean progress ${pctText(s.mean_progress)}; ${files["index.html"]}`,
  );
  return { report, outDir, files };
}

// ------------------------------------------------------------------ command line

function positiveInt(name: string, min: number) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min)
      throw new InvalidArgumentError(`${name} must be an integer ≥ ${min}`);
    return n;
  };
}

function positiveNumber(name: string) {
  return (v: string): number => {
    const n = Number(v);
    if (!(n > 0)) throw new InvalidArgumentError(`${name} must be a positive number`);
    return n;
  };
}

export function runCommand(): Command {
  return new Command("run")
    .description(
      "run an agent command for N trials (one episode each) and write a report (report.json, report.md, progress.svg, index.html)",
    )
    .requiredOption(
      "--agent <command>",
      "agent command, run in a shell with ROBOT_GATEWAY_URL, ROBOT_GATEWAY_TOKEN, ROBOT_GATEWAY_TRIAL",
    )
    .option("--task <id>", "task id (default: the bench's task)")
    .option("--trials <n>", "number of trials", positiveInt("--trials", 1), 1)
    .option("--bench <file>", "bench file for the in-process gateway (default: the built-in sim bench)")
    .option(
      "--seed <n>",
      "seed of trial 1 (trial i gets seed + i − 1; default: seeds derived from a random run secret, recorded in report.json)",
      positiveInt("--seed", 0),
    )
    .option(
      "--agent-dir <dir>",
      "the agent's program files, read-only in the sandbox (default: folder of the command's first file)",
    )
    .option(
      "--sandbox-ro <dir>",
      "another folder the sandboxed agent may read (a venv, a client library); repeatable",
      (v: string, prev: string[] = []) => [...prev, v],
    )
    .option("--no-sandbox", "run the agent unconfined (it can read records, bench files and the repository)")
    .option("--level <name>", "task level")
    .option("--rt-priority <n|off>", RT_PRIORITY_HELP, rtPriorityArg)
    .option("--cpu-affinity <list|off>", CPU_AFFINITY_HELP, cpuAffinityArg)
    .option("--url <url>", "use a running gateway instead of starting one")
    .option("--operator-token <token>", "operator token of the running gateway (with --url)")
    .option("--agent-token <token>", "agent token of the running gateway, handed to the agent (with --url)")
    .option("--out <dir>", "report folder (default runs/<timestamp>/)")
    .option(
      "--trial-timeout <s>",
      "seconds a trial may take before the run ends it",
      positiveNumber("--trial-timeout"),
      900,
    )
    .action(
      async (o: {
        agent: string;
        task?: string;
        trials: number;
        bench?: string;
        seed?: number;
        agentDir?: string;
        sandboxRo?: string[];
        sandbox: boolean;
        level?: string;
        url?: string;
        operatorToken?: string;
        agentToken?: string;
        out?: string;
        trialTimeout: number;
        rtPriority?: RtPriorityOverride;
        cpuAffinity?: CpuAffinityOverride;
      }) => {
        if (!o.sandbox) {
          process.stderr.write("run: --no-sandbox given: agents will run unconfined\n");
        }
        const res = await runTrials({
          agent: o.agent,
          trials: o.trials,
          ...(o.seed !== undefined ? { seed: o.seed } : {}),
          sandbox: o.sandbox,
          ...(o.agentDir ? { agentDir: o.agentDir } : {}),
          ...(o.sandboxRo ? { sandboxReadOnly: o.sandboxRo } : {}),
          trialTimeoutS: o.trialTimeout,
          ...(o.task ? { task: o.task } : {}),
          ...(o.bench ? { bench: o.bench } : {}),
          ...(o.level ? { level: o.level } : {}),
          ...(o.url ? { url: o.url } : {}),
          ...(o.operatorToken ? { operatorToken: o.operatorToken } : {}),
          ...(o.agentToken ? { agentToken: o.agentToken } : {}),
          ...(o.out ? { out: o.out } : {}),
          ...(o.rtPriority !== undefined ? { rtPriority: o.rtPriority } : {}),
          ...(o.cpuAffinity !== undefined ? { cpuAffinity: o.cpuAffinity } : {}),
        }).catch((e: unknown) => {
          // a refusal (no sandbox, a bad agent folder) is a coded message, not a stack trace
          if (!(e instanceof CodedError)) throw e;
          process.stderr.write(`run: ${e.code}: ${e.message}\n  ${e.hint}\n`);
          return undefined;
        });
        if (!res) {
          process.exitCode = 2;
          return;
        }
        process.exitCode = res.report.trials.some((t) => t.outcome === "error") ? 1 : 0;
      },
    );
}

if (isEntryPoint(import.meta.url)) {
  await runCommand().name("run").parseAsync(process.argv);
}
