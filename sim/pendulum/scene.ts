/**
 * The pendulum bench as physics bodies and render objects: table, stand with crossbar and
 * axle, a steel bob on a revolute (impulse) joint under the hinge — a light rod, drawn but
 * without collider or mass — the photogate's two posts and its beam, and the arm's link
 * capsules as kinematic bodies following FK. The arm moves the bob only through contact
 * (Rapier's solver); gravity and a small viscous damping do the rest.
 *
 * The physics world is owned here (Rapier directly, not `sim/world.ts`'s PhysicsWorld, which
 * has no joints): fixed step, `free()` on teardown, bit-exact snapshots.
 *
 * `applyArm` + `step` run once per control tick (allocation-light); `syncRender` runs only
 * when a frame is captured.
 */
import type RAPIER from "@dimforge/rapier3d-compat";
import { type FkWorkspace, fkWorkspace, forwardKinematicsInto } from "../../robots/franka/kinematics.ts";
import { type Mat4, mat4Identity, mat4Mul, poseToMat4, type Vec3 } from "../../robots/math.ts";
import type { RobotModel } from "../../robots/types.ts";
import { segmentPose } from "../buzzwire/scene.ts";
import type { Rgb, Scene, SceneObject } from "../render/scene.ts";
import { GROUP, quatFromTo, quatToMat4, type Rapier, rotationQuat } from "../world.ts";
import type { PendulumBenchSpec } from "./bench.ts";

export const PENDULUM_COLORS = Object.freeze({
  background: [200, 215, 230] as Rgb,
  table: [120, 120, 125] as Rgb,
  stand: [70, 70, 75] as Rgb,
  rod: [40, 40, 40] as Rgb,
  bob: [200, 160, 60] as Rgb,
  gatePost: [30, 30, 30] as Rgb,
  /** beam while clear: drawn emissive at exactly this colour */
  beamClear: [255, 30, 20] as Rgb,
  beamBlocked: [90, 25, 25] as Rgb,
  link: [235, 235, 235] as Rgb,
});

/** Contact state after a step (same shape as the buzz-wire bench's, so the backend treats both alike). */
export interface PendulumContacts {
  /** always false: the pendulum bench has no circuit */
  loopOnWire: boolean;
  /** colliding pairs "a|b" (arm link vs table, stand or gate posts), sorted */
  collisions: string[];
}

type Group = "env" | "arm" | "free" | "base";
/** who may touch whom: the bob touches everything, the arm the environment and the bob */
const FILTER: Record<Group, number> = {
  env: GROUP.arm | GROUP.free,
  arm: GROUP.env | GROUP.free,
  free: GROUP.env | GROUP.arm | GROUP.base,
  base: GROUP.free,
};

type ColliderSpec =
  | { kind: "capsule"; a: Vec3; b: Vec3; radiusM: number }
  | { kind: "box"; centre: Vec3; halfExtentsM: Vec3 }
  | { kind: "ball"; centre: Vec3; radiusM: number };

const EMPTY: string[] = [];

export class PendulumBench {
  readonly scene: Scene;
  readonly worldFromBase: Mat4;
  readonly toolFromFlange: Mat4;
  /** snapshot access in the buzz-wire bench's shape (`bench.physics.takeSnapshot()`) */
  readonly physics: { takeSnapshot(): Uint8Array; restoreSnapshot(bytes: Uint8Array): void };
  private world: RAPIER.World;
  private readonly names = new Map<number, { group: Group; name: string }>();
  private readonly armColliders: number[] = [];
  private readonly links: { body: number; frame: number }[] = [];
  private readonly bob: number;
  private readonly fk: FkWorkspace = fkWorkspace();
  private readonly tmp = new Float64Array(16);
  private readonly renderSync: Array<() => void> = [];
  private readonly beam: SceneObject;
  private readonly collisionScratch = new Set<string>();
  private readonly contactTmp: RAPIER.ShapeContact;
  private readonly bobPos: Vec3 = [0, 0, 0];
  private blocked: boolean;

