import { describe, expect, it } from "vitest";
import { solveIk } from "../../robots/franka/ik.ts";
import { FR3 } from "../../robots/franka/models.ts";
import { mat4Identity, mat4ToPose } from "../../robots/math.ts";
import type { TaskContext } from "../types.ts";
import { BUZZ_WIRE } from "./buzz-wire.ts";
import { threadedArc, wireGeometry } from "./progress.ts";

/** A straight wire along +y at x = 0.45, z = 0.3 (base frame), 0.4 m long. */
const points = Array.from({ length: 41 }, (_, i) => [0.45, -0.2 + i * 0.01, 0.3] as [number, number, number]);
const wire = {
  pointsBase: points,
  wireRadiusM: 0.0015,
  startMarkM: 0.02,
  endMarkM: 0.38,
  checkpointCount: 5,
};
const ctx: TaskContext = {
  robot: FR3,
  toolFromFlange: mat4Identity(),
  bench: { wire, tool: { loopInnerRadiusM: 0.015 } },
};

/** Loop frame at y with its axis along the wire (+y), offset sideways by dx. */
function loopAt(y: number, dx = 0): Float64Array {
  const m = mat4Identity();
  // x_loop = +x, y_loop = −z, z_loop = +y (the wire direction)
  m[0] = 1;
  m[5] = 0;
  m[6] = 1;
  m[9] = -1;
  m[10] = 0;
  m[3] = 0.45 + dx;
  m[7] = y;
  m[11] = 0.3;
  return m;
}

describe("threadedArc", () => {
  const g = wireGeometry(points, 0.0015, 0.015);
  const hit = { sM: Number.NaN, offsetM: 0 };
  it("finds the arc where the wire crosses the loop inside the ring", () => {
    threadedArc(g, loopAt(0.05), hit);
    expect(hit.sM).toBeCloseTo(0.25, 9);
    expect(hit.offsetM).toBeCloseTo(0, 9);
  });
  it("is not threaded when the wire passes outside the clear opening", () => {
    threadedArc(g, loopAt(0.05, 0.014), hit); // 14 mm off centre + 1.5 mm wire > 15 mm
    expect(hit.sM).toBeNaN();
    threadedArc(g, loopAt(0.05, 0.013), hit);
    expect(hit.sM).toBeCloseTo(0.25, 9);
  });
});

describe("buzz-wire judge (through joint readings and FK)", () => {
  const instance = BUZZ_WIRE.sampleInstance(0, ctx);
  /** joint angles that put the flange (= tool here) at the loop pose for arc s */
  let seed: readonly number[] = FR3.homeQ;
  const qAt = (s: number) => {
    const r = solveIk(FR3, mat4ToPose(loopAt(-0.2 + s)), { seedQ: seed });
    if (!r.ok) throw new Error(`IK failed at s=${s}`);
    seed = r.q;
    return r.q;
  };

  it("scores the arc passed before the first contact, quantised to checkpoints", () => {
    const judge = BUZZ_WIRE.createJudge(instance, ctx);
    let t = 0;
    for (let s = 0.02; s <= 0.2 + 1e-9; s += 0.01)
      judge.onReading({ t: (t += 0.1), q: qAt(s), gripperWidthM: 0 });
    judge.onEvent({ type: "contact", t: (t += 0.01), data: { closed: true, source: "test" } });
    // readings after the contact do not count
    judge.onReading({ t: (t += 0.1), q: qAt(0.3), gripperWidthM: 0 });
    const score = judge.score();
    expect(score.progress).toBeCloseTo((0.2 - 0.02) / 0.36, 5);
    expect(score.progressQuantised).toBe(0.4);
    expect(score.stages.start).toBeCloseTo(0.1, 9);
    expect(score.stages.checkpoint_2).not.toBeNull();
    expect(score.stages.checkpoint_3).toBeNull();
    expect(judge.status()).toMatchObject({ state: "failed" });
  });

  it("reaching the end mark without contact is success; doing nothing scores 0", () => {
    const idle = BUZZ_WIRE.createJudge(instance, ctx);
    idle.onReading({ t: 0.1, q: qAt(0.02), gripperWidthM: 0 });
    expect(idle.score().progress).toBe(0);
    expect(idle.status().state).toBe("running");
    const judge = BUZZ_WIRE.createJudge(instance, ctx);
    let t = 0;
    seed = FR3.homeQ;
    for (let s = 0.02; s <= 0.38 + 1e-9; s += 0.02)
      judge.onReading({ t: (t += 0.1), q: qAt(s), gripperWidthM: 0 });
    expect(judge.status().state).toBe("success");
    expect(judge.score().progress).toBe(1);
    expect(judge.score().progressQuantised).toBe(1);
  });

  it("progress only starts once the loop is threaded near the start mark", () => {
    const judge = BUZZ_WIRE.createJudge(instance, ctx);
    seed = FR3.homeQ;
    judge.onReading({ t: 0.1, q: qAt(0.25), gripperWidthM: 0 }); // threaded half-way without a start
    expect(judge.score().progress).toBe(0);
  });
});
