/**
 * What an episode is made of (its config) and the read-only view of it that observers, the
 * result adapter and the operator summary get. Nothing here imports the Episode class.
 */
import type { z } from "zod";
import type { Mat4 } from "../../robots/math.ts";
import type { Backend } from "../../seam/types.ts";
import type { Setting, TaskBudgets, TaskContext, TaskDefinition, TaskJudge } from "../../tasks/types.ts";
import type { EndReason, SafetyEventSchema, SensorEventSchema } from "../api/schemas.ts";
import type { FrameStore } from "../frames/frame-store.ts";
import type { EpisodeCounters, EpisodeResult } from "../recorder/result.ts";
import type { Provenance } from "../recorder/provenance.ts";
import type { EStopLatch } from "../safety/estop.ts";
import type { SafetyMonitor } from "../safety/monitor.ts";
import type { EffectiveLimits } from "../safety/profile.ts";
import type { ActionCatalog } from "./actions.ts";
import type { WallClock } from "./realtime.ts";

export type { EpisodeCounters } from "../recorder/result.ts";

/** A safety event as the API and the record carry it. */
export type SafetyEventDto = z.infer<typeof SafetyEventSchema>;

/** What an episode is set up with (everything but its observers, which observers never see). */
export interface EpisodeSetup {
  id?: string;
  task: TaskDefinition;
  level: string;
  setting: Setting;
  seed: number;
  instance: Record<string, unknown>;
  judge: TaskJudge;
  budgets: TaskBudgets;
  backend: Backend;
  limits: EffectiveLimits;
  monitor: SafetyMonitor;
  actions: ActionCatalog;
  frames: FrameStore;
  toolFromFlange: Mat4;
  maxDtS: number;
  privileged: boolean;
  /** what the task was told about the bench (recorded so `grade` can rebuild the judge) */
  taskContext?: TaskContext;
  provenance?: Provenance;
  /** the gateway's e-stop latch */
  estop: EStopLatch;
  /** false: a real bench started without the allow-motion switch */
  motionAllowed: boolean;
  /** the realtime setting's pacing (setting "realtime" only) */
  realtime?: RealtimeSetup;
  /** CPU time an act's planning runs between two turns of the event loop, ms (default SLICE_MS, seam/steps.ts) */
  planSliceMs?: number;
  /**
   * Told, as it happens, each event the agent's next response will carry (a sensor event, or a
   * safety event reported in responses): the stream pushes them. Never the grader's view.
   * Called inside the event's handler, before the stop it may cause: it must only queue.
   */
  onAgentEvent?: (e: AgentEvent) => void;
}

/** An event as the agent sees it in a response, pushed as it happens. */
export type AgentEvent =
  | { kind: "event"; event: z.infer<typeof SensorEventSchema> }
  | { kind: "safety"; event: SafetyEventDto };

/** How a realtime episode is paced (stated in the task card). */
export interface RealtimeSetup {
  /**
   * how the backend runs the queue (seam RealtimeDrive): "stepped" (the sim runs the due steps
   * on demand) or "streamed" (a real arm: the queue is streamed ahead to its controller, S = 1)
   */
  drive: "stepped" | "streamed";
  /** S ≥ 1: one control step every S control periods of wall clock */
  slowdown: number;
  /** a splice starts at least this many steps after the committed (or due) step */
  marginSteps: number;
  /** a step that could not start within this many wall seconds of its slot is late */
  lateToleranceS: number;
  /** how far ahead of the committed step a splice may start, steps */
  horizonSteps: number;
  /** empty queue and no chunk for this long (wall s): the robot holds, then stops (watchdog) */
  commandGapS: number;
  /** measured sim speed (sim seconds per wall second) that chose S, when measured */
  measuredSpeed?: number;
  /** the wall clock (tests inject a fake one) */
  clock?: WallClock;
}

/** The read-only view of an episode. */
export interface EpisodeView {
  readonly id: string;
  readonly startedAt: Date;
  readonly config: Readonly<EpisodeSetup>;
  /** backend seconds at which the episode started */
  readonly t0S: number;
  /** episode seconds now */
  t(): number;
  timeLeftS(): number;
  readonly isEnded: boolean;
  readonly endReason: EndReason | undefined;
  /** episode seconds at which the episode ended */
  readonly endT: number | undefined;
  readonly endDetail: string | undefined;
  readonly counters: Readonly<EpisodeCounters>;
  readonly observationIds: ReadonlySet<string>;
  /** result.json of the ended episode */
  readonly result: EpisodeResult | undefined;
  /** where the recorder writes this episode, when recorded */
  readonly recordPath: string | undefined;
  /** realtime setting: the pacing and the queue now */
  realtimeStatus?(): RealtimeStatus | undefined;
}

export interface RealtimeStatus {
  slowdown: number;
  committed_step: number;
  queue_rows: number;
  late_steps: number;
  stood_still_s: number;
  hold_steps: number;
  late_splices: number;
}
