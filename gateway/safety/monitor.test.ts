import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { forwardKinematics } from "../../robots/franka/kinematics.ts";
import { PANDA } from "../../robots/franka/models.ts";
import { interpolateChunk } from "../../seam/interpolate.ts";
import type { JointReading } from "../../seam/types.ts";
import { EStopLatch } from "./estop.ts";
import { SafetyMonitor, type MonitorVerdict } from "./monitor.ts";
import { parseSafetyProfile, resolveLimits, type SafetyProfileInput } from "./profile.ts";
import { minJerkRows, withCapsules } from "./testing.ts";

const robot = withCapsules(PANDA);
const HOME = [...robot.homeQ];
const reading = (t: number, q = HOME, dq = [0, 0, 0, 0, 0, 0, 0]): JointReading => ({
  t,
  q: [...q],
  dq: [...dq],
  gripperWidthM: 0.04,
});

/** joint 1 moving at `v` rad/s from HOME since t = 0, the driver reporting `reported` */
const movingJoint1 = (t: number, v: number, reported: number): JointReading => {
  const q = [...HOME];
  q[0] = q[0]! + v * t;
  const dq = [0, 0, 0, 0, 0, 0, 0];
  dq[0] = reported;
  return reading(t, q, dq);
};

function monitor(p: SafetyProfileInput = {}) {
  return new SafetyMonitor(robot, resolveLimits(robot, parseSafetyProfile(p)));
}
function cause(v: MonitorVerdict) {
  if (v === "ok") throw new Error("expected a stop");
  return v;
}

