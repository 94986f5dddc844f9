import { describe, expect, it } from "vitest";
import { type Vec3, vcross, vdot, vnorm, vscale } from "../robots/math.ts";
import { fitRingCircle } from "./tool-frame.ts";

function rng(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return (s / 2147483648) * 2 - 1;
  };
}

const centre: Vec3 = [0.002, -0.001, 0.2014];
const axis: Vec3 = vscale([0.92, 0.38, 0.05], 1 / vnorm([0.92, 0.38, 0.05]));
const R = 0.0165;

/** Points on a tube of radius 1.5 mm around the ring, ±noise, and a handle sticking out along −x. */
function cloud(noiseM: number, seed = 3): Vec3[] {
  const n = rng(seed);
  const u: Vec3 = vscale(vcross(axis, [0, 0, 1]), 1 / vnorm(vcross(axis, [0, 0, 1])));
  const v = vcross(axis, u);
  const out: Vec3[] = [];
  for (let i = 0; i < 2000; i++) {
    const th = Math.PI * (n() + 1);
    // points near the tube centreline (depth points after the ray correction scatter around it)
    const r = R + 0.0004 * n();
    const z = 0.0004 * n();
    out.push(
      [0, 1, 2].map(
        (k) => centre[k]! + r * (Math.cos(th) * u[k]! + Math.sin(th) * v[k]!) + z * axis[k]! + noiseM * n(),
      ) as Vec3,
    );
  }
  // the handle: a rod from the rim outward along −u, 4 mm radius
  for (let i = 0; i < 300; i++) {
    const s = R + 0.002 + 0.02 * (n() + 1) * 0.5;
    out.push([0, 1, 2].map((k) => centre[k]! - s * u[k]! + 0.003 * n() * v[k]!) as Vec3);
  }
  return out;
}

describe("tool frame: ring circle fit", () => {
  it("recovers centre, axis and radius from a noisy cloud with the handle in it, from a nominal 4 mm and 5° off", () => {
    const fit = fitRingCircle(cloud(0.0005), {
      centre: [centre[0] + 0.003, centre[1] - 0.002, centre[2] + 0.002],
      axis: [axis[0], axis[1] + 0.08, axis[2]],
      radiusM: 0.0165,
    });
    const err = Math.hypot(fit.centre[0] - centre[0], fit.centre[1] - centre[1], fit.centre[2] - centre[2]);
    expect(err).toBeLessThan(0.0002);
    expect((Math.acos(Math.min(1, vdot(fit.axis, axis))) * 180) / Math.PI).toBeLessThan(0.5);
    expect(Math.abs(fit.radiusM - R)).toBeLessThan(0.0002);
    expect(fit.trimmed).toBeGreaterThan(100);
  });

  it("too few points near the nominal ring is a coded error", () => {
    expect(() => fitRingCircle(cloud(0).slice(0, 20), { centre, axis, radiusM: R })).toThrow(
      expect.objectContaining({ code: "RB_ERR_CALIB_TOO_FEW_POINTS" }),
    );
    // the nominal ring 5 cm away: nothing of the cloud is near it
    expect(() =>
      fitRingCircle(cloud(0), { centre: [centre[0] + 0.05, centre[1], centre[2]], axis, radiusM: R }),
    ).toThrow(expect.objectContaining({ code: "RB_ERR_CALIB_TOO_FEW_POINTS" }));
  });
});
