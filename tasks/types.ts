/**
 * Task definitions. A task reads only the episode stream (readings, commands, sensor events,
 * submissions); it never asks a backend for privileged state during a Standard episode.
 * The same judge runs live in the gateway and offline in `robot-gateway grade`.
 */
import type { Mat4 } from "../robots/math.ts";
import type { RobotModel } from "../robots/types.ts";

export type Setting = "standard" | "realtime";
export type ActionType = "joint_position" | "ee_pose" | "jog";

export interface TaskBudgets {
  /** episode time limit, s */
  timeLimitS: number;
  /** resets the agent may request */
  resets: number;
  maxRowsPerChunk: number;
  maxFramesPerCall: number;
  /** max episode seconds one call may advance */
  maxCallS: number;
  /** max motion calls per episode (act, or observe that advances time) */
  maxSteps: number;
}

/** What the bench tells a task about itself (never shown to the agent). */
export interface TaskContext {
  robot: RobotModel;
  /** flange → tool (TCP) transform */
  toolFromFlange: Mat4;
  /** bench geometry the task needs, e.g. the buzz wire's centreline; backend-independent data */
  bench: Record<string, unknown>;
}

/** A reading as the task sees it: episode seconds. */
export interface TaskReading {
  t: number;
  q: ArrayLike<number>;
  gripperWidthM: number;
}

export interface TaskEvent {
  type: string;
  t: number;
  data: Record<string, unknown>;
}

export type TaskStatus = { state: "running" } | { state: "success" } | { state: "failed"; reason: string };

export interface TaskScore {
  /** 0…1 continuous progress */
  progress: number;
  /** progress quantised to the task's checkpoints, 0…1 */
  progressQuantised?: number;
  /** stage name → episode time reached */
  stages: Record<string, number | null>;
  /** process score 0…1 for tasks that grade the procedure */
  processScore?: number;
  details?: Record<string, unknown>;
}

export interface TaskJudge {
  /**
   * per measured reading; runs in the control loop — keep it allocation-light. The reading
   * object is reused between calls: copy what you keep.
   */
  onReading(r: TaskReading): void;
  onEvent(e: TaskEvent): void;
  /** the agent received an observation (camera frames or an instrument export) with this id */
  onObservation?(id: string, t: number): void;
  onSubmit?(answer: unknown, evidence: readonly string[], knownObservations: ReadonlySet<string>): void;
  /** runs every control tick: return constants where possible */
  status(): TaskStatus;
  score(): TaskScore;
}

export interface TaskLevel {
  /** action types open at this level */
  actions: readonly ActionType[];
}

export interface TaskDefinition {
  id: string;
  title: string;
  settings: readonly Setting[];
  levels: Readonly<Record<string, TaskLevel>>;
  defaultLevel: string;
  budgets: TaskBudgets;
  /** when true the agent is not told of success; only finish, time or failure end the episode */
  hidesSuccess: boolean;
  /** JSON schema of the answer for tasks that take a submission */
  submission?: Record<string, unknown>;
  /** instrument names readable with GET /v1/instruments/:name */
  instruments?: readonly string[];
  /**
   * markdown for the agent: goal, frames, units, action layout, budgets, what ends a trial;
   * `bench`: the facts of benchFacts, when the task has them
   */
  instruction(level: string, setting: Setting, budgets: TaskBudgets, bench?: Record<string, unknown>): string;
  /**
   * what a player can see on this episode's bench (the task card's `bench`): sizes and
   * conventions only, never the hidden instance (no centreline, no mark positions)
   */
  benchFacts?(ctx: TaskContext, level: string): Record<string, unknown>;
  /** hidden instance parameters from a seed */
  sampleInstance(seed: number, ctx: TaskContext): Record<string, unknown>;
  createJudge(instance: Record<string, unknown>, ctx: TaskContext): TaskJudge;
}
