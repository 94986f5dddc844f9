/**
 * Recorder overhead. (1) The control-loop hook alone: ns per `onReading` for the MCAP recorder,
 * side by side with a no-op observer, over one minute of 1 kHz readings; then the async write
 * cost and the record size (MB per minute of episode at 1 kHz). (2) A whole mirror episode:
 * ns per control tick of `act` with and without the recorder attached.
 * Run: npx tsx bench/recorder.ts
 */
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Episode } from "../gateway/episode/episode.ts";
import type { EpisodeObserver } from "../gateway/episode/observer.ts";
import { McapRecorder } from "../gateway/recorder/mcap-recorder.ts";
import { recordedGateway } from "../compose/recorded-gateway.ts";
import type { JointReading } from "../seam/types.ts";
import { testGateway } from "../compose/testing.ts";

const dir = await mkdtemp(join(tmpdir(), "rg-bench-recorder-"));
const N = 60_000; // one minute at 1 kHz

/** realistic readings: every joint moving, full-precision doubles */
function readings(t0: number, home: readonly number[]): JointReading[] {
  const out: JointReading[] = [];
  for (let i = 1; i <= N; i++) {
    const t = t0 + i * 0.001;
    out.push({
      t,
      q: home.map((v, j) => v + 0.3 * Math.sin(0.7 * t + j)),
      dq: home.map((_v, j) => 0.21 * Math.cos(0.7 * t + j)),
      gripperWidthM: 0.04 + 0.01 * Math.sin(t),
    });
  }
  return out;
}

function loop(ep: Episode, o: EpisodeObserver, rs: readonly JointReading[]): number {
  const t0 = process.hrtime.bigint();
  for (const r of rs) o.onReading!(ep, r);
  return Number(process.hrtime.bigint() - t0) / rs.length;
}

console.log(`recorder hot path: ${N} readings (1 min at 1 kHz), ns per onReading`);
const g = await testGateway({ backend: { type: "mirror" } });
const ep = g.gateway.requireEpisode();
const rs = readings(g.gateway.bench.backend.now(), g.gateway.bench.backend.read().q);
const noop: EpisodeObserver = { onReading() {} };
for (let rep = 0; rep < 3; rep++) {
  const nsNoop = loop(ep, noop, rs);
  const rec = new McapRecorder({ recordsDir: join(dir, `hot-${rep}`) });
  rec.onStart(ep);
  const nsRec = loop(ep, rec, rs);
  const w0 = performance.now();
  rec.onEnd(ep);
  const out = await rec.done;
  const writeMs = performance.now() - w0;
  const mb = (await stat(out.recordPath)).size / 1e6;
  console.log(
    `  run ${rep}: no-op observer ${nsNoop.toFixed(0).padStart(5)} ns   mcap recorder ${nsRec.toFixed(0).padStart(5)} ns   ` +
      `async write ${((writeMs * 1e6) / N).toFixed(0)} ns/reading (${writeMs.toFixed(0)} ms off the loop)   ` +
      `${mb.toFixed(1)} MB per minute`,
  );
}
await g.close();

console.log("whole mirror episode: act of 10 s (10 000 ticks), ns per tick");
for (const recorded of [false, true, false, true]) {
  const gw = recorded
    ? await recordedGateway(join(dir, "episodes"))
    : await testGateway({ backend: { type: "mirror" } });
  const e = gw.gateway.requireEpisode();
  const q = gw.gateway.bench.backend.read().q;
  const rows = Array.from({ length: 20 }, (_, k) => [
    ...q.map((v, j) => (j === 0 ? v + 0.3 * Math.sin((Math.PI * (k + 1)) / 20) : v)),
    0.04,
  ]);
  const t0 = process.hrtime.bigint();
  await e.act({ type: "joint_position", dt: 0.5, rows });
  const ns = Number(process.hrtime.bigint() - t0) / 10_000;
  e.finish();
  if ("recorders" in gw) await (gw as { recorders: McapRecorder[] }).recorders[0]!.done;
  await gw.close();
  console.log(
    `  ${recorded ? "with recorder   " : "without recorder"} ${ns.toFixed(0).padStart(6)} ns per tick`,
  );
}
await rm(dir, { recursive: true, force: true });
