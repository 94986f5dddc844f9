/**
 * An old-generation collection before each episode, while nothing moves.
 *
 * V8 collects the old generation when it nears a limit set from the live size at the last full
 * collection: it marks in steps taken from allocations on the loop thread (with the launchers'
 * `--single-threaded-gc` all of it runs there), then finishes in one pause that also sweeps and
 * compacts. Where that lands is V8's choice: bench/stop-latency.ts over the sim's sources counted
 * 6 of 28 such pauses inside a running motion (up to 4 ms), where a stop that arrives waits for
 * them; one full collection in a longer run took 80 ms.
 *
 * `collectBeforeEpisode` runs one full collection (mark-compact, synchronous) when an episode is
 * about to start: after the previous one ended, before the bench is reset (sim) or homed (real)
 * and before the new episode exists, so no agent call can be waiting for it (an operator call
 * may: the episode start answers that much later). The next episode then begins with the old
 * generation's limit set from what is live now, and an episode that promotes less than the
 * headroom runs without any old-generation work of V8's own. A long episode (the realtime setting
 * over minutes) can still reach the limit; the young generation there is placed by young-gc.ts.
 * After a full collection the first allocations run slower for a while (with the launchers'
 * `--single-threaded-gc` V8 sweeps on the loop thread, as allocation needs the pages; measured
 * in a plain node script: 100,000 small objects 11–16 ms right after `gc()`, 5.5–7 ms later):
 * the reset or homing, which allocates the most, comes right after it. On a real bench that
 * puts part of it in the homing's planning and motion, where V8's own marking steps could fall
 * as well.
 *
 * Needs V8's `gc` function (node --expose-gc, which the launchers pass: cli/scheduling.ts
 * LATENCY_NODE_ARGS); without it nothing is done.
 */
import { exposedGc, type V8Gc } from "./young-gc.ts";

/**
 * One full, synchronous collection when this process has V8's `gc`.
 * @returns how long it took, ms, or null when `gc` is not exposed
 */
export function collectBeforeEpisode(gc: V8Gc | null = exposedGc()): number | null {
  if (!gc) return null;
  const t0 = performance.now();
  gc();
  return performance.now() - t0;
}
