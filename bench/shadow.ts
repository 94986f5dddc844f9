/**
 * Shadow twin cost per control step: a wire-following trajectory executed by a sim bench alone and
 * by the same bench shadowed by a sim twin (compose/twin/shadow-backend.ts: the twin steps in the
 * bench's control loop, and the divergence is accumulated). The difference per step is what the
 * twin adds to a real bench's loop; the reference is the 1 ms period of a 1 kHz bench (issue #12:
 * the twin keeps up with a 1 kHz real bench on one core). CPU time of this process per step.
 * Usage: npx tsx bench/shadow.ts [repeats=5]
 */
import { interpolateChunk } from "../seam/interpolate.ts";
import type { Backend } from "../seam/types.ts";
import { PANDA } from "../robots/franka/models.ts";
import { wireReferencePath } from "../sim/buzzwire/reference-path.ts";
import { createSimBackend, type SimBackend } from "../sim/sim-backend.ts";
import { ShadowBackend } from "../compose/twin/shadow-backend.ts";

const repeats = Number(process.argv[2] ?? 5);
const sim = () => createSimBackend({ robot: PANDA, seed: 3, yieldEveryTicks: 0 });

async function perStep(
  make: () => { b: Backend; cal: SimBackend },
): Promise<{ cpuUs: number; wallUs: number; steps: number }> {
  const { b, cal } = make();
  await b.configure();
  await b.activate();
  let cpu = 0;
  let wall = 0;
  let steps = 0;
  for (let k = 0; k < repeats + 1; k++) {
    await b.reset?.({ seed: 3 });
    const r = b.read();
    const ref = wireReferencePath(PANDA, cal.currentCalibration(), {
      gripperWidthM: r.gripperWidthM,
      seedQ: r.q,
      speedMps: 0.06,
      spacingM: 0.006,
    });
    const traj = interpolateChunk(
      { q: r.q, dq: r.dq, gripperWidthM: r.gripperWidthM },
      ref.rows,
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
