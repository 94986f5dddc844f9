import { describe, expect, it } from "vitest";
import { FREE_MOTION } from "../../tasks/free-motion.ts";
import type { TaskStatus } from "../../tasks/types.ts";
import type { EndReason } from "../api/schemas.ts";
import { computeResult, diffResults, outcomeOf, type ResultInput } from "./result.ts";

const running: TaskStatus = { state: "running" };
const success: TaskStatus = { state: "success" };
const failed: TaskStatus = { state: "failed", reason: "contact" };

describe("outcomeOf", () => {
  const cases: [EndReason, TaskStatus, string][] = [
    ["success", running, "success"],
    ["finished", success, "success"], // hidden success, then finish
    ["task_failed", success, "failed"],
    ["task_failed", failed, "failed"],
    ["safety_stop", running, "failed"],
    ["time_limit", failed, "failed"],
    ["finished", running, "incomplete"],
    ["time_limit", running, "incomplete"],
    ["step_limit", running, "incomplete"],
    ["fault", running, "fault"],
    ["aborted", running, "aborted"],
  ];
  for (const [reason, status, outcome] of cases) {
    it(`${reason} + ${status.state} → ${outcome}`, () => {
      expect(outcomeOf(reason, status).outcome).toBe(outcome);
    });
  }
});

describe("computeResult", () => {
  const input: ResultInput = {
    episodeId: "ep",
    task: "buzz-wire",
    level: "joint_position",
    setting: "standard",
    seed: 3,
    end: { reason: "task_failed", detail: "contact", tS: 1.23456789 },
    status: failed,
    score: { progress: 0.5, progressQuantised: 0.4, stages: { start: 0.1, end: null } },
    budgets: FREE_MOTION.budgets,
    counters: { steps: 3, resetsUsed: 0, refusals: 1, clippedEntries: 2, safetyStops: 0, framesServed: 9 },
    wall: { startedAt: "2025-01-01T00:00:00.000Z", endedAt: "2025-01-01T00:00:02.500Z" },
  };

  it("fills every section from the stream's outcome", () => {
    const r = computeResult(input);
    expect(r).toMatchObject({
      outcome: "failed",
      success: false,
      failure_reason: "contact",
      progress: 0.5,
      progress_quantised: 0.4,
      stages: { start: 0.1, end: null },
      timing: { episode_s: 1.234568, wall_s: 2.5 },
      budgets_used: { steps: 3, frames: 9, resets: 0, max_steps: 10_000 },
      counters: { refusals: 1, clipped_entries: 2, safety_stops: 0 },
    });
  });

  it("gives stage times in episode seconds rounded to 1 µs, like every time in the API", () => {
    const r = computeResult({
      ...input,
      score: {
        progress: 1,
        stages: { start: 0.0010000000000012221, checkpoint_1: 2.4010000000000002, end: null },
      },
    });
    expect(r.stages).toEqual({ start: 0.001, checkpoint_1: 2.401, end: null });
  });

  it("diff names the deterministic fields that differ and ignores wall time", () => {
    const a = computeResult(input);
    const b = computeResult({
      ...input,
      episodeId: "other",
      wall: { startedAt: input.wall.startedAt, endedAt: "2025-01-01T00:01:00.000Z" },
      score: { ...input.score, stages: { start: 0.1, end: 1 } },
    });
    expect(diffResults(a, b)).toEqual([{ path: "stages.end", recorded: null, recomputed: 1 }]);
    expect(diffResults(a, computeResult(input))).toEqual([]);
  });
});
