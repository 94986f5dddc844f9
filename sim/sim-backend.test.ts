import { createHash } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { interpolateChunk } from "../seam/interpolate.ts";
import { hasSimPowers, type JointReading, LifecycleError, type SensorEvent } from "../seam/types.ts";
import { fkWorkspace, forwardKinematicsInto } from "../robots/franka/kinematics.ts";
import { PANDA } from "../robots/franka/models.ts";
import { type Mat4, mat4Mul, mat4Point, poseToMat4, type Vec3 } from "../robots/math.ts";
import { centreline, pointAt } from "../calibration/wire-geometry.ts";
import { wireReferencePath } from "./buzzwire/reference-path.ts";
import { COLORS, ringSegments, wireSegments } from "./buzzwire/scene.ts";
import { solveToolPose } from "../calibration/wire-pose.ts";
import { createSimBackend, type SimBackend } from "./sim-backend.ts";

const DT = PANDA.controlPeriodS;
const open: SimBackend[] = [];

async function backend(seed: number): Promise<SimBackend> {
  const b = createSimBackend({ robot: PANDA, seed });
  open.push(b);
  await b.configure();
  await b.activate();
  return b;
}

afterEach(async () => {
  for (const b of open.splice(0)) await b.shutdown();
});

/** Trajectory that follows the wire from the start mark to the end mark. */
function followWire(b: SimBackend, speedMps = 0.06) {
  const r = b.read();
  const ref = wireReferencePath(PANDA, b.currentCalibration(), {
    gripperWidthM: r.gripperWidthM,
    seedQ: r.q,
    speedMps,
    spacingM: 0.006,
  });
  return interpolateChunk({ q: r.q, dq: r.dq, gripperWidthM: r.gripperWidthM }, ref.rows, ref.dtS, DT);
}

/** Trajectory that pushes the loop `offsetM` sideways (along the loop frame's y axis) within `dtS`. */
function pushSideways(b: SimBackend, offsetM: number, dtS: number) {
  const r = b.read();
  const cal = b.currentCalibration();
  const tool = poseToMat4(cal.tool.loopPoseFlange);
  const f = forwardKinematicsInto(PANDA, r.q, fkWorkspace(), tool);
  const target = Float64Array.from(f[9]!);
  target[3] = target[3]! + target[1]! * offsetM;
  target[7] = target[7]! + target[5]! * offsetM;
  target[11] = target[11]! + target[9]! * offsetM;
  const ik = solveToolPose(PANDA, target, tool, r.q);
  expect(ik.positionErrorM).toBeLessThan(1e-5);
  return interpolateChunk(
    { q: r.q, dq: r.dq, gripperWidthM: r.gripperWidthM },
    [[...ik.q, r.gripperWidthM]],
    dtS,
    DT,
  );
}

/** Closest distance between segments p1q1 and p2q2. */
function segDist(p1: Vec3, q1: Vec3, p2: Vec3, q2: Vec3): number {
  const d1 = [q1[0] - p1[0], q1[1] - p1[1], q1[2] - p1[2]];
  const d2 = [q2[0] - p2[0], q2[1] - p2[1], q2[2] - p2[2]];
  const r = [p1[0] - p2[0], p1[1] - p2[1], p1[2] - p2[2]];
  const dot = (a: number[], c: number[]) => a[0]! * c[0]! + a[1]! * c[1]! + a[2]! * c[2]!;
  const a = dot(d1, d1);
  const e = dot(d2, d2);
  const f = dot(d2, r);
  const c = dot(d1, r);
  const bb = dot(d1, d2);
  const den = a * e - bb * bb;
  const clamp = (x: number) => Math.min(1, Math.max(0, x));
  let s = den > 1e-15 ? clamp((bb * f - c * e) / den) : 0;
  let t = (bb * s + f) / e;
  if (t < 0) {
    t = 0;
    s = clamp(-c / a);
  } else if (t > 1) {
    t = 1;
    s = clamp((bb - c) / a);
  }
  const x = [
    r[0]! + d1[0]! * s - d2[0]! * t,
    r[1]! + d1[1]! * s - d2[1]! * t,
    r[2]! + d1[2]! * s - d2[2]! * t,
  ];
  return Math.sqrt(dot(x, x));
}

