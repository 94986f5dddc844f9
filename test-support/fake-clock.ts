/**
 * A wall clock for deterministic realtime tests: time moves only when the test says so, and each
 * sleeper wakes at its own time with the work it starts run before the clock moves on.
 */
import type { WallClock, Wakeup, Waking } from "../gateway/episode/realtime.ts";

interface FakeSleep extends Waking {
  at: number;
}

export class FakeClock implements WallClock {
  private sleeps: FakeSleep[] = [];
  /** the end of every precise sleep asked for, in order */
  readonly preciseSleeps: number[] = [];

  /** @param t wall seconds at the start */
  constructor(public t = 100) {}

  now(): number {
    return this.t;
  }

  sleepUntil(tS: number, signal: AbortSignal, precise = false, wakeup?: Wakeup): Promise<void> {
    if (precise) this.preciseSleeps.push(tS);
    if (tS <= this.t || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const onAbort = () => s.wake();
      const s: FakeSleep = {
        at: tS,
        wake: () => {
          const i = this.sleeps.indexOf(s);
          if (i >= 0) this.sleeps.splice(i, 1);
          wakeup?.disarm(s);
          signal.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      this.sleeps.push(s);
      wakeup?.arm(s);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** move to `tS`, waking each sleeper at its own time and letting the woken work run */
  async advanceTo(tS: number): Promise<void> {
    for (;;) {
      this.sleeps.sort((a, b) => a.at - b.at);
      const s = this.sleeps[0];
      if (!s || s.at > tS + 1e-12) break;
      // a sleeper whose time the test had already passed (t set by hand) wakes now, late
      this.t = Math.max(this.t, s.at);
      s.wake();
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    }
    this.t = tS;
  }

  /** move on by `dS` seconds */
  advance(dS: number): Promise<void> {
    return this.advanceTo(this.t + dS);
  }
}
