/**
 * The frame store's budget (issue 10, item 13): every byte is counted before it is allocated
 * (captures reserve, encodes take a bound from the headroom, other holders count once), a frame
 * stays fetchable for its retention time, over capacity is coded.
 */
import { describe, expect, it } from "vitest";
import type { CameraDescription, Frame } from "../../seam/types.ts";
import { isGatewayError } from "../errors.ts";
import { CaptureAdmission, frameBytes } from "../api/capacity.ts";
import { encodeBoundBytes, FrameStore } from "./frame-store.ts";

const W = 64;
const H = 48;
const RGB = W * H * 3;
const DEPTH = W * H * 2;

/** a frame with a smooth image and depth plane, like a render (its PNG is smaller than the raw) */
function frame(seed: number): Frame {
  const rgb = new Uint8Array(RGB);
  const depth = new Uint16Array(W * H);
  for (let i = 0; i < rgb.length; i++) rgb[i] = (Math.floor(i / (3 * W)) * 4 + seed) & 0xff;
  for (let i = 0; i < depth.length; i++) depth[i] = 300 + Math.floor(i / W) * 10 + seed;
  return {
    camera: "front",
    t: seed,
    rgb: { kind: "raw", width: W, height: H, channels: 3, data: rgb },
    depthMm: { width: W, height: H, data: depth },
  };
}

/** counted bytes never above the budget */
function expectWithin(store: FrameStore): void {
  const u = store.usage;
  expect(u.bytes + u.reserved + u.encoding).toBeLessThanOrEqual(u.maxBytes);
  expect(u.bytes).toBeGreaterThanOrEqual(0);
  expect(u.reserved).toBeGreaterThanOrEqual(0);
}

