/**
 * The e-stop latch: once engaged, motion stays refused until an operator releases it.
 * Idempotent: engaging an engaged latch or releasing a released one changes nothing and
 * records nothing. The gateway checks `isEngaged` before every motion and calls the
 * backend's stop() on engage.
 */

export interface EStopRecord {
  action: "engage" | "release";
  /** who did it: "operator", "safety", "gateway", … */
  by: string;
  /** why (engage only) */
  reason?: string;
  /** wall-clock milliseconds since the Unix epoch */
  atMs: number;
}

export type EStopListener = (engaged: boolean, record: EStopRecord) => void;

export class EStopLatch {
  private engagedBy: EStopRecord | null = null;
  private readonly log: EStopRecord[] = [];
  private readonly listeners = new Set<EStopListener>();

  /** @param clockMs wall clock in ms (injectable for tests) */
  constructor(private readonly clockMs: () => number = Date.now) {}

  /** Engage. Returns true when the state changed (false when already engaged). */
  engage(reason: string, by: string): boolean {
    if (this.engagedBy) return false;
    const rec: EStopRecord = Object.freeze({ action: "engage", by, reason, atMs: this.clockMs() });
    this.engagedBy = rec;
    this.push(rec, true);
    return true;
  }

  /** Release. Returns true when the state changed (false when not engaged). */
  release(by: string): boolean {
    if (!this.engagedBy) return false;
    this.engagedBy = null;
    this.push(Object.freeze({ action: "release", by, atMs: this.clockMs() }), false);
    return true;
  }

  get isEngaged(): boolean {
    return this.engagedBy !== null;
  }

  /** The engage record in force, if engaged. */
  get current(): EStopRecord | null {
    return this.engagedBy;
  }

  /** Every state change, oldest first. */
  get history(): readonly EStopRecord[] {
    return this.log.slice();
  }

  /** Subscribe to state changes; returns an unsubscribe function. */
  onChange(listener: EStopListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private push(rec: EStopRecord, engaged: boolean): void {
    this.log.push(rec);
    for (const l of this.listeners) l(engaged, rec);
  }
}
