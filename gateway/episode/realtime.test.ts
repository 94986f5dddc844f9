import { describe, expect, it } from "vitest";
import type { ExecuteResult, JointTrajectory } from "../../seam/types.ts";
import { GatewayError } from "../errors.ts";
import { RealtimeDriver, type RealtimeOptions, systemWallClock, Wakeup } from "./realtime.ts";
import { FakeClock as SteppedClock } from "../../test-support/fake-clock.ts";

/** the tests' clock, starting at 100 s */
class FakeClock extends SteppedClock {
  constructor() {
    super(100);
  }
}

/** A wall clock the test moves by hand; sleeps resolve when it passes them. */

const DOF = 2;
const P = 0.001;
const OPTS: RealtimeOptions = {
  periodS: P,
  slowdown: 1,
  marginSteps: 2,
  lateToleranceS: 1,
  watchdogS: 0.05,
  horizonSteps: 1000,
};

/** A backend stand-in that keeps every commanded sample (joint 0) in order. */
function recorder() {
  const q0: number[] = [];
  const grip: number[] = [];
  const exec = async (traj: JointTrajectory): Promise<ExecuteResult> => {
    for (let i = 0; i < traj.count; i++) {
      q0.push(traj.q[i * DOF]!);
      grip.push(traj.gripperWidthM[i]!);
    }
    const n = traj.count;
    return {
      outcome: "completed",
      samplesExecuted: n,
      final: { t: 0, q: [traj.q[(n - 1) * DOF]!, 0], dq: [0, 0], gripperWidthM: traj.gripperWidthM[n - 1]! },
      frames: [],
    };
  };
  return { q0, grip, exec };
}

/** a dense chunk: joint 0 takes `values`, joint 1 stays 0, gripper 0.04 */
function chunk(values: number[]): JointTrajectory {
  const q = new Float64Array(values.length * DOF);
  values.forEach((v, i) => {
    q[i * DOF] = v;
  });
  return {
    periodS: P,
    count: values.length,
    q,
    gripperWidthM: new Float64Array(values.length).fill(0.04),
    rowEndIndex: [values.length - 1],
  };
}

function setup(opts: Partial<RealtimeOptions> = {}) {
  const clock = new FakeClock();
  const watchdog: string[] = [];
  const d = new RealtimeDriver(clock, { ...OPTS, ...opts }, { q: [0, 0], gripperWidthM: 0.08 }, (m) =>
    watchdog.push(m),
  );
  d.start();
  const t0 = clock.t;
  return { clock, d, watchdog, at: (slots: number) => t0 + slots * P, rec: recorder() };
}

const range = (a: number, n: number) => Array.from({ length: n }, (_, i) => a + i);

function codeOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (e) {
    if (e instanceof GatewayError) return e.code;
    throw e;
  }
  return undefined;
}

