/**
 * Maps ROS header stamps (the robot computer's clock) to the gateway's monotonic clock.
 *
 * offset ≈ min over recent messages of (receipt time − stamp): the least-delayed message
 * bounds the true offset best. The minimum is renewed every `windowS` so clock drift is
 * followed. One StampClock per ROS clock: share it between the arm and the cameras that
 * are stamped by the same machine.
 */
export class StampClock {
  private offsetS = Number.NaN;
  private bestAtS = Number.NEGATIVE_INFINITY;

  /**
   * @param now gateway monotonic clock, s
   * @param windowS how long a minimum is trusted before a larger sample may replace it, s
   */
  constructor(
    private readonly now: () => number,
    private readonly windowS = 2,
  ) {}

  /**
   * Record a message stamped `stampS` that arrived now; returns its time on the gateway clock.
   * Runs per message: allocation-free.
   */
  observe(stampS: number): number {
    const nowS = this.now();
    const sample = nowS - stampS;
    if (Number.isNaN(this.offsetS) || sample < this.offsetS || nowS - this.bestAtS > this.windowS) {
      this.offsetS = sample;
      this.bestAtS = nowS;
    }
    return Math.min(nowS, stampS + this.offsetS);
  }

  /** gateway time of a stamp (now() until the first observation) */
  toGateway(stampS: number): number {
    if (Number.isNaN(this.offsetS)) return this.now();
    return stampS + this.offsetS;
  }

  /** current estimate of (gateway − ROS) seconds, NaN before the first observation */
  get offset(): number {
    return this.offsetS;
  }
}
