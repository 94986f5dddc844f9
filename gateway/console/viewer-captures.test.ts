import { describe, expect, it } from "vitest";
import { ViewerCaptures } from "./viewer-captures.ts";

/**
 * a capture that holds the thread for `ms` on the fake clock (the render), then settles once
 * `finish()` is called, after `waitMs` more (the encoder's thread, a busy event loop: not counted)
 */
function rig(duty: number, waitMs = 0) {
  let t = 0;
  const caps = new ViewerCaptures({ duty, shareMs: 100, now: () => t });
  let made = 0;
  const pending: (() => void)[] = [];
  const make = (ms: number) => () => {
    made++;
    t += ms;
    return new Promise<Buffer>((resolve) =>
      pending.push(() => {
        t += waitMs;
        resolve(Buffer.from([made]));
      }),
    );
  };
  const finish = async () => {
    for (const p of pending.splice(0)) p();
    await new Promise((r) => setImmediate(r));
  };
  return { caps, make, finish, advance: (ms: number) => void (t += ms), made: () => made };
}

describe("viewer captures on a budget", () => {
  it("a 40 ms capture at duty 0.05 allows the next fresh one 760 ms after it ends; the latest image in between", async () => {
    const r = rig(0.05);
    r.caps.get("front", r.make(400)); // the first image: outside the budget
    await r.finish();
    expect(r.caps.nextFreshInMs).toBe(0);
    r.advance(200);
    const a = r.caps.get("front", r.make(40));
    await r.finish();
    expect(r.made()).toBe(2);
    expect(r.caps.nextFreshInMs).toBeCloseTo(760, 6);
    r.advance(700);
    // within the pause: the same image (same id), for this camera and no fresh one for another that has one
    expect(r.caps.get("front", r.make(40)).id).toBe(a.id);
    r.advance(70);
    const b = r.caps.get("front", r.make(40));
    expect(b.id).toBeGreaterThan(a.id);
    expect(r.made()).toBe(3);
  });

  it("only the time the capture holds the thread counts, not the wait for its promise", async () => {
    const r = rig(0.05, 3000);
    r.caps.get("front", r.make(40));
    await r.finish();
    r.advance(200);
    r.caps.get("front", r.make(40));
    await r.finish();
    expect(r.caps.nextFreshInMs).toBeCloseTo(760, 6);
  });

  it("a camera without an image gets one at once; while a capture is in flight others wait", async () => {
    const r = rig(0.05);
    const front = r.caps.get("front", r.make(40));
    const side = r.caps.get("side", r.make(40)); // first image of its camera
    expect(r.made()).toBe(2);
    r.advance(200);
    expect(r.caps.get("front", r.make(40)).id).toBe(front.id); // in flight
    await r.finish();
    expect(await side.body).toEqual(Buffer.from([2]));
  });

  it("the camera with the oldest image of those watched goes first: none starves", async () => {
    const r = rig(0.05);
    const front = r.caps.get("front", r.make(40));
    await r.finish();
    r.advance(1);
    const side = r.caps.get("side", r.make(40));
    await r.finish();
    r.advance(200);
    // "side" asks first, but "front" (watched too) has the older image: it goes first
    expect(r.caps.get("side", r.make(40)).id).toBe(side.id);
    const f2 = r.caps.get("front", r.make(40));
    expect(f2.id).toBeGreaterThan(side.id);
    await r.finish();
    r.advance(900);
    expect(r.caps.get("side", r.make(40)).id).toBeGreaterThan(f2.id);
    expect(front.id).toBeLessThan(side.id);
  });

  it("viewers asking within the share window share one capture even without a budget", async () => {
    const r = rig(1);
    const a = r.caps.get("front", r.make(1));
    await r.finish();
    r.advance(50);
    expect(r.caps.get("front", r.make(1)).id).toBe(a.id);
    r.advance(60);
    expect(r.caps.get("front", r.make(1)).id).not.toBe(a.id);
  });

  it("a failed capture is not kept", async () => {
    let t = 0;
    const caps = new ViewerCaptures({ duty: 0.05, shareMs: 100, now: () => t });
    const bad = caps.get("front", () => Promise.reject(new Error("no frame")));
    await expect(bad.body).rejects.toThrow("no frame");
    t += 1;
    const ok = caps.get("front", () => Promise.resolve(Buffer.from([1])));
    expect(ok.id).not.toBe(bad.id);
    expect(() => new ViewerCaptures({ duty: 0, shareMs: 1 })).toThrow(RangeError);
  });

  it("a viewer that has the latest waits for a newer image instead of polling: one answer per new image", async () => {
    const r = rig(0.05);
    const a = r.caps.get("front", r.make(40));
    await r.finish();
    r.advance(200);
    const b = r.caps.get("front", r.make(40)); // the budget's pause starts once it settles: 760 ms
    await r.finish();
    const sleeps: number[] = [];
    // the fake clock moves by each sleep; the captures settle as they are made
    const sleep = async (ms: number) => {
      sleeps.push(ms);
      r.advance(ms);
      await r.finish();
    };
    const got = await r.caps.newer("front", b.id, r.make(40), 5000, () => false, sleep);
    expect(got.id).toBeGreaterThan(b.id);
    expect(r.made()).toBe(3); // one fresh capture, once the budget allowed it
    // it looked again no more often than every 50 ms and at most 250 ms apart, for the 760 ms
    // of the pause (overshooting it by less than the 50 ms of one look)
    expect(sleeps.every((ms) => ms >= 50 && ms <= 250)).toBe(true);
    const waited = sleeps.reduce((x, y) => x + y, 0);
    expect(waited).toBeGreaterThanOrEqual(760);
    expect(waited).toBeLessThan(810);
    // a viewer without an image (or with an old one) gets the latest at once
    expect((await r.caps.newer("front", a.id, r.make(40), 5000, () => false, sleep)).id).toBe(got.id);
  });

  it("the wait ends with the same image after waitMs, or as soon as the viewer is gone", async () => {
    const r = rig(0.001); // a 40 ms capture then allows the next one only after ~40 s
    r.caps.get("front", r.make(40));
    await r.finish();
    r.advance(200);
    const b = r.caps.get("front", r.make(40));
    await r.finish();
    const sleep = async (ms: number) => void r.advance(ms);
    const same = await r.caps.newer("front", b.id, r.make(40), 5000, () => false, sleep);
    expect(same.id).toBe(b.id);
    expect(r.made()).toBe(2);
    let looks = 0;
    const left = await r.caps.newer("front", b.id, r.make(40), 5000, () => ++looks > 2, sleep);
    expect(left.id).toBe(b.id);
    expect(looks).toBe(3);
  });
});