describe("realtime driver (fake wall clock)", () => {
  it("an empty queue holds the last target, one step per slot", async () => {
    const { clock, d, at, rec } = setup();
    clock.t = at(5);
    await d.wake(rec.exec);
    expect(rec.q0).toEqual([0, 0, 0, 0, 0]);
    expect(rec.grip).toEqual([0.08, 0.08, 0.08, 0.08, 0.08]);
    expect(d.counts).toMatchObject({ stepsRun: 5, holdSteps: 5, lateSteps: 0, stoodStillS: 0 });
    expect(d.committedStep).toBe(5);
    // nothing due yet: nothing runs
    expect(await d.wake(rec.exec)).toBeNull();
  });

  it("splices at given steps give the exact commanded sequence", async () => {
    const { clock, d, at, rec } = setup();
    // no start_step, empty queue: the earliest allowed step (committed 0 + margin 2)
    const s1 = d.spliceStep(undefined);
    expect(s1).toBe(2);
    d.splice(chunk(range(1, 10)), s1); // steps 2..11 take 1..10
    clock.t = at(5);
    await d.wake(rec.exec); // steps 0..4
    expect(rec.q0).toEqual([0, 0, 1, 2, 3]);
    // replace from step 8 on: steps 5..7 keep 4,5,6; 8.. take 100..
    expect(d.spliceStep(8)).toBe(8);
    d.splice(chunk([100, 101, 102]), 8);
    // appending (no start_step) goes right after the queue end (step 11)
    const s3 = d.spliceStep(undefined);
    expect(s3).toBe(11);
    d.splice(chunk([200, 201]), s3);
    clock.t = at(16);
    await d.wake(rec.exec);
    expect(rec.q0).toEqual([0, 0, 1, 2, 3, 4, 5, 6, 100, 101, 102, 200, 201, 201, 201, 201]);
    // steps 0, 1 are the hold up to the first chunk; 13..15 hold its last target
    expect(d.counts).toMatchObject({ stepsRun: 16, holdSteps: 3, splices: 3, lateSteps: 0 });
  });

  it("a long queue runs in order while committed rows are dropped from its head", async () => {
    const { clock, d, at, rec } = setup({ horizonSteps: 20_000 });
    d.splice(chunk(range(1, 12_000)), 2);
    for (let k = 1; k <= 9; k++) {
      clock.t = at(k * 1000);
      await d.wake(rec.exec);
    }
    expect(d.queueRows).toBe(12_002 - 9000);
    // a splice after the head was compacted keeps the rows before it
    d.splice(chunk([-1, -2]), 9500);
    clock.t = at(9503);
    await d.wake(rec.exec);
    expect(rec.q0).toEqual([0, 0, ...range(1, 9498), -1, -2, -2]);
    expect(d.commandedState(9503).q).toEqual([-2, 0]);
  });

  it("a start past the queue end holds the last queued target up to it", async () => {
    const { clock, d, at, rec } = setup();
    d.splice(chunk([1, 2]), 2);
    d.splice(chunk([9]), 7);
    clock.t = at(9);
    await d.wake(rec.exec);
    expect(rec.q0).toEqual([0, 0, 1, 2, 2, 2, 2, 9, 9]);
  });

  it("refuses a start_step already committed, within the margin, or beyond the horizon", async () => {
    const { clock, d, at, rec } = setup({ horizonSteps: 50 });
    clock.t = at(10);
    await d.wake(rec.exec);
    expect(codeOf(() => d.spliceStep(9))).toBe("RB_ERR_SPLICE_PAST");
    expect(codeOf(() => d.spliceStep(11))).toBe("RB_ERR_SPLICE_MARGIN");
    expect(codeOf(() => d.spliceStep(61))).toBe("RB_ERR_SPLICE_AHEAD");
    expect(d.spliceStep(12)).toBe(12);
    // steps the wall clock says are due count as gone even before the driver has woken
    clock.t = at(20);
    expect(codeOf(() => d.spliceStep(15))).toBe("RB_ERR_SPLICE_MARGIN");
    expect(d.spliceStep(22)).toBe(22);
  });

  it("margin 0 (the sim's): the first step neither committed nor due takes a splice; a due one is refused", async () => {
    const { clock, d, at, rec } = setup({ marginSteps: 0 });
    // no start_step, empty queue: the first step not yet committed (nothing is due yet)
    expect(d.spliceStep(undefined)).toBe(0);
    d.splice(chunk([1, 2, 3]), 0);
    clock.t = at(4);
    await d.wake(rec.exec);
    expect(rec.q0).toEqual([1, 2, 3, 3]);
    // committed 4: step 3 is refused as executed, step 4 (its slot not over) is taken
    expect(codeOf(() => d.spliceStep(3))).toBe("RB_ERR_SPLICE_PAST");
    expect(d.spliceStep(4)).toBe(4);
    // the wall clock ran on to step 7 before the driver woke: 4..6 are due (they run from the old
    // queue), within the margin; 7 is the earliest
    clock.t = at(7) + P / 2;
    expect(codeOf(() => d.spliceStep(4))).toBe("RB_ERR_SPLICE_MARGIN");
    expect(codeOf(() => d.spliceStep(6))).toBe("RB_ERR_SPLICE_MARGIN");
    expect(d.spliceStep(undefined)).toBe(7);
    // the join at 7 is judged from what steps 4..6 will command (the held 3), at rest
    expect(d.commandedState(7)).toEqual({ q: [3, 0], dq: [0, 0], ddq: [0, 0], gripperWidthM: 0.04 });
    d.splice(chunk([10, 20]), 7);
    clock.t = at(10);
    await d.wake(rec.exec);
    expect(rec.q0).toEqual([1, 2, 3, 3, 3, 3, 3, 10, 20, 20]);
  });

  it("at a committed step the commanded state is the committed targets' (the join judged up to jerk)", async () => {
    const { clock, d, at, rec } = setup({ marginSteps: 0 });
    d.splice(chunk([1, 3, 6, 10, 15]), 0);
    clock.t = at(3);
    await d.wake(rec.exec); // steps 0..2 committed (out of the queue): 1, 3, 6
    expect(d.spliceStep(3)).toBe(3);
    const s = d.commandedState(3);
    expect(s.q).toEqual([6, 0]);
    expect(s.dq[0]).toBeCloseTo(3 / P, 6);
    expect(s.ddq[0]).toBeCloseTo(1 / (P * P), 3);
    // one step later the join's state comes from two committed targets and a queued one
    const s4 = d.commandedState(4);
    expect(s4.q).toEqual([10, 0]);
    expect(s4.dq[0]).toBeCloseTo(4 / P, 6);
    expect(s4.ddq[0]).toBeCloseTo(1 / (P * P), 3);
  });

  it("the loop sleeps precisely to a splice's first step; a splice for the coming slot wakes a coarse sleep", async () => {
    const clock = new FakeClock();
    const d = new RealtimeDriver(
      clock,
      { ...OPTS, marginSteps: 0, lateToleranceS: 0.005 },
      { q: [0, 0], gripperWidthM: 0.08 },
      () => {},
    );
    const rec = recorder();
    const ac = new AbortController();
    const loop = d.run(ac.signal, rec.exec);
    const t0 = clock.t;
    await clock.advanceTo(t0 + 2.5 * P); // steps 0, 1 held; the loop sleeps coarsely to step 2's end
    expect(rec.q0).toEqual([0, 0]);
    expect(clock.preciseSleeps).toEqual([]);
    // a chunk for step 2 (the coming slot): the loop wakes and sleeps again, precisely to its end
    d.splice(chunk([5, 6]), d.spliceStep(undefined));
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    expect(clock.preciseSleeps).toEqual([t0 + 3 * P]);
    await clock.advanceTo(t0 + 3 * P);
    expect(rec.q0).toEqual([0, 0, 5]);
    // a chunk spliced further ahead (step 8): coarse sleeps up to it, a precise one for it
    d.splice(chunk([9]), 8);
    await clock.advanceTo(t0 + 10 * P);
    expect(rec.q0).toEqual([0, 0, 5, 6, 6, 6, 6, 6, 9, 9]);
    expect(clock.preciseSleeps).toEqual([t0 + 3 * P, t0 + 9 * P]);
    ac.abort();
    await loop;
    expect(d.counts.lateSteps).toBe(0);
  });

  it("the commanded state at a splice step is the target before it with its backward differences", () => {
    const { d } = setup();
    d.splice(chunk([1, 3, 6, 10]), 2); // steps 2..5
    const s = d.commandedState(5); // targets at 2,3,4 = 1,3,6
    expect(s.q).toEqual([6, 0]);
    expect(s.dq[0]).toBeCloseTo((6 - 3) / P, 6);
    expect(s.ddq[0]).toBeCloseTo((6 - 3 - (3 - 1)) / (P * P), 3);
    expect(s.gripperWidthM).toBe(0.04);
    // at rest before any chunk
    expect(d.commandedState(2)).toEqual({ q: [0, 0], dq: [0, 0], ddq: [0, 0], gripperWidthM: 0.08 });
  });

  it("counts steps that could not run on time and the time stood still, without a burst", async () => {
    const { clock, d, at, rec } = setup({ lateToleranceS: 0.005 });
    d.splice(chunk(range(1, 30)), 2);
    // the loop could not wake for 20 slots; tolerance 5 slots: due steps 1..14 ms are late
    clock.t = at(20);
    await d.wake(rec.exec);
    expect(d.counts.lateSteps).toBe(14);
    expect(d.counts.stoodStillS).toBeCloseTo(0.014, 12);
    // the six steps within the tolerance run, in order, from the queue where it was
    expect(rec.q0).toEqual([0, 0, 1, 2, 3, 4]);
    // back on schedule: one more slot, one more step, no more late ones
    clock.t = at(21);
    await d.wake(rec.exec);
    expect(rec.q0).toEqual([0, 0, 1, 2, 3, 4, 5]);
    expect(d.counts.lateSteps).toBe(14);
  });

  it("slowdown S: one step every S periods of wall clock", async () => {
    const { clock, d, at, rec } = setup({ slowdown: 4 });
    clock.t = at(12);
    await d.wake(rec.exec);
    expect(rec.q0.length).toBe(3);
  });

  it("the watchdog: empty queue and no chunk for the gap → hold, then ask for a stop", async () => {
    const { clock, d, at, rec, watchdog } = setup({ watchdogS: 0.01 });
    d.splice(chunk([1, 2, 3]), 2);
    clock.t = at(9);
    await d.wake(rec.exec);
    expect(watchdog).toEqual([]);
    clock.t = at(15); // the queue ran out at step 5; the last chunk came 15 ms ago
    await d.wake(rec.exec);
    expect(watchdog.length).toBe(1);
    expect(watchdog[0]).toMatch(/no queued rows and no chunk for 15 ms \(limit 10 ms\)/);
    expect(rec.q0.slice(-3)).toEqual([3, 3, 3]);
  });

  it("the loop follows the wall clock, answers waiters and ends on abort", async () => {
    const clock = new FakeClock();
    const d = new RealtimeDriver(
      clock,
      { ...OPTS, lateToleranceS: 0.005 },
      { q: [0, 0], gripperWidthM: 0.08 },
      () => {},
    );
    const rec = recorder();
    const ac = new AbortController();
    const loop = d.run(ac.signal, rec.exec);
    const t0 = clock.t;
    d.splice(chunk([5, 6, 7]), d.spliceStep(undefined));
    let reached = false;
    const waited = d.waitForStep(4).then(() => {
      reached = true;
    });
    await clock.advanceTo(t0 + 3 * P);
    expect(reached).toBe(false);
    await clock.advanceTo(t0 + 6 * P);
    await waited;
    expect(rec.q0).toEqual([0, 0, 5, 6, 7, 7]);
    ac.abort();
    await loop;
    expect(d.isHalted).toBe(true);
    expect(d.counts.lateSteps).toBe(0);
  });
});

