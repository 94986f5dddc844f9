/**
 * What the API states (issue 13 items 1–3): the enforced limits next to the published ones, the
 * bench facts of the task card, and the tool pose / effort of every reading and frame.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ROBOTS } from "../../robots/franka/models.ts";
import { forwardKinematics } from "../../robots/franka/kinematics.ts";
import { interpolateChunk } from "../../seam/interpolate.ts";
import { api } from "../../test-support/api.ts";
import { type TestGateway, testGateway } from "../../compose/testing.ts";
import { sha256Json } from "../recorder/provenance.ts";
import { precheckChunk } from "../safety/precheck.ts";
import { parseSafetyProfile, resolveLimits } from "../safety/profile.ts";
import { minJerkRows } from "../safety/testing.ts";
import { ActResponseSchema, ObserveResponseSchema, SpecSchema, TaskCardSchema } from "./schemas.ts";

let g: TestGateway | undefined;
afterEach(async () => {
  await g?.close();
  g = undefined;
});

describe("effective limits", () => {
  it("the spec publishes the profile's limits beside the robot's (FR3: acceleration 10 → 5, jerk 5000 → 2500)", async () => {
    g = await testGateway({ backend: { type: "mirror" } });
    const spec = SpecSchema.parse((await api(g, "GET", "/v1/spec")).body);
    expect(spec.robot.joints.map((j) => j.max_acceleration)).toEqual(Array(7).fill(10));
    expect(spec.safety.joints.map((j) => j.max_acceleration)).toEqual(Array(7).fill(5));
    expect(spec.safety.joints.map((j) => j.max_jerk)).toEqual(Array(7).fill(2500));
    spec.safety.joints.forEach((j, i) => {
      const p = spec.robot.joints[i]!;
      expect(j.max_velocity).toBeCloseTo(p.max_velocity * 0.5, 12);
      expect(j.lower).toBeCloseTo(p.lower + 0.05, 12);
      expect(j.upper).toBeCloseTo(p.upper - 0.05, 12);
    });
    expect(spec.safety.max_tool_speed_m_s).toBe(1);
    expect(spec.safety.workspace).toEqual({ min_m: [-1, -1, -0.1], max_m: [1, 1, 1.4] });
    // the profile is named: the bench and the hash result.json's provenance carries
    expect(spec.safety.profile).toEqual({
      bench: "test",
      limits_sha256: g.gateway.bench.provenance!.configHashes.safetyLimitsSha256,
    });
  });

  it("the task card carries the episode's volumes (table, board); hidden volumes are enforced, never published", async () => {
    g = await testGateway({
      backend: { type: "sim" },
      task: { id: "buzz-wire", seed: 2 },
      safety: {
        keepOut: [
          { type: "sphere", name: "post_guard", centerM: [0.45, 0.2, 0.2], radiusM: 0.01, hidden: true },
          { type: "sphere", name: "lamp", centerM: [0.6, -0.3, 0.05], radiusM: 0.02 },
        ],
      },
    });
    const spec = SpecSchema.parse((await api(g, "GET", "/v1/spec")).body);
    const card = TaskCardSchema.parse((await api(g, "GET", "/v1/task")).body);
    expect(spec.safety.keep_out.map((v) => v.name)).toEqual(["lamp"]);
    expect(card.safety.keep_out.map((v) => v.name)).toEqual(["lamp", "table", "board"]);
    expect(g.gateway.requireEpisode().config.limits.keepOut.map((v) => v.name)).toContain("post_guard");
    expect(JSON.stringify([spec, card])).not.toContain("post_guard");
    expect(card.safety.profile.limits_sha256).toBe(sha256Json(g.gateway.requireEpisode().config.limits));
    // a box keeps its orientation: the board is level, its quaternion the identity up to sign
    const board = card.safety.keep_out.find((v) => v.name === "board")!;
    expect(board.type).toBe("box");
    if (board.type === "box") expect(Math.abs(board.quat_xyzw[3])).toBeCloseTo(1, 6);
  });

  it("a chunk at 0.99 × the published acceleration passes, at 1.01 × it is refused", async () => {
    g = await testGateway({ backend: { type: "mirror" } });
    const spec = SpecSchema.parse((await api(g, "GET", "/v1/spec")).body);
    const robot = ROBOTS.fr3;
    const j = 3;
    const published = spec.safety.joints[j]!.max_acceleration;
    const start = g.gateway.bench.backend.read();
    const rowsFor = (delta: number) => {
      const q1 = [...start.q];
      q1[j] = q1[j]! + delta;
      return minJerkRows(start.q, q1, 25, start.gripperWidthM);
    };
    // the chunk's peak acceleration, as the pre-check computes it, under the robot's own limits
    const wide = resolveLimits(
      robot,
      parseSafetyProfile({
        velocityFraction: 1,
        accelerationFraction: 1,
        jerkFraction: 1,
        maxToolSpeedMps: robot.cartesian.maxLinearVelocityMps,
      }),
    );
    const probe = -0.05;
    const traj = interpolateChunk(start, rowsFor(probe), 0.02, robot.controlPeriodS);
    const r = precheckChunk({ robot, limits: wide, start, trajectory: traj });
    if (!r.ok) throw new Error(`probe refused: ${JSON.stringify(r.violation)}`);
    const peakPerRad = (r.stats.maxAccelerationRatio * robot.joints[j]!.maxAcceleration) / Math.abs(probe);
    // peak acceleration is linear in the move's size (interpolation from rest is linear)
    const over = await api(g, "POST", "/v1/act", {
      type: "joint_position",
      dt: 0.02,
      rows: rowsFor(-(1.01 * published) / peakPerRad),
    });
    expect(over.status).toBe(422);
    expect(over.body.error.code).toBe("RB_ERR_UNSAFE_CHUNK");
    expect(over.body.error.details.kind).toBe("acceleration");
    expect(over.body.error.details.limit).toBeCloseTo(published, 9);
    const under = await api(g, "POST", "/v1/act", {
      type: "joint_position",
      dt: 0.02,
      rows: rowsFor(-(0.99 * published) / peakPerRad),
    });
    expect(under.status, JSON.stringify(under.body)).toBe(200);
    expect(under.body.executed_rows).toBe(25);
  });
});

describe("bench facts (buzz wire)", () => {
  it("the card states the loop and wire sizes, where success fires and the grip; none of the hidden instance", async () => {
    g = await testGateway({ backend: { type: "sim" }, task: { id: "buzz-wire", seed: 5 } });
    const res = await api(g, "GET", "/v1/task");
    const card = TaskCardSchema.parse(res.body);
    const b = card.bench as Record<string, Record<string, unknown>>;
    expect(b.loop).toMatchObject({ inner_radius_m: 0.015, loop_wire_radius_m: 0.0015 });
    expect(b.wire).toMatchObject({ radius_m: 0.0015, clearance_m: 0.0135 });
    // the sim's marks sit 35 mm from each wire end; success fires 3 mm of arc before the end mark
    expect(b.success).toMatchObject({ before_end_post_m: 0.038 });
    expect(card.instruction).toContain("loop inner radius 0.015 m");
    expect(card.instruction).toContain("0.038 m along the wire before the end post");
    expect(card.instruction).toContain("z-depth");
    expect(card.instruction).toContain("gripper column moves only the fingers");
    const wire = (
      g.gateway.requireEpisode().config.taskContext!.bench as {
        wire: { pointsBase: number[][]; startMarkM: number; endMarkM: number };
      }
    ).wire;
    for (const v of [wire.startMarkM, wire.endMarkM, ...wire.pointsBase.flat()]) {
      expect(res.text).not.toContain(v.toFixed(6));
    }
    for (const key of ["pointsBase", "startMarkM", "endMarkM", "centreline"])
      expect(res.text).not.toContain(key);
  });

  it("the spec states the depth convention and the jog instruction names frame and pivot", async () => {
    g = await testGateway({ backend: { type: "sim" }, task: { id: "buzz-wire", seed: 1, level: "jog" } });
    const spec = SpecSchema.parse((await api(g, "GET", "/v1/spec")).body);
    expect(spec.world.depth_convention).toMatch(/z-depth.*mm, 0 = no return/);
    const jog = spec.control.actions.find((a) => a.type === "jog")!;
    expect(jog.frame).toMatch(/robot base/);
    expect(jog.pivot).toMatch(/tool point/);
    expect(jog.min_dt_s).toBe(spec.control.control_period_s);
    // the smallest dt is accepted as a jog row's dt (a "stay" command moves nothing)
    const stay = jog.commands!.indexOf("stay");
    const res = await api(g, "POST", "/v1/act", { type: "jog", dt: jog.min_dt_s, rows: [[stay]] });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const half = await api(g, "POST", "/v1/act", { type: "jog", dt: jog.min_dt_s / 2, rows: [[stay]] });
    expect(half.body.error.code).toBe("RB_ERR_DT");
    const card = TaskCardSchema.parse((await api(g, "GET", "/v1/task")).body);
    expect(card.instruction).toContain("through the tool point");
    expect(card.instruction).toContain("robot base axes");
  });
});

describe("readings and frames", () => {
  it("every reading carries the tool pose by FK and an effort that says it measured none; frames carry their reading", async () => {
    g = await testGateway({ backend: { type: "sim" }, task: { id: "buzz-wire", seed: 3 } });
    const tcp = g.gateway.bench.toolFromFlange;
    const obs = ObserveResponseSchema.parse(
      (await api(g, "POST", "/v1/observe", { cameras: ["wrist"] })).body,
    );
    const r0 = obs.readings[0]!;
    const fk = forwardKinematics(ROBOTS.fr3, r0.q, tcp).tool;
    r0.tool!.xyz.forEach((v, i) => {
      expect(v).toBeCloseTo(fk.xyz[i]!, 5);
    });
    expect(r0.effort).toEqual({ source: "none", tau: null });
    expect(r0.tau).toBeUndefined();
    expect(obs.frames[0]!.reading).toEqual(r0);

    const row = [...r0.q, r0.gripper_width_m];
    const act = ActResponseSchema.parse(
      (
        await api(g, "POST", "/v1/act", {
          type: "joint_position",
          dt: 0.1,
          rows: [row, row, row, row],
          frames: { fps: 5, cameras: ["front"] },
        })
      ).body,
    );
    expect(act.readings).toHaveLength(4);
    for (const r of act.readings) {
      const p = forwardKinematics(ROBOTS.fr3, r.q, tcp).tool;
      r.tool!.xyz.forEach((v, i) => {
        expect(v).toBeCloseTo(p.xyz[i]!, 5);
      });
      expect(r.effort?.source).toBe("none");
    }
    // 0.4 s at 5 fps: frames at 0, 0.2, 0.4 s after the start, each with the reading of its tick
    expect(act.frames.length).toBe(3);
    for (const f of act.frames) {
      expect(f.reading).toBeDefined();
      expect(Math.abs(f.reading!.t - f.t)).toBeLessThan(1e-3);
    }
  });

  it("a backend that measures torques publishes them as the effort", async () => {
    g = await testGateway({ backend: { type: "mirror" } });
    const backend = g.gateway.bench.backend;
    const read = backend.read.bind(backend);
    backend.read = () => ({ ...read(), tau: [1, 2, 3, 4, 5, 6, 7] });
    const obs = ObserveResponseSchema.parse((await api(g, "POST", "/v1/observe", { cameras: [] })).body);
    expect(obs.readings[0]!.tau).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(obs.readings[0]!.effort).toEqual({ source: "measured", tau: [1, 2, 3, 4, 5, 6, 7] });
  });
});
