/**
 * Camera images for the console's viewers, on a budget. On a simulated bench a capture is a
 * render (~40 ms for 640×480 on this machine) on the same thread as the physics, so viewers
 * polling four cameras five times a second would take most of the control loop's CPU. Fresh
 * captures for viewers therefore take at most `duty` of the wall time, all cameras and viewers
 * together: after a capture that held the thread for d ms (the synchronous part of `make()`: the
 * render; waiting for the event loop or for the JPEG encoder's thread is not counted, or a busy
 * act would stretch the pause without end) the next fresh one starts no sooner than d·(1/duty − 1)
 * ms after it settles, and one at a time, to the camera whose image is the oldest of those viewers asked for
 * lately (so no camera starves); in between every request gets the latest image of its camera. On
 * a real bench a capture hands over the camera's latest JPEG (well under a millisecond), so the
 * budget never binds there. Each image has an id: a viewer that has the latest waits (`newer`)
 * until there is a newer one instead of polling, and is told it has it already when none comes.
 */

export interface ViewerImage {
  /** increases with every fresh capture */
  id: number;
  body: Promise<Buffer>;
}

export interface ViewerCapturesOptions {
  /** largest share of wall time fresh captures may take (0 < duty ≤ 1) */
  duty: number;
  /** viewers asking within this window share one capture, ms */
  shareMs: number;
  /** ms clock (default performance.now) */
  now?: () => number;
}

export class ViewerCaptures {
  private readonly cache = new Map<string, ViewerImage & { at: number; askedAt: number }>();
  private nextFreshAt = Number.NEGATIVE_INFINITY;
  private inFlight = 0;
  private seq = 0;
  private readonly now: () => number;

  constructor(private readonly opts: ViewerCapturesOptions) {
    if (!(opts.duty > 0 && opts.duty <= 1)) throw new RangeError(`duty must be in (0, 1], got ${opts.duty}`);
    this.now = opts.now ?? (() => performance.now());
  }

  /** ms until the budget allows the next fresh capture (0: now); viewers may wait this long before asking */
  get nextFreshInMs(): number {
    return Math.max(0, this.nextFreshAt - this.now());
  }

  /** The image of `key`: fresh (`make()`) when the budget allows or none exists yet, else the latest. */
  get(key: string, make: () => Promise<Buffer>): ViewerImage {
    const now = this.now();
    const c = this.cache.get(key);
    if (c) {
      c.askedAt = now;
      if (
        now - c.at < this.opts.shareMs ||
        now < this.nextFreshAt ||
        this.inFlight > 0 ||
        this.olderWaiting(c, now)
      )
        return c;
    }
    const body = make();
    const d = this.now() - now;
    const entry = { id: ++this.seq, at: now, askedAt: now, body };
    this.cache.set(key, entry);
    this.inFlight++;
    entry.body.then(
      () => {
        this.inFlight--;
        // a camera's first image is outside the budget (and its cost is no estimate: the
        // renderer's first frame warms caches and the JIT up)
        if (c) this.nextFreshAt = Math.max(this.nextFreshAt, this.now() + d * (1 / this.opts.duty - 1));
      },
      () => {
        this.inFlight--;
        if (this.cache.get(key) === entry) this.cache.delete(key);
      },
    );
    return entry;
  }

  /**
   * The first image of `key` whose id is not `have`: asks `get` again whenever the budget may
   * allow a fresh capture (a timer, no request), until one comes, `waitMs` pass (then the same
   * image) or `gone()` says the viewer left. A viewer that has the latest image waits here
   * instead of asking again and again: one request per new image, not one per poll.
   */
  async newer(
    key: string,
    have: number | undefined,
    make: () => Promise<Buffer>,
    waitMs: number,
    gone: () => boolean,
    sleep: (ms: number) => Promise<unknown> = (ms) => new Promise((r) => setTimeout(r, ms)),
  ): Promise<ViewerImage> {
    const until = this.now() + waitMs;
    let img = this.get(key, make);
    while (img.id === have && !gone()) {
      const left = until - this.now();
      if (left <= 0) break;
      // the budget's pause, or the turn of a camera with an older image: look again a little later
      // (never longer than LOOK_MS, so a viewer that left or a gateway that closes is noticed soon)
      await sleep(Math.min(left, LOOK_MS, Math.max(RETRY_MS, this.nextFreshInMs)));
      if (gone()) break;
      img = this.get(key, make);
    }
    return img;
  }

  /** another camera asked for lately has an older image: it goes first */
  private olderWaiting(c: { at: number }, now: number): boolean {
    for (const o of this.cache.values())
      if (o !== c && o.at < c.at && now - o.askedAt < RECENT_MS) return true;
    return false;
  }
}

/** a camera counts as watched when a viewer asked for it this recently, ms (a waiting viewer asks on every retry) */
const RECENT_MS = 2000;
/** a waiting viewer looks again this often at least, ms, while the budget would allow a capture but another camera's turn comes first */
const RETRY_MS = 50;
/** a waiting viewer looks again after this long at most, ms */
const LOOK_MS = 250;
