/**
 * The gateway's composition root: one bench (backend + robot + safety limits + task registry),
 * the current episode, the e-stop latch and the frame store. The HTTP layer (app.ts) is a thin
 * shell over this class, so everything here is testable without a server.
 */
import type { Mat4 } from "../robots/math.ts";
import { forwardKinematics } from "../robots/franka/kinematics.ts";
import { getTask } from "../tasks/registry.ts";
import type { TaskContext, TaskDefinition } from "../tasks/types.ts";
import type { EndReason, StartEpisodeRequest } from "./api/schemas.ts";
import { GatewayError } from "./errors.ts";
import { type ActionCatalog, actionCatalog, type IkPort } from "./episode/actions.ts";
import { Episode } from "./episode/episode.ts";
import { EStopLatch } from "./safety/estop.ts";
import { SafetyMonitor } from "./safety/monitor.ts";
import { homeForEpisode } from "./strategy/episode-start.ts";
import { HomeError } from "./strategy/home.ts";
import type { EpisodeObserver } from "./episode/observer.ts";
import { FrameStore } from "./frames/frame-store.ts";
import type { Provenance } from "./recorder/provenance.ts";
import type { EffectiveLimits } from "./safety/profile.ts";
import type { Backend } from "../seam/types.ts";

/** A composed bench: what the gateway drives and the rules it drives it by. */
export interface Bench {
  name: string;
  backend: Backend;
  /** the profile's limits (without calibration-derived volumes) */
  limits: EffectiveLimits;
  /** the limits an episode with this seed runs under (adds the bench's table and board volumes) */
  limitsFor: (seed: number) => EffectiveLimits;
  toolFromFlange: Mat4;
  ik: IkPort;
  maxDtS: number;
  /** bench geometry for tasks (e.g. wire centreline), per episode seed */
  taskBench: (seed: number) => Record<string, unknown>;
  /** default task, level, seed */
  defaults: { task: string; level?: string; seed: number };
  /** is the backend a simulator (privileged calls possible)? */
  simulated: boolean;
  /** false on a real bench started without the allow-motion switch: every motion call is refused */
  motionAllowed: boolean;
  /** bench name, software version and config hashes for records and result.json */
  provenance?: Provenance;
  /** a client that disconnects mid-act: stop the motion, or let the chunk finish and be recorded (default) */
  onClientDisconnect?: "finish" | "stop";
  /** observers attached to every episode (recorder, dashboards) */
  observers?: (episode: { task: string; seed: number }) => EpisodeObserver[];
}

export interface EstopState {
  engaged: boolean;
  reason?: string;
  /** wall-clock ISO time of the engage in force */
  since?: string;
  /** backend seconds at the engage (stop latency is measured against it) */
  backendT?: number;
}

export class Gateway {
  readonly frames = new FrameStore();
  readonly actions: ActionCatalog;
  private current: Episode | undefined;
  private readonly history: Episode[] = [];
  readonly estopLatch = new EStopLatch();
  private estopBackendT: number | undefined;

  constructor(readonly bench: Bench) {
    this.actions = actionCatalog(bench.ik);
  }

  get episode(): Episode | undefined {
    return this.current;
  }

  episodes(): readonly Episode[] {
    return this.history;
  }

  findEpisode(id: string): Episode | undefined {
    return this.history.find((e) => e.id === id);
  }

  /** The running or last episode, for agent calls. */
  requireEpisode(): Episode {
    if (!this.current) throw new GatewayError("RB_ERR_NO_EPISODE");
    return this.current;
  }

  task(id: string): TaskDefinition {
    const t = getTask(id);
    if (!t) throw new GatewayError("RB_ERR_UNKNOWN_TASK", { task: id });
    return t;
  }

