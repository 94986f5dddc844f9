/**
 * The episode clock and budgets: episode seconds are backend seconds since the start; the time
 * limit and the step budget decide `time_limit` / `step_limit`.
 */
import type { Backend } from "../../seam/types.ts";
import type { TaskBudgets } from "../../tasks/types.ts";
import type { EndReason } from "../api/schemas.ts";

export class EpisodeClock {
  /** backend seconds at episode t = 0 */
  readonly t0: number;

  constructor(
    private readonly backend: Backend,
    private readonly budgets: TaskBudgets,
  ) {
    this.t0 = backend.now();
  }

  /** episode seconds now */
  t(): number {
    return this.backend.now() - this.t0;
  }

  timeLeftS(): number {
    return Math.max(0, this.budgets.timeLimitS - this.t());
  }

  /** has episode time `t` reached the time limit? (control loop: no allocation) */
  timeUp(t: number): boolean {
    return t >= this.budgets.timeLimitS;
  }

  /** the budget that ends the episode after `steps` motions, if any */
  exhausted(steps: number): EndReason | undefined {
    if (steps >= this.budgets.maxSteps) return "step_limit";
    if (this.timeUp(this.t())) return "time_limit";
    return undefined;
  }
}
