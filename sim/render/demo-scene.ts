/**
 * A synthetic buzz-wire-like scene for the renderer's tests, benchmark and example images:
 * table, board, a 200-segment bent wire on two posts, the loop (torus) around the wire on a
 * handle, a 10-capsule stand-in arm, a lamp and a buzzer box — 25 objects. World frame: z up,
 * robot base at the origin, metres. Not the simulator's bench; that one is built from the
 * calibration file by `sim/`.
 */
import type { Mat4, Vec3 } from "../../robots/math.ts";
import { lookAt } from "./camera-pose.ts";
import { segmentPose, translationPose } from "./placement.ts";
import type { RasterCamera } from "./rasterizer.ts";
import type { Scene, SceneObject } from "./scene.ts";

/** The wire centreline (world frame): 201 points, 200 segments, ends going down into the posts. */
export function demoWirePoints(): Vec3[] {
  const pts: Vec3[] = [];
  const n = 200;
  for (let i = 0; i <= n; i++) {
    const s = i / n;
    const ramp = Math.min(1, s / 0.08, (1 - s) / 0.08); // 0 at the posts, 1 along the course
    pts.push([
      0.5 + 0.07 * Math.sin(2 * Math.PI * 1.5 * s) * ramp,
      -0.25 + 0.5 * s,
      0.1 + ramp * (0.06 + 0.04 * Math.sin(2 * Math.PI * s)),
    ]);
  }
  return pts;
}

/** Demo scene; `loopS` (0…1) is how far along the wire the loop sits. */
export function demoScene(loopS = 0.35): Scene {
  const objects: SceneObject[] = [];
  const add = (
    id: string,
    shape: SceneObject["shape"],
    pose: Mat4,
    color: readonly [number, number, number],
    emissive = false,
  ): void => {
    objects.push({ id, shape, pose, color, emissive });
  };
  add(
    "table",
    { kind: "box", halfExtentsM: [0.6, 0.8, 0.02] },
    translationPose([0.45, 0, -0.02]),
    [150, 118, 84],
  );
  add(
    "board",
    { kind: "box", halfExtentsM: [0.18, 0.32, 0.01] },
    translationPose([0.5, 0, 0.01]),
    [40, 62, 110],
  );
  const wire = demoWirePoints();
  add("wire", { kind: "tube", points: wire, radiusM: 0.0015 }, translationPose([0, 0, 0]), [200, 200, 210]);
  const first = wire[0]!;
  const last = wire[wire.length - 1]!;
  for (const [id, p] of [
    ["post_start", first],
    ["post_end", last],
  ] as const) {
    add(
      id,
      { kind: "cylinder", halfLengthM: 0.045, radiusM: 0.008 },
      translationPose([p[0], p[1], 0.065]),
      [60, 60, 60],
    );
  }

  // loop around the wire at loopS, axis along the wire tangent
  const k = Math.round(loopS * (wire.length - 1));
  const c = wire[Math.max(1, Math.min(wire.length - 2, k))]!;
  const tNext = wire[Math.min(wire.length - 1, k + 1)]!;
  const tPrev = wire[Math.max(0, k - 1)]!;
  const ringPose = segmentPose(tPrev, tNext);
  ringPose[3] = c[0];
  ringPose[7] = c[1];
  ringPose[11] = c[2];
  add("loop", { kind: "torus", majorRadiusM: 0.022, minorRadiusM: 0.002 }, ringPose, [215, 190, 70]);
  // handle from the ring's top rim upwards to the gripper
  const rim: Vec3 = [c[0], c[1], c[2] + 0.024];
  const grip: Vec3 = [c[0], c[1], c[2] + 0.12];
  add(
    "handle",
    { kind: "capsule", halfLengthM: 0.045, radiusM: 0.004 },
    segmentPose(rim, grip),
    [215, 190, 70],
  );

  // stand-in arm: 10 capsules from the base to the gripper
  const flange: Vec3 = [grip[0] - 0.02, grip[1] * 0.8, grip[2] + 0.1];
  const chain: Vec3[] = [
    [0, 0, 0.0],
    [0, 0, 0.2],
    [0, 0, 0.333],
    [0.05, 0, 0.5],
    [0.15, 0, 0.62],
    [0.3, flange[1] * 0.3, 0.6],
    [0.4, flange[1] * 0.6, 0.52],
    [flange[0], flange[1], flange[2] + 0.08],
    flange,
    [grip[0], grip[1], grip[2] + 0.04],
    grip,
  ];
  const radii = [0.075, 0.07, 0.065, 0.06, 0.055, 0.05, 0.045, 0.04, 0.035, 0.02]; // distinct: no coincident joints
  for (let i = 0; i < 10; i++) {
    const a = chain[i]!;
    const b = chain[i + 1]!;
    const len = Math.hypot(b[0] - a[0], b[1] - a[1], b[2] - a[2]);
    const shade: readonly [number, number, number] = i % 2 === 0 ? [235, 235, 235] : [70, 70, 75];
    add(`link${i}`, { kind: "capsule", halfLengthM: len / 2, radiusM: radii[i]! }, segmentPose(a, b), shade);
  }

  const gripPose = segmentPose(grip, [grip[0], grip[1], grip[2] + 0.04]);
  add("gripper", { kind: "box", halfExtentsM: [0.04, 0.012, 0.02] }, gripPose, [70, 70, 75]);

  add("lamp", { kind: "sphere", radiusM: 0.02 }, translationPose([0.62, 0.34, 0.04]), [255, 40, 30], true);
  add(
    "lamp_base",
    { kind: "cylinder", halfLengthM: 0.01, radiusM: 0.025 },
    translationPose([0.62, 0.34, 0.01]),
    [30, 30, 30],
  );
  add(
    "buzzer",
    { kind: "box", halfExtentsM: [0.04, 0.03, 0.02] },
    translationPose([0.38, 0.36, 0.02]),
    [20, 20, 20],
  );
  add(
    "cable_box",
    { kind: "box", halfExtentsM: [0.03, 0.06, 0.015] },
    translationPose([0.62, -0.36, 0.015]),
    [90, 90, 40],
  );
  add(
    "base_plate",
    { kind: "cylinder", halfLengthM: 0.01, radiusM: 0.1 },
    translationPose([0, 0, 0.01]),
    [200, 200, 200],
  );
  add(
    "board_leg_l",
    { kind: "box", halfExtentsM: [0.02, 0.02, 0.005] },
    translationPose([0.5, -0.3, 0.025]),
    [30, 30, 30],
  );
  add(
    "board_leg_r",
    { kind: "box", halfExtentsM: [0.02, 0.02, 0.005] },
    translationPose([0.5, 0.3, 0.025]),
    [30, 30, 30],
  );

  return { objects, background: [205, 215, 225], lightDir: [0.4, -0.3, 1] };
}

/** 640×480 camera with a ~56° horizontal field of view, no distortion. */
export const DEMO_CAMERA: RasterCamera = {
  width: 640,
  height: 480,
  fx: 600,
  fy: 600,
  cx: 319.5,
  cy: 239.5,
  distortion: [0, 0, 0, 0, 0],
};

/** Demo viewpoints (world ← camera). */
export function demoViews(): Record<"front" | "side" | "wrist", Mat4> {
  return {
    // about 1 m from the wire, looking across the table at the board
    front: lookAt([1.35, 0.35, 0.55], [0.5, 0, 0.13]),
    side: lookAt([0.55, -1.0, 0.45], [0.5, 0, 0.12]),
    // close to the loop, looking along the wire
    wrist: lookAt([0.56, -0.22, 0.28], [0.5, 0.0, 0.15]),
  };
}
