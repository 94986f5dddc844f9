/**
 * Arm–environment collisions through the SimBackend API: an arm link driven into the board
 * raises a `collision` event naming that link, at the time an independent geometric check (the
 * robot's collision capsules from FK against the board and table boxes) sees the first touch.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Calibration } from "../calibration/schema.ts";
import { interpolateChunk } from "../seam/interpolate.ts";
import type { SensorEvent } from "../seam/types.ts";
import { fkWorkspace, forwardKinematicsInto } from "../robots/franka/kinematics.ts";
import { PANDA } from "../robots/franka/models.ts";
import { mat4Identity, mat4Mul, mat4Point, poseToMat4, type Vec3 } from "../robots/math.ts";
import { createSimBackend, type SimBackend } from "./sim-backend.ts";
import { loadRapier, PhysicsWorld } from "./world.ts";

const DT = PANDA.controlPeriodS;
const open: SimBackend[] = [];
afterEach(async () => {
  for (const b of open.splice(0)) await b.shutdown();
});

interface Box {
  name: string;
  lo: Vec3;
  hi: Vec3;
}

/** Board and table as world-frame axis-aligned boxes (both are unrotated on the sim bench). */
function envBoxes(cal: Calibration): Box[] {
  const [bx, by, bz] = cal.board.sizeM;
  const [cx, cy, top] = cal.board.poseWorld.xyz;
  expect(cal.board.poseWorld.quat_xyzw).toEqual([0, 0, 0, 1]);
  const tableTop = top - bz;
  return [
    { name: "board", lo: [cx - bx / 2, cy - by / 2, top - bz], hi: [cx + bx / 2, cy + by / 2, top] },
    { name: "table", lo: [0.35 - 0.7, -0.6, tableTop - 0.04], hi: [0.35 + 0.7, 0.6, tableTop] },
  ];
}

function pointBoxDistance(p: Vec3, b: Box): number {
  let s = 0;
  for (let i = 0; i < 3; i++) {
    const d = Math.max(b.lo[i]! - p[i]!, 0, p[i]! - b.hi[i]!);
    s += d * d;
  }
  return Math.sqrt(s);
}

/** Links of the robot's capsule model that touch a box at joint angles q (segment sampled every ≤ 1 mm). */
function touchingLinks(q: readonly number[], cal: Calibration, boxes: Box[]): string[] {
  const worldFromBase = poseToMat4(cal.robotBasePoseWorld);
  const frames = forwardKinematicsInto(PANDA, q, fkWorkspace());
  const out = new Set<string>();
  for (const c of PANDA.capsules) {
    if (c.frame === 0) continue; // the fixed base stands on the table by design
    const m = mat4Mul(worldFromBase, frames[c.frame]!);
    const a = mat4Point(m, c.a);
    const b = mat4Point(m, c.b);
    const n = Math.max(2, Math.ceil(Math.hypot(b[0] - a[0], b[1] - a[1], b[2] - a[2]) / 0.001));
    for (const box of boxes)
      for (let i = 0; i <= n; i++) {
        const t = i / n;
        const p: Vec3 = [a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t, a[2] + (b[2] - a[2]) * t];
        if (pointBoxDistance(p, box) <= c.radiusM) {
          out.add(`${c.link}|${box.name}`);
          break;
        }
      }
  }
  return [...out];
}