  constructor(
    private readonly R: Rapier,
    readonly robot: RobotModel,
    readonly spec: PendulumBenchSpec,
    private readonly timestepS: number,
  ) {
    this.world = new R.World({ x: 0, y: 0, z: -9.81 });
    this.world.timestep = timestepS;
    this.contactTmp = new R.ShapeContact(0, v0(), v0(), v0(), v0());
    this.physics = {
      takeSnapshot: () => this.world.takeSnapshot(),
      restoreSnapshot: (bytes) => {
        const next = this.R.World.restoreSnapshot(bytes);
        this.world.free();
        this.world = next;
        this.world.timestep = this.timestepS;
        this.blocked = this.beamBlocked();
      },
    };
    this.worldFromBase = poseToMat4(spec.robotBasePoseWorld);
    this.toolFromFlange = poseToMat4(spec.toolPoseFlange);
    const C = PENDULUM_COLORS;
    const objects: SceneObject[] = [];
    this.scene = { objects, background: C.background, lightDir: [0.3, -0.4, 1] };
    const add = (o: SceneObject): SceneObject => {
      objects.push(o);
      return o;
    };
    const I = mat4Identity();

    // table (top at tableTopZM)
    const tableHalf: Vec3 = [0.7, 0.6, 0.02];
    const tablePose = translation(0.35, 0, spec.tableTopZM - tableHalf[2]);
    this.addBody(
      "fixed",
      tablePose,
      [{ kind: "box", centre: [0, 0, 0], halfExtentsM: tableHalf }],
      "env",
      "table",
    );
    add({ id: "table", shape: { kind: "box", halfExtentsM: tableHalf }, pose: tablePose, color: C.table });

    // stand: post, crossbar to the hinge, axle along the hinge axis
    const p = spec.pendulum;
    const hinge = p.hingeWorld;
    const sb = spec.stand.postBaseWorld;
    const sr = spec.stand.postRadiusM;
    const postTop: Vec3 = [sb[0], sb[1], hinge[2] + 0.03];
    const barA: Vec3 = [sb[0], sb[1], hinge[2] + 0.03];
    const barB: Vec3 = [hinge[0], hinge[1], hinge[2] + 0.03];
    const axleHalf = 0.03;
    const axleA: Vec3 = sub(hinge, scale(p.axisWorld, axleHalf));
    const axleB: Vec3 = add3(hinge, scale(p.axisWorld, axleHalf));
    const standParts: Array<[string, Vec3, Vec3, number]> = [
      ["stand_post", [sb[0], sb[1], spec.tableTopZM], postTop, sr],
      ["stand_bar", barA, barB, sr * 0.8],
      ["hinge_axle", axleA, axleB, 0.008],
    ];
    for (const [id, a, b, r] of standParts) {
      this.addBody("fixed", I, [{ kind: "capsule", a, b, radiusM: r }], "env", id);
      add(cylinderBetween(id, a, b, r, C.stand));
    }
    // hanger from the crossbar down to the axle
    add(cylinderBetween("hinge_hanger", barB, hinge, 0.004, C.stand));

    // photogate: two posts on the beam line, the beam between them at the bob's rest centre
    const g = spec.photogate;
    const ends: Vec3[] = [1, -1].map((s) => add3(g.centreWorld, scale(g.beamAxisWorld, s * g.postOffsetM)));
    for (const [k, e] of ends.entries()) {
      const id = `gate_post_${k === 0 ? "emitter" : "receiver"}`;
      const a: Vec3 = [e[0], e[1], spec.tableTopZM];
      const b: Vec3 = [e[0], e[1], g.centreWorld[2] + 0.02];
      this.addBody("fixed", I, [{ kind: "capsule", a, b, radiusM: g.postRadiusM }], "env", id);
      add(cylinderBetween(id, a, b, g.postRadiusM, C.gatePost));
    }
    this.beam = add({
      ...cylinderBetween("gate_beam", ends[0]!, ends[1]!, 0.0015, C.beamClear),
      emissive: true,
    });

    // hinge (fixed, no collider) and the bob on a revolute joint; the rod is light
    const R_ = this.R;
    const hingeBody = this.world.createRigidBody(R_.RigidBodyDesc.fixed().setTranslation(...hinge));
    const rest: Vec3 = [hinge[0], hinge[1], hinge[2] - p.lengthM];
    const bobDesc = R_.RigidBodyDesc.dynamic()
      .setTranslation(...rest)
      .setCanSleep(false)
      .setLinearDamping(p.dampingPerS)
      .setAngularDamping(p.dampingPerS);
    const bob = this.world.createRigidBody(bobDesc);
    this.bob = bob.handle;
    const bobCollider = this.world.createCollider(
      R_.ColliderDesc.ball(p.bobRadiusM)
        .setDensity(p.bobDensityKgM3)
        .setFriction(0.5)
        .setCollisionGroups((GROUP.free << 16) | FILTER.free),
      bob,
    );
    this.names.set(bobCollider.handle, { group: "free", name: "bob" });
    const joint = R_.JointData.revolute(
      { x: 0, y: 0, z: 0 },
      { x: hinge[0] - rest[0], y: hinge[1] - rest[1], z: hinge[2] - rest[2] },
      { x: p.axisWorld[0], y: p.axisWorld[1], z: p.axisWorld[2] },
    );
    this.world.createImpulseJoint(joint, hingeBody, bob, true);
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
      translation(c[0], c[1], c[2], bobObj.pose);
      rodObj.pose.set(segmentPose(hinge, c));
    });

    // arm link capsules: one kinematic body per frame (the base link is fixed)
    const byFrame = new Map<number, ColliderSpec[]>();
    for (const c of robot.capsules) {
      const list = byFrame.get(c.frame) ?? [];
      list.push({ kind: "capsule", a: [...c.a], b: [...c.b], radiusM: c.radiusM });
      byFrame.set(c.frame, list);
      const obj = add({
        id: c.link,
        shape: { kind: "capsule", halfLengthM: dist(c.a, c.b) / 2, radiusM: c.radiusM },
        pose: mat4Identity(),
        color: C.link,
      });
      const local = segmentPose(c.a, c.b);
      this.renderSync.push(() =>
        mat4Mul(mat4Mul(this.worldFromBase, this.fk.frames[c.frame]!, this.tmp), local, obj.pose),
      );
    }
    for (const [frame, caps] of [...byFrame.entries()].sort((a, b) => a[0] - b[0])) {
      const name = robot.capsules.find((c) => c.frame === frame)!.link;
      if (frame === 0) {
        this.addBody("fixed", this.worldFromBase, caps, "base", name);
        continue;
      }
      this.links.push({ body: this.addBody("kinematic", mat4Identity(), caps, "arm", name), frame });
    }
    this.blocked = this.beamBlocked();
  }

  /** world ← tool (TCP) for the last `applyArm` (the buzz-wire bench's name for its tool frame). */
  loopWorld(out: Mat4): Mat4 {
    return mat4Mul(this.worldFromBase, this.fk.frames[9]!, out);
  }

  /** Put every arm body at the pose for q (hot path); `teleport` jumps there at once (reset, restore). */
  applyArm(q: ArrayLike<number>, _gripperWidthM: number, teleport = false): void {
    const f = forwardKinematicsInto(this.robot, q, this.fk, this.toolFromFlange);
    const w = this.tmp;
    for (const l of this.links) {
      mat4Mul(this.worldFromBase, f[l.frame]!, w);
      const b = this.world.getRigidBody(l.body);
      const t = { x: w[3]!, y: w[7]!, z: w[11]! };
      const r = rotationQuat(w);
      if (teleport) {
        b.setTranslation(t, true);
        b.setRotation(r, true);
      }
      b.setNextKinematicTranslation(t);
      b.setNextKinematicRotation(r);
    }
  }

  /** Recompute the kinematic frames for q without touching physics (after a restore). */
  updateKinematics(q: ArrayLike<number>): void {
    forwardKinematicsInto(this.robot, q, this.fk, this.toolFromFlange);
  }

  /** One physics step, then arm–environment contacts and the photogate state (hot path). */
  step(): PendulumContacts {
    this.world.step();
    this.blocked = this.beamBlocked();
    const set = this.collisionScratch;
    set.clear();
    for (const h of this.armColliders) {
      const ca = this.world.getCollider(h);
      this.world.contactPairsWith(ca, (cb) => {
        const tb = this.names.get(cb.handle);
        if (tb?.group !== "env") return;
        const c = ca.contactCollider(cb, 0, this.contactTmp);
        if (c !== null && c.distance <= 0) set.add(`${this.names.get(h)!.name}|${tb.name}`);
      });
    }
    return { loopOnWire: false, collisions: set.size === 0 ? EMPTY : [...set].sort() };
  }

  /** Is the photogate's beam interrupted by the bob (after the last step)? */
  get photogateBlocked(): boolean {
    return this.blocked;
  }

  /** Bob centre, world, m (a shared vector: copy it to keep it). */
  bobCentre(): Vec3 {
    const t = this.world.getRigidBody(this.bob).translation();
    this.bobPos[0] = t.x;
    this.bobPos[1] = t.y;
    this.bobPos[2] = t.z;
    return this.bobPos;
  }

  /** Bob velocity, world, m/s. */
  bobVelocity(): Vec3 {
    const v = this.world.getRigidBody(this.bob).linvel();
    return [v.x, v.y, v.z];
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
    const b = this.world.getRigidBody(this.bob);
    // rotation by −angle about y maps the rod's attachment point (0, 0, L) above the bob onto the hinge
    const half = -angleRad / 2;
    b.setTranslation({ x: h[0] + L * Math.sin(angleRad), y: h[1], z: h[2] - L * Math.cos(angleRad) }, true);
    b.setRotation({ x: 0, y: Math.sin(half), z: 0, w: Math.cos(half) }, true);
    b.setLinvel({ x: 0, y: 0, z: 0 }, true);
    b.setAngvel({ x: 0, y: 0, z: 0 }, true);
    this.blocked = this.beamBlocked();
  }

  /** Update render poses from the physics state; the beam glows while clear. */
  syncRender(_lampLit: boolean): Scene {
    for (const f of this.renderSync) f();
    this.beam.color = this.blocked ? PENDULUM_COLORS.beamBlocked : PENDULUM_COLORS.beamClear;
    this.beam.emissive = !this.blocked;
    return this.scene;
  }

  free(): void {
    this.world.free();
  }

  // ---------------------------------------------------------------------------------------

  private beamBlocked(): boolean {
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

  private addBody(
    kind: "fixed" | "kinematic",
    pose: Mat4,
    colliders: readonly ColliderSpec[],
    group: Group,
    name: string,
  ): number {
    const R = this.R;
    const desc = kind === "fixed" ? R.RigidBodyDesc.fixed() : R.RigidBodyDesc.kinematicPositionBased();
    desc.setTranslation(pose[3]!, pose[7]!, pose[11]!).setRotation(rotationQuat(pose));
    const body = this.world.createRigidBody(desc);
    for (const spec of colliders) {
      const cd = colliderDesc(R, spec)
        .setCollisionGroups((GROUP[group] << 16) | FILTER[group])
        .setActiveCollisionTypes(R.ActiveCollisionTypes.DEFAULT | R.ActiveCollisionTypes.KINEMATIC_FIXED)
        .setFriction(0.5);
      const c = this.world.createCollider(cd, body);
      this.names.set(c.handle, { group, name });
      if (group === "arm") this.armColliders.push(c.handle);
    }
    return body.handle;
  }
}

