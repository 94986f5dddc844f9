/**
 * Waiting in tests: one sleep and one polled wait used by every suite. The timeout is a
 * deadline for a condition that must come true (a hang detector), never a speed assertion:
 * on a loaded machine the condition comes later, and the default deadline leaves room for that.
 */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/** Resolve once `pred()` holds; reject naming `what` when it has not held by the deadline. */
export async function waitFor(pred: () => boolean, what = "condition", timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(5);
  }
}
