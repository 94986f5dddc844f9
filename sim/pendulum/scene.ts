/**
 * The pendulum bench as physics bodies and render objects: table, stand with crossbar and
 * axle, a steel bob on a revolute (impulse) joint under the hinge — a light rod, drawn but
 * without collider or mass — the photogate's two posts and its beam, and the arm (`ArmRig`:
 * link capsules as kinematic bodies following FK). The arm moves the bob only through contact
 * (Rapier's solver); gravity and a small viscous damping do the rest.
 *
 * The physics world is a `PhysicsWorld` like the buzz-wire bench's: fixed step, `free()` on
 * teardown, bit-exact snapshots.
 *
 * `arm.applyArm` + `step` run once per control tick (allocation-light); `syncRender` runs only
 * when a frame is captured.
 */
import { clonePose } from "../../calibration/camera-pose.ts";
import {
  type Mat4,
  mat4Identity,
  mat4ToPose,
  poseToMat4,
  type Vec3,
  vadd,
  vscale,
  vsub,
} from "../../robots/math.ts";
import type { SensorEvent } from "../../seam/types.ts";
import type { RobotModel } from "../../robots/types.ts";
import { ArmRig } from "../arm-rig.ts";
import {
  addTable,
  BENCH_COLORS,
  type BenchContacts,
  type BenchPhysicsOptions,
  type BenchScene,
  type BenchStart,
  benchRenderScene,
} from "../bench-scene.ts";
import { cylinderBetween, segmentPose, translationPose } from "../render/placement.ts";
import type { Rgb, Scene, SceneObject } from "../render/scene.ts";
import { PhysicsWorld, quatToMat4, type Rapier } from "../world.ts";
import type { PendulumBenchSpec } from "./bench.ts";

export const PENDULUM_COLORS = Object.freeze({
  ...BENCH_COLORS,
  stand: [70, 70, 75] as Rgb,
  rod: [40, 40, 40] as Rgb,
  bob: [200, 160, 60] as Rgb,
  gatePost: [30, 30, 30] as Rgb,
  /** beam while clear: drawn emissive at exactly this colour */
  beamClear: [255, 30, 20] as Rgb,
  beamBlocked: [90, 25, 25] as Rgb,
});

/** Photogate instrument name of the pendulum bench (`instrument` events). */
export const PHOTOGATE = "photogate";

export class PendulumBench implements BenchScene {
  readonly kind = "pendulum" as const;
  readonly physics: PhysicsWorld;
  readonly scene: Scene;
  readonly worldFromBase: Mat4;
  readonly toolFromFlange: Mat4;
  /** the arm (links only: the hand holds nothing and has no fingers here) */
  readonly arm: ArmRig;
  private readonly bob: number;
  private readonly renderSync: Array<() => void> = [];
  private readonly beam: SceneObject;
  private readonly bobPos: Vec3 = [0, 0, 0];
  private readonly tmp = new Float64Array(16);

