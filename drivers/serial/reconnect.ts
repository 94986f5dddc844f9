/**
 * Reconnection with exponential backoff for device drivers: one attempt at a time; the delay
 * doubles after every scheduled attempt up to a cap and goes back to the initial delay after a
 * success. A failed attempt schedules the next one by itself. Used by the buzz-box and Firmata
 * contact drivers.
 */
export interface ReconnectOptions {
  /** first delay, ms */
  initialMs: number;
  /** largest delay, ms */
  maxMs: number;
  /** may an attempt run now? (e.g. the driver is still configured) */
  allowed: () => boolean;
  /** bring the link up; rejects when it is not back yet */
  attempt: () => Promise<void>;
  /** the link is back */
  onUp: () => void;
  /** an attempt failed (clean up before the next one) */
  onFailure?: () => void;
}

export class Reconnector {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private delayMs: number;

  constructor(private readonly opts: ReconnectOptions) {
    this.delayMs = opts.initialMs;
  }

  /** Schedule an attempt after the current delay (no-op while one is pending or not allowed). */
  schedule(): void {
    if (this.timer || !this.opts.allowed()) return;
    const delay = this.delayMs;
    this.delayMs = Math.min(this.delayMs * 2, this.opts.maxMs);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (!this.opts.allowed()) return;
      this.opts.attempt().then(
        () => {
          this.delayMs = this.opts.initialMs;
          this.opts.onUp();
        },
        () => {
          this.opts.onFailure?.();
          this.schedule();
        },
      );
    }, delay);
  }

  /** Drop a pending attempt (shutdown). */
  cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
