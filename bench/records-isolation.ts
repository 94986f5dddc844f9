/**
 * What durability and isolation cost. (1) Agent start: wall ms from spawn to exit of a trivial
 * python agent, plain `sh -c` beside the bubblewrap sandbox of `run` (namespaces, mounts and the
 * node forwarder inside). (2) The gateway bridge: ms per HTTP request from a python agent to a
 * local HTTP server, direct beside through the sandbox (forwarder → unix socket → TCP).
 * (3) Flush before acknowledgement: ms per `act` of a 0.3 s chunk on the mirror, with the
 * recorder flushed + fdatasync'ed before each response beside without.
 * Run: npx tsx bench/records-isolation.ts
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { assertSandboxAvailable, gatewayBridge, spawnSandboxed } from "../cli/sandbox.ts";
import { recordedGateway } from "../compose/recorded-gateway.ts";
import { testGateway } from "../compose/testing.ts";
import { pct } from "./stats.ts";

const dir = mkdtempSync(join(tmpdir(), "rg-bench-iso-"));
const fmt = (xs: number[]) =>
  `p50 ${pct(xs, 50).toFixed(2)} ms  p90 ${pct(xs, 90).toFixed(2)} ms  (n=${xs.length})`;

function waitExit(child: ReturnType<typeof spawn>): Promise<string> {
  let out = "";
  child.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  return new Promise((res) => child.on("exit", () => res(out)));
}

async function timed(start: () => ReturnType<typeof spawn>): Promise<{ ms: number; out: string }> {
  const t0 = performance.now();
  const out = await waitExit(start());
  return { ms: performance.now() - t0, out };
}

assertSandboxAvailable();
const http = createServer((_req, res) => res.end('{"ok":true}'));
await new Promise<void>((r) => http.listen(0, "127.0.0.1", () => r()));
const port = (http.address() as { port: number }).port;
const bridge = await gatewayBridge("127.0.0.1", port);
const agentDir = join(dir, "agent");
const ws = join(dir, "ws");
const LOOP = `
import os, time, urllib.request
u = os.environ["ROBOT_GATEWAY_URL"] + "/x"
ts = []
for i in range(200):
    t0 = time.perf_counter(); urllib.request.urlopen(u).read(); ts.append((time.perf_counter() - t0) * 1000)
print(" ".join(f"{t:.4f}" for t in ts))
`;
mkdirSync(agentDir, { recursive: true });
writeFileSync(join(agentDir, "noop.py"), "pass\n");
writeFileSync(join(agentDir, "loop.py"), LOOP);

const sandboxed = (command: string) =>
  spawnSandboxed({
    command,
    cwd: dir,
    agentDir,
    workspace: ws,
    socketDir: bridge.socketDir,
    gatewayPort: port,
    env: { ROBOT_GATEWAY_URL: `http://127.0.0.1:${port}` },
    stdio: ["ignore", "pipe" as never, 2],
  });
const plain = (command: string) =>
  spawn(command, {
    shell: true,
    cwd: dir,
    env: { ...process.env, ROBOT_GATEWAY_URL: `http://127.0.0.1:${port}` },
    stdio: ["ignore", "pipe", 2],
  });

const REPS = 15;
const startPlain: number[] = [];
const startSandbox: number[] = [];
for (let i = 0; i < REPS; i++) {
  startPlain.push((await timed(() => plain("/usr/bin/python3 agent/noop.py"))).ms);
  startSandbox.push((await timed(() => sandboxed("/usr/bin/python3 agent/noop.py"))).ms);
}
console.log("(1) agent start → exit, python3 no-op");
console.log(`  plain sh -c          ${fmt(startPlain)}`);
console.log(`  bubblewrap sandbox   ${fmt(startSandbox)}`);
console.log(
  `  sandbox start cost   +${(pct(startSandbox, 50) - pct(startPlain, 50)).toFixed(1)} ms at p50 (once per trial)`,
);

const parse = (s: string) => s.trim().split(/\s+/).map(Number).slice(20); // drop warm-up
const reqPlain = parse((await timed(() => plain("/usr/bin/python3 agent/loop.py"))).out);
const reqSandbox = parse((await timed(() => sandboxed("/usr/bin/python3 agent/loop.py"))).out);
console.log("(2) HTTP request from the agent (python urllib, new connection each)");
console.log(`  direct 127.0.0.1     ${fmt(reqPlain)}`);
console.log(`  through the bridge   ${fmt(reqSandbox)}`);
await bridge.close();
http.close();

const ACTS = 150;
const perAct: Record<string, number[]> = {};
// twice each, alternating; the second round counts (the first warms up the JIT and the disk)
for (const ack of [false, true, false, true]) {
  // without: no recorder at all; with: the recorder, flushed (fdatasync) before every acknowledgement
  const g = ack
    ? await recordedGateway(join(dir, `rec-${ack}`), { bench: { recordsDir: join(dir, `rec-${ack}`) } })
    : await testGateway(
        { backend: { type: "mirror" }, recordsDir: join(dir, "rec-none") },
        { recorder: false },
      );
  const q = g.gateway.bench.backend.read().q;
  const payload = { type: "joint_position", dt: 0.1, rows: [1, 2, 3].map(() => [...q, 0.04]) };
  const xs: number[] = [];
  for (let i = 0; i < ACTS; i++) {
    const t0 = performance.now();
    const r = await g.app.inject({ method: "POST", url: "/v1/act", payload, headers: g.agent });
    if (r.statusCode !== 200) throw new Error(r.body);
    if (i >= 10) xs.push(performance.now() - t0);
  }
  perAct[String(ack)] = xs;
  await g.close();
}
const fsType = spawnSync("df", ["--output=fstype", tmpdir()]).stdout.toString().trim().split("\n").at(-1);
console.log(`(3) POST /v1/act, 0.3 s chunk on the mirror (300 readings), records in ${tmpdir()} (${fsType})`);
console.log(`  no recorder          ${fmt(perAct.false!)}`);
console.log(`  recorder, flushed    ${fmt(perAct.true!)}`);
console.log(`  reference: a 0.3 s chunk takes 300 ms on a real arm; the flush is paid once per call`);
rmSync(dir, { recursive: true, force: true });
