import { describe, expect, it } from "vitest";
import {
  type Mat4,
  mat4Identity,
  mat4Mul,
  mat4Point,
  mat4RigidInverse,
  mat4ToPose,
  mat4ToQuat,
  type Pose,
  poseToMat4,
  type Quat,
  quatAngle,
  quatNormalize,
} from "./math.ts";

function lcg(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 48271) % 2147483647;
    return s / 2147483647;
  };
}

/** Axis–angle quaternion, independent of the code under test. */
function axisAngle(axis: readonly number[], angle: number): Quat {
  const n = Math.hypot(axis[0]!, axis[1]!, axis[2]!);
  const s = Math.sin(angle / 2) / n;
  return [axis[0]! * s, axis[1]! * s, axis[2]! * s, Math.cos(angle / 2)];
}

function randomQuat(rnd: () => number): Quat {
  // uniform on SO(3) (Shoemake)
  const u1 = rnd();
  const u2 = rnd() * 2 * Math.PI;
  const u3 = rnd() * 2 * Math.PI;
  const a = Math.sqrt(1 - u1);
  const b = Math.sqrt(u1);
  return [a * Math.sin(u2), a * Math.cos(u2), b * Math.sin(u3), b * Math.cos(u3)];
}

/** Same rotation: q and −q are equal. */
function sameRotation(a: Quat, b: Quat): number {
  const d = Math.abs(a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3]);
  return 1 - d;
}

function maxAbsDiff(a: Mat4, b: Mat4): number {
  let m = 0;
  for (let i = 0; i < 16; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

describe("math: quaternions and matrices", () => {
  it("quaternion → matrix → quaternion round trips over random rotations", () => {
    const rnd = lcg(3);
    for (let k = 0; k < 2000; k++) {
      const q = randomQuat(rnd);
      const m = poseToMat4({ xyz: [0, 0, 0], quat_xyzw: q });
      const back = mat4ToQuat(m);
      expect(sameRotation(q, back)).toBeLessThan(1e-12);
      expect(back[3]).toBeGreaterThanOrEqual(0);
      expect(Math.hypot(...back)).toBeCloseTo(1, 14);
    }
  });

  it("round trips near 180° about each axis (every branch of the matrix → quaternion conversion)", () => {
    for (const axis of [
      [1, 0, 0],
      [0, 1, 0],
      [0, 0, 1],
      [1, 1, 0],
      [0, 1, -1],
      [1, -1, 1],
    ]) {
      for (const angle of [Math.PI, Math.PI - 1e-6, Math.PI - 0.3, 2.5, 0.1, 0]) {
        const q = axisAngle(axis, angle);
        const back = mat4ToQuat(poseToMat4({ xyz: [0, 0, 0], quat_xyzw: q }));
        expect(sameRotation(q, back), `${axis} ${angle}`).toBeLessThan(1e-12);
      }
    }
  });

  it("pose → matrix → pose round trips and the matrix rotates like the quaternion", () => {
    const rnd = lcg(8);
    for (let k = 0; k < 500; k++) {
      const p: Pose = { xyz: [rnd() - 0.5, rnd() - 0.5, rnd()], quat_xyzw: randomQuat(rnd) };
      const back = mat4ToPose(poseToMat4(p));
      for (let i = 0; i < 3; i++) expect(back.xyz[i]).toBeCloseTo(p.xyz[i]!, 14);
      expect(quatAngle(back.quat_xyzw, p.quat_xyzw)).toBeLessThan(1e-6);
    }
    // 90° about z takes x to y
    const m = poseToMat4({ xyz: [1, 2, 3], quat_xyzw: axisAngle([0, 0, 1], Math.PI / 2) });
    const p = mat4Point(m, [1, 0, 0]);
    expect(p[0]).toBeCloseTo(1, 14);
    expect(p[1]).toBeCloseTo(3, 14);
    expect(p[2]).toBeCloseTo(3, 14);
  });

  it("rigid inverse composes to identity and matrix products match quaternion products", () => {
    const rnd = lcg(21);
    for (let k = 0; k < 500; k++) {
      const a = poseToMat4({ xyz: [rnd(), rnd(), rnd()], quat_xyzw: randomQuat(rnd) });
      expect(maxAbsDiff(mat4Mul(a, mat4RigidInverse(a)), mat4Identity())).toBeLessThan(1e-14);
      expect(maxAbsDiff(mat4Mul(mat4RigidInverse(a), a), mat4Identity())).toBeLessThan(1e-14);
      const qa = randomQuat(rnd);
      const qb = randomQuat(rnd);
      // Hamilton product qa ⊗ qb
      const [ax, ay, az, aw] = qa;
      const [bx, by, bz, bw] = qb;
      const qab: Quat = [
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
        aw * bw - ax * bx - ay * by - az * bz,
      ];
      const mab = mat4Mul(
        poseToMat4({ xyz: [0, 0, 0], quat_xyzw: qa }),
        poseToMat4({ xyz: [0, 0, 0], quat_xyzw: qb }),
      );
      expect(sameRotation(mat4ToQuat(mab), qab)).toBeLessThan(1e-12);
    }
  });

  it("quatAngle and quatNormalize", () => {
    expect(quatAngle([0, 0, 0, 1], axisAngle([0, 1, 0], 0.7))).toBeCloseTo(0.7, 12);
    // q and −q are the same rotation
    const q = axisAngle([1, 2, 3], 1.1);
    expect(quatAngle(q, [-q[0], -q[1], -q[2], -q[3]])).toBeCloseTo(0, 6);
    expect(quatNormalize([0, 0, 0, 0])).toEqual([0, 0, 0, 1]);
    const n = quatNormalize([0, 0, 2, -2]);
    expect(n[3]).toBeGreaterThan(0);
    expect(Math.hypot(...n)).toBeCloseTo(1, 14);
  });
});
