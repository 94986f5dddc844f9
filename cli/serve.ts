/**
 * `robot-gateway serve`: compose the bench, start the first episode, serve the Standard API.
 * Security defaults: loopback bind; a non-loopback bind needs explicit tokens.
 */
import { randomBytes } from "node:crypto";
import { buildApp } from "../gateway/app.ts";
import { type BenchConfig, DEFAULT_BENCH, loadBenchFile, parseBenchConfig } from "../compose/bench-config.ts";
import { composeBench } from "../compose/compose.ts";
import { Gateway } from "../gateway/gateway.ts";
import { twinBenchConfig } from "../compose/twin.ts";

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
}

const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1"]);

export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host) || host.startsWith("127.");
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

export async function serve(o: ServeOptions): Promise<{ close: () => Promise<void>; url: string }> {
  if (!isLoopback(o.host) && (!o.agentToken || !o.operatorToken)) {
    throw new Error(
      `refusing to bind ${o.host} (not loopback) without --agent-token and --operator-token: anyone on the network could move the robot`,
    );
  }
  const loaded = o.bench ? loadBenchFile(o.bench) : { config: DEFAULT_BENCH, baseDir: process.cwd() };
  const config = withOverrides(o.twin ? twinBenchConfig(loaded.config) : loaded.config, o);
  const bench = await composeBench(config, loaded.baseDir);
  const gateway = new Gateway(bench);
  const agentToken = o.agentToken ?? randomBytes(16).toString("hex");
  const operatorToken = o.operatorToken ?? randomBytes(16).toString("hex");
  const app = await buildApp({ gateway, agentToken, operatorToken });
  let address: string;
  try {
    await gateway.startEpisode();
    address = await app.listen({ host: o.host, port: o.port });
  } catch (e) {
    // the backend is already active (devices open): shut it down before giving up
    await app.close().catch(() => {});
    await gateway.shutdown().catch(() => {});
    throw e;
  }
  const url = address.replace("[::1]", "localhost");
  const ep = gateway.requireEpisode();
  console.log(
    `robot-gateway: bench "${bench.name}" (${bench.backend.kind}, ${bench.backend.describe().robot.model})`,
  );
  console.log(
    `episode ${ep.id}: task ${ep.config.task.id}, level ${ep.config.level}, seed ${ep.config.seed}`,
  );
  console.log(`ROBOT_GATEWAY_URL=${url}`);
  console.log(`ROBOT_GATEWAY_TOKEN=${agentToken}`);
  console.log(`ROBOT_GATEWAY_OPERATOR_TOKEN=${operatorToken}`);
  const close = async () => {
    await app.close();
    await gateway.shutdown();
  };
  return { close, url };
}