/** Geometric ring–wire clearance (m, ≤ 0 = touching) for joint angles q, independent of Rapier. */
function ringWireClearance(b: SimBackend, q: readonly number[]): number {
  const cal = b.currentCalibration();
  const worldFromBase = poseToMat4(cal.robotBasePoseWorld);
  const f = forwardKinematicsInto(PANDA, q, fkWorkspace(), poseToMat4(cal.tool.loopPoseFlange));
  const loop: Mat4 = mat4Mul(worldFromBase, f[9]!);
  const centre = mat4Point(loop, [0, 0, 0]);
  const wire = wireSegments(cal.wire.pointsBase.map((p) => mat4Point(worldFromBase, p)));
  const ring = ringSegments(cal.tool.loopInnerRadiusM + cal.tool.loopWireRadiusM).map(
    ([p, q2]) => [mat4Point(loop, p), mat4Point(loop, q2)] as const,
  );
  let best = Infinity;
  for (const [wa, wb] of wire) {
    if (Math.hypot(wa[0] - centre[0], wa[1] - centre[1], wa[2] - centre[2]) > 0.06) continue;
    for (const [ra, rb] of ring) best = Math.min(best, segDist(ra, rb, wa, wb));
  }
  return best - cal.tool.loopWireRadiusM - cal.wire.wireRadiusM;
}

function hashReading(h: ReturnType<typeof createHash>, r: JointReading): void {
  h.update(new Float64Array([r.t, ...r.q, ...r.dq, r.gripperWidthM]));
}