function colliderDesc(R: Rapier, spec: ColliderSpec): RAPIER.ColliderDesc {
  switch (spec.kind) {
    case "ball":
      return R.ColliderDesc.ball(spec.radiusM).setTranslation(...spec.centre);
    case "box":
      return R.ColliderDesc.cuboid(...spec.halfExtentsM).setTranslation(...spec.centre);
    case "capsule": {
      // Rapier capsules run along y: rotate y onto (b − a)
      const d = sub(spec.b, spec.a);
      const len = Math.hypot(...d);
      const mid = scale(add3(spec.a, spec.b), 0.5);
      const desc = R.ColliderDesc.capsule(len / 2, spec.radiusM).setTranslation(...mid);
      if (len > 0) desc.setRotation(quatFromTo([0, 1, 0], scale(d, 1 / len)));
      return desc;
    }
  }
}

function cylinderBetween(id: string, a: Vec3, b: Vec3, radiusM: number, color: Rgb): SceneObject {
  return {
    id,
    shape: { kind: "cylinder", halfLengthM: dist(a, b) / 2, radiusM },
    pose: segmentPose(a, b),
    color,
  };
}

function translation(x: number, y: number, z: number, out: Mat4 = mat4Identity()): Mat4 {
  quatToMat4(0, 0, 0, 1, out);
  out[3] = x;
  out[7] = y;
  out[11] = z;
  return out;
}

const v0 = () => ({ x: 0, y: 0, z: 0 });
const sub = (a: readonly number[], b: readonly number[]): Vec3 => [
  a[0]! - b[0]!,
  a[1]! - b[1]!,
  a[2]! - b[2]!,
];
const add3 = (a: readonly number[], b: readonly number[]): Vec3 => [
  a[0]! + b[0]!,
  a[1]! + b[1]!,
  a[2]! + b[2]!,
];
const scale = (a: readonly number[], s: number): Vec3 => [a[0]! * s, a[1]! * s, a[2]! * s];
const dist = (a: readonly number[], b: readonly number[]): number => Math.hypot(...sub(b, a));
