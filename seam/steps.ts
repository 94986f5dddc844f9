/**
 * Work cut into steps: a generator that yields (nothing) at points where it may be paused and
 * returns its result. Pure code stays pure: the one writing the work decides where it may pause
 * (after an IK row, an interpolation segment, a pre-check window); the caller decides whether to
 * pause there. `runSteps` runs the work to its end synchronously (the pure-function API); the
 * gateway's planner runs it in time slices with a turn of the event loop between them, so a stop
 * that arrives while a long chunk is planned is handled at once (gateway/episode/planner.ts).
 */

/** A computation that may be paused at each `yield`; its return value is the result. */
export type Steps<T> = Generator<void, T, void>;

/** Run `work` to its end without pausing. */
export function runSteps<T>(work: Steps<T>): T {
  for (;;) {
    const r = work.next();
    if (r.done) return r.value;
  }
}
