/**
 * Work cut into steps: a generator that yields (nothing) at points where it may be paused and
 * returns its result. Pure code stays pure: the one writing the work decides where it may pause
 * (after an IK row, an interpolation segment, a pre-check window, a trajectory goal's point);
 * the caller decides whether to pause there. `runSteps` runs the work to its end synchronously
 * (the pure-function API); `runSliced` runs it in time slices with a turn of the event loop
 * between them, so a stop that arrives while long work runs is handled at once: the gateway's
 * planner (gateway/episode/planner.ts) and the ROS arm driver's goal build and serialisation
 * (drivers/ros2/franka-arm.ts) run theirs this way.
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

/** Work already done: steps without a pause point (an adapter with nothing to prepare). */
export function doneSteps<T>(value: T): Steps<T> {
  // biome-ignore lint/correctness/useYield: the steps of work that has none
  return (function* () {
    return value;
  })();
}

/**
 * CPU time sliced work may hold the event loop before it lets other work run, ms: a stop
 * (e-stop, contact, signal) that arrives meanwhile waits at most about this long. Planning a 3 s
 * chunk of tool poses (300 IK solves) takes ~10 ms warm, far more the first time in a process;
 * serialising its FollowJointTrajectory goal for rosbridge ~1.2 ms.
 */
export const SLICE_MS = 0.5;

export interface SliceOptions {
  /** pause once a slice has run this long, ms (0: at every pause point) */
  sliceMs?: number;
  /** the clock slices are measured on, ms (default performance.now) */
  now?: () => number;
  /** called after every pause, before the work goes on: throw to give up the work */
  resume?: () => void;
  /** one turn of the event loop (default setImmediate) */
  pause?: () => Promise<void>;
  /**
   * pause before the first slice and after the last one too: the work's slices do not share a
   * turn with what came before (an act's request parse and validation) or after (the motion's
   * start), and `resume` has the last word just before the caller goes on
   */
  pauseAround?: boolean;
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Run `work` in slices of about `sliceMs`, with a turn of the event loop between them (timers,
 * I/O, an e-stop request, a contact's bytes run there). `resume` is asked after each pause; when
 * it throws, the work is closed (its `finally` blocks run) and the error is the result.
 * @returns the work's result and the number of slices it ran in
 */
export async function runSliced<T>(
  work: Steps<T>,
  opts: SliceOptions = {},
): Promise<{ value: T; slices: number }> {
  const sliceMs = opts.sliceMs ?? SLICE_MS;
  const now = opts.now ?? (() => performance.now());
  const pause = opts.pause ?? nextTurn;
  const turn = async () => {
    await pause();
    opts.resume?.();
  };
  let slices = 1;
  try {
    if (opts.pauseAround) await turn();
    let sliceStart = now();
    for (;;) {
      const r = work.next();
      if (r.done) {
        if (opts.pauseAround) await turn();
        return { value: r.value, slices };
      }
      if (now() - sliceStart < sliceMs) continue;
      await turn();
      slices++;
      sliceStart = now();
    }
  } finally {
    work.return(undefined as T);
  }
}
