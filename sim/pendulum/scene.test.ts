import { afterEach, describe, expect, it } from "vitest";
import { FR3 } from "../../robots/franka/models.ts";
import { loadRapier } from "../world.ts";
import { samplePendulumBench } from "./bench.ts";
import { PENDULUM_COLORS, PendulumBench } from "./scene.ts";

const DT = FR3.controlPeriodS;
/** the simulator backend's default prediction distance, m */
const PREDICTION_M = 0.003;
const G = 9.81;
const open: PendulumBench[] = [];
afterEach(() => {
  for (const b of open.splice(0)) b.free();
});

async function bench(seed: number): Promise<PendulumBench> {
  const b = new PendulumBench(await loadRapier(), FR3, samplePendulumBench(FR3, seed), {
    timestepS: DT,
    predictionDistanceM: PREDICTION_M,
  });
  b.arm.applyArm(FR3.homeQ, 0, true);
  open.push(b);
  return b;
}

/** Step for `seconds` with the arm held at home; photogate edges as [t, blocked]. */
function run(b: PendulumBench, seconds: number): Array<[number, boolean]> {
  const edges: Array<[number, boolean]> = [];
  let blocked = b.photogateBlocked;
  const n = Math.round(seconds / DT);
  for (let i = 1; i <= n; i++) {
    const c = b.step();
    expect(c.collisions).toEqual([]);
    if (b.photogateBlocked !== blocked) {
      blocked = b.photogateBlocked;
      edges.push([i * DT, blocked]);
    }
  }
  return edges;
}

/** Period of a physical pendulum (point-mass rod + solid sphere) with the finite-amplitude series. */
function expectedPeriodS(lengthM: number, bobRadiusM: number, amplitudeRad: number): number {
  const lEff = lengthM + (0.4 * bobRadiusM ** 2) / lengthM;
  const a2 = amplitudeRad ** 2;
  return 2 * Math.PI * Math.sqrt(lEff / G) * (1 + a2 / 16 + (11 * a2 * a2) / 3072);
}

describe("pendulum bench physics", () => {
  it("hangs at rest in the photogate's beam", async () => {
    const b = await bench(1);
    expect(b.photogateBlocked).toBe(true);
    expect(run(b, 0.5)).toEqual([]);
    expect(Math.abs(b.swingAngleRad())).toBeLessThan(1e-5);
  });

  for (const seed of [1, 2, 3]) {
    it(`swings with the period of its hidden length (seed ${seed})`, async () => {
      const b = await bench(seed);
      const p = b.spec.pendulum;
      const amp = 0.12;
      b.releaseAt(amp);
      const edges = run(b, 8);
      // released outside the beam, the bob first enters it
      expect(edges[0]![1]).toBe(true);
      const mids: number[] = [];
      for (let i = 0; i + 1 < edges.length; i++)
        if (edges[i]![1] && !edges[i + 1]![1]) mids.push((edges[i]![0] + edges[i + 1]![0]) / 2);
      expect(mids.length).toBeGreaterThanOrEqual(9);
      const periodS = (2 * (mids[mids.length - 1]! - mids[0]!)) / (mids.length - 1);
      const expected = expectedPeriodS(p.lengthM, p.bobRadiusM, amp);
      // Rapier's joint solver and the 1 ms step: within 0.3 %
      expect(Math.abs(periodS / expected - 1)).toBeLessThan(0.003);
    });
  }

  it("keeps swinging through the beam for a while (small damping)", async () => {
    const b = await bench(4);
    const amp = 0.08;
    b.releaseAt(amp);
    run(b, 10);
    // the swing decays, but not to a stop: still well outside the beam after 10 s
    let maxAngle = 0;
    for (let i = 0; i < 2000; i++) {
      b.step();
      maxAngle = Math.max(maxAngle, Math.abs(b.swingAngleRad()));
    }
    expect(maxAngle).toBeLessThan(amp);
    expect(maxAngle).toBeGreaterThan(0.7 * amp);
  });

  it("is deterministic and restores snapshots exactly", async () => {
    const a = await bench(2);
    a.releaseAt(0.1);
    run(a, 1.234);
    const snap = a.physics.takeSnapshot();
    const edgesA = run(a, 3);
    const posA = [...a.bobCentre()];
    a.physics.restoreSnapshot(snap);
    const edgesB = run(a, 3);
    expect(edgesB).toEqual(edgesA.map(([t, v]) => [t, v]));
    expect([...a.bobCentre()]).toEqual(posA);
  });

  it("renders the bob, the rod and the beam, which glows only while clear", async () => {
    const b = await bench(1);
    const ids = b.syncRender(false).objects.map((o) => o.id);
    expect(ids).toEqual(expect.arrayContaining(["bob", "rod", "gate_beam", "stand_post", "table", "hand"]));
    const beam = () => b.scene.objects.find((o) => o.id === "gate_beam")!;
    expect(beam().emissive).toBe(false);
    expect(beam().color).toEqual(PENDULUM_COLORS.beamBlocked);
    b.releaseAt(0.2);
    b.syncRender(false);
    expect(beam().emissive).toBe(true);
    const bob = b.scene.objects.find((o) => o.id === "bob")!;
    expect(bob.pose[3]).toBeCloseTo(b.bobCentre()[0], 9);
  });
});