  constructor(
    R: Rapier,
    readonly robot: RobotModel,
    readonly spec: PendulumBenchSpec,
    opts: BenchPhysicsOptions,
  ) {
    this.physics = new PhysicsWorld(R, opts);
    const physics = this.physics;
    this.worldFromBase = poseToMat4(spec.robotBasePoseWorld);
    this.toolFromFlange = poseToMat4(spec.toolPoseFlange);
    const C = PENDULUM_COLORS;
    const { scene, add } = benchRenderScene();
    this.scene = scene;
    const I = mat4Identity();

    addTable(physics, spec.tableTopZM, add);

    // stand: post, crossbar to the hinge, axle along the hinge axis
    const p = spec.pendulum;
    const hinge = p.hingeWorld;
    const sb = spec.stand.postBaseWorld;
    const sr = spec.stand.postRadiusM;
    const postTop: Vec3 = [sb[0], sb[1], hinge[2] + 0.03];
    const barA: Vec3 = [sb[0], sb[1], hinge[2] + 0.03];
    const barB: Vec3 = [hinge[0], hinge[1], hinge[2] + 0.03];
    const axleHalf = 0.03;
    const axleA: Vec3 = vsub(hinge, vscale(p.axisWorld, axleHalf));
    const axleB: Vec3 = vadd(hinge, vscale(p.axisWorld, axleHalf));
    const standParts: Array<[string, Vec3, Vec3, number]> = [
      ["stand_post", [sb[0], sb[1], spec.tableTopZM], postTop, sr],
      ["stand_bar", barA, barB, sr * 0.8],
      ["hinge_axle", axleA, axleB, 0.008],
    ];
    for (const [id, a, b, r] of standParts) {
      physics.addBody("fixed", I, [{ kind: "capsule", a, b, radiusM: r }], { group: "env", name: id });
      add(cylinderBetween(id, a, b, r, C.stand));
    }
    // hanger from the crossbar down to the axle
    add(cylinderBetween("hinge_hanger", barB, hinge, 0.004, C.stand));

    // photogate: two posts on the beam line, the beam between them at the bob's rest centre
    const g = spec.photogate;
    const ends: Vec3[] = [1, -1].map((s) => vadd(g.centreWorld, vscale(g.beamAxisWorld, s * g.postOffsetM)));
    for (const [k, e] of ends.entries()) {
      const id = `gate_post_${k === 0 ? "emitter" : "receiver"}`;
      const a: Vec3 = [e[0], e[1], spec.tableTopZM];
      const b: Vec3 = [e[0], e[1], g.centreWorld[2] + 0.02];
      physics.addBody("fixed", I, [{ kind: "capsule", a, b, radiusM: g.postRadiusM }], {
        group: "env",
        name: id,
      });
      add(cylinderBetween(id, a, b, g.postRadiusM, C.gatePost));
    }
    this.beam = add({
      ...cylinderBetween("gate_beam", ends[0]!, ends[1]!, 0.0015, C.beamClear),
      emissive: true,
    });

    // hinge (fixed, no collider) and the bob on a revolute joint; the rod is light
    const hingeBody = physics.addBody("fixed", translationPose(hinge), [], {
      group: "env",
      name: "hinge",
    });
    const rest: Vec3 = [hinge[0], hinge[1], hinge[2] - p.lengthM];
    this.bob = physics.addBody(
      "dynamic",
      translationPose(rest),
      [{ kind: "ball", centre: [0, 0, 0], radiusM: p.bobRadiusM }],
      { group: "free", name: "bob" },
      {
        densityKgM3: p.bobDensityKgM3,
        friction: 0.5,
        linearDampingPerS: p.dampingPerS,
        angularDampingPerS: p.dampingPerS,
        canSleep: false,
      },
    );
    physics.addRevoluteJoint(hingeBody, this.bob, [0, 0, 0], vsub(hinge, rest), p.axisWorld);
    const bobObj = add({
      id: "bob",
      shape: { kind: "sphere", radiusM: p.bobRadiusM },
      pose: mat4Identity(),
      color: C.bob,
    });
    const rodObj = add({
      id: "rod",
      shape: { kind: "cylinder", halfLengthM: p.lengthM / 2, radiusM: p.rodRadiusM },
      pose: mat4Identity(),
      color: C.rod,
    });
    this.renderSync.push(() => {
      const c = this.bobCentre();
      translationPose(c, bobObj.pose);
      rodObj.pose.set(segmentPose(hinge, c));
    });

    // the arm: link capsules as kinematic bodies (the base link fixed)
    this.arm = new ArmRig(
      physics,
      robot,
      { worldFromBase: this.worldFromBase, toolFromFlange: this.toolFromFlange, linkColor: C.link },
      add,
    );
    this.gateReported = this.photogateBlocked;
  }

  /** One physics step, then arm–environment contacts (hot path). */
  step(): BenchContacts {
    this.physics.step();
    return { loopOnWire: false, collisions: this.arm.envContacts() };
  }

  /** Is the photogate's beam interrupted by the bob (at the current physics state)? */
  get photogateBlocked(): boolean {
    const g = this.spec.photogate;
    const c = this.bobCentre();
    const dx = c[0] - g.centreWorld[0];
    const dy = c[1] - g.centreWorld[1];
    const dz = c[2] - g.centreWorld[2];
    const a = g.beamAxisWorld;
    const along = dx * a[0] + dy * a[1] + dz * a[2];
    const px = dx - along * a[0];
    const py = dy - along * a[1];
    const pz = dz - along * a[2];
    return px * px + py * py + pz * pz < this.spec.pendulum.bobRadiusM ** 2;
  }

