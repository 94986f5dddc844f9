/**
 * The one stop path's vocabulary and its two decisions:
 * - `StopArbiter.request(cause)`: stop NOW (call the backend's stop, abort the running motion);
 *   the first cause of a motion (or of an idle episode) is kept, later ones still stop the robot.
 * - `endReasonFor(cause, judge)`: how the episode ends afterwards. The task's judge owns task
 *   outcomes; safety only stops (a stop a rule asked for ends as safety_stop, a lost device or an
 *   exception as fault, a signal as aborted).
 */
import type { TaskStatus } from "../../tasks/types.ts";
import type { Backend } from "../../seam/types.ts";
import type { ErrorCode } from "../../seam/errors.ts";
import type { EndReason } from "../api/schemas.ts";
import type { StopVerdict } from "../safety/monitor.ts";

/** Who asked for the stop. */
export type StopSource =
  | "tick"
  | "safety"
  | "contact"
  | "estop"
  | "watchdog"
  | "device_fault"
  | "signal"
  | "storage"
  | "exception"
  | "operator"
  /** the agent's connection went away mid-act (bench file onClientDisconnect: stop) */
  | "client"
  | "task";

export interface StopCause {
  source: StopSource;
  /** human-readable, e.g. "velocity panda_joint4" or "SIGTERM" */
  detail: string;
  code?: ErrorCode;
  device?: string;
  /** the safety monitor's cause (kind, joint, value, limit…), kept for the safety event */
  data?: Readonly<Record<string, unknown>>;
}

/** The stop cause of a safety-monitor verdict (tick, watchdog timer or sensor event). */
export function causeOfVerdict(v: StopVerdict): StopCause {
  const c = v.cause;
  const data = { ...c } as Record<string, unknown>;
  switch (c.kind) {
    case "task_event":
      return {
        source: c.event === "contact" ? "contact" : "safety",
        detail: `${c.event}: ${c.detail} (${c.source})`,
        data,
      };
    case "device_fault":
      return { source: "device_fault", detail: `${c.device}: ${c.message}`, device: c.device, data };
    case "stale_reading":
    case "command_watchdog":
      return { source: "watchdog", detail: c.kind, data };
    case "workspace":
    case "keep_out":
      return { source: "safety", detail: `${c.kind} ${c.link} in ${c.volume}`, data };
    default:
      return { source: "safety", detail: `${c.kind} ${c.joint}`, data };
  }
}

/** The time budget ran out in the control loop. */
export const TIME_LIMIT: StopCause = Object.freeze({ source: "tick", detail: "time limit reached" });

/** The task's judge decided (failed, or succeeded on a task that does not hide success). */
export function causeOfJudge(status: TaskStatus): StopCause {
  return { source: "task", detail: status.state === "failed" ? status.reason : "task succeeded" };
}

/** A motion or a capture that came back as a device fault. */
export function causeOfFault(fault: { device: string; message: string } | undefined): StopCause {
  const device = fault?.device ?? "backend";
  return {
    source: "device_fault",
    detail: `${device}: ${fault?.message ?? "fault"}`,
    device,
    data: { ...(fault ?? {}) },
  };
}

/** The cause of an exception thrown by a motion or a device call. */
export function causeOfError(err: unknown, device: string): StopCause {
  const message = err instanceof Error ? err.message : String(err);
  return { source: "exception", detail: `${device}: ${message}`, device };
}

/**
 * How an episode stopped for `cause` ends. The task's judge owns task outcomes; fault sources end as `fault`; e-stop and safety
 * rules as `safety_stop`; a signal, an operator and a new episode as `aborted`; a contact the
 * safety profile stops on ends as the judge says (`task_failed`) or, when the task does not fail
 * on it, as `safety_stop`.
 */
export function endReasonFor(cause: StopCause, judge: TaskStatus): EndReason {
  switch (cause.source) {
    case "watchdog":
    case "device_fault":
    case "storage":
    case "exception":
      return "fault";
    case "tick":
      return "time_limit";
    case "signal":
    case "operator":
    case "client":
      return "aborted";
    case "task":
    case "contact":
      if (judge.state === "failed") return "task_failed";
      return cause.source === "task" ? "success" : "safety_stop";
    case "estop":
    case "safety":
      return "safety_stop";
  }
}

/** Stops reported as safety events: not the budget, a task success, or an abort. */
export function isSafetyEvent(reason: EndReason): boolean {
  return reason !== "time_limit" && reason !== "success" && reason !== "aborted";
}

/**
 * One arbiter per episode. Synchronous in its effect: `request` calls `backend.stop`, then aborts
 * the motion's controller, before it returns; the stop's promise is caught and handed to
 * `onStopFailed` (never an unhandled rejection).
 */
export class StopArbiter {
  private controller: AbortController | undefined;
  private first: StopCause | undefined;
  private last: Promise<void> = Promise.resolve();

  constructor(
    private readonly backend: Backend,
    private readonly onStopFailed: (err: unknown, cause: StopCause) => void,
  ) {}

  /** A fresh abort signal for the next motion; forgets the previous motion's cause. */
  arm(): AbortSignal {
    this.first = undefined;
    this.controller = new AbortController();
    return this.controller.signal;
  }

  /** The motion ended: its controller is no longer needed. */
  disarm(): void {
    this.controller = undefined;
  }

  /** The first stop cause since the last `arm()`. */
  get cause(): StopCause | undefined {
    return this.first;
  }

  /** Settles when the backend's latest requested stop has returned (never rejects). */
  get stopped(): Promise<void> {
    return this.last;
  }

  /**
   * Stop now. Returns true for the first cause since `arm()` (the caller records it); a repeat
   * from the same source does nothing, another source stops the backend again (safe) but does not
   * replace the first cause.
   */
  request(cause: StopCause): boolean {
    const first = this.first === undefined;
    if (!first && this.first!.source === cause.source) return false;
    if (first) this.first = cause;
    // the backend's stop first: the abort's listeners (the motion's own, a real arm's goal cancel
    // among them, EventTarget dispatch) ran ~0.3 ms before it in a process that had not aborted
    // yet, as on a signal (#10); the robot holds either way, this makes it hold first
    try {
      this.last = this.backend.stop(cause.detail).catch((err: unknown) => this.onStopFailed(err, cause));
    } catch (err) {
      this.onStopFailed(err, cause);
    }
    this.controller?.abort(cause.detail);
    return first;
  }
}
