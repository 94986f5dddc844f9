/**
 * StampClock on simulated links (a settable gateway clock, no timers): a steady 100 Hz stream
 * with small jitter, plus single late messages, bursts (held back, then delivered at once),
 * reordering and clock drift. What matters downstream: the gateway times of the messages keep
 * their true spacing (the runtime monitor's stale-reading check sees no false gap) and stay
 * close to the true receipt-free time.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { StampClock } from "./stamp-clock.ts";

const PERIOD_S = 0.01;
const BASE_DELAY_S = 0.001;
const OFFSET_S = 1234.5; // gateway − ROS clock

interface Msg {
  /** ROS stamp, s */
  stamp: number;
  /** gateway time of arrival, s */
  arrive: number;
}

/** Feed messages in arrival order; returns the gateway time given to each (by stamp order). */
function run(msgs: Msg[], windowS = 2): { mapped: Map<number, number>; clock: StampClock } {
  let now = 0;
  const clock = new StampClock(() => now, windowS);
  const mapped = new Map<number, number>();
  for (const m of [...msgs].sort((a, b) => a.arrive - b.arrive)) {
    now = m.arrive;
    mapped.set(m.stamp, clock.observe(m.stamp));
  }
  return { mapped, clock };
}

/** A steady stream: stamp k·period, arrival = stamp + offset + base delay + jitter(k). */
function steady(n: number, jitter: (k: number) => number = () => 0): Msg[] {
  return Array.from({ length: n }, (_, k) => {
    const stamp = k * PERIOD_S;
    return { stamp, arrive: stamp + OFFSET_S + BASE_DELAY_S + jitter(k) };
  });
}

/** largest spacing between consecutive gateway times, in stamp order, s */
function maxGap(mapped: Map<number, number>): number {
  const ts = [...mapped.entries()].sort((a, b) => a[0] - b[0]).map((e) => e[1]);
  let g = 0;
  for (let i = 1; i < ts.length; i++) g = Math.max(g, ts[i]! - ts[i - 1]!);
  return g;
}

/** largest |gateway time − (stamp + true offset)|, s */
function maxError(mapped: Map<number, number>, offset = OFFSET_S): number {
  let e = 0;
  for (const [stamp, t] of mapped) e = Math.max(e, Math.abs(t - (stamp + offset)));
  return e;
}

describe("StampClock", () => {
  it("maps a steady stream to the true offset", () => {
    const { mapped, clock } = run(steady(500, (k) => ((k * 7) % 5) * 1e-4));
    expect(clock.offset).toBeCloseTo(OFFSET_S + BASE_DELAY_S, 9);
    expect(maxError(mapped)).toBeLessThanOrEqual(BASE_DELAY_S + 1e-9);
  });

  it("a single message 120 ms late at the moment the window renews does not move the clock (the 129 ms gap)", () => {
    // the old rule took the first sample after 2 s as the new minimum, whatever its delay: a
    // message stamped ~1.88 s and 120 ms late arrives just after the first 2 s
    for (let lateK = 170; lateK <= 420; lateK++) {
      const msgs = steady(600);
      msgs[lateK]!.arrive += 0.12;
      const { mapped } = run(msgs);
      expect(maxGap(mapped), `late message #${lateK}`).toBeLessThan(PERIOD_S + 1e-6);
      expect(maxError(mapped)).toBeLessThanOrEqual(BASE_DELAY_S + 1e-9);
    }
  });

  it("a burst (messages held back 300 ms, then delivered at once) keeps its true spacing", () => {
    const msgs = steady(800);
    for (let k = 300; k < 330; k++) msgs[k]!.arrive = 330 * PERIOD_S + OFFSET_S + BASE_DELAY_S;
    const { mapped } = run(msgs);
    expect(maxGap(mapped)).toBeLessThan(PERIOD_S + 1e-6);
    expect(maxError(mapped)).toBeLessThanOrEqual(BASE_DELAY_S + 1e-9);
  });

  it("reordered messages get the gateway times of their stamps", () => {
    const msgs = steady(600);
    for (let k = 10; k + 1 < msgs.length; k += 37) {
      // k+1 (on time) overtakes k
      msgs[k]!.arrive = msgs[k + 1]!.arrive + 0.002;
    }
    const { mapped } = run(msgs);
    expect(maxGap(mapped)).toBeLessThan(PERIOD_S + 1e-6);
    expect(maxError(mapped)).toBeLessThanOrEqual(BASE_DELAY_S + 1e-9);
  });

  it("follows a drifting robot clock (100 ppm, both ways) within window × drift", () => {
    for (const ppm of [100, -100]) {
      const rate = ppm * 1e-6;
      // the robot clock runs at (1 + rate): stamp = gateway time · (1 + rate)
      const msgs = Array.from({ length: 6000 }, (_, k) => {
        const tg = k * PERIOD_S;
        return { stamp: tg * (1 + rate), arrive: tg + OFFSET_S + BASE_DELAY_S };
      });
      let now = 0;
      const clock = new StampClock(() => now, 2);
      let worst = 0;
      for (const m of msgs) {
        now = m.arrive;
        const t = clock.observe(m.stamp);
        const truth = m.arrive - BASE_DELAY_S;
        worst = Math.max(worst, Math.abs(t - truth));
      }
      expect(worst, `${ppm} ppm`).toBeLessThanOrEqual(BASE_DELAY_S + 2 * Math.abs(rate) + 1e-6);
    }
  });

  it("follows a real change of the link delay within one window", () => {
    const msgs = steady(1000);
    for (let k = 300; k < msgs.length; k++) msgs[k]!.arrive += 0.05; // the link is 50 ms slower for good
    let now = 0;
    const clock = new StampClock(() => now, 2);
    for (const m of msgs) {
      now = m.arrive;
      clock.observe(m.stamp);
    }
    expect(clock.offset).toBeCloseTo(OFFSET_S + BASE_DELAY_S + 0.05, 9);
  });

  it("property: random late, bursty and reordered messages never open a gap nor shift the steady ones", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            // from #20 on: before its first on-time message a clock cannot know better
            k: fc.integer({ min: 20, max: 999 }),
            extraS: fc.double({ min: 0, max: 0.5, noNaN: true }),
          }),
          { maxLength: 60 },
        ),
        fc.array(fc.integer({ min: 20, max: 999 }), { maxLength: 10 }),
        (late, bursts) => {
          const msgs = steady(1000, (k) => ((k * 13) % 7) * 5e-5);
          for (const { k, extraS } of late) msgs[k]!.arrive += extraS;
          for (const b of bursts) {
            const end = Math.min(b + 20, msgs.length - 1);
            const at = msgs[end]!.arrive;
            for (let k = b; k < end; k++) msgs[k]!.arrive = Math.max(msgs[k]!.arrive, at);
          }
          const { mapped } = run(msgs);
          // late messages are 6 % of the stream at most: every window has on-time ones
          expect(maxError(mapped)).toBeLessThanOrEqual(BASE_DELAY_S + 3e-4 + 1e-9);
          expect(maxGap(mapped)).toBeLessThan(PERIOD_S + 6e-4);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("refuses a window that is not positive", () => {
    expect(() => new StampClock(() => 0, 0)).toThrow(RangeError);
  });
});
