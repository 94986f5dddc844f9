/**
 * Gateway overhead of POST /v1/act with a 50-row chunk (dt 10 ms, 500 control ticks) on the
 * mirror backend. Side by side in one run:
 * - the reference: the backend's own execute of the same trajectory (unavoidable work);
 * - the safety work alone: interpolation, pre-check and 500 runtime-monitor ticks;
 * - the whole call in-process (fastify inject), without and with the MCAP recorder;
 * - the whole call over loopback HTTP (a real server on port 0), with the recorder.
 * Overhead = call − reference.
 * Usage: npx tsx bench/gateway-overhead.ts [calls=1000]
 */
import { Agent, request } from "node:http";
import { performance } from "node:perf_hooks";
import { interpolateChunk } from "../seam/interpolate.ts";
import { precheckChunk } from "../gateway/safety/precheck.ts";
import { SafetyMonitor } from "../gateway/safety/monitor.ts";
import { type TestGateway, testGateway } from "../compose/testing.ts";
import { pct } from "./stats.ts";

const calls = Number(process.argv[2] ?? 1000);
const ROWS = 50;
const DT = 0.01;

const recorded = await testGateway({ backend: { type: "mirror" } });
const plain = await testGateway({ backend: { type: "mirror" } }, { recorder: false });

const q0 = recorded.gateway.bench.backend.read().q;
// the arm holds its pose: every row is checked, interpolated, executed and reported as usual
const rows = Array.from({ length: ROWS }, () => [...q0, 0.04]);
const body = JSON.stringify({ type: "joint_position", dt: DT, rows });

/** The free-motion episode has a time budget; start a fresh one (untimed) when it runs out. */
async function fresh(g: TestGateway): Promise<void> {
  if (g.gateway.requireEpisode().isEnded) await g.gateway.startEpisode();
}

async function inject(g: TestGateway): Promise<number> {
  await fresh(g);
  const t0 = performance.now();
  const res = await g.app.inject({
    method: "POST",
    url: "/v1/act",
    payload: body,
    headers: { ...g.agent, "content-type": "application/json" },
  });
  const dt = performance.now() - t0;
  if (res.statusCode !== 200) throw new Error(res.body);
  return dt;
}

const address = await recorded.app.listen({ host: "127.0.0.1", port: 0 });
const url = new URL("/v1/act", address);
const keepAlive = new Agent({ keepAlive: true, maxSockets: 1 });
async function loopback(): Promise<number> {
  await fresh(recorded);
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = request(
      url,
      {
        method: "POST",
        agent: keepAlive,
        headers: {
          ...recorded.agent,
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
        },
      },
      (res) => {
        res.resume();
        res.on("end", () =>
          res.statusCode === 200
            ? resolve(performance.now() - t0)
            : reject(new Error(String(res.statusCode))),
        );
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const bench = plain.gateway.bench;
const robot = bench.backend.describe().robot;
async function reference(): Promise<number> {
  const r = bench.backend.read();
  const traj = interpolateChunk(r, rows, DT, 0.001);
  const t0 = performance.now();
  await bench.backend.execute(traj, { onTick: () => "ok" });
  return performance.now() - t0;
}
const monitor = new SafetyMonitor(robot, bench.limits, bench.toolFromFlange);
function safety(): number {
  const r = bench.backend.read();
  const t0 = performance.now();
  const traj = interpolateChunk(r, rows, DT, 0.001);
  precheckChunk({ robot, limits: bench.limits, start: r, trajectory: traj, tcp: bench.toolFromFlange });
  monitor.begin(r, traj);
  for (let k = 0; k < traj.count; k++) {
    r.t += 0.001;
    monitor.tick(r, k);
  }
  return performance.now() - t0;
}

for (let i = 0; i < 100; i++) {
  await inject(plain);
  await inject(recorded);
  await loopback();
  await reference();
  safety();
}
const ref: number[] = [];
const saf: number[] = [];
const inPlain: number[] = [];
const inRec: number[] = [];
const loop: number[] = [];
for (let i = 0; i < calls; i++) {
  ref.push(await reference());
  saf.push(safety());
  inPlain.push(await inject(plain));
  inRec.push(await inject(recorded));
  loop.push(await loopback());
}
const ref50 = pct(ref, 50);
const line = (name: string, xs: number[], target?: number) =>
  console.log(
    `${name.padEnd(40)} p50 ${pct(xs, 50).toFixed(3).padStart(7)} ms  p99 ${pct(xs, 99).toFixed(3).padStart(7)} ms` +
      (target !== undefined
        ? `   overhead p50 ${(pct(xs, 50) - ref50).toFixed(3)} ms (target ≤ ${target} ms)`
        : ""),
  );
console.log(
  `act, ${ROWS} rows × ${DT} s (${(ROWS * DT) / 0.001} ticks) on the mirror backend, ${calls} calls each`,
);
line("backend execute only (reference)", ref);
line("safety: interpolate + pre-check + monitor", saf);
line("act in-process, no recorder", inPlain, 0.5);
line("act in-process, with MCAP recorder", inRec, 0.5);
line("act over loopback HTTP, with recorder", loop, 1.5);
keepAlive.destroy();
await recorded.close();
await plain.close();