describe("SimBackend", () => {
  it("follows the lifecycle and refuses motion while inactive", async () => {
    const b = createSimBackend({ robot: PANDA, seed: 1 });
    open.push(b);
    expect(b.lifecycle).toBe("unconfigured");
    expect(hasSimPowers(b)).toBe(true);
    expect(() => b.read()).toThrow(LifecycleError);
    await b.configure();
    expect(b.lifecycle).toBe("inactive");
    expect(b.read().t).toBe(0);
    await expect(b.hold(0.01)).rejects.toThrow(LifecycleError);
    await b.activate();
    const r = await b.hold(0.05);
    expect(r.outcome).toBe("completed");
    expect(r.samplesExecuted).toBe(50);
    expect(b.now()).toBeCloseTo(0.05, 12);
    await b.stop("test");
    await b.stop("test again");
    const d = b.describe();
    expect(d.cameras.map((c) => c.name)).toEqual(["front", "side", "top", "wrist"]);
    expect(d.controlPeriodS).toBe(DT);
    await b.shutdown();
    await b.shutdown();
    expect(b.lifecycle).toBe("finalized");
  });

  it("stops at once on an abort signal or an onTick stop, then holds", async () => {
    const b = await backend(2);
    const traj = followWire(b);
    const ctl = new AbortController();
    const r1 = await b.execute(traj, {
      signal: ctl.signal,
      onTick: (_r, i) => {
        if (i === 99) ctl.abort();
        return "ok";
      },
    });
    expect(r1.outcome).toBe("aborted");
    expect(r1.samplesExecuted).toBe(100);
    const r2 = await b.execute(followWire(b), { onTick: (_r, i) => (i === 9 ? "stop" : "ok") });
    expect(r2.outcome).toBe("stopped");
    expect(r2.samplesExecuted).toBe(10);
  });

  it("an abort from outside the control loop stops the motion at the next control step", async () => {
    // the abort arrives through the event loop (as an e-stop request, the watchdog or a signal
    // does): requested while step k runs, it fires at the backend's next event-loop turn; from the
    // step at which it fired, at most one more sample runs
    const run = async (opts: { yieldEveryTicks?: number } = {}) => {
      const b = createSimBackend({ robot: PANDA, seed: 2, ...opts });
      open.push(b);
      await b.configure();
      await b.activate();
      const traj = followWire(b);
      expect(traj.count).toBeGreaterThan(3000);
      const ctl = new AbortController();
      const t0 = b.now();
      const k = 30;
      let current = -1;
      let firedAt = -1;
      const res = await b.execute(traj, {
        signal: ctl.signal,
        onTick: (_r, i) => {
          current = i;
          if (i === k)
            setImmediate(() => {
              firedAt = current;
              ctl.abort();
            });
          return "ok";
        },
      });
      expect(res.outcome).toBe("aborted");
      expect(firedAt).toBeGreaterThanOrEqual(k);
      // sim time advanced exactly by the samples run, and it holds where it stopped
      expect(b.now() - t0).toBeCloseTo(res.samplesExecuted * DT, 9);
      const held = await b.hold(0.05);
      expect(held.final.q.every((v, j) => Math.abs(v - res.final.q[j]!) < 1e-3)).toBe(true);
      return { extra: res.samplesExecuted - (firedAt + 1), firedAt };
    };
    // default (wall-time slices) and every step: step i is sample i + 1; at most one more runs
    for (const opts of [{}, { yieldEveryTicks: 1 }]) {
      const { extra } = await run(opts);
      expect(extra).toBeGreaterThanOrEqual(0);
      expect(extra).toBeLessThanOrEqual(1);
    }
    // every step: the abort fires at the very next step
    expect((await run({ yieldEveryTicks: 1 })).firedAt).toBe(30);
    // the old cadence (the event loop ran every 1,000 ticks): the abort could not fire before tick 1,000
    expect((await run({ yieldEveryTicks: 1000 })).firedAt).toBe(999);
  });

  it("a fault verdict of the hot loop ends the motion as a fault at that tick and holds", async () => {
    const b = await backend(2);
    const res = await b.execute(followWire(b), { onTick: (_r, i) => (i === 19 ? "fault" : "ok") });
    expect(res.outcome).toBe("fault");
    expect(res.samplesExecuted).toBe(20);
    expect(res.fault).toEqual({ device: "supervisor", message: expect.stringMatching(/supervisor/) });
  });

  it("reports a contact edge when the loop is swept into the wire, within one control period", async () => {
    const b = await backend(3);
    const events: SensorEvent[] = [];
    b.onEvent((e) => events.push(e));
    let firstTouchT = Number.NaN;
    const traj = pushSideways(b, 0.03, 1.0);
    await b.execute(traj, {
      onTick: (r) => {
        const cl = ringWireClearance(b, r.q);
        if (Number.isNaN(firstTouchT) && cl <= 0) firstTouchT = r.t;
        return "ok";
      },
    });
    const contacts = events.filter((e) => e.type === "contact");
    expect(Number.isNaN(firstTouchT)).toBe(false);
    expect(contacts[0]).toMatchObject({ type: "contact", closed: true, source: "sim" });
    expect(Math.abs(contacts[0]!.t - firstTouchT)).toBeLessThanOrEqual(DT + 1e-9);
    // moving back opens the circuit again
    await b.execute(pushSideways(b, -0.03, 1.0));
    const last = events.filter((e) => e.type === "contact").at(-1);
    expect(last).toMatchObject({ closed: false });
    expect(b.privilegedState().contactClosed).toBe(false);
  });

  it.each([1, 2, 3, 4, 5])("threads the loop from start to end without contact (seed %i)", async (seed) => {
    const b = await backend(seed);
    const events: SensorEvent[] = [];
    b.onEvent((e) => events.push(e));
    let minClearance = Infinity;
    const res = await b.execute(followWire(b), {
      onTick: (r, i) => {
        if (i % 50 === 0) minClearance = Math.min(minClearance, ringWireClearance(b, r.q));
        return "ok";
      },
    });
    expect(res.outcome).toBe("completed");
    expect(events).toEqual([]);
    expect(minClearance).toBeGreaterThan(0.005);
    // the loop ends at the end mark
    const cal = b.currentCalibration();
    const end = pointAt(centreline(cal.wire.pointsBase), cal.wire.endMarkM);
    const loop = (b.privilegedState().loop as { poseBase: { xyz: Vec3 } }).poseBase.xyz;
    expect(Math.hypot(loop[0] - end[0], loop[1] - end[1], loop[2] - end[2])).toBeLessThan(0.002);
  });

  async function scriptedRun(seed: number): Promise<{ hash: string; events: SensorEvent[] }> {
    const b = await backend(seed);
    const h = createHash("sha256");
    const events: SensorEvent[] = [];
    b.onEvent((e) => events.push(e));
    const cap = { everyTicks: 400, cameras: ["front", "wrist"], depth: true };
    const onTick = (r: JointReading) => {
      hashReading(h, r);
      return "ok" as const;
    };
    const r1 = await b.execute(pushSideways(b, 0.025, 0.6), { onTick, capture: cap });
    const r2 = await b.hold(0.2, { onTick });
    for (const f of [...r1.frames, ...r2.frames, ...(await b.capture([], { depth: true }))]) {
      h.update(f.camera);
      h.update(new Float64Array([f.t]));
      h.update(f.rgb.data);
      if (f.depthMm) h.update(new Uint8Array(f.depthMm.data.buffer));
    }
    h.update(JSON.stringify(events));
    return { hash: h.digest("hex"), events };
  }

  it("is deterministic: same seed and commands give identical readings, events and frames", async () => {
    const a = await scriptedRun(7);
    const b = await scriptedRun(7);
    expect(a.events.length).toBeGreaterThan(0);
    expect(a.hash).toBe(b.hash);
  });

  it("restores snapshots bit-identically", async () => {
    const b = await backend(4);
    const events: SensorEvent[] = [];
    b.onEvent((e) => events.push(e));
    await b.execute(pushSideways(b, 0.02, 0.4));
    const snap = b.snapshot();
    const run = async (target: SimBackend) => {
      const h = createHash("sha256");
      const start = events.length;
      const traj = pushSideways(target, 0.02, 0.4);
      await target.execute(traj, {
        onTick: (r) => {
          hashReading(h, r);
          return "ok";
        },
      });
      h.update(JSON.stringify(events.slice(start)));
      const [f] = await target.capture(["side"], { depth: true });
      h.update(f!.rgb.data);
      h.update(new Uint8Array(target.snapshot()));
      return h.digest("hex");
    };
    const first = await run(b);
    expect(events.some((e) => e.type === "contact" && e.closed)).toBe(true);
    b.restore(snap);
    const again = await run(b);
    expect(again).toBe(first);
    // into another backend built from another seed
    const other = await backend(9);
    other.onEvent((e) => events.push(e));
    other.restore(snap);
    expect(await run(other)).toBe(first);
  });

  it("renders the wire, and the lamp lit only while the circuit is closed", async () => {
    const b = await backend(5);
    const count = (data: Uint8Array, pred: (r: number, g: number, bl: number) => boolean) => {
      let n = 0;
      for (let i = 0; i < data.length; i += 3) if (pred(data[i]!, data[i + 1]!, data[i + 2]!)) n++;
      return n;
    };
    const lit = (r: number, g: number, bl: number) =>
      r === COLORS.lampOn[0] && g === COLORS.lampOn[1] && bl === COLORS.lampOn[2];
    const wireish = (r: number, g: number, bl: number) =>
      r > 120 && r - bl > 90 && g > 0.35 * r && g < 0.8 * r;
    const before = await b.capture([], { depth: true });
    for (const f of before) {
      expect(f.t).toBe(b.now());
      expect(f.depthMm?.data.some((d) => d > 0)).toBe(true);
      if (f.camera !== "wrist") expect(count(f.rgb.data, wireish)).toBeGreaterThan(30);
      expect(count(f.rgb.data, lit)).toBe(0);
    }
    // 14.5 mm sideways: the ring's inner edge (13.5 mm from the wire's surface) stays on the wire
    await b.execute(pushSideways(b, 0.0145, 0.5));
    expect(b.privilegedState().contactClosed).toBe(true);
    const [front] = await b.capture(["front"], { depth: false });
    expect(front!.depthMm).toBeUndefined();
    expect(count(front!.rgb.data, lit)).toBeGreaterThan(20);
  });
});

