/**
 * Shadow twin cost per control step: a wire-following trajectory executed by a sim bench alone and
 * by the same bench shadowed by a sim twin (compose/twin/shadow-backend.ts: the twin steps in the
 * bench's control loop, and the divergence is accumulated). The difference per step is what the
 * twin adds to a real bench's loop; the reference is the 1 ms period of a 1 kHz bench (issue #12:
 * the twin keeps up with a 1 kHz real bench on one core). CPU time of this process per step.
 *
 * With `rig` (needs socat, gcc-avr, simavr: hil-tests/real-bench.ts), the same for a real primary:
 * the real backend on the rosbridge rig + simavr box (the rig's simulator in its child process,
 * paced to the wall clock), alone and shadowed; CPU of THIS (gateway) process per control step,
 * so the twin's share is what it adds to the gateway's core beside the ROS client.
 * Usage: npx tsx bench/shadow.ts [repeats=5] [rig]
 */
import { interpolateChunk } from "../seam/interpolate.ts";
import type { Backend } from "../seam/types.ts";
import { PANDA } from "../robots/franka/models.ts";
import { wireReferencePath } from "../sim/buzzwire/reference-path.ts";
import { createSimBackend, type SimBackend } from "../sim/sim-backend.ts";
import { ShadowBackend } from "../compose/twin/shadow-backend.ts";
import { parseBenchConfig } from "../compose/bench-config.ts";
import { composeBench } from "../compose/compose.ts";
import { startRealBench } from "../hil-tests/real-bench.ts";

const repeats = Number(process.argv[2] ?? 5);
const sim = () => createSimBackend({ robot: PANDA, seed: 3, yieldEveryTicks: 0 });

async function perStep(
  make: () => { b: Backend; cal: SimBackend } | Promise<{ b: Backend; cal: SimBackend; ready?: boolean }>,
  speedMps = 0.06,
  /** seconds of the path per repeat (default: the whole wire) */
  maxS = Number.POSITIVE_INFINITY,
): Promise<{ cpuUs: number; wallUs: number; steps: number }> {
  const made = await make();
  const { b, cal } = made;
  if (!("ready" in made && made.ready)) {
    await b.configure();
    await b.activate();
  }
  let cpu = 0;
  let wall = 0;
  let steps = 0;
  for (let k = 0; k < repeats + 1; k++) {
    await b.reset?.({ seed: 3 });
    const r = b.read();
    const ref = wireReferencePath(PANDA, cal.currentCalibration(), {
      gripperWidthM: r.gripperWidthM,
      seedQ: r.q,
      speedMps,
      spacingM: 0.006,
    });
    const traj = interpolateChunk(
      { q: r.q, dq: r.dq, gripperWidthM: r.gripperWidthM },
      ref.rows.slice(0, Math.min(ref.rows.length, Math.max(1, Math.floor(maxS / ref.dtS)))),
      ref.dtS,
      PANDA.controlPeriodS,
    );
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const res = await b.execute(traj, { onTick: () => "ok" });
    const c = process.cpuUsage(c0);
    if (k === 0) continue; // warm-up
    cpu += c.user + c.system;
    wall += (performance.now() - t0) * 1000;
    steps += res.samplesExecuted;
  }
  await b.shutdown();
  return { cpuUs: cpu / steps, wallUs: wall / steps, steps };
}

const alone = await perStep(() => {
  const b = sim();
  return { b, cal: b };
});
const shadowed = await perStep(() => {
  const twin = sim();
  return { b: new ShadowBackend(sim(), twin), cal: twin };
});
console.log(`wire-following trajectory, ${repeats} repeats; node ${process.version}`);
console.log("                                cpu µs/step   wall µs/step | reference");
const row = (n: string, v: { cpuUs: number; wallUs: number }, ref: string) =>
  console.log(
    `${n.padEnd(32)}${v.cpuUs.toFixed(1).padStart(11)}${v.wallUs.toFixed(1).padStart(14)} | ${ref}`,
  );
row("bench alone (sim)", alone, "-");
row("bench + shadow twin", shadowed, "-");
row(
  "shadow twin's share",
  { cpuUs: shadowed.cpuUs - alone.cpuUs, wallUs: shadowed.wallUs - alone.wallUs },
  "≤ 1000 (1 kHz bench, one core)",
);

if (process.argv[3] === "rig") {
  // one short stretch of wire per repeat at the rig's pace (wall clock): 20 mm/s as the rig tests
  const rigRun = async (shadow: boolean) => {
    const rb = await startRealBench({
      seed: 3,
      robot: "panda",
      safety: { staleReadingTimeoutMs: 3000 },
      heartbeatTimeoutMs: 5000,
      ...(shadow ? { shadow: { type: "sim" } } : {}),
    });
    try {
      const bench = await composeBench(
        parseBenchConfig({ version: 1, ...rb.bench, recordsDir: ".tmp/bench-shadow-records" }),
      );
      const twinCal = createSimBackend({ robot: PANDA, seed: 3 });
      const cal = bench.backend instanceof ShadowBackend ? bench.backend.twin : twinCal;
      if (cal === twinCal) {
        await twinCal.configure();
      }
      return await perStep(() => ({ b: bench.backend, cal, ready: true }), 0.02, 3).finally(async () => {
        if (cal === twinCal) await twinCal.shutdown();
      });
    } finally {
      await rb.close();
    }
  };
  const rAlone = await rigRun(false);
  const rShadow = await rigRun(true);
  console.log("real backend on the rig (rosbridge + simavr), gateway process:");
  row("rig primary alone", rAlone, "-");
  row("rig primary + shadow twin", rShadow, "-");
  row(
    "shadow twin's share",
    { cpuUs: rShadow.cpuUs - rAlone.cpuUs, wallUs: rShadow.wallUs - rAlone.wallUs },
    "≤ 1000 (1 kHz bench, one core)",
  );
}
