/**
 * The safety supervisor over HTTP on the simulated bench (or the bench file named by HIL_BENCH): refusals leave the arm where it was,
 * the board is a keep-out, and an e-stop during a long chunk stops the arm within one control
 * period and latches until an operator releases it.
 */
import { afterEach, describe, expect, it } from "vitest";
import { forwardKinematics } from "../robots/franka/kinematics.ts";
import { solveIk } from "../robots/franka/ik.ts";
import { mat4ToPose, poseToMat4 } from "../robots/math.ts";
import type { Calibration } from "../calibration/schema.ts";
import type { TestGateway } from "../compose/testing.ts";
import { api, benchUnderTest, referenceRows } from "./buzz-wire.suite.ts";

let g: TestGateway | undefined;
afterEach(async () => {
  await g?.close();
  g = undefined;
});

let calibration: Calibration;

/** The bench under test: the sim by default, the bench file named by HIL_BENCH otherwise. */
async function sim(seed = 1): Promise<TestGateway> {
  const ctx = await benchUnderTest(seed);
  g = ctx.g;
  calibration = ctx.calibration;
  return ctx.g;
}

describe("safety over HTTP on the sim bench", () => {
  it("refuses an over-fast chunk and the arm does not move", async () => {
    const g = await sim();
    const before = g.gateway.bench.backend.read();
    const fast = before.q.map((v, i) => (i === 0 ? v + 0.3 : v));
    const res = await api(g, "POST", "/v1/act", {
      type: "joint_position",
      dt: 0.05,
      rows: [[...fast, before.gripperWidthM]],
    });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe("RB_ERR_UNSAFE_CHUNK");
    expect(res.body.error.details.joint).toBe("fr3_joint1");
    const after = g.gateway.bench.backend.read();
    expect(after.q).toEqual(before.q);
    expect(after.t).toBe(before.t);
    // the episode goes on
    expect(g.gateway.requireEpisode().isEnded).toBe(false);
  });

  it("refuses a slow chunk that would drive the tool through the board", async () => {
    const g = await sim();
    const robot = g.gateway.bench.backend.describe().robot;
    const tcp = g.gateway.bench.toolFromFlange;
    const cal = calibration;
    const r0 = g.gateway.bench.backend.read();
    const start = poseToMat4(forwardKinematics(robot, r0.q, tcp).tool);
    // straight down to 1 cm below the board's top face, in 40 rows over 8 s
    const boardTopZ = cal.board.poseWorld.xyz[2];
    const rows: number[][] = [];
    let seed: readonly number[] = r0.q;
    for (let k = 1; k <= 40; k++) {
      const t = new Float64Array(start);
      t[11] = start[11]! + ((boardTopZ - 0.01 - start[11]!) * k) / 40;
      const sol = solveIk(robot, mat4ToPose(t), { tcp, seedQ: seed });
      expect(sol.ok).toBe(true);
      if (!sol.ok) return;
      seed = sol.q;
      rows.push([...sol.q, r0.gripperWidthM]);
    }
    const res = await api(g, "POST", "/v1/act", { type: "joint_position", dt: 0.2, rows });
    expect(res.status).toBe(422);
    expect(res.body.error.details).toMatchObject({ kind: "keep_out", volume: "board" });
    expect(g.gateway.bench.backend.read().q).toEqual(r0.q);
  });

  it("an e-stop during a long chunk stops the arm within one control period; motion is refused until release", async () => {
    const g = await sim();
    const r0 = g.gateway.bench.backend.read();
    // a long, slow chunk along the wire (no contact), as many rows as one call may take
    const ref = referenceRows({ g, calibration }, r0.q, r0.gripperWidthM);
    const maxRows = Math.floor(g.gateway.requireEpisode().config.budgets.maxCallS / ref.dtS + 1e-9);
    const rows = ref.rows.slice(0, maxRows);
    const acting = api(g, "POST", "/v1/act", { type: "joint_position", dt: ref.dtS, rows });
    // wait until the arm has moved a little, then press the e-stop
    while (g.gateway.bench.backend.now() - r0.t < 0.5) await new Promise((r) => setImmediate(r));
    const es = await api(g, "POST", "/v1/admin/estop", { reason: "test" }, "operator");
    expect(es.body.engaged).toBe(true);
    const res = await acting;
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.episode, JSON.stringify(res.body)).toBeDefined();
    expect(res.body.episode).toMatchObject({ status: "ended", reason: "safety_stop" });
    const stopT = g.gateway.bench.backend.read().t;
    expect(stopT - es.body.backendT).toBeLessThanOrEqual(0.001 + 1e-9);
    expect(res.body.executed_rows).toBeLessThan(rows.length);
    // latched: motion refused (also in a new episode) until an operator releases it
    expect((await api(g, "POST", "/v1/admin/episodes", {}, "operator")).body.error.code).toBe("RB_ERR_ESTOP");
    expect((await api(g, "POST", "/v1/admin/estop", {}, "operator")).body.engaged).toBe(true);
    await api(g, "POST", "/v1/admin/release", {}, "operator");
    expect((await api(g, "POST", "/v1/admin/episodes", { seed: 1 }, "operator")).status).toBe(200);
    const q = g.gateway.bench.backend.read();
    const ok = await api(g, "POST", "/v1/act", {
      type: "joint_position",
      dt: 0.5,
      rows: [[...q.q, q.gripperWidthM]],
    });
    expect(ok.status).toBe(200);
  });
});
