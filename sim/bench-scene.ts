/**
 * What the simulator backend needs of a bench scene (the buzz-wire bench, the pendulum bench):
 * one contract, so that the backend drives every scene alike. `arm.applyArm` and `step` run in
 * the control loop (allocation-light); `syncRender` runs only when a frame is captured.
 */
import type { Mat4, Vec3 } from "../robots/math.ts";
import type { ArmRig } from "./arm-rig.ts";
import { translationPose } from "./render/placement.ts";
import type { Rgb, Scene, SceneObject } from "./render/scene.ts";
import type { PhysicsWorld } from "./world.ts";

/** Physics options of a bench scene's world. */
export interface BenchPhysicsOptions {
  /** fixed physics step, s */
  timestepS: number;
  /** contact prediction distance, m (must exceed the largest relative motion per step) */
  predictionDistanceM: number;
}

/** Contact state after a step. */
export interface BenchContacts {
  /** the loop's ring touches the wire (always false on a bench without a circuit) */
  loopOnWire: boolean;
  /** colliding pairs "a|b" (arm-carried part vs environment), sorted */
  collisions: string[];
}

export interface BenchScene {
  /** bit-exact world snapshots (handles survive a restore) */
  readonly physics: { takeSnapshot(): Uint8Array; restoreSnapshot(bytes: Uint8Array): void };
  /** world ← robot base */
  readonly worldFromBase: Mat4;
  /** the robot arm: `applyArm`, `updateKinematics` (after a restore), `toolWorld` */
  readonly arm: ArmRig;
  /** One physics step, then the contact state at the new positions. */
  step(): BenchContacts;
  /** Update render poses from the physics state; `lampLit` while a circuit is closed. */
  syncRender(lampLit: boolean): Scene;
  free(): void;
}

/** Colours every bench shares: the background, the lab table and the arm's links. */
export const BENCH_COLORS = Object.freeze({
  background: [200, 215, 230] as Rgb,
  table: [120, 120, 125] as Rgb,
  link: [235, 235, 235] as Rgb,
});

/**
 * An empty render scene with the benches' common background and light direction, and the
 * function that adds to it.
 */
export function benchRenderScene(): { scene: Scene; add: (o: SceneObject) => SceneObject } {
  const objects: SceneObject[] = [];
  const scene: Scene = { objects, background: BENCH_COLORS.background, lightDir: [0.3, -0.4, 1] };
  return {
    scene,
    add: (o) => {
      objects.push(o);
      return o;
    },
  };
}

/** Half extents of the table every bench stands on, m (centred 0.35 m in front of the robot base). */
export const TABLE_HALF_EXTENTS_M: Vec3 = [0.7, 0.6, 0.02];

/** The table, top at `topZM` (world, m): a fixed environment box and its render object. */
export function addTable(physics: PhysicsWorld, topZM: number, add: (o: SceneObject) => SceneObject): void {
  const half = TABLE_HALF_EXTENTS_M;
  const pose = translationPose([0.35, 0, topZM - half[2]]);
  physics.addBody("fixed", pose, [{ kind: "box", centre: [0, 0, 0], halfExtentsM: half }], {
    group: "env",
    name: "table",
  });
  add({ id: "table", shape: { kind: "box", halfExtentsM: half }, pose, color: BENCH_COLORS.table });
}
