/**
 * A test-only task: the judge fails on the first closed contact event; progress is the share of
 * `horizonS` survived before it (from readings); stages: "moved" (joint 1 left its start by
 * 0.05 rad) and "contact". It exercises replay of readings and events together.
 */
import type { TaskDefinition, TaskStatus } from "../../../tasks/types.ts";
import { FREE_MOTION } from "../../../tasks/free-motion.ts";

export function contactTask(horizonS = 2): TaskDefinition {
  return {
    ...FREE_MOTION,
    id: "test-contact",
    title: "Test: fail on contact",
    sampleInstance: (seed) => ({ horizon_s: horizonS, seed }),
    createJudge: (instance) => {
      const horizon = instance["horizon_s"] as number;
      let q0: number | undefined;
      let lastT = 0;
      let moved: number | null = null;
      let contact: number | null = null;
      let instruments = 0;
      return {
        onReading(r) {
          if (contact !== null) return;
          q0 ??= r.q[0]!;
          lastT = r.t;
          if (moved === null && Math.abs(r.q[0]! - q0) > 0.05) moved = r.t;
        },
        onEvent(e) {
          if (e.type === "instrument") instruments++;
          if (e.type === "contact" && e.data["closed"] === true && contact === null) contact = e.t;
        },
        status: (): TaskStatus =>
          contact !== null ? { state: "failed", reason: `contact at t=${contact}` } : { state: "running" },
        score: () => ({
          progress: Math.min(1, lastT / horizon),
          progressQuantised: Math.floor(Math.min(1, lastT / horizon) * 5) / 5,
          stages: { moved, contact },
          details: { instruments },
        }),
      };
    },
  };
}
