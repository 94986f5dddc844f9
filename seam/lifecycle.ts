/**
 * ONE lifecycle for everything that touches hardware (STYLE.md §2, ros2_control hardware
 * components): the simulator and the mirror behind the seam, the real bench, and each driver
 * inside it (Franka arm, buzz box, Firmata board).
 *
 * States, by what they allow:
 * - `unconfigured`: nothing open. configure() and shutdown() only.
 * - `inactive`: devices open. Readings yes (describe, read, capture, events, pings,
 *   privileged state); commands no (execute, hold, gripper, lamp, buzzer). The simulator's
 *   world powers (reset, snapshot, restore) are allowed: they touch no hardware.
 * - `active`: everything.
 * - `error`: a device failed or the robot reported an error. Readings yes (the last reading,
 *   whatever the cameras still deliver: an operator must see the bench), commands no, world
 *   powers no (the state may be inconsistent); recover() (operator) or shutdown().
 * - `finalized`: shut down. Nothing but shutdown() again, which does nothing.
 *
 * Transitions: configure (unconfigured → inactive), activate (inactive → active),
 * deactivate (active → inactive), shutdown (any → finalized), enterError (unconfigured | inactive |
 * active → error, from a component's own fault handling), recover (error → inactive).
 *
 * Components extend `LifecycleComponent` and write the hooks (`onConfigure`, `onActivate`,
 * `onDeactivate`, `onShutdown`, `onError`); the base class checks the table, makes the
 * transitions and throws `LifecycleError` naming the method, the state found and the states
 * allowed. `guard(method)` checks any other method against the same table.
 * Not in the table (allowed in every state): now(), onEvent(), stop() — a stop must always work.
 */

import { CodedError } from "./errors.ts";

export type LifecycleState = "unconfigured" | "inactive" | "active" | "finalized" | "error";

const ALL: readonly LifecycleState[] = ["unconfigured", "inactive", "active", "error", "finalized"];
/** devices open: readings flow */
const OPEN: readonly LifecycleState[] = ["inactive", "active", "error"];
/** devices open and healthy */
const HEALTHY: readonly LifecycleState[] = ["inactive", "active"];
const ACTIVE: readonly LifecycleState[] = ["active"];

/**
 * The one table {method → states in which it is allowed}. Every lifecycle-guarded method of
 * every backend and driver is named here; a component cannot guard a method that is not.
 */
export const LIFECYCLE_TABLE = {
  // transitions
  configure: ["unconfigured"],
  activate: ["inactive"],
  deactivate: ["active"],
  shutdown: ALL,
  recover: ["error"],
  // readings and queries: wherever the devices are open
  describe: OPEN,
  read: OPEN,
  capture: OPEN,
  privilegedState: OPEN,
  ping: OPEN,
  /** franka error recovery: an operator's way out of a reflex, also while in error */
  errorRecovery: OPEN,
  /** stopping the fingers is a stop: always allowed while connected */
  gripperStop: OPEN,
  // commands: active only
  execute: ACTIVE,
  hold: ACTIVE,
  /** realtime streaming (seam StreamingMotion): replace the streamed trajectory, watch it */
  streamReplace: ACTIVE,
  follow: ACTIVE,
  gripperMove: ACTIVE,
  gripperGrasp: ACTIVE,
  gripperHoming: ACTIVE,
  setLamp: ACTIVE,
  setBuzzer: ACTIVE,
  // simulated world powers: no hardware is touched, but not on an inconsistent (error) state
  reset: HEALTHY,
  snapshot: HEALTHY,
  restore: HEALTHY,
} as const satisfies Record<string, readonly LifecycleState[]>;

export type LifecycleMethod = keyof typeof LIFECYCLE_TABLE;

/** Every lifecycle state, in table order (for tests and docs). */
export const LIFECYCLE_STATES: readonly LifecycleState[] = ALL;

/** The states in which `method` is allowed. */
export function allowedStates(method: LifecycleMethod): readonly LifecycleState[] {
  return LIFECYCLE_TABLE[method];
}

/** What put a component into `error`. */
export interface LifecycleFault {
  device: string;
  message: string;
}

