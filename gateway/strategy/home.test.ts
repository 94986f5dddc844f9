import { afterEach, describe, expect, it } from "vitest";
import { MirrorBackend } from "../../drivers/mirror/mirror-backend.ts";
import { forwardKinematics } from "../../robots/franka/kinematics.ts";
import { FR3 } from "../../robots/franka/models.ts";
import { poseToMat4 } from "../../robots/math.ts";
import { sampleBenchCalibration } from "../../sim/buzzwire/bench.ts";
import { createSimBackend, type SimBackend } from "../../sim/sim-backend.ts";
import { interpolateChunk } from "../../seam/interpolate.ts";
import { precheckChunk } from "../safety/precheck.ts";
import { type EffectiveLimits, parseSafetyProfile, resolveLimits } from "../safety/profile.ts";
import { minJerkRows } from "../safety/testing.ts";
import type { Backend, JointReading } from "../../seam/types.ts";
import { HomeError, homeBench, planHome } from "./home.ts";
import { startPoseFor } from "./start-pose.ts";

const robot = FR3;
const limits = (extra: Record<string, unknown> = {}): EffectiveLimits =>
  resolveLimits(robot, parseSafetyProfile(extra));

/** A pose well inside the band, away from home. */
const AWAY = robot.homeQ.map((v, j) => v + [0.6, 0.3, -0.4, 0.35, 0.5, -0.3, 0.6][j]!);

const atRest = (q: readonly number[], gripperWidthM = 0.04): JointReading => ({
  t: 0,
  q: [...q],
  dq: new Array(7).fill(0),
  gripperWidthM,
});

/** Drive a backend somewhere else with a plain (pre-checked) chunk, as an agent would. */
async function driveTo(backend: Backend, l: EffectiveLimits, q1: readonly number[], seconds: number) {
  const start = backend.read();
  const rows = minJerkRows(start.q, q1, 30, start.gripperWidthM);
  const traj = interpolateChunk(start, rows, seconds / 30, robot.controlPeriodS);
  expect(precheckChunk({ robot, limits: l, start, trajectory: traj }).ok).toBe(true);
  const res = await backend.execute(traj);
  expect(res.outcome).toBe("completed");
}

