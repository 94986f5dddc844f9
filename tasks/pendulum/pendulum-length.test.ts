import { describe, expect, it } from "vitest";
import { FR3 } from "../../robots/franka/models.ts";
import type { TaskContext, TaskJudge } from "../types.ts";
import { PENDULUM_LENGTH, PENDULUM_STAGES } from "./pendulum-length.ts";

const L = 0.4;
const HALF_PERIOD_S = Math.PI * Math.sqrt(L / 9.81);
const ctx: TaskContext = {
  robot: FR3,
  toolFromFlange: new Float64Array(16),
  bench: { pendulum: { lengthM: L, hingeWorld: [0.55, 0, 0.55] }, startQ: [...FR3.homeQ], scene: "pendulum" },
};

function judge(): TaskJudge {
  const t = PENDULUM_LENGTH;
  return t.createJudge(t.sampleInstance(1, ctx), ctx);
}

const at = (t: number, dq = 0) => ({ t, q: FR3.homeQ.map((v) => v + dq), gripperWidthM: 0 });
const gate = (t: number, blocked: 0 | 1) => ({
  type: "instrument",
  t,
  data: { name: "photogate", values: { blocked }, source: "sim" },
});

/** A swing seen by the gate: it leaves the beam at t0, then `passes` passes 0.2 s long. */
function swing(j: TaskJudge, t0: number, passes: number): number {
  j.onEvent(gate(t0, 0));
  let t = t0;
  for (let k = 0; k < passes; k++) {
    t = t0 + (k + 0.5) * HALF_PERIOD_S;
    j.onEvent(gate(t - 0.1, 1));
    j.onEvent(gate(t + 0.1, 0));
  }
  return t + 0.1;
}

describe("pendulum-length judge", () => {
  it("credits a correct, evidenced submission with the arm back home: success, every milestone", () => {
    const j = judge();
    j.onReading(at(0.001));
    j.onObservation!("obs-before", 0.5);
    j.onReading(at(1, 0.3));
    const tEnd = swing(j, 1.2, 9);
    j.onObservation!("obs-after", tEnd + 0.5);
    j.onReading(at(tEnd + 1, 0.01));
    j.onSubmit!({ length_m: L * 1.02 }, ["obs-after"], new Set(["obs-before", "obs-after"]));
    expect(j.status()).toEqual({ state: "success" });
    const s = j.score();
    expect(s.processScore).toBe(1);
    const times = PENDULUM_STAGES.map((k) => s.stages[k]!);
    expect(times.every((t) => typeof t === "number")).toBe(true);
    expect(s.stages.apparatus_changed).toBe(1.2);
    expect(s.stages.feedback_observed).toBe(tEnd + 0.5);
    expect(s.details!.passes).toBe(9);
  });

  it("scores the process without success when the answer is off", () => {
    const j = judge();
    const tEnd = swing(j, 1, 9);
    j.onObservation!("o1", tEnd + 0.1);
    j.onSubmit!({ length_m: L * 1.05 }, ["o1"], new Set(["o1"]));
    expect(j.status()).toMatchObject({ state: "failed", reason: "answer out of tolerance" });
    expect(j.score().stages.result_within_tolerance).toBeNull();
    expect(j.score().processScore).toBeCloseTo(0.8, 12);
  });

  it("needs enough full periods for 'readings suffice'", () => {
    const j = judge();
    swing(j, 1, 6);
    expect(j.score().stages.readings_suffice).toBeNull();
    j.onEvent(gate(10, 1));
    j.onEvent(gate(10.2, 0));
    expect(j.score().stages.readings_suffice).toBe(10.2);
  });

  it("refuses evidence that was never issued, is empty, or predates the first photogate change", () => {
    for (const [evidence, known, reason] of [
      [[], ["o1"], /no observation cited/],
      [["o-forged"], ["o1"], /never issued/],
      [["o0"], ["o0", "o1"], /after the apparatus/],
    ] as const) {
      const j = judge();
      j.onObservation!("o0", 0.2);
      const tEnd = swing(j, 1, 9);
      j.onObservation!("o1", tEnd);
      j.onSubmit!({ length_m: L }, evidence, new Set(known));
      expect(j.status()).toMatchObject({ state: "failed", reason: expect.stringMatching(reason) });
      expect(j.score().details!.evidence_valid).toBe(false);
    }
  });

  it("refuses evidence when the stream carries no observation times", () => {
    const j = judge();
    swing(j, 1, 9);
    j.onSubmit!({ length_m: L }, ["o1"], new Set(["o1"]));
    expect(j.status()).toMatchObject({ state: "failed" });
  });

  it("refuses a correct answer while the arm is away from its start pose", () => {
    const j = judge();
    const tEnd = swing(j, 1, 9);
    j.onObservation!("o1", tEnd);
    j.onReading(at(tEnd + 1, 0.06));
    j.onSubmit!({ length_m: L }, ["o1"], new Set(["o1"]));
    expect(j.status()).toMatchObject({ state: "failed", reason: expect.stringMatching(/start pose/) });
    expect(j.score().stages.result_within_tolerance).not.toBeNull();
    expect(j.score().stages.bench_restored).toBeNull();
  });

  it("refuses a malformed answer and counts only the first submission", () => {
    const j = judge();
    const tEnd = swing(j, 1, 9);
    j.onObservation!("o1", tEnd);
    j.onSubmit!({ length_m: "0.4" }, ["o1"], new Set(["o1"]));
    j.onSubmit!({ length_m: L }, ["o1"], new Set(["o1"]));
    expect(j.status()).toMatchObject({
      state: "failed",
      reason: expect.stringMatching(/not a positive length/),
    });
  });

  it("tells the agent what to do without the hidden length or a formula", () => {
    const t = PENDULUM_LENGTH;
    const text = t.instruction("ee_pose", "standard", t.budgets);
    expect(text).toContain("/v1/instruments/photogate");
    expect(text).toContain("length_m");
    expect(text).not.toMatch(/period|π|sqrt|√|2pi/i);
    expect(text).not.toContain(String(L));
    expect(t.instruments).toEqual(["photogate"]);
  });
});