describe("frame store budget", () => {
  it("a burst of captures, recorder holds and fetches never counts more than the budget; refusals are coded; every acknowledged frame is fetchable within its retention", async () => {
    let now = 0;
    // two cameras' worth, as the HTTP layer reserves (images, depth planes, the recorder's copies)
    const perCall = 2 * frameBytes({ width: W, height: H, depth: true } as CameraDescription, true);
    const store = new FrameStore({
      maxBytes: perCall * 40,
      minRetentionMs: 10_000,
      encodeHeadroomBytes: encodeBoundBytes(RGB) * 2,
      nowMs: () => now,
    });
    const admission = new CaptureAdmission(store, 4);
    const acknowledged: { id: string; atMs: number }[] = [];
    const refusals: unknown[] = [];
    const recorderQueue: (() => void)[] = [];
    const fetches: Promise<unknown>[] = [];
    for (let call = 0; call < 60; call++) {
      now += 50;
      let done: () => void;
      try {
        done = admission.admit(perCall);
      } catch (e) {
        refusals.push(e);
        expectWithin(store);
        continue;
      }
      expectWithin(store);
      for (let cam = 0; cam < 2; cam++) {
        const f = frame(call * 2 + cam);
        const ids = store.put(f, "png", true);
        expectWithin(store);
        // the recorder keeps the rgb image (and makes copies of it) until it has written it
        recorderQueue.push(store.hold([f.rgb.data as Uint8Array], RGB / 2));
        expectWithin(store);
        acknowledged.push({ id: ids.rgb, atMs: now }, { id: ids.depth!, atMs: now });
      }
      done();
      expectWithin(store);
      // the client fetches some of them at once, the recorder writes a little later
      if (call % 3 === 0) {
        for (const a of acknowledged.slice(-2)) {
          const p = store.get(a.id)!;
          fetches.push(p.then(() => expectWithin(store)));
          expectWithin(store);
        }
      }
      if (call % 2 === 1) recorderQueue.shift()?.();
      await new Promise((r) => setImmediate(r));
      expectWithin(store);
    }
    await Promise.all(fetches);
    expect(refusals.length).toBeGreaterThan(0);
    for (const e of refusals) {
      expect(isGatewayError(e) && e.code === "RB_ERR_OVER_CAPACITY" && e.status === 503).toBe(true);
    }
    // everything acknowledged less than the retention ago is still there and encodes
    const young = acknowledged.filter((a) => now - a.atMs < 10_000);
    expect(young.length).toBe(acknowledged.length); // the burst lasted 3 s
    const imgs = await Promise.all(young.map((a) => store.get(a.id)));
    for (const img of imgs) expect(img?.data.byteLength).toBeGreaterThan(0);
    expectWithin(store);
    for (const r of recorderQueue) r();
    expectWithin(store);
  });

  it("the encoded copy replaces the raw image; an image held by the recorder counts once, also after eviction", async () => {
    let now = 0;
    const store = new FrameStore({ maxBytes: 100_000, minRetentionMs: 1000, nowMs: () => now });
    const f = frame(1);
    const ids = store.put(f, "png", true);
    expect(store.usage.bytes).toBe(RGB + DEPTH);
    const release = store.hold([f.rgb.data as Uint8Array]);
    expect(store.usage.bytes).toBe(RGB + DEPTH); // the same buffer: counted once
    const depthPng = await store.get(ids.depth!)!;
    expect(store.usage.bytes).toBe(RGB + depthPng.data.byteLength);
    expect(store.usage.encoding).toBe(0);
    // the frames age out and a big reservation evicts them; the recorder still holds the rgb image
    now = 2000;
    // the budget less the encode headroom and the garbage slack (an eighth each), less the
    // recorder's image, less a little
    const r = store.reserve(100_000 - 2 * 12_500 - RGB - 10);
    expect(r).toBeDefined();
    expect(store.get(ids.rgb)).toBeUndefined();
    expect(store.usage.bytes).toBe(RGB);
    release();
    expect(store.usage.bytes).toBe(0);
    r!();
    expect(store.usage).toMatchObject({ bytes: 0, reserved: 0, encoding: 0 });
  });

  it("stored frames are taken out of the call's reservation, not counted twice", () => {
    const store = new FrameStore({ maxBytes: 10 * (RGB + DEPTH), minRetentionMs: 1000 });
    const release = store.reserve(2 * (RGB + DEPTH))!;
    store.put(frame(1), "jpeg", true);
    expect(store.usage).toMatchObject({ bytes: RGB + DEPTH, reserved: RGB + DEPTH });
    store.put(frame(2), "jpeg", true);
    expect(store.usage).toMatchObject({ bytes: 2 * (RGB + DEPTH), reserved: 0 });
    release();
    expect(store.usage).toMatchObject({ bytes: 2 * (RGB + DEPTH), reserved: 0 });
  });

  it("encodes wait for the headroom in order instead of allocating past it", async () => {
    const bound = encodeBoundBytes(RGB);
    const store = new FrameStore({ maxBytes: 1_000_000, minRetentionMs: 1000, encodeHeadroomBytes: bound * 2 });
    const ids = Array.from({ length: 8 }, (_, i) => store.put(frame(i), "png", false).rgb);
    let maxEncoding = 0;
    const all = ids.map((id) =>
      store.get(id)!.then((img) => {
        maxEncoding = Math.max(maxEncoding, store.usage.encoding);
        return img;
      }),
    );
    expect(store.usage.encoding).toBe(bound * 2);
    expect(store.usage.waitingEncodes).toBe(6);
    const imgs = await Promise.all(all);
    expect(maxEncoding).toBeLessThanOrEqual(bound * 2);
    expect(store.usage).toMatchObject({ encoding: 0, waitingEncodes: 0 });
    // each frame is now held as its PNG only
    expect(store.usage.bytes).toBe(imgs.reduce((s, i) => s + i.data.byteLength, 0));
  });

  it("an encode that can never fit is refused with RB_ERR_OVER_CAPACITY; the frame stays and a later fetch works", async () => {
    let now = 0;
    // room for the encode of one frame next to that frame, not next to a young neighbour too
    const maxBytes = 2 * RGB + encodeBoundBytes(RGB) - 100;
    const store = new FrameStore({ maxBytes, minRetentionMs: 1000, nowMs: () => now });
    const a = store.put(frame(1), "png", false).rgb;
    const b = store.put(frame(2), "png", false).rgb;
    const err = await store.get(a)!.catch((e) => e);
    expect(isGatewayError(err) && err.code === "RB_ERR_OVER_CAPACITY" && err.status === 503).toBe(true);
    const pb = store.get(b); // nothing was dropped to make room inside the retention
    expect(pb).toBeDefined();
    await pb!.catch(() => undefined);
    now = 5000; // a and b are past their retention; a's fetch evicts b for the room
    const img = await store.get(a)!.catch((e) => e);
    expect(isGatewayError(img)).toBe(false);
    expectWithin(store);
  });
});
