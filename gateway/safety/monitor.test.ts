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

  it("velocity beyond the monitor limit", () => {
    const m = monitor({ velocityFraction: 0.5, monitorVelocityFactor: 1.2 });
    m.begin(reading(0), null);
    const dq = [0, 0, 0, 0, 0, 0, 0];
    dq[0] = 2.175 * 0.5 * 1.2 - 0.01;
    expect(m.tick(reading(0.001, HOME, dq))).toBe("ok");
    dq[0] = 2.175 * 0.5 * 1.2 + 0.01;
    expect(cause(m.tick(reading(0.002, HOME, dq))).cause).toMatchObject({
      kind: "velocity",
      joint: "panda_joint1",
    });
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
