import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Reconnector } from "./reconnect.ts";

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe("Reconnector", () => {
  it("doubles the delay up to the cap, retries on failure by itself, resets after success", async () => {
    const attempts: number[] = [];
    let failuresLeft = 4;
    let ups = 0;
    const r = new Reconnector({
      initialMs: 100,
      maxMs: 500,
      allowed: () => true,
      attempt: async () => {
        attempts.push(Date.now());
        if (failuresLeft-- > 0) throw new Error("not yet");
      },
      onUp: () => ups++,
    });
    const t0 = Date.now();
    r.schedule();
    r.schedule(); // one attempt at a time
    await vi.advanceTimersByTimeAsync(100 + 200 + 400 + 500 + 500);
    expect(attempts.map((t) => t - t0)).toEqual([100, 300, 700, 1200, 1700]);
    expect(ups).toBe(1);
    // after a success the next loss starts from the initial delay again
    r.schedule();
    await vi.advanceTimersByTimeAsync(100);
    expect(attempts.length).toBe(6);
  });

  it("does nothing when not allowed or cancelled", async () => {
    let allowed = false;
    const attempt = vi.fn(async () => {});
    const r = new Reconnector({ initialMs: 10, maxMs: 10, allowed: () => allowed, attempt, onUp: () => {} });
    r.schedule();
    await vi.advanceTimersByTimeAsync(50);
    expect(attempt).not.toHaveBeenCalled();
    allowed = true;
    r.schedule();
    r.cancel();
    await vi.advanceTimersByTimeAsync(50);
    expect(attempt).not.toHaveBeenCalled();
  });
});
