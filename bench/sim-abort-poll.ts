/**
 * What polling the abort at every control step costs the simulator (issue #10 item 2): the
 * event loop runs between ticks so that an abort from outside the loop (an e-stop request, the
 * watchdog, a signal) is seen at the next step. Same scripted motion (the buzz-wire reference
 * path, 1 kHz), same process, runs interleaved (per-step, the old 1,000-tick cadence, never),
 * best of N each:
 * - throughput: steps/s and real-time factor;
 * - stop overrun: an abort timer due 30 ms (wall) into the chunk; simulated seconds that ran
 *   between the tick at which it was due and the stop (the issue measured ≈3 s before).
 *
 * Run: npx tsx bench/sim-abort-poll.ts [--repeats N]
 */
import { loadavg } from "node:os";
import { interpolateChunk } from "../seam/interpolate.ts";
import type { JointTrajectory } from "../seam/types.ts";
import { PANDA } from "../robots/franka/models.ts";
import { wireReferencePath } from "../sim/buzzwire/reference-path.ts";
import { createSimBackend, type SimBackend } from "../sim/sim-backend.ts";

const args = process.argv.slice(2);
const ri = args.indexOf("--repeats");
const repeats = ri >= 0 ? Number(args[ri + 1]) : 7;
const DT = PANDA.controlPeriodS;
const ABORT_AFTER_MS = 30;

interface Mode {
  label: string;
  b: SimBackend;
  snap: Uint8Array;
  bestS: number;
  overrunsS: number[];
}

async function mode(label: string, yieldEveryTicks?: number): Promise<Mode> {
  const b = createSimBackend({
    robot: PANDA,
    seed: 1,
    ...(yieldEveryTicks !== undefined ? { yieldEveryTicks } : {}),
  });
  await b.configure();
  await b.activate();
  return { label, b, snap: b.snapshot(), bestS: Infinity, overrunsS: [] };
}

const modes = [
  await mode("0.25 ms wall slices (default)"),
  await mode("every control step", 1),
  await mode("every 1,000 ticks (before)", 1000),
  await mode("never (physics only)", 0),
];
const r0 = modes[0]!.b.read();
const ref = wireReferencePath(PANDA, modes[0]!.b.currentCalibration(), {
  gripperWidthM: r0.gripperWidthM,
  seedQ: r0.q,
});
const traj: JointTrajectory = interpolateChunk(r0, ref.rows, ref.dtS, DT);
for (const m of modes) await m.b.execute(traj); // warm-up

for (let k = 0; k < repeats; k++) {
  for (const m of modes) {
    m.b.restore(m.snap);
    const t0 = performance.now();
    const res = await m.b.execute(traj);
    if (res.outcome !== "completed") throw new Error(`${m.label}: ${res.outcome}`);
    m.bestS = Math.min(m.bestS, (performance.now() - t0) / 1000);
  }
  for (const m of modes) {
    if (m.label.startsWith("never")) continue;
    m.b.restore(m.snap);
    const ctl = new AbortController();
    const t0 = performance.now();
    let dueAt = -1;
    const timer = setTimeout(() => ctl.abort(), ABORT_AFTER_MS);
    const res = await m.b.execute(traj, {
      signal: ctl.signal,
      onTick: (_r, i) => {
        if (dueAt < 0 && performance.now() - t0 >= ABORT_AFTER_MS) dueAt = i;
        return "ok";
      },
    });
    clearTimeout(timer);
    if (res.outcome === "aborted" && dueAt >= 0) m.overrunsS.push((res.samplesExecuted - 1 - dueAt) * DT);
  }
}
for (const m of modes) await m.b.shutdown();

const pad = (s: string, n: number) => s.padStart(n);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
console.log(
  `buzz-wire reference path, seed 1: ${traj.count} steps of ${DT * 1000} ms; best of ${repeats}, interleaved`,
);
console.log(
  `${"event loop runs".padEnd(30)}${pad("steps/s", 10)}${pad("RTF", 8)}${pad("vs before", 11)}${pad("abort overrun (sim s, median / max)", 38)}`,
);
const before = modes.find((m) => m.label.startsWith("every 1,000"))!;
for (const m of modes) {
  const sps = traj.count / m.bestS;
  const ratio = before.bestS / m.bestS;
  const over = m.overrunsS.length
    ? `${median(m.overrunsS).toFixed(3)} / ${Math.max(...m.overrunsS).toFixed(3)}`
    : "—";
  console.log(
    `${m.label.padEnd(30)}${pad(sps.toFixed(0), 10)}${pad((sps * DT).toFixed(1), 8)}${pad(ratio.toFixed(3), 11)}${pad(over, 38)}`,
  );
}
console.log(`machine load average (1 min) during the run: ${loadavg()[0]!.toFixed(1)} on 2 cores`);
console.log(
  `reference: the abort timer is due ${ABORT_AFTER_MS} ms into the chunk; one control period is ${DT} s of sim time`,
);