describe("arm collisions in the sim", () => {
  it("reports the link that is driven into the board, when it touches", async () => {
    const b = createSimBackend({ robot: PANDA, seed: 1 });
    open.push(b);
    await b.configure();
    await b.activate();
    const cal = b.currentCalibration();
    const boxes = envBoxes(cal);
    const events: SensorEvent[] = [];
    b.onEvent((e) => events.push(e));
    const r = b.read();
    // shoulder forward and elbow folded: the wrist (link6) swings down onto the board
    const target = [r.q[0]!, 1.5, 0, -2.8, 0, 0.5, 0];
    const traj = interpolateChunk(
      { q: r.q, dq: r.dq, gripperWidthM: r.gripperWidthM },
      [[...target, r.gripperWidthM]],
      3.0,
      DT,
    );
    let firstGeometric: { t: number; pairs: string[] } | null = null;
    const res = await b.execute(traj, {
      onTick: (reading) => {
        if (!firstGeometric) {
          const pairs = touchingLinks(reading.q, cal, boxes);
          if (pairs.length > 0) firstGeometric = { t: reading.t, pairs };
        }
        return "ok";
      },
    });
    expect(res.outcome).toBe("completed");
    const collisions = events.filter((e) => e.type === "collision");
    expect(collisions.length).toBeGreaterThan(0);
    const first = collisions[0]!;
    expect(first).toMatchObject({ type: "collision", link: "link6", other: "board", source: "sim" });
    expect(firstGeometric).not.toBeNull();
    const geo = firstGeometric as unknown as { t: number; pairs: string[] };
    expect(geo.pairs).toEqual(["link6|board"]);
    // Rapier's capsule–box query against the independent check: within one control period
    expect(Math.abs(first.t - geo.t)).toBeLessThanOrEqual(DT + 1e-9);
  });

  it("a hold keeps the touching pairs (no scan while nothing moves), moving out clears them and back in reports again", async () => {
    const b = createSimBackend({ robot: PANDA, seed: 1 });
    open.push(b);
    await b.configure();
    await b.activate();
    const events: SensorEvent[] = [];
    b.onEvent((e) => events.push(e));
    const r = b.read();
    const start = { q: r.q, dq: r.dq, gripperWidthM: r.gripperWidthM };
    const into = [r.q[0]!, 1.5, 0, -2.8, 0, 0.5, 0, r.gripperWidthM];
    const pairs = () => (b.privilegedState().collisions as string[]).slice().sort();
    const go = async (from: typeof start, row: number[], s: number) => {
      await b.execute(interpolateChunk(from, [row], s, DT));
      const x = b.read();
      return { q: x.q, dq: x.dq, gripperWidthM: x.gripperWidthM };
    };
    let at = await go(start, into, 3.0);
    const inside = pairs();
    // (the sweep ends through the board, on the table)
    expect(inside.length).toBeGreaterThan(0);
    const n1 = events.filter((e) => e.type === "collision").length;
    // holding still in contact: the same pairs, no new edges
    await b.hold(0.2);
    expect(pairs()).toEqual(inside);
    expect(events.filter((e) => e.type === "collision").length).toBe(n1);
    // out: nothing touches (the pairs were scanned again once the joints moved)
    at = await go(at, [...r.q, r.gripperWidthM], 3.0);
    await b.hold(0.05);
    expect(pairs()).toEqual([]);
    // back in: the touch is a new edge
    await go(at, into, 3.0);
    const again = events.filter((e) => e.type === "collision").slice(n1);
    expect(again.map((e) => (e.type === "collision" ? e.link : ""))).toContain("link6");
    expect(pairs()).toEqual(inside);
  });
});

describe("the environment is fixed", () => {
  it("a moving body in the env group is refused where bodies are made (the arm's contact scan keeps its last result while the arm holds still)", async () => {
    const w = new PhysicsWorld(await loadRapier(), { timestepS: DT, predictionDistanceM: 0.002 });
    try {
      const box = [{ kind: "box" as const, centre: [0, 0, 0] as Vec3, halfExtentsM: [0.1, 0.1, 0.1] as Vec3 }];
      for (const kind of ["kinematic", "dynamic"] as const)
        expect(() => w.addBody(kind, mat4Identity(), box, { group: "env", name: "crate" })).toThrow(/must be fixed/);
      expect(() => w.addBody("fixed", mat4Identity(), box, { group: "env", name: "crate" })).not.toThrow();
      expect(() => w.addBody("dynamic", mat4Identity(), box, { group: "free", name: "crate2" })).not.toThrow();
    } finally {
      w.free();
    }
  });
});
