/**
 * The simulator's physics world: a thin owner of one Rapier world with a fixed step, named
 * collision groups, kinematic (position-driven) and free dynamic bodies, revolute joints, exact
 * contact checks, and bit-exact snapshots. No globals besides the memoised WASM initialisation;
 * call `free()` on teardown.
 *
 * Contact sensing: after each step, the narrow-phase pairs of the watched colliders (bounding
 * boxes overlap, enlarged by the prediction distance) get an exact distance query at the new
 * positions; a pair "touches" when it is ≤ 0. Rapier's own contact manifolds are not used for
 * this: they are updated incrementally and lag a few steps behind a slowly moving kinematic
 * body (measured: up to 14 ms), see docs/sim-decisions.md.
 */
import RAPIER from "@dimforge/rapier3d-compat";
import { type Mat4, quatFromRotationInto, type Vec3 } from "../robots/math.ts";

export type Rapier = typeof RAPIER;

let rapierReady: Promise<Rapier> | undefined;

/** Initialise Rapier's WASM module once per process (idempotent). */
export function loadRapier(): Promise<Rapier> {
  rapierReady ??= RAPIER.init().then(() => RAPIER);
  return rapierReady;
}

/** Collision groups: who may touch whom. */
export const GROUP = Object.freeze({
  /** table, board, posts */
  env: 1 << 0,
  /** the buzz wire */
  wire: 1 << 1,
  /** arm links and fingers */
  arm: 1 << 2,
  /** the metal ring of the loop (part of the circuit) */
  loop: 1 << 3,
  /** the insulated handle of the loop */
  handle: 1 << 4,
  /** free dynamic objects */
  free: 1 << 5,
  /** the robot's fixed base link (sits on the table; touches only free objects) */
  base: 1 << 6,
});
export type GroupName = keyof typeof GROUP;

const FILTER: Record<GroupName, number> = {
  env: GROUP.arm | GROUP.loop | GROUP.handle | GROUP.free,
  // ring–wire contact is judged exactly by sim/buzzwire/contact.ts, not by Rapier
  wire: GROUP.free,
  arm: GROUP.env | GROUP.free,
  loop: GROUP.env | GROUP.free,
  handle: GROUP.env | GROUP.free,
  free: GROUP.env | GROUP.wire | GROUP.arm | GROUP.loop | GROUP.handle | GROUP.free | GROUP.base,
  base: GROUP.free,
};

/** Collider geometry in its body's frame; lengths in m. */
export type ColliderSpec =
  | { kind: "capsule"; a: Vec3; b: Vec3; radiusM: number }
  | { kind: "box"; centre: Vec3; halfExtentsM: Vec3 }
  | { kind: "ball"; centre: Vec3; radiusM: number };

export type BodyKind = "fixed" | "kinematic" | "dynamic";

/** Material of colliders. */
export interface ColliderOptions {
  /** collider density, kg/m³ (default 1000) */
  densityKgM3?: number;
  /** Coulomb friction coefficient (default 0.5) */
  friction?: number;
}

/** A body's collider material and, for dynamic bodies, its damping and sleeping. */
export interface BodyOptions extends ColliderOptions {
  /** viscous damping of the linear velocity, 1/s (dynamic bodies; default 0) */
  linearDampingPerS?: number;
  /** viscous damping of the angular velocity, 1/s (dynamic bodies; default 0) */
  angularDampingPerS?: number;
  /** may the body fall asleep at rest (default true) */
  canSleep?: boolean;
}

export interface WorldOptions {
  /** fixed physics step, s */
  timestepS: number;
  /** contact prediction distance, m (must exceed the largest relative motion per step) */
  predictionDistanceM: number;
  /** gravity in the world frame, m/s² */
  gravityMps2?: Vec3;
}

/** What a collider is, for contact reports. */
export interface ColliderTag {
  group: GroupName;
  /** name of the object it belongs to, e.g. "link3", "wire", "table" */
  name: string;
}

/** A colliding pair found by `touching`, tags ordered as the groups were asked for. */
export type TouchVisitor = (a: ColliderTag, b: ColliderTag) => void;

