/**
 * Pendulum length end to end over HTTP on the simulated pendulum bench: the reference procedure
 * (push the bob, retract, let it swing, read the photogate, period → length, submit with evidence)
 * lands within tolerance on several seeds; the hidden length never appears in an agent-visible
 * response; cheats get no credit.
 */
import { afterEach, describe, expect, it } from "vitest";
import { type TestGateway, testGateway } from "../../compose/testing.ts";
import { api as callApi } from "../../test-support/api.ts";
import { BOB_REST_WORLD, samplePendulumBench } from "../../sim/pendulum/bench.ts";
import { FR3 } from "../../robots/franka/models.ts";
import type { TaskScore } from "../types.ts";
import { PENDULUM_TOLERANCE_REL } from "./pendulum-length.ts";

const G = 9.81;

let g: TestGateway | undefined;
afterEach(async () => {
  await g?.close();
  g = undefined;
});

/** Every JSON body the agent received in this test (for the leak scan). */
let seen: string[] = [];

async function api(method: "GET" | "POST", url: string, body?: unknown) {
  const r = await callApi(g!, method, url, body);
  if (typeof r.body === "object" && !Buffer.isBuffer(r.body)) seen.push(r.text);
  return r;
}

async function ok(method: "GET" | "POST", url: string, body?: unknown) {
  const r = await api(method, url, body);
  if (r.status !== 200)
    throw new Error(
      `${method} ${url} → ${r.status}: ${JSON.stringify(r.body)} (${g!.gateway.episode?.endDetail ?? ""})`,
    );
  return r.body;
}

async function start(seed: number): Promise<void> {
  seen = [];
  g = await testGateway({
    robot: "fr3",
    backend: { type: "sim", scene: "pendulum" },
    task: { id: "pendulum-length", seed },
  });
}

interface Reading {
  q: number[];
  gripper_width_m: number;
}

/**
 * Set the pendulum swinging and bring the arm back: approach the bob from the robot's side at its
 * height, push it away from the robot, retract, and return to the start joints exactly.
 * The bob's rest position is part of the visible bench (only its length is hidden).
 */
async function pushAndRestore(q0: number[]): Promise<void> {
  const tool = (await ok("POST", "/v1/kinematics/fk", { q: q0 })).tool as { quat_xyzw: number[] };
  const [bx, by, bz] = BOB_REST_WORLD;
  const row = (x: number, z: number) => [x, by, z, ...tool.quat_xyzw, 0];
  // from the start pose to beside the bob, slowly
  const p0 = (await ok("POST", "/v1/kinematics/fk", { q: q0 })).tool.xyz as number[];
  const approach: number[][] = [];
  for (let k = 1; k <= 4; k++) {
    const s = k / 4;
    approach.push(row(p0[0]! + (bx - 0.13 - p0[0]!) * s, p0[2]! + (bz + 0.04 - p0[2]!) * s));
  }
  approach.push(row(bx - 0.13, bz));
  await ok("POST", "/v1/act", { type: "ee_pose", dt: 0.5, rows: approach });
  // push through the rest position at moderate speed, then pull back and up
  const pushed = await ok("POST", "/v1/act", {
    type: "ee_pose",
    dt: 0.25,
    rows: [
      row(bx - 0.125, bz),
      row(bx - 0.11, bz),
      row(bx - 0.085, bz),
      row(bx - 0.055, bz),
      row(bx - 0.03, bz),
      row(bx - 0.02, bz),
      row(bx - 0.035, bz),
      row(bx - 0.07, bz),
      row(bx - 0.11, bz),
      row(bx - 0.14, bz + 0.03),
      row(bx - 0.16, bz + 0.06),
      row(bx - 0.165, bz + 0.07),
    ],
  });
  // back to the start joints exactly
  const q1 = (pushed.readings[pushed.readings.length - 1] as Reading).q;
  const back: number[][] = [];
  for (let k = 1; k <= 4; k++) back.push([...q1.map((v, j) => v + (q0[j]! - v) * (k / 4)), 0]);
  back.push([...q0, 0]);
  await ok("POST", "/v1/act", { type: "joint_position", dt: 0.5, rows: back });
}

/** Beam passes (mid-times of blocked intervals) from the photogate's change log. */
function passes(readings: { t: number; blocked: number }[]): number[] {
  const out: number[] = [];
  for (let i = 0; i + 1 < readings.length; i++) {
    if (readings[i]!.blocked === 1 && readings[i + 1]!.blocked === 0)
      out.push((readings[i]!.t + readings[i + 1]!.t) / 2);
  }
  return out;
}

/** The reference procedure through the agent API; returns the answer and the evidence ids. */
async function referenceProcedure(): Promise<{ lengthM: number; evidence: string[]; periodS: number }> {
  const card = await ok("GET", "/v1/task");
  expect(card.instruments).toContain("photogate");
  const obs0 = await ok("POST", "/v1/observe", { cameras: ["front"] });
  const r0 = obs0.readings[0] as Reading;
  await pushAndRestore(r0.q);
  const evidence: string[] = [];
  for (let k = 0; k < 2; k++)
    evidence.push((await ok("POST", "/v1/observe", { advance_s: 5, cameras: ["front"] })).observation_id);
  const gate = await ok("GET", "/v1/instruments/photogate");
  evidence.push(gate.observation_id);
  const mids = passes(gate.readings);
  expect(mids.length).toBeGreaterThanOrEqual(7);
  // successive passes are half a period apart; fit over all of them
  const periodS = (2 * (mids[mids.length - 1]! - mids[0]!)) / (mids.length - 1);
  const lengthM = G * (periodS / (2 * Math.PI)) ** 2;
  return { lengthM, evidence, periodS };
}

