/**
 * Pre-check cost for a 500-row chunk (dt 10 ms → 5000 samples at 1 ms), side by side with the
 * cost of building the same trajectory with interpolateChunk. Target: pre-check p50 ≤ 2 ms.
 * Run: npx tsx bench/safety.ts
 */
import { PANDA } from "../robots/franka/models.ts";
import { interpolateChunk } from "../seam/interpolate.ts";
import { parseSafetyProfile, resolveLimits } from "../gateway/safety/profile.ts";
import { precheckChunk } from "../gateway/safety/precheck.ts";
import { BENCH_PROFILE, withCapsules } from "../gateway/safety/testing.ts";

const robot = withCapsules(PANDA);
const limits = resolveLimits(robot, parseSafetyProfile(BENCH_PROFILE));
const ROWS = 500;
const DT = 0.01;
const start = { q: [...robot.homeQ], dq: [0, 0, 0, 0, 0, 0, 0], gripperWidthM: 0.04 };
/** a smooth sweep: every joint follows a sinusoid of amplitude `amp` rad, ending at rest */
function sweep(amp: number): number[][] {
  const rows: number[][] = [];
  for (let k = 1; k <= ROWS; k++) {
    const s = (1 - Math.cos((Math.PI * k) / ROWS)) / 2;
    rows.push([
      ...robot.homeQ.map((v, j) => v + amp * Math.sin(2 * Math.PI * s + j) - amp * Math.sin(j)),
      0.04,
    ]);
  }
  return rows;
}

function measure(label: string, n: number, fn: () => unknown): void {
  for (let i = 0; i < 20; i++) fn();
  const ts: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    fn();
    ts.push(performance.now() - t0);
  }
  ts.sort((a, b) => a - b);
  const p = (x: number) => ts[Math.min(ts.length - 1, Math.floor(x * ts.length))]!;
  console.log(`  ${label.padEnd(40)} p50 ${p(0.5).toFixed(3)} ms   p99 ${p(0.99).toFixed(3)} ms`);
}

console.log(
  `pre-check of a ${ROWS}-row chunk, dt ${DT * 1000} ms (target p50 ≤ 2 ms); ${limits.keepOut.length} keep-outs, ${robot.capsules.length} capsules`,
);
for (const [name, amp] of [
  ["slow sweep (tool ≲ 0.1 m/s)", 0.05],
  ["fast sweep (tool near the 0.5 m/s limit)", 0.25],
] as const) {
  const rows = sweep(amp);
  const traj = interpolateChunk(start, rows, DT, robot.controlPeriodS);
  const v = precheckChunk({ robot, limits, start, trajectory: traj });
  const fk = v.ok ? v.stats.fkEvaluations : 0;
  console.log(
    `${name}: ${traj.count} samples, verdict ${v.ok ? "ok" : v.violation.kind}, ${fk} FK evaluations`,
  );
  measure("interpolateChunk (reference)", 200, () => interpolateChunk(start, rows, DT, robot.controlPeriodS));
  measure("precheckChunk (stride 32, default)", 200, () =>
    precheckChunk({ robot, limits, start, trajectory: traj }),
  );
  measure("precheckChunk (stride 1: FK every sample)", 30, () =>
    precheckChunk({ robot, limits, start, trajectory: traj, geometryStride: 1 }),
  );
}