export class PhysicsWorld {
  private world: RAPIER.World;
  private readonly tags = new Map<number, ColliderTag>();
  /** collider handles by group, in creation order */
  private readonly byGroup = new Map<GroupName, number[]>();
  private readonly contactTmp: RAPIER.ShapeContact;
  private readonly gravity: { x: number; y: number; z: number };
  /** the gravity as the WASM step takes it (made once; freed with the world) */
  private readonly gravityRaw: ReturnType<Rapier["VectorOps"]["intoRaw"]>;
  /** scratch quaternion for pose setters (no per-call allocation) */
  private readonly quatTmp = { x: 0, y: 0, z: 0, w: 1 };
  private readonly vecTmp = { x: 0, y: 0, z: 0 };

  constructor(
    private readonly R: Rapier,
    readonly opts: WorldOptions,
  ) {
    const g = opts.gravityMps2 ?? [0, 0, -9.81];
    this.gravity = { x: g[0], y: g[1], z: g[2] };
    this.world = new R.World(this.gravity);
    this.gravityRaw = R.VectorOps.intoRaw(this.gravity);
    this.applyParams();
    this.contactTmp = new R.ShapeContact(
      0,
      { x: 0, y: 0, z: 0 },
      { x: 0, y: 0, z: 0 },
      { x: 0, y: 0, z: 0 },
      {
        x: 0,
        y: 0,
        z: 0,
      },
    );
  }

  private applyParams(): void {
    this.world.timestep = this.opts.timestepS;
    // lengthUnit is 1 (metres), so the normalised distance is in metres
    this.world.integrationParameters.normalizedPredictionDistance = this.opts.predictionDistanceM;
    // the internal profiler reads the wall clock several times per step; nothing here uses it
    this.world.profilerEnabled = false;
  }

  /**
   * Add a body with its colliders.
   * @param pose world ← body transform
   * @returns the body handle
   */
  addBody(
    kind: BodyKind,
    pose: Mat4,
    colliders: readonly ColliderSpec[],
    tag: ColliderTag,
    opts: BodyOptions = {},
  ): number {
    // ArmRig.envContacts keeps its last scan while the arm holds still: that holds only while
    // nothing of the environment moves
    if (tag.group === "env" && kind !== "fixed")
      throw new Error(`environment body "${tag.name}" must be fixed (it is ${kind}): moving objects go in "free"`);
    const R = this.R;
    const desc =
      kind === "fixed"
        ? R.RigidBodyDesc.fixed()
        : kind === "kinematic"
          ? R.RigidBodyDesc.kinematicPositionBased()
          : R.RigidBodyDesc.dynamic();
    const q = rotationQuat(pose);
    desc.setTranslation(pose[3]!, pose[7]!, pose[11]!).setRotation(q);
    if (opts.linearDampingPerS !== undefined) desc.setLinearDamping(opts.linearDampingPerS);
    if (opts.angularDampingPerS !== undefined) desc.setAngularDamping(opts.angularDampingPerS);
    if (opts.canSleep !== undefined) desc.setCanSleep(opts.canSleep);
    const body = this.world.createRigidBody(desc);
    this.attach(body, colliders, tag, opts);
    return body.handle;
  }

  /**
   * Attach more colliders to an existing body, with their own tag (group and name), placed at
   * `bodyFromColliders` in the body's frame. Returns the new collider handles.
   */
  addColliders(
    body: number,
    colliders: readonly ColliderSpec[],
    tag: ColliderTag,
    bodyFromColliders?: Mat4,
    opts: ColliderOptions = {},
  ): number[] {
    return this.attach(this.world.getRigidBody(body), colliders, tag, opts, bodyFromColliders);
  }

