/**
 * Test and bench support for the evaluation farm: a scripted agent (deterministic, short: it
 * looks, eases joint 1 a little forward through the Standard API with the
 * agent token, and finishes, leaves or fails depending on ROBOT_GATEWAY_TRIAL) and a Redis of our own started from farm/redis.conf.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { join, resolve } from "node:path";
import { connectRedis } from "../farm/store.ts";
import { sleep } from "./wait.ts";

export const FARM_REDIS_CONF = resolve(import.meta.dirname, "..", "farm", "redis.conf");

/** The scripted agent: node, fetch only, exits 0 after /v1/finish (non-zero on any API error). */
export const SCRIPTED_AGENT = `
const url = process.env.ROBOT_GATEWAY_URL;
const H = { authorization: "Bearer " + process.env.ROBOT_GATEWAY_TOKEN, "content-type": "application/json" };
async function call(method, path, body) {
  const r = await fetch(url + path, { method, headers: H, ...(method === "POST" ? { body: JSON.stringify(body ?? {}) } : {}) });
  const j = await r.json();
  if (!r.ok) throw new Error(path + " " + r.status + " " + JSON.stringify(j));
  return j;
}
const spec = await call("GET", "/v1/spec");
await call("GET", "/v1/task");
const obs = await call("POST", "/v1/observe", { advance_s: 0.1, cameras: [] });
const last = obs.readings[obs.readings.length - 1];
const dt = spec.control.control_period_s * Math.max(1, Math.round(0.02 / spec.control.control_period_s));
// joint 1 eases 0.01 rad forward and stops (a half cosine over 0.3 s: at rest at both ends)
const rows = [];
for (let i = 1; i <= 15; i++) {
  const q = [...last.q];
  q[0] += 0.005 * (1 - Math.cos((Math.PI * i) / 15));
  rows.push([...q, last.gripper_width_m]);
}
const res = await call("POST", "/v1/act", { type: "joint_position", dt, rows });
// trial-dependent endings, so a report has more than one kind of row: every 3rd trial leaves
// without finishing (the run ends its episode), every 5th fails with exit code 3
const trial = Number(process.env.ROBOT_GATEWAY_TRIAL);
if (trial % 5 === 0) {
  console.error("scripted agent: giving up (trial " + trial + ")");
  process.exit(3);
}
if (trial % 3 !== 0 && res.episode.status !== "ended") await call("POST", "/v1/finish");
console.log("scripted agent: done");
`;

/** Write the scripted agent into its own folder (outside the repository, as the sandbox wants). */
export function writeScriptedAgent(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const p = join(dir, "scripted-agent.mjs");
  writeFileSync(p, SCRIPTED_AGENT);
  return p;
}

/** Resolve once the async `pred()` holds; reject naming `what` after `timeoutMs` (a hang detector). */
export async function waitAsync(
  pred: () => Promise<boolean>,
  what: string,
  timeoutMs = 60_000,
): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(100);
  }
}

/** A TCP port that was free a moment ago (for a child process that must be told its port). */
export async function freePort(host = "127.0.0.1"): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, host, () => r()));
  const port = (srv.address() as AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

export interface RedisProc {
  url: string;
  child: ChildProcess;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * redis-server with the farm's config (AOF, fsync always) on `bind` (one address or several; the
 * URL names the first) and `port`, data in `dir`; `wrap` runs it inside e.g. `ip netns exec NS`.
 */
export async function startRedis(
  dir: string,
  port: number,
  bind: string | string[] = "127.0.0.1",
  wrap: string[] = [],
  password?: string,
): Promise<RedisProc> {
  mkdirSync(dir, { recursive: true });
  const hosts = typeof bind === "string" ? [bind] : bind;
  const host = hosts[0]!;
  const args = [
    FARM_REDIS_CONF,
    "--bind",
    ...hosts,
    "--port",
    String(port),
    "--dir",
    dir,
    "--logfile",
    join(dir, "redis.log"),
    ...(password ? ["--requirepass", password] : []),
  ];
  const [cmd, ...pre] = wrap.length ? wrap : ["redis-server"];
  const child = spawn(cmd!, wrap.length ? [...pre, "redis-server", ...args] : args, { stdio: "ignore" });
  let failed: string | undefined;
  child.once("error", (e) => {
    failed = `redis-server could not start (${e.message}; Debian: apt-get install redis-server, or npm run setup)`;
  });
  const exited = new Promise<void>((r) => child.once("close", () => r()));
  const url = `redis://${password ? `:${password}@` : ""}${host}:${port}`;
  await waitAsync(
    async () => {
      if (failed) throw new Error(failed);
      if (child.exitCode !== null)
        throw new Error(`redis-server exited with ${child.exitCode}; see ${join(dir, "redis.log")}`);
      try {
        (await connectRedis(url, 2000)).disconnect();
        return true;
      } catch {
        return false;
      }
    },
    `redis on ${url}`,
    30_000,
  );
  return {
    url,
    child,
    async stop(signal: NodeJS.Signals = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}