describe("systemWallClock", () => {
  it("a precise sleep ends no earlier than its time (a coarse one is a timer: libuv's loop time may lag the clock)", async () => {
    for (const ms of [0.5, 5]) {
      const end = systemWallClock.now() + ms / 1000;
      await systemWallClock.sleepUntil(end, new AbortController().signal, true);
      expect(systemWallClock.now()).toBeGreaterThanOrEqual(end);
    }
    // a coarse one ends (when is the timer's business)
    await systemWallClock.sleepUntil(systemWallClock.now() + 0.005, new AbortController().signal);
  });

  it("an abort ends every sleep pending on its signal at once, and later sleeps on it do not wait", async () => {
    const ctl = new AbortController();
    const far = systemWallClock.now() + 3600;
    const ended: number[] = [];
    const sleeps = [false, true, false].map((precise, i) =>
      systemWallClock.sleepUntil(far, ctl.signal, precise).then(() => ended.push(i)),
    );
    // one that ends by itself on the same signal first: it leaves the others pending
    await systemWallClock.sleepUntil(systemWallClock.now() + 0.002, ctl.signal);
    expect(ended).toEqual([]);
    ctl.abort();
    await Promise.all(sleeps);
    expect(ended.sort()).toEqual([0, 1, 2]);
    await systemWallClock.sleepUntil(far, ctl.signal, true);
  });

  it("sleeps on other signals are not ended by an abort", async () => {
    const a = new AbortController();
    const b = new AbortController();
    let bEnded = false;
    const pb = systemWallClock.sleepUntil(systemWallClock.now() + 3600, b.signal).then(() => (bEnded = true));
    const pa = systemWallClock.sleepUntil(systemWallClock.now() + 3600, a.signal);
    a.abort();
    await pa;
    await new Promise((r) => setTimeout(r, 5));
    expect(bEnded).toBe(false);
    b.abort();
    await pb;
    expect(bEnded).toBe(true);
  });

  it("a Wakeup ends the sleep pending on it, coarse or precise, and no sleep that comes after", async () => {
    const ctl = new AbortController();
    const far = () => systemWallClock.now() + 3600;
    const w = new Wakeup();
    for (const precise of [false, true]) {
      let ended = false;
      const p = systemWallClock.sleepUntil(far(), ctl.signal, precise, w).then(() => (ended = true));
      await new Promise((r) => setTimeout(r, 2));
      expect(ended).toBe(false);
      w.ring();
      await p;
      expect(ended).toBe(true);
    }
    // a ring with nothing pending, and a ring after a sleep ended by itself, reach no later sleep
    w.ring();
    await systemWallClock.sleepUntil(systemWallClock.now() + 0.001, ctl.signal, false, w);
    w.ring();
    let ended = false;
    const p = systemWallClock.sleepUntil(far(), ctl.signal, false, w).then(() => (ended = true));
    await new Promise((r) => setTimeout(r, 5));
    expect(ended).toBe(false);
    // the abort still ends it
    ctl.abort();
    await p;
    expect(ended).toBe(true);
  });
});