  private attach(
    body: RAPIER.RigidBody,
    colliders: readonly ColliderSpec[],
    tag: ColliderTag,
    opts: ColliderOptions,
    offset?: Mat4,
  ): number[] {
    const R = this.R;
    const groups = (GROUP[tag.group] << 16) | FILTER[tag.group];
    // several parts become one compound collider: far fewer broad-phase entries and pairs; an
    // offset collider is a compound too, so that its own translation is free for the offset
    const descs =
      colliders.length > 1 || offset
        ? [compoundDesc(R, colliders)]
        : colliders.map((c) => colliderDesc(R, c));
    const handles: number[] = [];
    for (const d of descs) {
      const cd = d
        .setCollisionGroups(groups)
        .setActiveCollisionTypes(
          R.ActiveCollisionTypes.DEFAULT |
            R.ActiveCollisionTypes.KINEMATIC_FIXED |
            R.ActiveCollisionTypes.KINEMATIC_KINEMATIC,
        )
        .setDensity(opts.densityKgM3 ?? 1000)
        .setFriction(opts.friction ?? 0.5);
      if (offset) {
        cd.setTranslation(offset[3]!, offset[7]!, offset[11]!).setRotation(rotationQuat(offset));
      }
      const c = this.world.createCollider(cd, body);
      this.tags.set(c.handle, tag);
      const list = this.byGroup.get(tag.group) ?? [];
      list.push(c.handle);
      this.byGroup.set(tag.group, list);
      handles.push(c.handle);
    }
    return handles;
  }

  /**
   * Join two bodies by a revolute (hinge) joint: `anchorA` in A's frame and `anchorB` in B's
   * frame (m) are held together, and B turns about `axis` (unit, in A's frame) only.
   */
  addRevoluteJoint(bodyA: number, bodyB: number, anchorA: Vec3, anchorB: Vec3, axis: Vec3): void {
    const v = (p: Vec3) => ({ x: p[0], y: p[1], z: p[2] });
    const joint = this.R.JointData.revolute(v(anchorA), v(anchorB), v(axis));
    this.world.createImpulseJoint(
      joint,
      this.world.getRigidBody(bodyA),
      this.world.getRigidBody(bodyB),
      true,
    );
  }

  /** Move a collider within its body (body frame, m); e.g. fingers sliding on the hand. */
  setColliderTranslation(collider: number, x: number, y: number, z: number): void {
    const v = this.vecTmp;
    v.x = x;
    v.y = y;
    v.z = z;
    this.world.getCollider(collider).setTranslationWrtParent(v);
  }

  /** A collider's position within its body (body frame, m). */
  colliderTranslation(collider: number): Vec3 {
    const t = this.world.getCollider(collider).translationWrtParent();
    return t ? [t.x, t.y, t.z] : [0, 0, 0];
  }

  /** Command a kinematic body's pose for the end of the next step (world ← body). */
  setKinematicPose(body: number, pose: Mat4): void {
    const b = this.world.getRigidBody(body);
    const v = this.vecTmp;
    v.x = pose[3]!;
    v.y = pose[7]!;
    v.z = pose[11]!;
    b.setNextKinematicTranslation(v);
    b.setNextKinematicRotation(rotationQuat(pose, this.quatTmp));
  }

  /** Move a body to a pose at once (reset, restore); kinematic bodies also get it as next pose. */
  teleport(body: number, pose: Mat4): void {
    const b = this.world.getRigidBody(body);
    const q = rotationQuat(pose);
    b.setTranslation({ x: pose[3]!, y: pose[7]!, z: pose[11]! }, true);
    b.setRotation(q, true);
    if (b.isKinematic()) {
      b.setNextKinematicTranslation({ x: pose[3]!, y: pose[7]!, z: pose[11]! });
      b.setNextKinematicRotation(q);
    }
  }

  /** Set a body's linear (m/s) and angular (rad/s) velocity, world frame; wakes it. */
  setVelocity(body: number, linearMps: Vec3, angularRadps: Vec3): void {
    const b = this.world.getRigidBody(body);
    b.setLinvel({ x: linearMps[0], y: linearMps[1], z: linearMps[2] }, true);
    b.setAngvel({ x: angularRadps[0], y: angularRadps[1], z: angularRadps[2] }, true);
  }

  /** A body's linear velocity, world frame, m/s. */
  linearVelocity(body: number): Vec3 {
    const v = this.world.getRigidBody(body).linvel();
    return [v.x, v.y, v.z];
  }

  /** A body's origin in the world, m (written into `out`; no allocation). */
  bodyTranslation(body: number, out: Vec3): Vec3 {
    const t = this.world.getRigidBody(body).translation();
    out[0] = t.x;
    out[1] = t.y;
    out[2] = t.z;
    return out;
  }