describe("SafetyMonitor stops on each cause", () => {
  it("stays ok while a commanded trajectory is followed exactly", () => {
    const m = monitor();
    const q1 = [...HOME];
    q1[1] = q1[1]! + 0.1;
    const start = reading(0);
    const traj = interpolateChunk(start, minJerkRows(HOME, q1, 10), 0.05, 0.001);
    m.begin(start, traj);
    for (let i = 0; i < traj.count; i++) {
      const q = Array.from(traj.q.subarray(i * 7, i * 7 + 7));
      expect(m.tick(reading((i + 1) * 0.001, q), i)).toBe("ok");
    }
    expect(m.checkTime(traj.count * 0.001 + 0.05)).toBe("ok");
  });

  it("position beyond the published limit", () => {
    const m = monitor();
    m.begin(reading(0), null);
    const q = [...HOME];
    q[3] = PANDA.joints[3]!.upper + 0.01;
    const v = cause(m.tick(reading(0.001, q)));
    expect(v).toMatchObject({ endReason: "safety_stop", cause: { kind: "position", joint: "panda_joint4" } });
  });

  it("velocity beyond the monitor limit, from the positions", () => {
    const limit = 2.175 * 0.5 * 1.2;
    for (const [v, stops] of [
      [limit - 0.01, false],
      [limit + 0.01, true],
      [-(limit + 0.01), true],
    ] as const) {
      const m = monitor({ velocityFraction: 0.5, monitorVelocityFactor: 1.2 });
      m.begin(reading(0), null);
      let verdict: MonitorVerdict = "ok";
      for (let k = 1; k <= 100 && verdict === "ok"; k++) verdict = m.tick(movingJoint1(k * 0.001, v, v)); // the driver reports the true velocity
      if (!stops) expect(verdict).toBe("ok");
      else
        expect(cause(verdict).cause).toMatchObject({
          kind: "velocity",
          joint: "panda_joint1",
          limit,
          reported: v,
        });
    }
  });

  it("tracking error beyond the bound", () => {
    const m = monitor({ trackingErrorBoundRad: 0.02 });
    const start = reading(0);
    const traj = interpolateChunk(start, [[...HOME, 0.04]], 0.1, 0.001);
    m.begin(start, traj);
    const q = [...HOME];
    q[5] = q[5]! + 0.019;
    expect(m.tick(reading(0.001, q), 0)).toBe("ok");
    q[5] = HOME[5]! + 0.021;
    expect(cause(m.tick(reading(0.002, q), 1))).toMatchObject({
      endReason: "safety_stop",
      cause: { kind: "tracking_error", joint: "panda_joint6", sampleIndex: 1 },
    });
  });

  it("tracking error against a commanded target given with the reading (the realtime setting), its step as the sample", () => {
    const m = monitor({ trackingErrorBoundRad: 0.02 });
    m.begin(reading(0), null);
    const target = Float64Array.from(HOME);
    target[2] = target[2]! + 0.05;
    const q = [...HOME];
    q[2] = target[2]! - 0.019;
    expect(m.tick(reading(0.001, q), 4711, target)).toBe("ok");
    // without a target (and no trajectory) nothing is judged
    q[2] = HOME[2]!;
    expect(m.tick(reading(0.002, q), 4712)).toBe("ok");
    expect(cause(m.tick(reading(0.003, q), 4713, target))).toMatchObject({
      endReason: "safety_stop",
      cause: { kind: "tracking_error", joint: "panda_joint3", sampleIndex: 4713 },
    });
  });

  it("keep-out intrusion, checked every N readings", () => {
    const q = [...HOME];
    q[0] = 0.3;
    const tool = forwardKinematics(robot, q).tool.xyz;
    const m = monitor({
      monitorFkEveryTicks: 3,
      keepOut: [{ type: "sphere", name: "post", centerM: tool, radiusM: 0.01 }],
    });
    m.begin(reading(0), null);
    expect(m.tick(reading(0.001, q))).toBe("ok");
    expect(m.tick(reading(0.002, q))).toBe("ok");
    expect(cause(m.tick(reading(0.003, q)))).toMatchObject({
      cause: { kind: "keep_out", volume: "post", link: "tool" },
    });
  });

  it("stale readings: a gap between readings, or no reading by the timer", () => {
    const a = monitor({ staleReadingTimeoutMs: 100 });
    a.begin(reading(0), null);
    expect(a.tick(reading(0.09))).toBe("ok");
    expect(cause(a.tick(reading(0.2)))).toMatchObject({
      endReason: "fault",
      cause: { kind: "stale_reading" },
    });
    const b = monitor({ staleReadingTimeoutMs: 100 });
    b.begin(reading(0), null);
    expect(b.checkTime(0.1)).toBe("ok");
    expect(cause(b.checkTime(0.101)).cause.kind).toBe("stale_reading");
  });

  it("realtime command watchdog only when armed", () => {
    const m = monitor({ commandWatchdogMs: 50, staleReadingTimeoutMs: 1000 });
    m.begin(reading(0), null);
    expect(m.checkTime(0.5)).toBe("ok");
    m.begin(reading(0), null, { realtime: true });
    m.noteCommand(0.04);
    expect(m.checkTime(0.09)).toBe("ok");
    expect(cause(m.checkTime(0.091))).toMatchObject({
      endReason: "fault",
      cause: { kind: "command_watchdog" },
    });
  });

  it("task events in stopOnEvents, device faults always; the stop latches until begin()", () => {
    const m = monitor({ stopOnEvents: ["contact"] });
    m.begin(reading(0), null);
    expect(m.onEvent({ type: "contact", t: 0.1, closed: false, source: "buzzbox" })).toBe("ok");
    expect(m.onEvent({ type: "collision", t: 0.1, link: "hand", other: "board", source: "sim" })).toBe("ok");
    expect(m.onEvent({ type: "instrument", t: 0.1, name: "v", values: { v: 1 }, source: "x" })).toBe("ok");
    const v = cause(m.onEvent({ type: "contact", t: 0.2, closed: true, source: "buzzbox" }));
    expect(v).toMatchObject({ endReason: "task_failed", cause: { kind: "task_event", event: "contact" } });
    expect(m.tick(reading(0.21))).toBe(v);
    expect(m.stopped).toBe(v);
    m.begin(reading(0.3), null);
    expect(m.tick(reading(0.301))).toBe("ok");
    const f = cause(m.onEvent({ type: "fault", t: 0.4, device: "rosbridge", message: "closed" }));
    expect(f).toMatchObject({ endReason: "fault", cause: { kind: "device_fault", device: "rosbridge" } });
    const c = monitor({ stopOnEvents: ["collision"] });
    c.begin(reading(0), null);
    expect(
      cause(c.onEvent({ type: "collision", t: 0.1, link: "hand", other: "board", source: "sim" })).endReason,
    ).toBe("safety_stop");
  });
});

describe("EStopLatch", () => {
  it("latches, is idempotent, records who and why", () => {
    let now = 1000;
    const latch = new EStopLatch(() => now);
    const seen: boolean[] = [];
    latch.onChange((e) => seen.push(e));
    expect(latch.isEngaged).toBe(false);
    expect(latch.release("operator")).toBe(false);
    expect(latch.engage("button", "operator")).toBe(true);
    now = 2000;
    expect(latch.engage("again", "safety")).toBe(false);
    expect(latch.current).toMatchObject({ reason: "button", by: "operator", atMs: 1000 });
    expect(latch.isEngaged).toBe(true);
    expect(latch.release("operator")).toBe(true);
    expect(latch.release("operator")).toBe(false);
    expect(latch.isEngaged).toBe(false);
    expect(latch.history.map((h) => [h.action, h.by, h.atMs])).toEqual([
      ["engage", "operator", 1000],
      ["release", "operator", 2000],
    ]);
    expect(seen).toEqual([true, false]);
  });
});

