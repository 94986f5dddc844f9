/**
 * The realtime driver on a streamed drive (a real arm keeps its own time), with a fake wall clock:
 * a late wake-up never moves the schedule on (the controller ran those steps), the queue streamed
 * after a splice starts at the due step with the target before it, and late splices count.
 */
import { describe, expect, it } from "vitest";
import type { ExecuteResult, JointTrajectory } from "../../seam/types.ts";
import { FakeClock } from "../../test-support/fake-clock.ts";
import { RealtimeDriver, type RealtimeOptions } from "./realtime.ts";

const DOF = 2;
const P = 0.001;
const OPTS: RealtimeOptions = {
  periodS: P,
  slowdown: 1,
  marginSteps: 100,
  lateToleranceS: 0.02,
  watchdogS: 5,
  horizonSteps: 10_000,
  streamed: true,
};

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

/** the streamed drive's wake-up: sends nothing, reports the steps as run */
const watchOnly = async (traj: JointTrajectory): Promise<ExecuteResult> => ({
  outcome: "completed",
  samplesExecuted: traj.count,
  final: { t: 0, q: [0, 0], dq: [0, 0], gripperWidthM: 0.04 },
  frames: [],
});

describe("realtime driver, streamed drive (fake wall clock)", () => {
  it("a late wake-up commits every due step at once; nothing is skipped or counted late", async () => {
    const clock = new FakeClock(100);
    const rt = new RealtimeDriver(clock, OPTS, { q: [0, 0], gripperWidthM: 0.04 }, () => {});
    const stepped = new RealtimeDriver(
      clock,
      { ...OPTS, streamed: false },
      { q: [0, 0], gripperWidthM: 0.04 },
      () => {},
    );
    rt.start();
    stepped.start();
    clock.t += 0.01;
    await rt.wake(watchOnly);
    await stepped.wake(watchOnly);
    expect(rt.committedStep).toBe(10);
    expect(stepped.committedStep).toBe(10);
    // the gateway's event loop stalls for 300 ms: the next wake-up comes that late
    clock.t += 0.3;
    const res = await rt.wake(watchOnly);
    expect(res?.samplesExecuted).toBe(300);
    expect(rt.committedStep).toBe(310);
    expect(rt.counts).toMatchObject({ lateSteps: 0, stoodStillS: 0, stepsRun: 310 });
    expect(rt.dueStep()).toBe(310);
    // the same wake-up stepped (the sim) skips the late slots and counts them
    await stepped.wake(watchOnly);
    expect(stepped.counts.lateSteps).toBeGreaterThan(250);
    expect(stepped.committedStep).toBeLessThan(60);
  });

  it("queueFrom: the queue from the due step with the target before it; dueWall keeps the clock", async () => {
    const clock = new FakeClock(100);
    const rt = new RealtimeDriver(clock, OPTS, { q: [0.5, 0], gripperWidthM: 0.04 }, () => {});
    rt.start();
    const step = rt.spliceStep(undefined);
    expect(step).toBe(100); // the margin
    rt.splice(chunk(Array.from({ length: 50 }, (_, i) => 0.5 + 0.001 * (i + 1))), step);
    await clock.advance(0.02); // no loop running: nothing committed, 20 steps due
    const from = Math.max(rt.committedStep, rt.dueStep());
    expect(from).toBe(20);
    const { traj, before } = rt.queueFrom(from);
    // 80 holds up to the splice (from 20 on), then the 50 rows
    expect(traj.count).toBe(130);
    expect(before).toEqual([0.5, 0]);
    expect(traj.q[0]).toBe(0.5);
    expect(traj.q[79 * DOF]).toBe(0.5);
    expect(traj.q[80 * DOF]).toBeCloseTo(0.501, 12);
    expect(traj.q[129 * DOF]).toBeCloseTo(0.55, 12);
    // step k is due at the end of its slot on the wall clock
    expect(rt.dueWall(step)).toBeCloseTo(100 + (step + 1) * P, 12);
    expect(rt.dueWall(from - 1)).toBeCloseTo(100 + from * P, 12);
  });

  it("late splices add their steps and are counted once each; on time adds nothing", () => {
    const clock = new FakeClock(100);
    const rt = new RealtimeDriver(clock, OPTS, { q: [0, 0], gripperWidthM: 0.04 }, () => {});
    rt.countLateSplice(0);
    rt.countLateSplice(-3);
    expect(rt.counts).toMatchObject({ lateSteps: 0, lateSplices: 0 });
    rt.countLateSplice(7);
    rt.countLateSplice(2);
    expect(rt.counts).toMatchObject({ lateSteps: 9, lateSplices: 2 });
  });

  it("the tracking check's view of the schedule: a wall time maps to the step commanded then, and committed steps keep their targets", async () => {
    const clock = new FakeClock(100);
    const rt = new RealtimeDriver(clock, OPTS, { q: [0.5, 0], gripperWidthM: 0.04 }, () => {});
    expect(rt.stepAtWall(100.5)).toBe(-1); // not started
    rt.start();
    const step = rt.spliceStep(undefined); // 100: the margin
    rt.splice(chunk(Array.from({ length: 50 }, (_, i) => 0.5 + 0.001 * (i + 1))), step);
    // the controller reaches step k's target when it falls due, at dueWall(k) = t0 + (k + 1)·P
    expect(rt.stepAtWall(100)).toBe(-1);
    expect(rt.stepAtWall(100 + P)).toBe(0);
    expect(rt.stepAtWall(rt.dueWall(120))).toBe(120);
    expect(rt.stepAtWall(rt.dueWall(120) + 0.6 * P)).toBe(120);
    // nothing committed yet: no target to judge against
    expect(rt.commandedAt(0)).toBeUndefined();
    clock.t += 0.12;
    await rt.wake(watchOnly);
    expect(rt.committedStep).toBe(120);
    expect([...rt.commandedAt(50)!]).toEqual([0.5, 0]); // a hold before the splice
    expect(rt.commandedAt(100)![0]).toBeCloseTo(0.501, 12); // the chunk's first row
    expect(rt.commandedAt(119)![0]).toBeCloseTo(0.52, 12);
    expect(rt.commandedAt(120)).toBeUndefined(); // queued, not due yet
    expect(rt.commandedAt(-1)).toBeUndefined();
    // due but not committed yet (the loop wakes late; a real arm runs those steps already): the
    // row the queue will commit
    clock.t += 0.005;
    expect(rt.dueStep()).toBe(125);
    expect(rt.commandedAt(122)![0]).toBeCloseTo(0.523, 12);
    expect(rt.commandedAt(125)).toBeUndefined();
    // 256 committed steps are kept: older ones are gone; a due step past the queue end holds
    // its last target
    clock.t += 0.295;
    expect(rt.commandedAt(400)![0]).toBeCloseTo(0.55, 12);
    await rt.wake(watchOnly);
    expect(rt.committedStep).toBe(420);
    expect(rt.commandedAt(420 - 256)![0]).toBeCloseTo(0.55, 12);
    expect(rt.commandedAt(420 - 257)).toBeUndefined();
  });
});
