/**
 * The motion runner: one motion at a time (the busy flag), the runtime monitor armed for it, an
 * abort signal from the stop arbiter, and the stale-reading watchdog: readings that stop arriving
 * never reach the tick, so a timer on the backend clock asks the monitor and stops through the
 * one stop path.
 */
import type { Backend, JointTrajectory } from "../../seam/types.ts";
import type { MonitorVerdict, SafetyMonitor, StopVerdict } from "../safety/monitor.ts";
import type { StopArbiter } from "./stop.ts";

/**
 * Wall-clock interval of the stale-reading check while a motion runs, ms: one control period, so
 * a reading that is overdue stops the robot within about 1 ms of its deadline (bench/stop-latency.ts).
 */
export const STALE_CHECK_MS = 1;
/** A check this long after the previous one means the event loop was blocked: skip it, ms. */
export const LATE_CHECK_MS = 40;

export class MotionRunner {
  private running = false;

  constructor(
    private readonly backend: Backend,
    private readonly monitor: SafetyMonitor,
    private readonly arbiter: StopArbiter,
    /** a watchdog verdict: the episode turns it into a stop request */
    private readonly onWatchdog: (v: StopVerdict) => void,
  ) {}

  get busy(): boolean {
    return this.running;
  }

  /**
   * Run `body` as one motion. The body's error is rethrown after the runner is idle again; the
   * caller decides what it means.
   */
  async run(traj: JointTrajectory | null, body: (signal: AbortSignal) => Promise<void>): Promise<void> {
    this.running = true;
    const signal = this.arbiter.arm();
    this.monitor.begin(this.backend.read(), traj);
    // a check that fires late (the event loop was blocked, e.g. by a long pre-check) is skipped:
    // readings queued meanwhile have not been read yet, so the gap would be the gateway's own
    let lastCheckMs = Number.NaN;
    const watchdog = setInterval(() => {
      const nowMs = performance.now();
      const onTime = nowMs - lastCheckMs <= LATE_CHECK_MS;
      lastCheckMs = nowMs;
      if (!onTime || this.arbiter.cause) return;
      const v: MonitorVerdict = this.monitor.checkTime(this.backend.now());
      if (v !== "ok") this.onWatchdog(v);
    }, STALE_CHECK_MS);
    try {
      await body(signal);
    } finally {
      clearInterval(watchdog);
      this.arbiter.disarm();
      this.running = false;
    }
  }
}
