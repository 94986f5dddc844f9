import { afterEach, describe, expect, it } from "vitest";
import { interpolateChunk } from "../../seam/interpolate.ts";
import type { SensorEvent } from "../../seam/types.ts";
import { PANDA } from "../../robots/franka/models.ts";
import { wireReferencePath } from "../../sim/buzzwire/reference-path.ts";
import { createSimBackend } from "../../sim/sim-backend.ts";
import { PERTURBATION, perturbedRealSim } from "../../test-support/perturbed-real-sim.ts";
import { ShadowBackend } from "./shadow-backend.ts";

const open: ShadowBackend[] = [];
afterEach(async () => {
  for (const b of open.splice(0)) await b.shutdown();
});

async function shadow(real: ReturnType<typeof createSimBackend>, seed: number) {
  const twin = createSimBackend({ robot: PANDA, seed });
  const s = new ShadowBackend(real, twin);
  open.push(s);
  await s.configure();
  await s.activate();
  const w = twin.currentCalibration().wire;
  return { s, twin, wire: w };
}

function along(
  s: ShadowBackend,
  twinCal: ReturnType<ReturnType<typeof createSimBackend>["currentCalibration"]>,
  rows: number,
) {
  const r = s.read();
  const ref = wireReferencePath(PANDA, twinCal, {
    gripperWidthM: r.gripperWidthM,
    seedQ: r.q,
    speedMps: 0.08,
    spacingM: 0.006,
  });
  return interpolateChunk(
    { q: r.q, dq: r.dq, gripperWidthM: r.gripperWidthM },
    ref.rows.slice(0, rows),
    ref.dtS,
    PANDA.controlPeriodS,
  );
}

describe("shadow twin (two sims)", () => {
  it("an identical 'real' sim diverges by exactly nothing", async () => {
    const { s, twin } = await shadow(createSimBackend({ robot: PANDA, seed: 3 }), 3);
    const res = await s.execute(along(s, twin.currentCalibration(), 6), {
      capture: { everyTicks: 100, cameras: [], depth: false },
    });
    expect(res.outcome).toBe("completed");
    const d = s.trialDivergence();
    expect(d.samples).toBe(res.samplesExecuted);
    expect(Math.max(...d.joint.maxRad)).toBe(0);
    expect(d.toolMm.max).toBe(0);
    expect(d.images.length).toBeGreaterThan(0);
    for (const im of d.images) expect(im.meanAbsRgb).toBe(0);
  });

  it("keeps the trajectories it executed as they were: the caller may reuse its buffers once execute settles (the realtime driver does)", async () => {
    const { s, twin } = await shadow(createSimBackend({ robot: PANDA, seed: 3 }), 3);
    const traj = along(s, twin.currentCalibration(), 2);
    const q = traj.q.slice();
    const g = traj.gripperWidthM.slice();
    await s.execute(traj);
    traj.q.fill(0);
    traj.gripperWidthM.fill(0);
    expect(s.executed).toHaveLength(1);
    expect(s.executed[0]!.traj.q).toEqual(q);
    expect(s.executed[0]!.traj.gripperWidthM).toEqual(g);
  });

  it("the perturbed 'real' sim (hidden servo, delay, latency, noise) diverges, per chunk and per trial, handed to divergence listeners and never to the sensor events (the agent sees those)", async () => {
    const { s, twin } = await shadow(perturbedRealSim(3), 3);
    const events: SensorEvent[] = [];
    s.onEvent((e) => events.push(e));
    const announced: number[] = [];
    s.onDivergence((c) => announced.push(c.chunk));
    for (let k = 0; k < 2; k++) {
      const res = await s.execute(along(s, twin.currentCalibration(), 4), {
        capture: { everyTicks: 100, cameras: [], depth: false },
      });
      expect(res.outcome).toBe("completed");
    }
    const chunks = s.chunkDivergence();
    expect(chunks.length).toBe(2);
    const d = s.trialDivergence();
    expect(d.samples).toBe(chunks[0]!.samples + chunks[1]!.samples);
    // a 4-period delay at ~0.08 m/s: the tool lags by several tenths of a mm, well above noise
    expect(d.toolMm.max).toBeGreaterThan(0.2);
    expect(d.toolMm.max).toBeLessThan(20);
    expect(Math.max(...d.joint.rmsRad)).toBeGreaterThan(PERTURBATION.jointNoiseRad);
    expect(announced).toEqual([0, 1]);
    expect(events.filter((e) => e.type === "instrument")).toEqual([]);
    expect(d.images.length).toBeGreaterThan(0);
    expect(d.images.every((i) => i.meanAbsRgb > 0)).toBe(true);
  });
});
