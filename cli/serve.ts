/**
 * `robot-gateway serve`: compose the bench, start the first episode, serve the Standard API.
 * Security defaults: loopback bind; a non-loopback bind needs explicit tokens.
 */
import { isIPv4, isIPv6 } from "node:net";
import { type BenchConfig, DEFAULT_BENCH, loadBenchFile, parseBenchConfig } from "../compose/bench-config.ts";
import { type StartedGateway, startGateway } from "../compose/start.ts";
import type { StopCause } from "../gateway/episode/stop.ts";
import { isGatewayError } from "../gateway/errors.ts";
import { twinBenchConfig } from "../compose/twin.ts";
import {
  applyBenchCpuAffinity,
  applyBenchScheduling,
  type CpuAffinityOverride,
  raiseComposedThreads,
  type RtPriorityOverride,
} from "./scheduling.ts";

export interface ServeOptions {
  bench?: string;
  task?: string;
  level?: string;
  seed?: number;
  host: string;
  port: number;
  agentToken?: string;
  operatorToken?: string;
  /** let a real bench move the robot (the bench file's backend.allowMotion, set from the CLI) */
  allowMotion?: boolean;
  /** serve the bench's digital twin: the simulator built from the bench's calibration file */
  twin?: boolean;
  /** real-time scheduling of this process: overrides the bench file's `scheduling.rtPriority` */
  rtPriority?: RtPriorityOverride;
  /** CPUs of this process's threads: overrides the bench file's `scheduling.cpuAffinity` */
  cpuAffinity?: CpuAffinityOverride;
}

/**
 * Is the bind address loopback? The address is parsed: 127.0.0.0/8, ::1 and ::ffff:127.x.y.z;
 * of host names only "localhost" (never "127.example.com").
 */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  if (h === "localhost") return true;
  if (isIPv4(h)) return h.split(".")[0] === "127";
  if (isIPv6(h)) {
    if (h === "::1" || h === "0:0:0:0:0:0:0:1") return true;
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(h);
    return mapped !== null && mapped[1]!.split(".")[0] === "127";
  }
  return false;
}

/** Apply command-line overrides to a bench config (then validated again). */
function withOverrides(cfg: BenchConfig, o: ServeOptions): BenchConfig {
  const task = {
    ...cfg.task,
    ...(o.task ? { id: o.task } : {}),
    ...(o.level ? { level: o.level } : {}),
    ...(o.seed !== undefined ? { seed: o.seed } : {}),
  };
  const backend =
    o.allowMotion && cfg.backend.type === "real"
      ? { ...structuredClone(cfg.backend), allowMotion: true }
      : cfg.backend;
  return parseBenchConfig({ ...structuredClone(cfg), backend, task }, "command line");
}

export interface Served {
  url: string;
  agentToken: string;
  operatorToken: string;
  gateway: StartedGateway["gateway"];
  /** stop motion, end the episode (`cause`), finish its record, close connections */
  close(cause?: StopCause): Promise<void>;
}

export async function serve(o: ServeOptions): Promise<Served> {
  if (!isLoopback(o.host) && (!o.agentToken || !o.operatorToken)) {
    throw new Error(
      `refusing to bind ${o.host} (not loopback) without --agent-token and --operator-token: anyone on the network could move the robot`,
    );
  }
  const loaded = o.bench ? loadBenchFile(o.bench) : { config: DEFAULT_BENCH, baseDir: process.cwd() };
  const config = withOverrides(o.twin ? twinBenchConfig(loaded.config) : loaded.config, o);
  // before the bench is composed (a refusal starts nothing); the threads its drivers start
  // meanwhile inherit the affinity and are raised after
  const placed = applyBenchCpuAffinity(config.scheduling, o.cpuAffinity);
  if (placed) console.error(`robot-gateway: ${placed.summary}`);
  const sched = await applyBenchScheduling(config.scheduling, o.rtPriority);
  if (sched) console.error(`robot-gateway: ${sched.summary}`);
  const g = await startGateway({
    config,
    baseDir: loaded.baseDir,
    ...(o.agentToken ? { agentToken: o.agentToken } : {}),
    ...(o.operatorToken ? { operatorToken: o.operatorToken } : {}),
    firstEpisode: false,
    listen: { host: o.host, port: o.port },
    // structured request logs (pino, with request ids; tokens never logged) on stderr: stdout carries the URL lines
    logger: { stream: process.stderr },
  });
  if (sched) await raiseComposedThreads(sched, g, "robot-gateway");
  const { bench, gateway } = g;
  console.log(
    `robot-gateway: bench "${bench.name}" (${bench.backend.kind}, ${bench.backend.describe().robot.model})`,
  );
  try {
    const ep = await gateway.startEpisode();
    console.log(
      `episode ${ep.id}: task ${ep.config.task.id}, level ${ep.config.level}, seed ${ep.config.seed}`,
    );
  } catch (e) {
    // a first episode that cannot start (e.g. homing failed) leaves the gateway serving: the
    // operator recovers (POST /v1/admin/recover) and starts one (POST /v1/admin/episodes)
    const what = isGatewayError(e) ? `${e.code}: ${e.message}` : e instanceof Error ? e.message : String(e);
    console.error(`robot-gateway: the first episode did not start: ${what}`);
    console.error("robot-gateway: recover with POST /v1/admin/recover, then POST /v1/admin/episodes");
  }
  return {
    url: g.url!,
    agentToken: g.agentToken,
    operatorToken: g.operatorToken,
    gateway,
    close: (cause) => g.close(cause),
  };
}

/**
 * The lines a caller waits for (`ROBOT_GATEWAY_URL=…` and the tokens) on stdout. The command prints
 * them after `exitOnSignals`: a signal sent once they are out goes the stop path, never the default
 * action (under load a test's SIGTERM came between the lines and the handlers and killed the
 * process unfinished).
 */
export function announce(s: Served): void {
  console.log(`ROBOT_GATEWAY_URL=${s.url}`);
  console.log(`ROBOT_GATEWAY_TOKEN=${s.agentToken}`);
  console.log(`ROBOT_GATEWAY_OPERATOR_TOKEN=${s.operatorToken}`);
}

/**
 * SIGINT / SIGTERM: stop motion first (the one stop path, source "signal", synchronously in the
 * handler), then end the episode as `aborted`, finish its record and close connections; exit 0.
 * A second signal exits at once (130).
 */
export function exitOnSignals(s: Served, log: (line: string) => void = (l) => console.error(l)): void {
  let closing = false;
  const onSignal = (sig: NodeJS.Signals) => {
    if (closing) {
      log(`robot-gateway: ${sig} again, exiting now`);
      process.exit(130);
    }
    closing = true;
    const cause: StopCause = { source: "signal", detail: sig };
    s.gateway.requestStop(cause);
    const t = s.gateway.bench.backend.now();
    log(`robot-gateway: ${sig} at backend t=${t}: motion stopped, finishing the episode`);
    s.close(cause).then(
      () => process.exit(0),
      (err: unknown) => {
        log(`robot-gateway: shutdown failed: ${err instanceof Error ? err.message : String(err)}`);
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  if (process.env["npm_command"]) followWrapper();
}

/**
 * Started by npm or npx (`npm start`, `npx robot-gateway serve`): npx runs the gateway under a
 * shell that does not pass a SIGTERM on, so when the wrapper goes (the gateway is re-parented),
 * the gateway shuts down as if it had been sent SIGTERM itself.
 */
function followWrapper(periodMs = 200): void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    process.kill(process.pid, "SIGTERM");
  }, periodMs);
  timer.unref();
}
