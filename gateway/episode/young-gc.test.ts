import { describe, expect, it } from "vitest";
import { childJson } from "../../test-support/child-json.ts";
import { FakeClock } from "../../test-support/fake-clock.ts";
import type { ExecuteResult, JointTrajectory } from "../../seam/types.ts";
import { RealtimeDriver } from "./realtime.ts";
import { newSpaceFill, runtimeYoungGc, type YoungGc, YoungGcPlacement } from "./young-gc.ts";

describe("YoungGcPlacement", () => {
  function placement(fill: number[], o: { threshold?: number; checkEvery?: number } = {}) {
    let collected = 0;
    let reads = 0;
    const p = new YoungGcPlacement({
      collect: () => collected++,
      fill: () => fill[Math.min(reads++, fill.length - 1)]!,
      minSpareS: 0.0005,
      ...o,
    });
    return { p, collected: () => collected, reads: () => reads };
  }

  it("collects once the young generation is past the threshold, read every checkEvery commits", () => {
    const g = placement([0.1, 0.5, 0.7, 0.2], { threshold: 0.6, checkEvery: 3 });
    const did: boolean[] = [];
    for (let i = 0; i < 12; i++) did.push(g.p.afterCommit(0.001));
    // fill read at commits 3, 6, 9, 12: 0.1, 0.5, 0.7 (collect), 0.2
    expect(g.reads()).toBe(4);
    expect(did.map((d, i) => (d ? i + 1 : 0)).filter(Boolean)).toEqual([9]);
    expect(g.collected()).toBe(1);
    expect(g.p.collections).toBe(1);
  });

  it("never with less than minSpareS to the next slot: a commit without room does not count toward the check", () => {
    const g = placement([0.9], { checkEvery: 2 });
    expect(g.p.afterCommit(0.0004)).toBe(false);
    expect(g.p.afterCommit(0.0001)).toBe(false);
    expect(g.reads()).toBe(0);
    expect(g.p.afterCommit(0.0006)).toBe(false);
    expect(g.p.afterCommit(0.0006)).toBe(true);
    expect(g.collected()).toBe(1);
  });

  it("reads V8's new space; the runtime placement exists only where node exposes gc", () => {
    const f = newSpaceFill();
    expect(f).toBeGreaterThan(0);
    expect(f).toBeLessThanOrEqual(1);
    const hasGc = typeof (globalThis as { gc?: unknown }).gc === "function";
    expect(runtimeYoungGc(0.001) === null).toBe(!hasGc);
  });
});

describe("runtimeYoungGc under node --expose-gc (a child process, as the launchers start one)", () => {
  it("collects the young generation with V8's gc once it is past the threshold", () => {
    const r = childJson<{ collections: number; peak: number }>(
      `import { runtimeYoungGc, newSpaceFill } from "./gateway/episode/young-gc.ts";
         const p = runtimeYoungGc(0.001);
         let keep = [];
         let peak = 0;
         for (let i = 0; i < 20000 && p.collections < 3; i++) {
           keep.push({ i, a: [i, i + 1] });
           if (keep.length > 500) keep = [];
           peak = Math.max(peak, newSpaceFill());
           p.afterCommit(0.001);
         }
         console.log(JSON.stringify({ collections: p.collections, peak }));`,
      ["--expose-gc", "--max-semi-space-size=2"],
    );
    expect(r.collections).toBe(3);
    // it collected before V8's own trigger: the new space never filled
    expect(r.peak).toBeLessThan(0.9);
  }, 60_000);
});

describe("the realtime loop's young-generation hook", () => {
  it("is called after every commit with the time left to the next slot, and never while the loop sleeps", async () => {
    const P = 0.001;
    const clock = new FakeClock(100);
    const spare: number[] = [];
    let committed = 0;
    const hook: YoungGc = {
      afterCommit(s) {
        // after the wake-up's execute, before the next sleep
        spare.push(s);
        expect(committed).toBe(spare.length);
        return false;
      },
    };
    const d = new RealtimeDriver(
      clock,
      {
        periodS: P,
        slowdown: 2,
        marginSteps: 0,
        lateToleranceS: 1,
        watchdogS: 1,
        horizonSteps: 100,
        youngGc: hook,
      },
      { q: [0], gripperWidthM: 0.08 },
      () => {},
    );
    const exec = (traj: JointTrajectory): ExecuteResult => {
      committed++;
      return {
        outcome: "completed",
        samplesExecuted: traj.count,
        final: { t: 0, q: [0], dq: [0], gripperWidthM: 0.08 },
        frames: [],
      };
    };
    const ac = new AbortController();
    const t0 = clock.t;
    const loop = d.run(ac.signal, exec);
    await clock.advanceTo(t0 + 5 * 2 * P);
    // a splice into the coming slot wakes the coarse sleep (to sleep again precisely): that
    // wake-up commits nothing, and must not collect (the chunk's first commit is still to come)
    await clock.advanceTo(t0 + 5.2 * 2 * P);
    const one = {
      periodS: P,
      count: 1,
      q: Float64Array.of(0.5),
      gripperWidthM: Float64Array.of(0.08),
      rowEndIndex: [0],
    };
    d.splice(one, d.spliceStep(undefined));
    // the nudged loop's turns run before the clock moves on (it sleeps again, precisely)
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    expect(clock.preciseSleeps).toEqual([t0 + 6 * 2 * P]);
    await clock.advanceTo(t0 + 7 * 2 * P);
    ac.abort();
    await loop;
    expect(committed).toBe(7);
    // woken exactly at each slot's end by the fake clock: a whole slot (S = 2: 2 ms) to the next
    expect(spare).toHaveLength(7);
    for (const s of spare) expect(s).toBeCloseTo(2 * P, 9);
  });

  it("null turns it off; absent, the driver takes V8's gc when the process has it, for the stepped drive only", () => {
    const d = (youngGc?: YoungGc | null, streamed = false) =>
      new RealtimeDriver(
        new FakeClock(0),
        {
          periodS: 0.001,
          slowdown: 1,
          marginSteps: 0,
          lateToleranceS: 1,
          watchdogS: 1,
          horizonSteps: 10,
          streamed,
          ...(youngGc !== undefined ? { youngGc } : {}),
        },
        { q: [0], gripperWidthM: 0.08 },
        () => {},
      ) as unknown as { youngGc: YoungGc | null };
    expect(d(null).youngGc).toBeNull();
    const hasGc = typeof (globalThis as { gc?: unknown }).gc === "function";
    expect(d().youngGc === null).toBe(!hasGc);
    // a real arm's stream sends a splice the moment it arrives: no moment of its loop is spare
    expect(d(undefined, true).youngGc).toBeNull();
  });
});
