/** The pendulum scene through the SimBackend seam: photogate events, determinism, snapshots. */
import { afterEach, describe, expect, it } from "vitest";
import { interpolateChunk } from "../../seam/interpolate.ts";
import type { SensorEvent } from "../../seam/types.ts";
import { forwardKinematics } from "../../robots/franka/kinematics.ts";
import { FR3 } from "../../robots/franka/models.ts";
import { poseToMat4 } from "../../robots/math.ts";
import { solveToolPose } from "../../calibration/wire-pose.ts";
import { createSimBackend, PHOTOGATE, type SimBackend } from "../sim-backend.ts";
import { BOB_REST_WORLD } from "./bench.ts";

const DT = FR3.controlPeriodS;
const open: SimBackend[] = [];
afterEach(async () => {
  for (const b of open.splice(0)) await b.shutdown();
});

async function backend(seed: number): Promise<{ b: SimBackend; events: SensorEvent[] }> {
  const b = createSimBackend({ robot: FR3, seed, scene: "pendulum" });
  open.push(b);
  await b.configure();
  await b.activate();
  const events: SensorEvent[] = [];
  b.onEvent((e) => events.push(e));
  return { b, events };
}

/** Tool waypoints (home orientation) → a dense joint trajectory from the current state. */
function through(b: SimBackend, points: Array<[number, number]>, dtS: number) {
  const tool = poseToMat4(b.describe().toolOffset);
  const r = b.read();
  const quat = forwardKinematics(FR3, FR3.homeQ, tool).tool.quat_xyzw;
  let q = r.q;
  const rows = points.map(([x, z]) => {
    const s = solveToolPose(FR3, poseToMat4({ xyz: [x, BOB_REST_WORLD[1], z], quat_xyzw: quat }), tool, q, {
      restarts: 0,
    });
    expect(s.ok).toBe(true);
    q = s.q;
    return [...s.q, 0];
  });
  return interpolateChunk(r, rows, dtS, DT);
}

/** Approach the bob, push it away from the robot, pull back (the e2e reference's motion). */
async function push(b: SimBackend): Promise<void> {
  const [bx, , bz] = BOB_REST_WORLD;
  await b.execute(
    through(
      b,
      [
        [0.35, 0.35],
        [bx - 0.13, bz + 0.1],
        [bx - 0.13, bz + 0.04],
        [bx - 0.13, bz],
      ],
      0.5,
    ),
  );
  const xs: Array<[number, number]> = [
    [-0.125, 0],
    [-0.11, 0],
    [-0.085, 0],
    [-0.055, 0],
    [-0.03, 0],
    [-0.02, 0],
    [-0.035, 0],
    [-0.07, 0],
    [-0.11, 0],
    [-0.14, 0.03],
    [-0.16, 0.06],
    [-0.165, 0.07],
  ];
  await b.execute(
    through(
      b,
      xs.map(([dx, dz]) => [bx + dx, bz + dz]),
      0.25,
    ),
  );
}

const gateEvents = (events: SensorEvent[]) =>
  events.filter((e): e is Extract<SensorEvent, { type: "instrument" }> => e.type === "instrument");

describe("SimBackend, pendulum scene", () => {
  it("describes the hand's TCP as the tool and four cameras; has no buzz-wire calibration", async () => {
    const { b } = await backend(1);
    const d = b.describe();
    expect(d.toolOffset.xyz[2]).toBeCloseTo(0.1034, 6);
    expect(d.cameras.map((c) => c.name)).toEqual(["side", "front", "top", "wrist"]);
    expect(b.read().q).toEqual([...FR3.homeQ]);
    expect(() => b.currentCalibration()).toThrow(/no buzz-wire calibration/);
    expect(b.currentPendulum().pendulum.lengthM).toBeGreaterThan(0.25);
  });

  it("reports photogate changes once the arm has pushed the bob, and no collision", async () => {
    const { b, events } = await backend(2);
    await b.hold(0.5);
    expect(events).toEqual([]);
    await push(b);
    await b.hold(4);
    expect(events.filter((e) => e.type !== "instrument")).toEqual([]);
    const gate = gateEvents(events);
    expect(gate.length).toBeGreaterThanOrEqual(8);
    expect(gate.every((e) => e.name === PHOTOGATE && e.source === "sim")).toBe(true);
    // the bob rested in the beam: the first change clears it, then changes alternate
    expect(gate.map((e) => e.values.blocked)).toEqual(gate.map((_, i) => (i % 2 === 0 ? 0 : 1)));
    expect(b.privilegedState().scene).toBe("pendulum");
  });

  it("is deterministic and restores a mid-swing snapshot exactly", async () => {
    const one = await backend(3);
    const two = await backend(3);
    await push(one.b);
    await push(two.b);
    await one.b.hold(1);
    await two.b.hold(1);
    expect(two.events).toEqual(one.events);
    const snap = one.b.snapshot();
    const mark = one.events.length;
    await one.b.hold(2);
    const after = one.events.slice(mark);
    one.b.restore(snap);
    const mark2 = one.events.length;
    await one.b.hold(2);
    expect(one.events.slice(mark2)).toEqual(after);
    expect(after.length).toBeGreaterThan(0);
  });

  it("refuses a buzz-wire snapshot", async () => {
    const buzz = createSimBackend({ robot: FR3, seed: 1 });
    open.push(buzz);
    await buzz.configure();
    const { b } = await backend(1);
    expect(() => b.restore(buzz.snapshot())).toThrow(/another scene/);
  });
});
