/**
 * Contact-event → stop latency on the simulated bench, through the whole gateway (episode,
 * runtime monitor, task judge): sweeps of the loop into the wire at several speeds and seeds.
 * Prints, side by side: the latency in simulated time (from the contact event's timestamp to
 * the last executed tick; the target is one control period) and the wall-clock time the gateway
 * spends between receiving the event and answering the next tick with "stop".
 * Usage: npx tsx bench/event-stop.ts [sweeps=40]
 */
import { performance } from "node:perf_hooks";
import type { ExecuteOptions, JointTrajectory } from "../seam/types.ts";
import { testGateway } from "../compose/testing.ts";
import { api, sidewaysRows } from "../hil-tests/buzz-wire.suite.ts";
import { pct } from "./stats.ts";

const sweeps = Number(process.argv[2] ?? 40);
const simMs: number[] = [];
const wallUs: number[] = [];

for (let i = 0; i < sweeps; i++) {
  const seed = 1 + (i % 8);
  const g = await testGateway({
    robot: "fr3",
    backend: { type: "sim" },
    task: { id: "buzz-wire", seed, level: "joint_position" },
  });
  const backend = g.gateway.bench.backend;
  let eventAt = Number.NaN;
  let stopAt = Number.NaN;
  backend.onEvent((e) => {
    if (e.type === "contact" && e.closed && Number.isNaN(eventAt)) eventAt = performance.now();
  });
  const execute = backend.execute.bind(backend);
  backend.execute = (traj: JointTrajectory, opts: ExecuteOptions = {}) =>
    execute(traj, {
      ...opts,
      onTick: (r, k) => {
        const v = opts.onTick ? opts.onTick(r, k) : "ok";
        if (v === "stop" && Number.isNaN(stopAt)) stopAt = performance.now();
        return v;
      },
    });
  const r0 = backend.read();
  const seconds = 1 + (i % 4); // 1–4 s sweeps: different approach speeds
  const sweep = sidewaysRows(g, r0.q, r0.gripperWidthM, (i % 2 ? -1 : 1) * 0.03, seconds);
  const res = (await api(g, "POST", "/v1/act", { type: "joint_position", dt: sweep.dtS, rows: sweep.rows }))
    .body;
  const contact = res.events?.find(
    (e: { type: string; data: { closed?: boolean } }) => e.type === "contact" && e.data.closed,
  );
  if (contact && res.readings?.length) {
    simMs.push((res.readings[res.readings.length - 1].t - contact.t) * 1000);
    wallUs.push((stopAt - eventAt) * 1000);
  }
  await g.close();
}

console.log(`contact → stop on the sim bench, ${simMs.length} of ${sweeps} sweeps touched the wire`);
console.log(
  `sim time   (event t → last executed tick)  p50 ${pct(simMs, 50).toFixed(3)} ms  p99 ${pct(simMs, 99).toFixed(3)} ms   target ≤ 1.000 ms (one control period)`,
);
console.log(
  `wall clock (event → tick answered "stop")   p50 ${pct(wallUs, 50).toFixed(1)} µs  p99 ${pct(wallUs, 99).toFixed(1)} µs`,
);
