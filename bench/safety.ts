/**
 * Pre-check cost for a 500-row chunk (dt 10 ms → 5000 samples at 1 ms), side by side with the
 * cost of building the same trajectory with interpolateChunk. Target: pre-check p50 ≤ 2 ms.
 * Run: npx tsx bench/safety.ts
 */
import { PANDA } from "../robots/franka/models.ts";
import { interpolateChunk } from "../gateway/motion/interpolate.ts";
import { parseSafetyProfile, resolveLimits } from "../gateway/safety/profile.ts";
import { precheckChunk } from "../gateway/safety/precheck.ts";
import { BENCH_PROFILE, withCapsules } from "../gateway/safety/testing.ts";

const robot = withCapsules(PANDA);
const limits = resolveLimits(robot, parseSafetyProfile(BENCH_PROFILE));
const ROWS = 500;
const DT = 0.01;
const start = { q: [...robot.homeQ], dq: [0, 0, 0, 0, 0, 0, 0], gripperWidthM: 0.04 };
// a smooth sweep: every joint follows a slow sinusoid (≤ 0.3 rad/s), ending at rest
const rows: number[][] = [];
for (let k = 1; k <= ROWS; k++) {
  const t = k * DT;
  const s = (1 - Math.cos((Math.PI * t) / (ROWS * DT))) / 2;
  rows.push([
    ...robot.homeQ.map((v, j) => v + 0.25 * Math.sin(2 * Math.PI * s + j) - 0.25 * Math.sin(j)),
    0.04,
  ]);
}

function measure(label: string, n: number, fn: () => unknown): number[] {
  for (let i = 0; i < 20; i++) fn();
  const ts: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    fn();
    ts.push(performance.now() - t0);
  }
  ts.sort((a, b) => a - b);
  const p = (x: number) => ts[Math.min(ts.length - 1, Math.floor(x * ts.length))]!;
  console.log(`${label.padEnd(34)} p50 ${p(0.5).toFixed(3)} ms   p99 ${p(0.99).toFixed(3)} ms`);
  return ts;
}

const traj = interpolateChunk(start, rows, DT, robot.controlPeriodS);
const verdict = precheckChunk({ robot, limits, start, trajectory: traj });
console.log(
  `chunk: ${ROWS} rows × ${DT * 1000} ms = ${traj.count} samples; verdict ${verdict.ok ? "ok" : JSON.stringify(verdict.violation)}`,
);
if (verdict.ok) console.log("stats", verdict.stats);
measure("interpolateChunk (reference)", 200, () => interpolateChunk(start, rows, DT, robot.controlPeriodS));
measure("precheckChunk (stride 16)", 200, () => precheckChunk({ robot, limits, start, trajectory: traj }));
measure("precheckChunk (stride 1, brute)", 50, () =>
  precheckChunk({ robot, limits, start, trajectory: traj, geometryStride: 1 }),
);