  /** Bob centre, world, m (a shared vector: copy it to keep it). */
  bobCentre(): Vec3 {
    return this.physics.bodyTranslation(this.bob, this.bobPos);
  }

  /** Bob velocity, world, m/s. */
  bobVelocity(): Vec3 {
    return this.physics.linearVelocity(this.bob);
  }

  /** Swing angle from the vertical about the hinge axis, rad (positive towards +x for a y axis). */
  swingAngleRad(): number {
    const c = this.bobCentre();
    const h = this.spec.pendulum.hingeWorld;
    return Math.atan2(c[0] - h[0], h[2] - c[2]);
  }

  /**
   * Sim only (tests, benchmarks): put the bob at rest at a swing angle about the hinge axis
   * (the bench's hinge axis is world y; positive towards +x), as if held there and released at
   * the next step.
   */
  releaseAt(angleRad: number): void {
    const h = this.spec.pendulum.hingeWorld;
    const L = this.spec.pendulum.lengthM;
    // rotation by −angle about y maps the rod's attachment point (0, 0, L) above the bob onto the hinge
    const half = -angleRad / 2;
    const pose = quatToMat4(0, Math.sin(half), 0, Math.cos(half), this.tmp);
    pose[3] = h[0] + L * Math.sin(angleRad);
    pose[7] = h[1];
    pose[11] = h[2] - L * Math.cos(angleRad);
    this.physics.teleport(this.bob, pose);
    this.physics.setVelocity(this.bob, [0, 0, 0], [0, 0, 0]);
  }

  /** Update render poses from the physics state; the beam glows while clear. */
  syncRender(_lampLit: boolean): Scene {
    for (const f of this.renderSync) f();
    this.arm.syncRender();
    const blocked = this.photogateBlocked;
    this.beam.color = blocked ? PENDULUM_COLORS.beamBlocked : PENDULUM_COLORS.beamClear;
    this.beam.emissive = !blocked;
    return this.scene;
  }

  get description(): PendulumBenchSpec {
    return this.spec;
  }

  get start(): BenchStart {
    const s = this.spec;
    return {
      basePose: clonePose(s.robotBasePoseWorld),
      toolOffset: clonePose(s.toolPoseFlange),
      q: s.startQ,
      gripperM: s.startGripperM,
      cameras: s.cameras,
    };
  }

  /** the beam state last reported (from construction on: a fresh pendulum hangs at rest in the beam) */
  private gateReported: boolean;

  /** a photogate `instrument` event when the beam's state changed (hot path) */
  afterStep(t: number, emit: (e: SensorEvent) => void): void {
    const blocked = this.photogateBlocked;
    if (blocked === this.gateReported) return;
    this.gateReported = blocked;
    emit({ type: "instrument", t, name: PHOTOGATE, values: { blocked: blocked ? 1 : 0 }, source: "sim" });
  }

  saveState(): Record<string, unknown> {
    return { gateBlocked: this.gateReported };
  }

  restoreState(state: Record<string, unknown>): void {
    this.gateReported = state.gateBlocked === true;
  }

  privileged(): Record<string, unknown> {
    const spec = this.spec;
    const tool = this.arm.toolWorld(new Float64Array(16));
    return {
      scene: "pendulum",
      pendulum: {
        lengthM: spec.pendulum.lengthM,
        hingeWorld: [...spec.pendulum.hingeWorld],
        bobRadiusM: spec.pendulum.bobRadiusM,
        bobWorld: [...this.bobCentre()],
        bobVelocityMps: this.bobVelocity(),
        swingAngleRad: this.swingAngleRad(),
      },
      photogate: { blocked: this.gateReported, centreWorld: [...spec.photogate.centreWorld] },
      tool: { poseWorld: mat4ToPose(tool) },
    };
  }

  free(): void {
    this.physics.free();
  }
}