/**
 * Thrown by a lifecycle-guarded call in the wrong state (code RB_ERR_LIFECYCLE): names the
 * method, the state found, the states allowed and, in `error`, the fault that caused it.
 */
export class LifecycleError extends CodedError<"RB_ERR_LIFECYCLE"> {
  constructor(
    readonly method: string,
    readonly found: LifecycleState,
    readonly allowed: readonly LifecycleState[],
    readonly fault?: LifecycleFault,
  ) {
    super(
      "RB_ERR_LIFECYCLE",
      { method, found, allowed: [...allowed], ...(fault ? { fault: { ...fault } } : {}) },
      `${method}() is not allowed in lifecycle state "${found}" (allowed: ${allowed.join(", ")})` +
        (fault ? `; in the error state since a fault of ${fault.device}: ${fault.message}` : ""),
    );
    this.name = "LifecycleError";
  }
}

/**
 * Base of every hardware component. Subclasses write the hooks; the public transition methods
 * are final in spirit (do not override them; put the work in the hooks).
 */
export abstract class LifecycleComponent {
  #state: LifecycleState = "unconfigured";
  #fault: LifecycleFault | undefined;

  get lifecycle(): LifecycleState {
    return this.#state;
  }

  /** the fault that put the component into `error` (undefined in every other state) */
  get lifecycleFault(): LifecycleFault | undefined {
    return this.#state === "error" ? this.#fault : undefined;
  }

  /** Open the devices. Throws (state stays `unconfigured`, or `error` if the hook called enterError()). */
  async configure(): Promise<void> {
    this.guard("configure");
    await this.onConfigure();
    if (this.#state === "unconfigured") this.#state = "inactive";
  }

  /** Allow commands. */
  async activate(): Promise<void> {
    this.guard("activate");
    await this.onActivate();
    if (this.#state === "inactive") this.#state = "active";
  }

  /** Refuse commands again: the state is `inactive` from the call on (a running motion sees it), then the hook runs. */
  async deactivate(): Promise<void> {
    this.guard("deactivate");
    this.#state = "inactive";
    await this.onDeactivate();
  }

  /** Free everything; the state is `finalized` from the call on. Any number of times. */
  async shutdown(): Promise<void> {
    this.guard("shutdown");
    const from = this.#state;
    if (from === "finalized") return;
    this.#state = "finalized";
    await this.onShutdown(from);
  }

  /** Throw LifecycleError unless `method` is allowed in the current state. */
  protected guard(method: LifecycleMethod): void {
    const allowed: readonly LifecycleState[] = LIFECYCLE_TABLE[method];
    if (!allowed.includes(this.#state))
      throw new LifecycleError(method, this.#state, allowed, this.lifecycleFault);
  }

  /**
   * A device failed: enter `error` (from unconfigured, inactive or active) and run onError.
   * Returns false (and does nothing) when already in error or finalized.
   */
  protected enterError(fault: LifecycleFault): boolean {
    const s = this.#state;
    if (s === "error" || s === "finalized") return false;
    this.#state = "error";
    this.#fault = { device: fault.device, message: fault.message };
    this.onError(fault);
    return true;
  }

  /** Leave `error` (operator): guard, run `work`, then `inactive` (unless something changed the state meanwhile). */
  protected async recoverWith(work: () => Promise<void>): Promise<void> {
    this.guard("recover");
    await work();
    if (this.#state === "error") this.#state = "inactive";
  }

  /**
   * Fault injection (STYLE.md §7): put `c` into `error` exactly as its own fault handling would
   * (for tests of components whose devices cannot fail on their own, e.g. the simulator).
   */
  static injectFault(c: LifecycleComponent, fault: LifecycleFault): boolean {
    return c.enterError(fault);
  }

  protected abstract onConfigure(): Promise<void>;
  protected async onActivate(): Promise<void> {}
  protected async onDeactivate(): Promise<void> {}
  /** `from`: the state shutdown() was called in */
  protected async onShutdown(_from: LifecycleState): Promise<void> {}
  /** runs synchronously inside enterError(), after the state became `error` */
  protected onError(_fault: LifecycleFault): void {}
}
