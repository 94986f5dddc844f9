import { describe, expect, it } from "vitest";
import { type Mat4, mat4Point, type Vec3 } from "../../robots/math.ts";
import { createPrng } from "../prng.ts";
import { quatToMat4 } from "../world.ts";
import { RingWireContact, segmentDistance } from "./contact.ts";
import { ringSegments, wireSegments } from "./scene.ts";

const WIRE_R = 0.0015;
const RING_WIRE_R = 0.0015;
const MAJOR = 0.015 + RING_WIRE_R;

/** A bent wire: a helix-like arc, so segments run in every direction. */
function wirePoints(): Vec3[] {
  const pts: Vec3[] = [];
  for (let i = 0; i <= 80; i++) {
    const s = i / 80;
    pts.push([0.45 + 0.05 * Math.sin(3 * s), -0.2 + 0.4 * s, 0.2 + 0.04 * Math.sin(5 * s)]);
  }
  return pts;
}

/** Brute force: every ring segment against every wire segment, no bounds. */
function bruteClearance(loop: Mat4, wire: Array<[Vec3, Vec3]>, ring: Array<[Vec3, Vec3]>): number {
  let best = Infinity;
  for (const [ra, rb] of ring) {
    const a = mat4Point(loop, ra);
    const b = mat4Point(loop, rb);
    for (const [wa, wb] of wire) best = Math.min(best, segmentDistance(...a, ...b, ...wa, ...wb));
  }
  return best - WIRE_R - RING_WIRE_R;
}

describe("RingWireContact", () => {
  it("decides touching exactly as the unbounded brute force does, on random loop poses near the wire", () => {
    const wire = wireSegments(wirePoints());
    const ring = ringSegments(MAJOR);
    const contact = new RingWireContact(wire, WIRE_R, ring, RING_WIRE_R);
    const rng = createPrng(11);
    const loop = new Float64Array(16);
    let touching = 0;
    let skipped = 0;
    for (let n = 0; n < 3000; n++) {
      // a random orientation, centred near a random point of the wire
      let qx = rng.uniform(-1, 1);
      let qy = rng.uniform(-1, 1);
      let qz = rng.uniform(-1, 1);
      let qw = rng.uniform(-1, 1);
      const qn = Math.hypot(qx, qy, qz, qw);
      qx /= qn;
      qy /= qn;
      qz /= qn;
      qw /= qn;
      quatToMat4(qx, qy, qz, qw, loop);
      const [wa, wb] = wire[Math.floor(rng.next() * wire.length)]!;
      const t = rng.next();
      loop[3] = wa[0] + (wb[0] - wa[0]) * t + rng.uniform(-0.03, 0.03);
      loop[7] = wa[1] + (wb[1] - wa[1]) * t + rng.uniform(-0.03, 0.03);
      loop[11] = wa[2] + (wb[2] - wa[2]) * t + rng.uniform(-0.03, 0.03);
      const exact = bruteClearance(loop, wire, ring);
      const got = contact.ringTouchesWire(loop);
      expect(got).toBe(exact <= 0);
      if (got) {
        touching++;
        expect(contact.lastClearanceM).toBeCloseTo(exact, 12);
      } else {
        expect(contact.lastClearanceM).toBeGreaterThan(0);
      }
      if (contact.lastExactChecks === 0) skipped++;
    }
    // both outcomes occur, and the bounds spare the exact work most of the time
    expect(touching).toBeGreaterThan(100);
    expect(touching).toBeLessThan(2900);
    expect(skipped).toBeGreaterThan(0);
  });

  it("threading the wire along its axis needs no exact distance at all", () => {
    const wire = wireSegments(wirePoints());
    const contact = new RingWireContact(wire, WIRE_R, ringSegments(MAJOR), RING_WIRE_R);
    const [a, b] = wire[20]!;
    const d: Vec3 = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
    const n = Math.hypot(...d);
    // loop z along the wire tangent, centred on the wire
    const z: Vec3 = [d[0] / n, d[1] / n, d[2] / n];
    const x: Vec3 = [0, -z[2], z[1]];
    const xn = Math.hypot(...x);
    x[1] /= xn;
    x[2] /= xn;
    const y: Vec3 = [z[1] * x[2] - z[2] * x[1], z[2] * x[0] - z[0] * x[2], z[0] * x[1] - z[1] * x[0]];
    const loop = Float64Array.from([
      x[0],
      y[0],
      z[0],
      a[0],
      x[1],
      y[1],
      z[1],
      a[1],
      x[2],
      y[2],
      z[2],
      a[2],
      0,
      0,
      0,
      1,
    ]);
    expect(contact.ringTouchesWire(loop)).toBe(false);
    expect(contact.lastExactChecks).toBe(0);
    expect(contact.lastClearanceM).toBeGreaterThan(0.01);
  });
});
