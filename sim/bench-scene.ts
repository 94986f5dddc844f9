/**
 * What the simulator backend needs of a bench scene (the buzz-wire bench, the pendulum bench):
 * one contract, so that the backend drives every scene alike and never asks which one it has.
 * `arm.applyArm`, `step` and `afterStep` run in the control loop (allocation-light);
 * `syncRender` runs only when a frame is captured.
 */
import type { CameraCalibration } from "../calibration/schema.ts";
import type { Mat4, Pose, Vec3 } from "../robots/math.ts";
import type { SensorEvent } from "../seam/types.ts";
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

/** The benches the simulator can build. */
export type SimSceneName = "buzzwire" | "pendulum";

/** Where a bench puts the robot, its tool and its cameras at the start of an episode. */
export interface BenchStart {
  /** robot base in the world */
  basePose: Pose;
  /** flange → tool (TCP) */
  toolOffset: Pose;
  /** start joint angles, rad */
  q: readonly number[];
  /** start gripper opening, m */
  gripperM: number;
  cameras: readonly CameraCalibration[];
}

export interface BenchScene {
  /** which bench this is (a snapshot of another kind is refused) */
  readonly kind: SimSceneName;
  /** what it was built from, JSON (a calibration, a pendulum spec): rebuilding from it gives the same bench */
  readonly description: unknown;
  readonly start: BenchStart;
  /** bit-exact world snapshots (handles survive a restore) */
  readonly physics: { takeSnapshot(): Uint8Array; restoreSnapshot(bytes: Uint8Array): void };
  /** world ← robot base */
  readonly worldFromBase: Mat4;
  /** the robot arm: `applyArm`, `updateKinematics` (after a restore), `toolWorld` */
  readonly arm: ArmRig;
  /** One physics step, then the contact state at the new positions. */
  step(): BenchContacts;
  /**
   * After each step at backend time `t`: emit the scene's own events beyond contacts and
   * collisions (the pendulum's photogate), on a change only (hot path).
   */
  afterStep(t: number, emit: (e: SensorEvent) => void): void;
  /** Update render poses from the physics state; `lampLit` while a circuit is closed. */
  syncRender(lampLit: boolean): Scene;
  /** scene state outside the physics world (JSON), for snapshots */
  saveState(): Record<string, unknown>;
  restoreState(state: Record<string, unknown>): void;
  /** the scene's ground truth for operators and graders (never the agent) */
  privileged(ctx: { contactClosed: boolean }): Record<string, unknown>;
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
