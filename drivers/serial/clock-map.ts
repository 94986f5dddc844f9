/**
 * Maps board microseconds to host seconds: `host = boardUs·1e-6 + offsetS`. Pure and
 * allocation-light; the method is documented in drivers/firmware/buzzbox/PROTOCOL.md
 * ("Host-side clock mapping"):
 * - every received line gives an upper bound `offset ≤ hostRecvS − boardS` (min over a window);
 * - every ping/pong gives an interval `[s + txPing − t, r − txPong − t]`; the narrowest of the last
 *   `window` pongs is used (minimum filter), clamped to the upper bound.
 */
export interface ClockMapOptions {
  /** pongs kept for the minimum filter */
  window: number;
  /** upper-bound samples kept (one per received line) */
  boundWindow: number;
}

export class ClockMap {
  private readonly pongMid: Float64Array;
  private readonly pongHalf: Float64Array;
  private pongCount = 0;
  private pongNext = 0;
  private readonly bounds: Float64Array;
  private boundCount = 0;
  private boundNext = 0;

  constructor(opts: ClockMapOptions = { window: 8, boundWindow: 256 }) {
    this.pongMid = new Float64Array(opts.window);
    this.pongHalf = new Float64Array(opts.window);
    this.bounds = new Float64Array(opts.boundWindow);
  }

  /** Forget everything (the board restarted its clock). */
  reset(): void {
    this.pongCount = this.pongNext = this.boundCount = this.boundNext = 0;
  }

  /** True once any sample arrived. */
  get ready(): boolean {
    return this.boundCount > 0 || this.pongCount > 0;
  }

  /** A line stamped `boardUs` was received at host time `hostRecvS`. */
  addReceived(hostRecvS: number, boardUs: number): void {
    this.bounds[this.boundNext] = hostRecvS - boardUs * 1e-6;
    this.boundNext = (this.boundNext + 1) % this.bounds.length;
    if (this.boundCount < this.bounds.length) this.boundCount++;
  }

  /**
   * A pong stamped `boardUs` answered a ping sent at host time `sentS` and received at `recvS`;
   * `pingTxS` / `pongTxS` are the UART times of the two lines (0 on a pty).
   */
  addPong(sentS: number, recvS: number, boardUs: number, pingTxS: number, pongTxS: number): void {
    const b = boardUs * 1e-6;
    const lo = sentS + pingTxS - b;
    const hi = recvS - pongTxS - b;
    const mid = (lo + hi) / 2;
    this.pongMid[this.pongNext] = mid;
    this.pongHalf[this.pongNext] = Math.abs(hi - lo) / 2;
    this.pongNext = (this.pongNext + 1) % this.pongMid.length;
    if (this.pongCount < this.pongMid.length) this.pongCount++;
  }

  /** Smallest upper bound in the window (Infinity when none). */
  upperBoundS(): number {
    let m = Number.POSITIVE_INFINITY;
    for (let i = 0; i < this.boundCount; i++) m = Math.min(m, this.bounds[i]!);
    return m;
  }

  /** Uncertainty (half-width) of the pong sample in use, s; Infinity before the first pong. */
  uncertaintyS(): number {
    let best = Number.POSITIVE_INFINITY;
    for (let i = 0; i < this.pongCount; i++) best = Math.min(best, this.pongHalf[i]!);
    return best;
  }

  /** Current offset estimate, s (NaN before any sample). */
  offsetS(): number {
    const ub = this.upperBoundS();
    let best = -1;
    for (let i = 0; i < this.pongCount; i++)
      if (best < 0 || this.pongHalf[i]! < this.pongHalf[best]!) best = i;
    if (best >= 0) return Math.min(this.pongMid[best]!, ub);
    return ub === Number.POSITIVE_INFINITY ? Number.NaN : ub;
  }

  /** Board µs → host seconds (NaN before any sample). */
  toHostS(boardUs: number): number {
    return boardUs * 1e-6 + this.offsetS();
  }
}