describe("planHome (pure)", () => {
  it("plans a smooth move whose every chunk passes the pre-check, at a fraction of the limits", () => {
    const l = limits();
    const plan = planHome(robot, l, atRest(AWAY), robot.homeQ);
    expect(plan.chunks.length).toBeGreaterThan(0);
    let from = atRest(AWAY);
    for (const c of plan.chunks) {
      // re-check independently from the planned start
      const traj = interpolateChunk(from, c.rows, c.dtS, robot.controlPeriodS);
      expect(precheckChunk({ robot, limits: l, start: from, trajectory: traj }).ok).toBe(true);
      expect(c.stats.maxVelocityRatio).toBeLessThan(0.5);
      expect(c.stats.maxAccelerationRatio).toBeLessThan(0.6);
      from = atRest(c.rows[c.rows.length - 1]!.slice(0, 7), from.gripperWidthM);
    }
    expect(from.q).toEqual([...robot.homeQ]);
    // a larger share of the limits gives a shorter move
    const fast = planHome(robot, l, atRest(AWAY), robot.homeQ, 0.04, undefined, { limitFraction: 0.8 });
    expect(fast.durationS).toBeLessThan(plan.durationS);
  });

  it("cuts a move longer than the longest allowed chunk into rest-to-rest chunks", () => {
    const l = limits({ maxChunkDurationS: 1 });
    const plan = planHome(robot, l, atRest(AWAY), robot.homeQ);
    expect(plan.chunks.length).toBeGreaterThan(1);
    for (const c of plan.chunks) expect(c.durationS).toBeLessThanOrEqual(1 + 1e-9);
    expect(plan.chunks.at(-1)!.rows.at(-1)!.slice(0, 7)).toEqual([...robot.homeQ]);
  });

  it("stretches the duration until tool speed is accepted", () => {
    const l = limits({ maxToolSpeedMps: 0.05 });
    const plan = planHome(robot, l, atRest(AWAY), robot.homeQ);
    expect(plan.attempts).toBeGreaterThan(1);
    for (const c of plan.chunks) expect(c.stats.maxToolSpeedBoundMps).toBeLessThanOrEqual(0.05 + 1e-9);
  });

  it("refuses a straight joint path through a keep-out and names the volume", () => {
    // a sphere around where the tool passes half-way between the two ends
    const mid = robot.homeQ.map((v, j) => (v + AWAY[j]!) / 2);
    const p = forwardKinematics(robot, mid).tool.xyz;
    const l = limits({
      keepOut: [{ type: "sphere", name: "obstacle", centerM: p, radiusM: 0.03 }],
    });
    // both ends are clear of it
    expect(() => planHome(robot, limits(), atRest(AWAY), robot.homeQ)).not.toThrow();
    let err: unknown;
    try {
      planHome(robot, l, atRest(AWAY), robot.homeQ);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(HomeError);
    const h = err as HomeError;
    expect(h.kind).toBe("refused");
    expect(h.violation?.kind).toBe("keep_out");
    expect(h.message).toMatch(/keep_out/);
    expect(h.message).toMatch(/obstacle/);
    expect(h.message).toMatch(/slower cannot fix it/);
  });

  it("gives up when even the slowest allowed homing is refused", () => {
    expect(() =>
      planHome(robot, limits({ maxToolSpeedMps: 0.001 }), atRest(AWAY), robot.homeQ, 0.04, undefined, {
        maxDurationS: 5,
      }),
    ).toThrow(/even the slowest allowed homing \(5 s\) is refused.*tool_speed/);
  });

  it("refuses a target outside the commanded band", () => {
    const bad = [...robot.homeQ];
    bad[3] = 0.5;
    expect(() => planHome(robot, limits(), atRest(AWAY), bad)).toThrow(/outside the commanded band/);
  });

  it("plans nothing when the arm already stands at the target", () => {
    expect(planHome(robot, limits(), atRest(robot.homeQ), robot.homeQ).chunks).toEqual([]);
  });
});

describe("homeBench on the mirror backend", () => {
  it("drives home through execute and lands exactly on the target", async () => {
    const b = new MirrorBackend({ robot });
    await b.configure();
    await b.activate();
    const l = limits();
    await driveTo(b, l, AWAY, 3);
    const res = await homeBench(b, { limits: l, targetQ: robot.homeQ });
    expect(res.errorRad).toBeLessThan(1e-9);
    expect(res.plan.chunks.length).toBeGreaterThan(0);
    expect(
      b
        .read()
        .q.map((v, j) => v - robot.homeQ[j]!)
        .every((d) => Math.abs(d) < 1e-9),
    ).toBe(true);
    // keeps the gripper opening by default
    expect(b.read().gripperWidthM).toBeCloseTo(robot.gripper.maxWidthM / 2, 12);
  });

  it("stops and throws when the monitor sees a stop event during the move", async () => {
    const b = new MirrorBackend({ robot });
    await b.configure();
    await b.activate();
    const l = limits();
    await driveTo(b, l, AWAY, 3);
    // a contact arrives while the arm moves: the mirror runs synchronously, so emit from a
    // wrapped execute just before it starts
    const execute = b.execute.bind(b);
    b.execute = async (traj, opts) => {
      b.emit({ type: "contact", t: b.now(), closed: true, source: "test" });
      return execute(traj, opts);
    };
    const err = await homeBench(b, { limits: l, targetQ: robot.homeQ }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HomeError);
    expect((err as HomeError).kind).toBe("monitor");
    expect((err as HomeError).message).toMatch(/task_event \(contact/);
  });

  it("reports a backend fault during the move", async () => {
    const b = new MirrorBackend({ robot, failOn: { execute: 1 } });
    await b.configure();
    await b.activate();
    const err = await homeBench(b, { limits: limits(), targetQ: AWAY }).catch((e: unknown) => e);
    expect((err as HomeError).kind).toBe("execute");
    expect((err as HomeError).message).toMatch(/mirror: injected execute failure/);
  });
});

describe("homeBench on the sim backend (servo dynamics, contacts)", () => {
  let sim: SimBackend | undefined;
  afterEach(async () => {
    await sim?.shutdown();
    sim = undefined;
  });

  async function simAtStart(seed: number): Promise<{ sim: SimBackend; startQ: number[] }> {
    sim = createSimBackend({ robot, seed });
    await sim.configure();
    await sim.activate();
    const q = sim.read().q;
    // the sim starts at the wire's start mark; startPoseFor finds the same configuration
    const pose = startPoseFor(robot, { ...sampleBenchCalibration(robot, seed) });
    expect(pose.source).toBe("wire_start_mark");
    for (let j = 0; j < 7; j++) expect(Math.abs(pose.targetQ[j]! - q[j]!)).toBeLessThan(1e-6);
    return { sim, startQ: pose.targetQ };
  }

  it("drives the arm back to the start pose after a chunk took it away", async () => {
    const { sim, startQ } = await simAtStart(1);
    // the loop leaves the wire sideways, so homing must not stop on contact here
    const l = limits({ stopOnEvents: [] });
    const away = startQ.map((v, j) => v + [0.25, -0.15, 0.1, 0.2, 0, 0.15, 0][j]!);
    await driveTo(sim, l, away, 2);
    expect(Math.max(...sim.read().q.map((v, j) => Math.abs(v - startQ[j]!)))).toBeGreaterThan(0.2);
    const tcp = poseToMat4(sim.describe().toolOffset);
    const res = await homeBench(sim, { limits: l, targetQ: startQ, tcp });
    expect(res.errorRad).toBeLessThan(0.01);
    for (const c of res.plan.chunks) expect(c.stats.maxVelocityRatio).toBeLessThanOrEqual(1);
    const q = sim.read().q;
    for (let j = 0; j < 7; j++) expect(Math.abs(q[j]! - startQ[j]!)).toBeLessThan(0.01);
  });

  it("stops on a wire contact when the profile stops on contacts", async () => {
    const { sim, startQ } = await simAtStart(1);
    const l = limits();
    // sweep the loop sideways off the wire (it touches on the way), then home back through it
    const away = startQ.map((v, j) => v + [0.25, 0, 0, 0, 0, 0, 0][j]!);
    await driveTo(sim, limits({ stopOnEvents: [] }), away, 2);
    await sim.hold(0.2);
    const err = await homeBench(sim, {
      limits: l,
      targetQ: startQ,
      tcp: poseToMat4(sim.describe().toolOffset),
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HomeError);
    expect((err as HomeError).kind).toBe("monitor");
    expect((err as HomeError).stopCause?.kind).toBe("task_event");
    // stopped short of the start pose
    expect(Math.max(...sim.read().q.map((v, j) => Math.abs(v - startQ[j]!)))).toBeGreaterThan(0.01);
  });
});
