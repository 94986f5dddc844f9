import { describe, expect, it } from "vitest";
import { mat4Point, vdot, vnorm, vsub } from "../math.ts";
import { FRANKA_CAPSULES } from "./capsules.ts";
import { forwardKinematics } from "./kinematics.ts";
import { FR3, PANDA } from "./models.ts";

function segDist(p: readonly number[], a: readonly number[], b: readonly number[]): number {
  const ab = vsub(b, a);
  const ap = vsub(p, a);
  const l2 = vdot(ab, ab);
  const t = l2 > 0 ? Math.min(1, Math.max(0, vdot(ap, ab) / l2)) : 0;
  return vnorm(vsub(ap, [ab[0] * t, ab[1] * t, ab[2] * t]));
}

/** Is point p (in frame f) inside some capsule of the given links riding on frame f? */
function covered(p: readonly number[], frame: number, links: readonly string[]): boolean {
  return FRANKA_CAPSULES.some(
    (c) => c.frame === frame && links.includes(c.link) && segDist(p, c.a, c.b) <= c.radiusM,
  );
}

describe("Franka collision capsules", () => {
  it("cover every link and sit on valid frames with positive radii", () => {
    const links = new Set(FRANKA_CAPSULES.map((c) => c.link));
    for (const l of [
      "link0",
      "link1",
      "link2",
      "link3",
      "link4",
      "link5",
      "link6",
      "link7",
      "hand",
      "leftfinger",
      "rightfinger",
    ]) {
      expect(links.has(l), l).toBe(true);
    }
    for (const c of FRANKA_CAPSULES) {
      expect(Number.isInteger(c.frame) && c.frame >= 0 && c.frame <= 8).toBe(true);
      expect(c.radiusM).toBeGreaterThan(0.02);
      expect(c.radiusM).toBeLessThan(0.12);
      expect([...c.a, ...c.b].every(Number.isFinite)).toBe(true);
    }
    expect(PANDA.capsules).toBe(FRANKA_CAPSULES);
    expect(FR3.capsules).toBe(FRANKA_CAPSULES);
  });

  it("the arm is one connected body: joint origins and the points between them are inside capsules", () => {
    let seed = 3;
    const rnd = (): number => {
      seed = (seed * 48271) % 2147483647;
      return seed / 2147483647;
    };
    const inAny = (frames: Float64Array[], w: readonly number[]): boolean =>
      FRANKA_CAPSULES.some((c) => {
        const a = mat4Point(frames[c.frame]!, c.a);
        const b = mat4Point(frames[c.frame]!, c.b);
        return segDist(w, a, b) <= c.radiusM;
      });
    for (let k = 0; k < 50; k++) {
      const q = PANDA.joints.map((j) => j.lower + rnd() * (j.upper - j.lower));
      const f = forwardKinematics(PANDA, q).frames;
      for (let i = 0; i < 8; i++) {
        const p0 = [f[i]![3]!, f[i]![7]!, f[i]![11]!];
        const p1 = [f[i + 1]![3]!, f[i + 1]![7]!, f[i + 1]![11]!];
        for (const t of [0, 0.25, 0.5, 0.75, 1]) {
          const w = [0, 1, 2].map((r) => p0[r]! + t * (p1[r]! - p0[r]!));
          expect(inAny(f, w), `q#${k} segment ${i}→${i + 1} t=${t}`).toBe(true);
        }
      }
    }
  });

  it("the finger capsules cover the published finger boxes at every opening", () => {
    // Franka Hand URDF finger collision boxes (centre y, z above the finger joint; size x, y, z), m
    const boxes = [
      { y: 0.0185, z: 0.011, sx: 0.022, sy: 0.015, sz: 0.02 },
      { y: 0.0068, z: 0.0022, sx: 0.022, sy: 0.0088, sz: 0.0038 },
      { y: 0.0159, z: 0.02835, sx: 0.0175, sy: 0.0235, sz: 0.0235 }, // diagonal part, bounding box
      { y: 0.00758, z: 0.04525, sx: 0.0175, sy: 0.0152, sz: 0.0185 },
    ];
    const yaw = -Math.PI / 4; // hand frame on the flange
    const toFlange = (p: number[]): number[] => [
      Math.cos(yaw) * p[0]! - Math.sin(yaw) * p[1]!,
      Math.sin(yaw) * p[0]! + Math.cos(yaw) * p[1]!,
      p[2]!,
    ];
    for (const half of [0, 0.01, 0.02, 0.03, 0.04]) {
      for (const side of [1, -1]) {
        for (const b of boxes) {
          for (const cx of [-1, 1])
            for (const cy of [-1, 1])
              for (const cz of [-1, 1]) {
                const hand = [
                  (cx * b.sx) / 2,
                  side * (half + b.y + (cy * b.sy) / 2),
                  0.0584 + b.z + (cz * b.sz) / 2,
                ];
                const p = toFlange(hand);
                expect(covered(p, 8, ["leftfinger", "rightfinger", "hand"]), `${half} ${side} ${hand}`).toBe(
                  true,
                );
              }
        }
      }
    }
  });

  it("at the zero pose the arm's capsules stay inside a plausible envelope", () => {
    const f = forwardKinematics(PANDA, [0, 0, 0, 0, 0, 0, 0]).frames;
    let top = -1;
    for (const c of FRANKA_CAPSULES) {
      for (const p of [c.a, c.b]) {
        const w = mat4Point(f[c.frame]!, p);
        expect(Math.abs(w[0])).toBeLessThan(0.3);
        expect(Math.abs(w[1])).toBeLessThan(0.2);
        top = Math.max(top, w[2] + c.radiusM);
      }
    }
    // the wrist housing tops out a little above the 1.033 m wrist axis
    expect(top).toBeGreaterThan(1.07);
    expect(top).toBeLessThan(1.16);
  });
});