  /** Advance one fixed step. */
  step(): void {
    // World.step() = this pipeline step + a re-scan of every body and collider handle (several
    // WASM calls each) to map objects created inside WASM; this world never creates any there.
    // PhysicsPipeline.step() would also make a WASM vector of the gravity per step (an object
    // registered for finalisation, then freed): the raw step takes the one made once
    const w = this.world;
    w.physicsPipeline.raw.step(
      this.gravityRaw,
      w.integrationParameters.raw,
      w.islands.raw,
      w.broadPhase.raw,
      w.narrowPhase.raw,
      w.bodies.raw,
      w.colliders.raw,
      w.softBodies.raw,
      w.impulseJoints.raw,
      w.multibodyJoints.raw,
      w.ccdSolver.raw,
    );
  }

  /**
   * Visit every pair of colliders from groups `ga` (one group or several) and `gb` that touch
   * (distance ≤ 0) at the current positions: the narrow phase's pairs of each collider on the
   * smaller side (bounding boxes overlap) are checked exactly. Runs in the physics loop: several
   * groups against one are one narrow-phase scan per collider of the smaller side, not one per
   * group (each scan is a WebAssembly call that allocates a closure and boxes handles).
   */
  touching(ga: GroupName | readonly GroupName[], gb: GroupName, visit: TouchVisitor): void {
    const gas = typeof ga === "string" ? [ga] : ga;
    let na = 0;
    for (let i = 0; i < gas.length; i++) na += this.byGroup.get(gas[i]!)?.length ?? 0;
    const lb = this.byGroup.get(gb);
    if (na === 0 || !lb) return;
    const scan = this.scan;
    scan.visit = visit;
    if (lb.length < na) {
      // scan each `gb` collider; its partners from any of `gas`
      scan.swap = true;
      scan.others = gas;
      this.scanAll(lb);
    } else {
      scan.swap = false;
      scan.others = this.single(gb);
      for (let i = 0; i < gas.length; i++) {
        const la = this.byGroup.get(gas[i]!);
        if (la) this.scanAll(la);
      }
    }
    scan.visit = null;
    scan.co = null;
  }

  private scanAll(outer: readonly number[]): void {
    const scan = this.scan;
    for (let i = 0; i < outer.length; i++) {
      const h = outer[i]!;
      scan.co = this.world.getCollider(h);
      scan.to = this.tags.get(h)!;
      // the narrow phase's own scan hands over handles: World.contactPairsWith would wrap the
      // visitor in a closure per call to look each collider up first
      this.world.narrowPhase.contactPairsWith(h, this.onPair);
    }
  }

  /** one-group lists, made once (the scan's partner groups) */
  private readonly singles = new Map<GroupName, readonly GroupName[]>();
  private single(g: GroupName): readonly GroupName[] {
    let l = this.singles.get(g);
    if (!l) this.singles.set(g, (l = [g]));
    return l;
  }

  /** the scan `touching` runs: its state in fields, one visitor for every call (control loop: no closure per collider) */
  private readonly scan: {
    /** the partner's group must be one of these */
    others: readonly GroupName[];
    /** the scanned collider is on the `gb` side */
    swap: boolean;
    visit: TouchVisitor | null;
    co: RAPIER.Collider | null;
    to: ColliderTag | null;
  } = { others: [], swap: false, visit: null, co: null, to: null };
  private readonly onPair = (hi: number): void => {
    const s = this.scan;
    const ti = this.tags.get(hi);
    if (!ti || !s.others.includes(ti.group)) return;
    const c = s.co!.contactCollider(this.world.getCollider(hi), 0, this.contactTmp);
    if (c && c.distance <= 0) {
      if (s.swap) s.visit!(ti, s.to!);
      else s.visit!(s.to!, ti);
    }
  };

  /** Rapier world bytes. */
  takeSnapshot(): Uint8Array {
    return this.world.takeSnapshot();
  }

  /** Replace the Rapier world by a snapshot taken from this world (handles are preserved). */
  restoreSnapshot(bytes: Uint8Array): void {
    const next = this.R.World.restoreSnapshot(bytes);
    this.world.free();
    this.world = next;
    this.applyParams();
  }

  free(): void {
    this.world.free();
    this.gravityRaw.free();
  }
}

type Placed = { shape: RAPIER.Shape; pos: Vec3; rot: { x: number; y: number; z: number; w: number } };

