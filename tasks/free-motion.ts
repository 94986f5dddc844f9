/**
 * free-motion: no goal and no success rule. The episode ends when the agent finishes or the
 * time runs out. Used for API plumbing, calibration sessions and teleoperation.
 */
import type { TaskDefinition, TaskStatus } from "./types.ts";

const RUNNING: TaskStatus = Object.freeze({ state: "running" });

export const FREE_MOTION: TaskDefinition = {
  id: "free-motion",
  title: "Free motion",
  settings: ["standard", "realtime"],
  levels: {
    joint_position: { actions: ["joint_position"] },
    ee_pose: { actions: ["joint_position", "ee_pose"] },
  },
  defaultLevel: "joint_position",
  budgets: {
    timeLimitS: 600,
    resets: 0,
    maxRowsPerChunk: 500,
    maxFramesPerCall: 64,
    maxCallS: 30,
    maxSteps: 10_000,
  },
  hidesSuccess: false,
  instruction: (level, _setting, b) =>
    [
      "# Free motion",
      "",
      "Move the arm as you like. There is no goal and no score.",
      "",
      `- Actions open at level \`${level}\`: see \`GET /v1/spec\` → \`control.actions\`.`,
      "- Frames: the robot base frame, SI units (m, rad, s), quaternions x y z w.",
      `- Budgets: ${b.timeLimitS} s of episode time, at most ${b.maxRowsPerChunk} rows per chunk and ${b.maxCallS} s per call.`,
      "- The episode ends when you call `POST /v1/finish` or the time runs out.",
    ].join("\n"),
  sampleInstance: () => ({}),
  createJudge: () => ({
    onReading() {},
    onEvent() {},
    status: () => RUNNING,
    score: () => ({ progress: 0, stages: {} }),
  }),
};
