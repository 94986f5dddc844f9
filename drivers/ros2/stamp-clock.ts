/**
 * Maps ROS header stamps (the robot computer's clock) to the gateway's monotonic clock.
 *
 * Every message gives one sample of (receipt time − stamp) = true offset + its transport delay.
 * Delays are never negative, so the least-delayed message bounds the true offset best: the
 * estimate is the minimum sample over a sliding window of `windowS`. The window is kept as
 * `BUCKETS` sub-windows, each with its own minimum; when the oldest sub-window expires, the
 * estimate becomes the minimum of the ones left (not the next sample, whatever its delay). So a
 * late, bursty or reordered message moves the estimate only when EVERY message of a whole window
 * was at least that late — then the delay is the link's, not one message's.
 *
 * Drift: the minimum follows a decreasing offset at once and an increasing one within `windowS`;
 * a clock drifting by r (e.g. 100 ppm) leaves at most windowS × r (0.2 ms at 2 s) of lag.
 * One StampClock per ROS clock: share it between the arm and the cameras that are stamped by
 * the same machine.
 */
const BUCKETS = 8;

export class StampClock {
  private offsetS = Number.NaN;
  private readonly bucketS: number;
  /** sub-window id (floor(now / bucketS)) of each slot; NaN = empty */
  private readonly ids = new Float64Array(BUCKETS).fill(Number.NaN);
  /** minimum sample of each slot's sub-window, s */
  private readonly mins = new Float64Array(BUCKETS);

  /**
   * @param now gateway monotonic clock, s
   * @param windowS span of messages the minimum is taken over, s
   */
  constructor(
    private readonly now: () => number,
    windowS = 2,
  ) {
    if (!(windowS > 0)) throw new RangeError(`StampClock windowS must be > 0, got ${windowS}`);
    this.bucketS = windowS / BUCKETS;
  }

  /**
   * Record a message stamped `stampS` that arrived now; returns its time on the gateway clock
   * (never later than now). Runs per message: allocation-free.
   */
  observe(stampS: number): number {
    const nowS = this.now();
    const sample = nowS - stampS;
    const id = Math.floor(nowS / this.bucketS);
    const slot = ((id % BUCKETS) + BUCKETS) % BUCKETS;
    if (this.ids[slot] !== id) {
      this.ids[slot] = id;
      this.mins[slot] = sample;
    } else if (sample < this.mins[slot]!) this.mins[slot] = sample;
    let best = Number.POSITIVE_INFINITY;
    for (let k = 0; k < BUCKETS; k++) {
      const age = id - this.ids[k]!; // NaN for an empty slot: skipped
      if (age >= 0 && age < BUCKETS && this.mins[k]! < best) best = this.mins[k]!;
    }
    this.offsetS = best;
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