describe("SafetyMonitor judges velocity from positions, not from one reported sample", () => {
  const P = { velocityFraction: 0.5, monitorVelocityFactor: 1.2 };
  const LIMIT = 2.175 * 0.5 * 1.2; // panda_joint1, 1.305 rad/s

  it("ignores the reported spike of the incident (1.365 rad/s while moving at 0.148)", () => {
    const m = monitor(P);
    m.begin(reading(0), null);
    for (let k = 1; k <= 3000; k++) {
      // every 97th reading carries a spike as a finite difference over late timer ticks does
      const reported = k % 97 === 0 ? 1.365 : 0.148;
      expect(m.tick(movingJoint1(k * 0.001, 0.148, reported))).toBe("ok");
    }
    expect(m.spuriousVelocity).toBe(Math.floor(3000 / 97));
  });

  it("stops on positions moving too fast even when the driver reports zero velocity", () => {
    const m = monitor(P);
    m.begin(reading(0), null);
    let verdict: MonitorVerdict = "ok";
    let k = 0;
    while (verdict === "ok" && k < 100) verdict = m.tick(movingJoint1(++k * 0.001, 1.5, 0));
    expect(cause(verdict).cause).toMatchObject({ kind: "velocity", joint: "panda_joint1", reported: 0 });
    const c = cause(verdict).cause;
    if (c.kind !== "velocity") throw new Error("velocity expected");
    expect(c.value).toBeCloseTo(1.5, 6);
    expect(c.windowS).toBeGreaterThanOrEqual(0.01 - 1e-9);
  });

  it("the position window spans chunks: a chunk's first reading is judged", () => {
    const m = monitor(P);
    m.begin(reading(0), null);
    for (let k = 1; k <= 30; k++) expect(m.tick(movingJoint1(k * 0.001, 1.0, 1.0))).toBe("ok");
    m.begin(movingJoint1(0.03, 1.0, 1.0), null); // next chunk, the arm still moving
    const jump = movingJoint1(0.031, 1.0, 1.0);
    jump.q[0] = jump.q[0]! + 0.05; // 50 mrad in 1 ms
    expect(cause(m.tick(jump)).cause).toMatchObject({ kind: "velocity", joint: "panda_joint1" });
  });

  it("property: legal motion with any reported spikes and timestamp jitter never stops", () => {
    fc.assert(
      fc.property(
        fc.double({ min: -LIMIT / 1.2, max: LIMIT / 1.2, noNaN: true }),
        fc.array(
          fc.record({
            k: fc.integer({ min: 1, max: 899 }),
            v: fc.double({ min: -20, max: 20, noNaN: true }),
          }),
        ),
        fc.integer({ min: 1, max: 10 }),
        (v, spikes, periodMs) => {
          const m = monitor(P);
          m.begin(reading(0), null);
          const spikeAt = new Map(spikes.map((s) => [s.k, s.v]));
          const steps = Math.floor(900 / periodMs); // 0.9 s: within joint 1's range at any legal v
          for (let k = 1; k < steps; k++) {
            // readings every periodMs with ±10 % stamp jitter (positions sampled at the true time)
            const tTrue = k * periodMs * 1e-3;
            const r = movingJoint1(tTrue, v, spikeAt.get(k) ?? v);
            r.t = tTrue + (((k * 7919) % 21) - 10) * 0.01 * periodMs * 1e-3;
            if (m.tick(r) !== "ok") return false;
          }
          return true;
        },
      ),
      { numRuns: 150 },
    );
  });

  it("property: a real overspeed after legal motion stops within one window", () => {
    fc.assert(
      fc.property(
        fc.double({ min: -LIMIT / 1.2, max: LIMIT / 1.2, noNaN: true }),
        fc.double({ min: 1.05, max: 3, noNaN: true }),
        fc.boolean(),
        fc.integer({ min: 30, max: 300 }),
        (v0, factor, reportTruth, onsetMs) => {
          const v1 = Math.sign(v0 || 1) * LIMIT * factor;
          const m = monitor(P);
          m.begin(reading(0), null);
          const onset = onsetMs * 1e-3;
          for (let k = 1; k < 1000; k++) {
            const t = k * 1e-3;
            const q = [...HOME];
            q[0] = q[0]! + (t <= onset ? v0 * t : v0 * onset + v1 * (t - onset));
            const dq = [0, 0, 0, 0, 0, 0, 0];
            dq[0] = reportTruth ? (t <= onset ? v0 : v1) : 0;
            const verdict = m.tick(reading(t, q, dq));
            if (verdict !== "ok") {
              expect(t).toBeGreaterThan(onset);
              expect(t - onset).toBeLessThanOrEqual(0.02 + 0.001 + 1e-9);
              expect(verdict.cause.kind).toBe("velocity");
              return;
            }
          }
          throw new Error("no stop");
        },
      ),
      { numRuns: 150 },
    );
  });
});
