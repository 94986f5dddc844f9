/**
 * What the simulator backend needs of a bench scene (the buzz-wire bench, the pendulum bench):
 * one contract, so that the backend drives every scene alike. `arm.applyArm` and `step` run in
 * the control loop (allocation-light); `syncRender` runs only when a frame is captured.
 */
import type { Mat4 } from "../robots/math.ts";
import type { ArmRig } from "./arm-rig.ts";
import type { Scene } from "./render/scene.ts";

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
