/**
 * The end-to-end buzz-wire suite, written once against the Standard API over HTTP. It runs
 * against any bench that can be built by `make` (the sim bench by default; the real backend
 * wired to the test rigs in hil-tests/real-backend.test.ts). The reference path uses test-only
 * knowledge of the wire (the bench calibration), never anything an agent could see.
 */
import sharp from "sharp";
import { expect } from "vitest";
import type { Calibration } from "../calibration/schema.ts";
import { pointAt, centreline } from "../calibration/wire-geometry.ts";
import { solveIk } from "../robots/franka/ik.ts";
import { forwardKinematics } from "../robots/franka/kinematics.ts";
import { mat4ToPose, poseToMat4, type Pose } from "../robots/math.ts";
import { wireReferencePath } from "../sim/buzzwire/reference-path.ts";
import { loadBenchFile } from "../compose/bench-config.ts";
import { type TestGateway, testGateway } from "../compose/testing.ts";
import { calibrationSchema } from "../calibration/schema.ts";

/**
 * The bench a tier-3 suite runs against: the simulated buzz-wire bench by default, or the bench
 * file named by HIL_BENCH (a real bench; opt-in, never by accident). The calibration is the
 * bench's own task geometry for the seed (the twin's for the sim, the calibration file's for a
 * real bench).
 */
export async function benchUnderTest(seed: number, level = "joint_position"): Promise<SuiteContext> {
  const file = process.env.HIL_BENCH;
  const task = { id: "buzz-wire", seed, level };
  const config = file
    ? { ...loadBenchFile(file).config, task }
    : { robot: "fr3", backend: { type: "sim" }, task };
  const g = await testGateway(config as Record<string, unknown>);
  const calibration = calibrationSchema.parse(g.gateway.bench.taskBench(seed));
  return { g, calibration };
}

export interface SuiteContext {
  g: TestGateway;
  /** the bench calibration of this episode (test-only knowledge) */
  calibration: Calibration;
}

import { api } from "../test-support/api.ts";

export { api };

/** Reference rows along the wire from the start mark, optionally stopping at a share of the course. */
export function referenceRows(ctx: SuiteContext, q0: readonly number[], grip: number, upToShare = 1) {
  const robot = ctx.g.gateway.bench.backend.describe().robot;
  const ref = wireReferencePath(robot, ctx.calibration, { gripperWidthM: grip, seedQ: q0, speedMps: 0.02 });
  const n = Math.max(1, Math.round(ref.rows.length * upToShare));
  return { rows: ref.rows.slice(0, n), dtS: ref.dtS };
}

/** Send rows in chunks; returns the last act response body. */
export async function actRows(g: TestGateway, rows: number[][], dtS: number) {
  const maxCallS = g.gateway.requireEpisode().config.budgets.maxCallS;
  const chunk = Math.max(1, Math.floor(maxCallS / dtS + 1e-9));
  let last: any;
  for (let i = 0; i < rows.length; i += chunk) {
    const res = await api(g, "POST", "/v1/act", {
      type: "joint_position",
      dt: dtS,
      rows: rows.slice(i, i + chunk),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    last = res.body;
    if (last.episode.status === "ended") break;
  }
  return last;
}

/** A chunk that moves the loop sideways (its x axis, away from the handle side) by `offsetM` over `seconds`. */
export function sidewaysRows(
  g: TestGateway,
  q0: readonly number[],
  grip: number,
  offsetM: number,
  seconds: number,
  steps = 40,
) {
  const robot = g.gateway.bench.backend.describe().robot;
  const tcp = g.gateway.bench.toolFromFlange;
  const start = poseToMat4(forwardKinematics(robot, q0, tcp).tool);
  const rows: number[][] = [];
  let seed: readonly number[] = q0;
  for (let k = 1; k <= steps; k++) {
    const s = k / steps;
    const m = 10 * s ** 3 - 15 * s ** 4 + 6 * s ** 5; // min-jerk profile
    const t = new Float64Array(start);
    // move along the loop frame's y axis (perpendicular to the wire and to the handle)
    t[3] = start[3]! + start[1]! * offsetM * m;
    t[7] = start[7]! + start[5]! * offsetM * m;
    t[11] = start[11]! + start[9]! * offsetM * m;
    const pose: Pose = mat4ToPose(t);
    const sol = solveIk(robot, pose, { tcp, seedQ: seed });
    if (!sol.ok) throw new Error(`sideways IK failed at step ${k}: ${sol.reason}`);
    seed = sol.q;
    rows.push([...sol.q, grip]);
  }
  return { rows, dtS: Math.round(seconds / steps / 0.001) * 0.001 };
}

/** Count strongly red pixels (the lit lamp) in a decoded frame. */
export async function redPixels(jpeg: Buffer): Promise<number> {
  const { data, info } = await sharp(jpeg).raw().toBuffer({ resolveWithObject: true });
  let n = 0;
  for (let i = 0; i < info.width * info.height; i++) {
    const r = data[i * 3]!;
    const gch = data[i * 3 + 1]!;
    const b = data[i * 3 + 2]!;
    if (r > 200 && gch < 80 && b < 80) n++;
  }
  return n;
}

export { centreline, pointAt };