describe("sim backend: the realtime drive's runNow", () => {
  it("runs a wake-up's steps as execute does: same states, same tick readings, same outcome", async () => {
    const a = await backend(3);
    const b = await backend(3);
    const drive = b.realtimeDrive();
    if (drive.kind !== "stepped" || !drive.runNow) throw new Error("the sim's drive runs steps at once");
    const traj = followWire(a);
    const ticksA: JointReading[] = [];
    const ticksB: JointReading[] = [];
    const resA = await a.execute(traj, {
      onTick: (r) => {
        ticksA.push(r);
        return "ok";
      },
    });
    // the same trajectory as one wake-up after another of up to 3 steps
    let resB: ReturnType<typeof drive.runNow> | undefined;
    for (let i = 0; i < traj.count; i += 3) {
      const n = Math.min(3, traj.count - i);
      const part = {
        periodS: traj.periodS,
        count: n,
        q: traj.q.subarray(i * 7, (i + n) * 7),
        gripperWidthM: traj.gripperWidthM.subarray(i, i + n),
        rowEndIndex: [n - 1],
      };
      resB = drive.runNow(part, {
        onTick: (r) => {
          ticksB.push(r);
          return "ok";
        },
      });
      expect(resB.outcome).toBe("completed");
      expect(resB.samplesExecuted).toBe(n);
    }
    expect(resA.outcome).toBe("completed");
    expect(ticksB).toEqual(ticksA);
    expect(resB!.final).toEqual(resA.final);
    expect(b.read()).toEqual(a.read());
  });

  it("stops at the step whose tick says stop, and refuses frames", async () => {
    const b = await backend(3);
    const drive = b.realtimeDrive();
    if (drive.kind !== "stepped" || !drive.runNow) throw new Error("the sim's drive runs steps at once");
    const traj = followWire(b);
    const runNow = drive.runNow;
    const res = runNow(traj, { onTick: (_r, i) => (i === 4 ? "stop" : "ok") });
    expect(res.outcome).toBe("stopped");
    expect(res.samplesExecuted).toBe(5);
    expect(() => runNow(traj, { capture: { cameras: [], everyTicks: 1, depth: false } })).toThrow(/frames/);
  });
});