/** The judge's own score (tasks/types.ts TaskScore) of the ended episode. */
function judgeScore(): TaskScore & { details: Record<string, unknown> } {
  return g!.gateway.requireEpisode().config.judge.score() as TaskScore & { details: Record<string, unknown> };
}

function episodeSuccess(): boolean {
  return (g!.gateway.requireEpisode().result as { success: boolean }).success;
}

function hiddenStrings(seed: number): string[] {
  const spec = samplePendulumBench(FR3, seed);
  return [String(spec.pendulum.lengthM), String(spec.pendulum.hingeWorld[2])];
}

describe("pendulum-length on the sim bench, through the Standard API", () => {
  const errors: string[] = [];
  // seeds 32 and 98 give the shortest (0.322 m) and the longest (0.599 m) pendulum of the first 200
  for (const seed of [1, 2, 3, 32, 98]) {
    it(`the reference procedure measures the length within tolerance (seed ${seed})`, async () => {
      await start(seed);
      const truth = samplePendulumBench(FR3, seed).pendulum.lengthM;
      const m = await referenceProcedure();
      const rel = Math.abs(m.lengthM - truth) / truth;
      errors.push(
        `seed ${seed}: L ${truth.toFixed(4)} m, measured ${m.lengthM.toFixed(4)} m, error ${(rel * 100).toFixed(2)} %`,
      );
      const sub = await ok("POST", "/v1/submit", { answer: { length_m: m.lengthM }, evidence: m.evidence });
      expect(sub.episode).toMatchObject({ status: "ended", reason: "submitted" });
      expect(rel).toBeLessThan(PENDULUM_TOLERANCE_REL);
      expect(episodeSuccess()).toBe(true);
      expect(judgeScore().processScore).toBe(1);
      // the hidden length never reached the agent
      for (const s of hiddenStrings(seed)) for (const body of seen) expect(body.includes(s)).toBe(false);
      if (seed === 98) console.log(`pendulum reference procedure:\n  ${errors.join("\n  ")}`);
    });
  }

  it("submitting at once without evidence gets no credit", async () => {
    await start(1);
    const truth = samplePendulumBench(FR3, 1).pendulum.lengthM;
    await ok("POST", "/v1/submit", { answer: { length_m: truth }, evidence: [] });
    const result = judgeScore();
    expect(episodeSuccess()).toBe(false);
    expect(result.stages.apparatus_changed).toBeNull();
    expect(result.details.evidence_valid).toBe(false);
  });

  it("evidence ids the gateway never issued get no credit", async () => {
    await start(2);
    const obs0 = await ok("POST", "/v1/observe", { cameras: ["front"] });
    await pushAndRestore((obs0.readings[0] as Reading).q);
    await ok("POST", "/v1/observe", { advance_s: 5, cameras: ["front"] });
    const truth = samplePendulumBench(FR3, 2).pendulum.lengthM;
    await ok("POST", "/v1/submit", { answer: { length_m: truth }, evidence: ["obs-made-up"] });
    const result = judgeScore();
    expect(episodeSuccess()).toBe(false);
    expect(result.details.evidence_reason).toMatch(/never issued/);
  });

  it("evidence from before the pendulum moved gets no credit", async () => {
    await start(3);
    const obs0 = await ok("POST", "/v1/observe", { cameras: ["front"] });
    await pushAndRestore((obs0.readings[0] as Reading).q);
    await ok("POST", "/v1/observe", { advance_s: 5, cameras: ["front"] });
    const truth = samplePendulumBench(FR3, 3).pendulum.lengthM;
    await ok("POST", "/v1/submit", { answer: { length_m: truth }, evidence: [obs0.observation_id] });
    const result = judgeScore();
    expect(episodeSuccess()).toBe(false);
    expect(result.details.evidence_reason).toMatch(/after the apparatus/);
  });

  it("a correct answer with the arm left at the pendulum gets no credit", async () => {
    await start(4);
    const m = await (async () => {
      const obs0 = await ok("POST", "/v1/observe", { cameras: ["front"] });
      await pushAndRestore((obs0.readings[0] as Reading).q);
      const ev = (await ok("POST", "/v1/observe", { advance_s: 8, cameras: ["front"] })).observation_id;
      // move the arm back out next to the gate, away from its start pose
      const tool = (await ok("POST", "/v1/kinematics/fk", { q: obs0.readings[0].q })).tool as {
        quat_xyzw: number[];
      };
      const [bx, by, bz] = BOB_REST_WORLD;
      const p0 = (await ok("POST", "/v1/kinematics/fk", { q: obs0.readings[0].q })).tool.xyz as number[];
      const rows = [0.25, 0.5, 0.75, 1, 1].map((s) => [
        p0[0]! + (bx - 0.15 - p0[0]!) * s,
        by,
        p0[2]! + (bz + 0.1 - p0[2]!) * s,
        ...tool.quat_xyzw,
        0,
      ]);
      await ok("POST", "/v1/act", { type: "ee_pose", dt: 0.5, rows });
      return ev as string;
    })();
    const truth = samplePendulumBench(FR3, 4).pendulum.lengthM;
    await ok("POST", "/v1/submit", { answer: { length_m: truth }, evidence: [m] });
    const result = judgeScore();
    expect(episodeSuccess()).toBe(false);
    expect(result.stages.result_within_tolerance).not.toBeNull();
    expect(result.stages.bench_restored).toBeNull();
    expect(result.details.max_joint_dev_rad).toBeGreaterThan(0.05);
  });
});