  /** Start an episode. A running episode is ended as "aborted" first. */
  async startEpisode(req: Partial<StartEpisodeRequest> = {}): Promise<Episode> {
    // a latched e-stop refuses every episode start, whoever asks (API, run, tests)
    const es = this.estopLatch.current;
    if (es) throw new GatewayError("RB_ERR_ESTOP", { reason: es.reason ?? "operator" });
    const d = this.bench.defaults;
    const task = this.task(req.task ?? d.task);
    const level = req.level ?? d.level ?? task.defaultLevel;
    if (!Object.hasOwn(task.levels, level)) throw new GatewayError("RB_ERR_LEVEL", { task: task.id, level });
    const setting = req.setting ?? "standard";
    if (setting !== "standard" || !task.settings.includes(setting)) {
      throw new GatewayError("RB_ERR_SETTING_UNAVAILABLE", {
        setting,
        reason:
          setting === "realtime"
            ? "the realtime setting is not implemented yet"
            : `task ${task.id} does not offer it`,
      });
    }
    const privileged = req.privileged ?? false;
    if (privileged && !this.bench.simulated) {
      throw new GatewayError("RB_ERR_PRIVILEGED_UNAVAILABLE", { reason: "the bench is not simulated" });
    }
    const seed = req.seed ?? d.seed;
    if (this.current && !this.current.isEnded) {
      await this.current.stopMotion("new episode");
      this.current.end("aborted", "operator started a new episode");
    }
    const backend = this.bench.backend;
    if (backend.reset) await backend.reset({ seed });
    else {
      // a real bench cannot teleport: drive it to the episode's start pose under the safety supervisor
      try {
        await homeForEpisode(this.bench, seed, this.estopLatch);
      } catch (e) {
        if (e instanceof HomeError)
          throw new GatewayError("RB_ERR_HOMING", { reason: e.message, kind: e.kind });
        throw e;
      }
    }
    const ctx: TaskContext = {
      robot: backend.describe().robot,
      toolFromFlange: this.bench.toolFromFlange,
      bench: this.bench.taskBench(seed),
    };
    const instance = task.sampleInstance(seed, ctx);
    const limits = this.bench.limitsFor(seed);
    const judge = task.createJudge(instance, ctx);
    this.frames.clear();
    const ep = new Episode({
      task,
      level,
      setting,
      seed,
      instance,
      judge,
      // a call may not advance more than the safety profile lets one chunk last
      budgets: {
        ...task.budgets,
        maxCallS: Math.min(task.budgets.maxCallS, limits.maxChunkDurationS),
      },
      backend,
      limits,
      monitor: new SafetyMonitor(backend.describe().robot, limits, this.bench.toolFromFlange),
      actions: this.actions,
      frames: this.frames,
      toolFromFlange: this.bench.toolFromFlange,
      maxDtS: this.bench.maxDtS,
      privileged,
      observers: this.bench.observers?.({ task: task.id, seed }) ?? [],
      taskContext: ctx,
      ...(this.bench.provenance ? { provenance: this.bench.provenance } : {}),
      estop: this.estopLatch,
      motionAllowed: this.bench.motionAllowed,
    });
    this.current = ep;
    this.history.push(ep);
    return ep;
  }

  get estop(): EstopState {
    const cur = this.estopLatch.current;
    if (!cur) return { engaged: false };
    return {
      engaged: true,
      reason: cur.reason ?? "operator",
      since: new Date(cur.atMs).toISOString(),
      ...(this.estopBackendT !== undefined ? { backendT: this.estopBackendT } : {}),
    };
  }

  /** Latch the e-stop and stop all motion. Safe to call any number of times. */
  async engageEstop(reason: string, by = "operator"): Promise<EstopState> {
    if (this.estopLatch.engage(reason, by)) this.estopBackendT = this.bench.backend.now();
    const ep = this.current;
    if (ep) {
      await ep.stopMotion(`e-stop: ${reason}`);
      if (!ep.isEnded) ep.end("safety_stop", `e-stop: ${reason}`);
    } else {
      await this.bench.backend.stop(`e-stop: ${reason}`);
    }
    return this.estop;
  }

  /** Release a latched e-stop (operator). */
  releaseEstop(by = "operator"): EstopState {
    this.estopLatch.release(by);
    return this.estop;
  }

  /** FK for the API: tool and flange poses; never advances time. */
  fk(q: readonly number[]) {
    const robot = this.bench.backend.describe().robot;
    if (q.length !== robot.dof) {
      throw new GatewayError("RB_ERR_Q_WIDTH", { field: "q", width: q.length, dof: robot.dof });
    }
    const bad = q.findIndex((v) => !Number.isFinite(v));
    if (bad >= 0) throw new GatewayError("RB_ERR_NOT_FINITE", { row: 0, column: bad, value: String(q[bad]) });
    return forwardKinematics(robot, q, this.bench.toolFromFlange);
  }

  async shutdown(reason: EndReason = "aborted"): Promise<void> {
    if (this.current && !this.current.isEnded) {
      await this.current.stopMotion("shutdown");
      this.current.end(reason, "gateway shut down");
    }
    await this.bench.backend.shutdown();
  }
}