function placedShape(R: Rapier, spec: ColliderSpec): Placed {
  const id = { x: 0, y: 0, z: 0, w: 1 };
  switch (spec.kind) {
    case "ball":
      return { shape: new R.Ball(spec.radiusM), pos: spec.centre, rot: id };
    case "box":
      return { shape: new R.Cuboid(...spec.halfExtentsM), pos: spec.centre, rot: id };
    case "capsule": {
      // Rapier capsules run along y: rotate y onto (b − a)
      const d: Vec3 = [spec.b[0] - spec.a[0], spec.b[1] - spec.a[1], spec.b[2] - spec.a[2]];
      const len = Math.hypot(d[0], d[1], d[2]);
      const mid: Vec3 = [
        (spec.a[0] + spec.b[0]) / 2,
        (spec.a[1] + spec.b[1]) / 2,
        (spec.a[2] + spec.b[2]) / 2,
      ];
      const rot = len > 0 ? quatFromTo([0, 1, 0], [d[0] / len, d[1] / len, d[2] / len]) : id;
      return { shape: new R.Capsule(len / 2, spec.radiusM), pos: mid, rot };
    }
  }
}

function compoundDesc(R: Rapier, specs: readonly ColliderSpec[]): RAPIER.ColliderDesc {
  const parts = specs.map((s) => placedShape(R, s));
  return R.ColliderDesc.compound(
    parts.map((p) => p.shape),
    parts.map((p) => ({ x: p.pos[0], y: p.pos[1], z: p.pos[2] })),
    parts.map((p) => p.rot),
  );
}

function colliderDesc(R: Rapier, spec: ColliderSpec): RAPIER.ColliderDesc {
  const p = placedShape(R, spec);
  return new R.ColliderDesc(p.shape).setTranslation(...p.pos).setRotation(p.rot);
}

/** Shortest-arc rotation taking unit vector u onto unit vector v. */
function quatFromTo(u: Vec3, v: Vec3): { x: number; y: number; z: number; w: number } {
  const dot = u[0] * v[0] + u[1] * v[1] + u[2] * v[2];
  if (dot < -0.999999) {
    // 180°: any axis orthogonal to u
    const ax: Vec3 = Math.abs(u[0]) < 0.9 ? [0, -u[2], u[1]] : [-u[2], 0, u[0]];
    const n = Math.hypot(...ax);
    return { x: ax[0] / n, y: ax[1] / n, z: ax[2] / n, w: 0 };
  }
  const cx = u[1] * v[2] - u[2] * v[1];
  const cy = u[2] * v[0] - u[0] * v[2];
  const cz = u[0] * v[1] - u[1] * v[0];
  const w = 1 + dot;
  const n = Math.hypot(cx, cy, cz, w);
  return { x: cx / n, y: cy / n, z: cz / n, w: w / n };
}

const quatScratch: [number, number, number, number] = [0, 0, 0, 1];

/** Rotation part of a row-major transform as a Rapier quaternion object (w ≥ 0; no allocation with `out`). */
export function rotationQuat(
  m: Mat4,
  out: { x: number; y: number; z: number; w: number } = { x: 0, y: 0, z: 0, w: 1 },
): { x: number; y: number; z: number; w: number } {
  const q = quatScratch;
  quatFromRotationInto(m[0]!, m[1]!, m[2]!, m[4]!, m[5]!, m[6]!, m[8]!, m[9]!, m[10]!, q);
  out.x = q[0];
  out.y = q[1];
  out.z = q[2];
  out.w = q[3];
  return out;
}

/** Row-major rotation (translation zeroed) from a unit quaternion. */
export function quatToMat4(x: number, y: number, z: number, w: number, out: Mat4): Mat4 {
  out[0] = 1 - 2 * (y * y + z * z);
  out[1] = 2 * (x * y - z * w);
  out[2] = 2 * (x * z + y * w);
  out[4] = 2 * (x * y + z * w);
  out[5] = 1 - 2 * (x * x + z * z);
  out[6] = 2 * (y * z - x * w);
  out[8] = 2 * (x * z - y * w);
  out[9] = 2 * (y * z + x * w);
  out[10] = 1 - 2 * (x * x + y * y);
  out[3] = out[7] = out[11] = out[12] = out[13] = out[14] = 0;
  out[15] = 1;
  return out;
}
