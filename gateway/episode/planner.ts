/**
 * The chunk planner, pure: an act request and the measured start state in, a checked plan out.
 * rules (action open at the level, dt, rows, call length, frames) → action rows to joint rows
 * (IK for tool poses) → clip to the position limits → interpolate at the control period → safety
 * pre-check. Shape errors throw coded GatewayErrors; a pre-check refusal is part of the plan (the
 * episode records it before refusing).
 */
import type { Mat4 } from "../../robots/math.ts";
import { interpolateChunkSteps } from "../../seam/interpolate.ts";
import { runSteps, type Steps } from "../../seam/steps.ts";
import type { BackendDescription, JointReading, JointTrajectory } from "../../seam/types.ts";
import type { TaskBudgets, TaskDefinition } from "../../tasks/types.ts";
import type { ActRequest } from "../api/schemas.ts";
import { GatewayError } from "../errors.ts";
import { type ClipEntry, clipRows, type PrecheckResult, precheckChunkSteps } from "../safety/precheck.ts";
import type { EffectiveLimits } from "../safety/profile.ts";
import type { ActionCatalog, ActionDef } from "./actions.ts";
import { checkDt, checkRows } from "./chunk-rules.ts";

export interface PlanContext {
  task: TaskDefinition;
  level: string;
  actions: ActionCatalog;
  budgets: TaskBudgets;
  limits: EffectiveLimits;
  maxDtS: number;
  toolFromFlange: Mat4;
  desc: BackendDescription;
}

/** A request that passed the chunk rules. */
export interface CheckedChunk {
  action: ActionDef;
  rows: number[][];
  dt: number;
  capture?: { everyTicks: number; cameras: string[]; depth: boolean };
}

export interface ChunkPlan {
  trajectory: JointTrajectory;
  clipped: ClipEntry[];
  precheck: PrecheckResult;
}

/** The named cameras of the bench (all when none are named); an unknown name is refused. */
export function resolveCameras(desc: BackendDescription, requested: readonly string[] | undefined): string[] {
  const all = desc.cameras.map((c) => c.name);
  if (!requested) return all;
  for (const c of requested) {
    if (!all.includes(c))
      throw new GatewayError("RB_ERR_UNKNOWN_CAMERA", { camera: c, cameras: all.join(", ") });
  }
  return [...requested];
}

/** The chunk rules of DESIGN.md §2 for one act request. */
export function checkChunk(ctx: PlanContext, req: ActRequest): CheckedChunk {
  const period = ctx.desc.controlPeriodS;
  const open = ctx.task.levels[ctx.level]?.actions ?? [];
  const action = ctx.actions.get(req.type);
  if (!action || !open.includes(action.type)) {
    throw new GatewayError("RB_ERR_ACTION_TYPE", { type: req.type, open: open.join(", ") });
  }
  checkDt(req.dt, period, ctx.maxDtS);
  const rows = checkRows(req.rows, action.columns.length, ctx.budgets.maxRowsPerChunk, action.type);
  const durationS = rows.length * req.dt;
  if (durationS > ctx.budgets.maxCallS + 1e-9) {
    throw new GatewayError("RB_ERR_CALL_TOO_LONG", { seconds: durationS, max: ctx.budgets.maxCallS });
  }
  const f = req.frames;
  if (!f) return { action, rows, dt: req.dt };
  const cameras = resolveCameras(ctx.desc, f.cameras);
  // cameras: [] asks for no image
  if (cameras.length === 0) return { action, rows, dt: req.dt };
  const everyTicks = Math.max(1, Math.round(1 / (f.fps * period)));
  const count = cameras.length * (Math.floor(durationS / period / everyTicks) + 1);
  if (count > ctx.budgets.maxFramesPerCall) {
    throw new GatewayError("RB_ERR_TOO_MANY_FRAMES", { count, max: ctx.budgets.maxFramesPerCall });
  }
  return { action, rows, dt: req.dt, capture: { everyTicks, cameras, depth: f.depth } };
}

/**
 * Joint rows → clip → interpolate → pre-check, from the measured `start` (realtime: from the
 * commanded state at the splice step, with its acceleration, so the join is judged up to jerk).
 */
export function planChunk(
  ctx: PlanContext,
  chunk: CheckedChunk,
  start: JointReading,
  previousAcceleration?: readonly number[],
): ChunkPlan {
  return runSteps(planChunkSteps(ctx, chunk, start, previousAcceleration));
}

/** `planChunk` as steps (seam/steps.ts): it may pause after an IK row, ~256 interpolated samples, a pre-check window. */
export function* planChunkSteps(
  ctx: PlanContext,
  chunk: CheckedChunk,
  start: JointReading,
  previousAcceleration?: readonly number[],
): Steps<ChunkPlan> {
  const jointRows = yield* chunk.action.toJointRows(chunk.rows, start);
  const { rows, clipped } = clipRows(jointRows, ctx.limits);
  yield;
  const trajectory = yield* interpolateChunkSteps(start, rows, chunk.dt, ctx.desc.controlPeriodS);
  const precheck = yield* precheckChunkSteps({
    robot: ctx.desc.robot,
    limits: ctx.limits,
    start,
    trajectory,
    tcp: ctx.toolFromFlange,
    ...(previousAcceleration ? { previousAcceleration } : {}),
  });
  return { trajectory, clipped, precheck };
}
