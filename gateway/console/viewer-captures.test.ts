import { describe, expect, it } from "vitest";
import { ViewerCaptures } from "./viewer-captures.ts";

/** a capture that takes `ms` on the fake clock once `finish()` is called */
function rig(duty: number) {
  let t = 0;
  const caps = new ViewerCaptures({ duty, shareMs: 100, now: () => t });
  let made = 0;
  const pending: (() => void)[] = [];
  const make = (ms: number) => () => {
    made++;
    return new Promise<Buffer>((resolve) =>
      pending.push(() => {
        t += ms;
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
    const a = r.caps.get("front", r.make(40));
    await r.finish();
    expect(r.made()).toBe(1);
    expect(r.caps.nextFreshInMs).toBeCloseTo(760, 6);
    r.advance(700);
    // within the pause: the same image (same id), for this camera and no fresh one for another that has one
    expect(r.caps.get("front", r.make(40)).id).toBe(a.id);
    r.advance(70);
    const b = r.caps.get("front", r.make(40));
    expect(b.id).toBeGreaterThan(a.id);
    expect(r.made()).toBe(2);
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
});
