/**
 * Gateway overhead of POST /v1/act with a 50-row chunk on the mirror backend.
 * Side by side in one run: the whole call in-process (fastify inject), the whole call over
 * loopback HTTP (a real server on port 0), and the reference — the backend's own execute of the
 * same trajectory, which the gateway cannot avoid. Overhead = call − reference.
 * Usage: npx tsx bench/gateway-overhead.ts [calls=1000]
 */
import { performance } from "node:perf_hooks";
import { Agent, request } from "node:http";
import { interpolateChunk } from "../gateway/motion/interpolate.ts";
import { testGateway } from "../gateway/testing.ts";

const calls = Number(process.argv[2] ?? 1000);
const ROWS = 50;
const DT = 0.01;

function pct(a: number[], p: number): number {
  const s = [...a].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
}

const g = await testGateway({ backend: { type: "mirror" } });
const backend = g.gateway.bench.backend;
const q0 = backend.read().q;
// the arm holds its pose: every row is checked, interpolated, executed and reported as usual
const rows = Array.from({ length: ROWS }, () => [...q0, 0.04]);
const body = JSON.stringify({ type: "joint_position", dt: DT, rows });

/** The free-motion episode has a time budget; start a fresh one (untimed) when it runs out. */
async function fresh(): Promise<void> {
  if (g.gateway.requireEpisode().isEnded) await g.gateway.startEpisode();
}

async function inject(): Promise<number> {
  await fresh();
  const t0 = performance.now();
  const res = await g.app.inject({ method: "POST", url: "/v1/act", payload: body, headers: { ...g.agent, "content-type": "application/json" } });
  const dt = performance.now() - t0;
  if (res.statusCode !== 200) throw new Error(res.body);
  return dt;
}

const address = await g.app.listen({ host: "127.0.0.1", port: 0 });
const url = new URL("/v1/act", address);
async function loopback(): Promise<number> {
  await fresh();
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = request(
      url,
      { method: "POST", agent: keepAlive, headers: { ...g.agent, "content-type": "application/json", "content-length": Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on("end", () => (res.statusCode === 200 ? resolve(performance.now() - t0) : reject(new Error(String(res.statusCode)))));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}
const keepAlive = new Agent({ keepAlive: true, maxSockets: 1 });

async function reference(): Promise<number> {
  const r = backend.read();
  const traj = interpolateChunk(r, rows, DT, 0.001);
  const t0 = performance.now();
  await backend.execute(traj, { onTick: () => "ok" });
  return performance.now() - t0;
}

for (let i = 0; i < 100; i++) {
  await inject();
  await loopback();
  await reference();
}
const a: number[] = [];
const b: number[] = [];
const c: number[] = [];
for (let i = 0; i < calls; i++) {
  a.push(await inject());
  b.push(await loopback());
  c.push(await reference());
}
const ref50 = pct(c, 0.5);
const line = (name: string, xs: number[], target?: number) =>
  console.log(
    `${name.padEnd(34)} p50 ${pct(xs, 0.5).toFixed(3).padStart(7)} ms  p99 ${pct(xs, 0.99).toFixed(3).padStart(7)} ms` +
      (target !== undefined ? `   overhead p50 ${(pct(xs, 0.5) - ref50).toFixed(3)} ms (target ≤ ${target} ms)` : ""),
  );
console.log(`act, ${ROWS} rows × ${DT} s on the mirror backend, ${calls} calls each`);
line("backend execute only (reference)", c);
line("act in-process (inject)", a, 0.5);
line("act over loopback HTTP", b, 1.5);
keepAlive.destroy();
await g.close();
