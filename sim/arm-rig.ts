/**
 * The robot arm inside a bench scene, built once on a `PhysicsWorld`: the link capsules grouped
 * by kinematic frame into one body each (the base a fixed body, the others kinematic bodies
 * following FK), optionally the Franka Hand's fingers as colliders on the flange body, and a
 * render object per capsule and finger. Both bench scenes (buzz wire, pendulum) use it.
 *
 * `applyArm` runs in the control loop (allocation-light): it moves only the bodies whose frame
 * moved since the last call and the fingers only when the opening changed. `envContacts` reports
 * which arm-carried parts touch the environment after a step.
 */
import { type FkWorkspace, fkWorkspace, forwardKinematicsInto } from "../robots/franka/kinematics.ts";
import { FRANKA_HAND_TCP_OFFSET_M, FRANKA_HAND_YAW_RAD } from "../robots/franka/models.ts";
import { type Mat4, mat4Identity, mat4Mul, type Vec3 } from "../robots/math.ts";
import type { RobotModel } from "../robots/types.ts";
import { segmentLengthM, segmentPose } from "./render/placement.ts";
import type { Rgb, SceneObject } from "./render/scene.ts";
import type { ColliderSpec, ColliderTag, GroupName, PhysicsWorld } from "./world.ts";

/** FK frame of the flange and of the tool. */
const FLANGE_FRAME = 8;
const TOOL_FRAME = 9;
const JOINTS = 7;

export interface ArmRigOptions {
  /** world ← robot base */
  worldFromBase: Mat4;
  /** flange ← tool (FK frame 9: the loop, the TCP …) */
  toolFromFlange: Mat4;
  /** colour of the link capsules */
  linkColor: Rgb;
  /** colour of the Franka Hand's finger boxes; without it the arm has no fingers */
  fingerColor?: Rgb;
  /**
   * groups of arm-carried colliders whose touches with the environment `envContacts` reports
   * (default ["arm"]: links and fingers; a scene adds e.g. the held loop's groups)
   */
  contactGroups?: readonly GroupName[];
}

interface LinkBody {
  body: number;
  frame: number;
}

/** Half extents of a finger box, m. */
const FINGER_HALF_M: Vec3 = [0.009, 0.005, 0.022];
const EMPTY: string[] = [];

export class ArmRig {
  /** the kinematic body of the flange: a scene attaches what the hand holds to it */
  readonly flangeBody: number;
  private readonly worldFromBase: Mat4;
  private readonly toolFromFlange: Mat4;
  private readonly links: LinkBody[] = [];
  private readonly fingerColliders: number[] = [];
  private readonly contactGroups: readonly GroupName[];
  /** joint angles of the last `applyArm` (NaN: unknown, place everything) */
  private readonly lastQ = new Float64Array(JOINTS).fill(Number.NaN);
  private lastGripperWidthM = Number.NaN;
  /**
   * the finger colliders' offsets in the flange frame as Rapier stores them (f32-rounded), m;
   * compared before moving a finger so that a restored world and a running one decide alike
   */
  private readonly fingerT = new Float64Array(6).fill(Number.NaN);
  private readonly fk: FkWorkspace = fkWorkspace();
  private readonly handFromFlange: Mat4;
  private readonly tmp = new Float64Array(16);
  private readonly tmp2 = new Float64Array(16);
  private readonly renderSync: Array<() => void> = [];
  private readonly collisionScratch = new Set<string>();
  private readonly noteCollision = (a: ColliderTag, b: ColliderTag): void => {
    this.collisionScratch.add(`${a.name}|${b.name}`);
  };

  /**
   * Build the arm's bodies in `physics` and its render objects through `addObject` (in the
   * robot's capsule order, then the fingers).
   */
  constructor(
    private readonly physics: PhysicsWorld,
    readonly robot: RobotModel,
    opts: ArmRigOptions,
    addObject: (o: SceneObject) => SceneObject,
  ) {
    this.worldFromBase = opts.worldFromBase;
    this.toolFromFlange = opts.toolFromFlange;
    this.contactGroups = opts.contactGroups ?? ["arm"];
    this.handFromFlange = mat4Identity();
    const cy = Math.cos(FRANKA_HAND_YAW_RAD);
    const sy = Math.sin(FRANKA_HAND_YAW_RAD);
    this.handFromFlange[0] = cy;
    this.handFromFlange[1] = -sy;
    this.handFromFlange[4] = sy;
    this.handFromFlange[5] = cy;

    // link capsules: one body per frame that carries capsules
    const byFrame = new Map<number, ColliderSpec[]>();
    for (const c of robot.capsules) {
      const list = byFrame.get(c.frame) ?? [];
      list.push({ kind: "capsule", a: [...c.a], b: [...c.b], radiusM: c.radiusM });
      byFrame.set(c.frame, list);
      const obj = addObject({
        id: c.link,
        shape: { kind: "capsule", halfLengthM: segmentLengthM(c.a, c.b) / 2, radiusM: c.radiusM },
        pose: mat4Identity(),
        color: opts.linkColor,
      });
      const local = segmentPose(c.a, c.b);
      this.renderSync.push(() =>
        mat4Mul(mat4Mul(this.worldFromBase, this.fk.frames[c.frame]!, this.tmp), local, obj.pose),
      );
    }
    for (const [frame, caps] of [...byFrame.entries()].sort((a, b) => a[0] - b[0])) {
      const name = robot.capsules.find((c) => c.frame === frame)!.link;
      if (frame === 0) {
        // the base does not move: a fixed body outside the arm–environment collision check
        physics.addBody("fixed", this.worldFromBase, caps, { group: "base", name });
        continue;
      }
      this.links.push({
        body: physics.addBody("kinematic", mat4Identity(), caps, { group: "arm", name }),
        frame,
      });
    }
    const flange = this.links.find((l) => l.frame === FLANGE_FRAME);
    if (!flange)
      throw new Error(`the robot model has no collision capsule on the flange frame (${FLANGE_FRAME})`);
    this.flangeBody = flange.body;

    if (opts.fingerColor) this.addFingers(opts.fingerColor, addObject);
  }

  /**
   * Fingers: boxes in the hand frame, moved along hand y by ± width / 2; colliders on the flange
   * body (moved within it only when the opening changes), so they cost no pose update per tick.
   */
  private addFingers(color: Rgb, addObject: (o: SceneObject) => SceneObject): void {
    const fingerBox: ColliderSpec[] = [{ kind: "box", centre: [0, 0, 0], halfExtentsM: FINGER_HALF_M }];
    const ids = ["finger_left", "finger_right"];
    for (const name of ids) {
      const [h] = this.physics.addColliders(
        this.flangeBody,
        fingerBox,
        { group: "arm", name },
        this.handFromFlange,
      );
      this.fingerColliders.push(h!);
    }
    for (const [k, id] of ids.entries()) {
      const obj = addObject({
        id,
        shape: { kind: "box", halfExtentsM: FINGER_HALF_M },
        pose: mat4Identity(),
        color,
      });
      this.renderSync.push(() => {
        const p = this.tmp2;
        p.set(this.handFromFlange);
        p[3] = this.fingerT[k * 3]!;
        p[7] = this.fingerT[k * 3 + 1]!;
        p[11] = this.fingerT[k * 3 + 2]!;
        mat4Mul(this.flangeWorld(this.tmp), p, obj.pose);
      });
    }
  }

  /** world ← flange for the last `applyArm` (valid after the call). */
  flangeWorld(out: Mat4): Mat4 {
    return mat4Mul(this.worldFromBase, this.fk.frames[FLANGE_FRAME]!, out);
  }

  /** world ← tool for the last `applyArm`. */
  toolWorld(out: Mat4): Mat4 {
    return mat4Mul(this.worldFromBase, this.fk.frames[TOOL_FRAME]!, out);
  }

  /**
   * Put every arm-carried body at the pose for joint angles q (rad) and finger opening (m)
   * (control loop). With `teleport` the bodies jump there at once (reset / restore), otherwise
   * they are moved kinematically during the next step. Only bodies whose frame moved get a new
   * pose (a link depends on the joints before it), and the fingers move only when the opening
   * changed.
   */
  applyArm(q: ArrayLike<number>, gripperWidthM: number, teleport = false): void {
    const f = forwardKinematicsInto(this.robot, q, this.fk, this.toolFromFlange);
    // first joint that changed since the last call: frames ≤ that index did not move
    let firstChanged = teleport ? 0 : JOINTS;
    for (let j = 0; j < JOINTS && firstChanged === JOINTS; j++) if (q[j] !== this.lastQ[j]) firstChanged = j;
    for (let j = 0; j < JOINTS; j++) this.lastQ[j] = q[j]!;
    // the frames past the joints' (flange, hand) are re-posed on every call, but they move only
    // when a joint did
    if (firstChanged < JOINTS) this.contactsStale = true;
    const w = this.tmp;
    const links = this.links;
    for (let i = 0; i < links.length; i++) {
      const l = links[i]!;
      if (l.frame <= firstChanged) continue;
      mat4Mul(this.worldFromBase, f[l.frame]!, w);
      if (teleport) this.physics.teleport(l.body, w);
      else this.physics.setKinematicPose(l.body, w);
    }
    if (this.fingerColliders.length > 0 && (teleport || gripperWidthM !== this.lastGripperWidthM)) {
      this.lastGripperWidthM = gripperWidthM;
      const t = this.fingerT;
      for (let k = 0; k < 2; k++) {
        const p = this.fingerFlange(k, gripperWidthM, this.tmp2);
        const x = Math.fround(p[3]!);
        const y = Math.fround(p[7]!);
        const z = Math.fround(p[11]!);
        const o = k * 3;
        if (!teleport && t[o] === x && t[o + 1] === y && t[o + 2] === z) continue;
        t[o] = x;
        t[o + 1] = y;
        t[o + 2] = z;
        this.contactsStale = true;
        this.physics.setColliderTranslation(this.fingerColliders[k]!, x, y, z);
      }
    }
  }

  /** flange ← finger box centre: hand frame = flange · yaw; TCP − 22 mm along z, ± (width/2 + 5 mm) along y. */
  private fingerFlange(k: number, gripperWidthM: number, out: Mat4): Mat4 {
    const hand = this.handFromFlange;
    const off = (k === 0 ? 1 : -1) * (gripperWidthM / 2 + 0.005);
    const zOff = FRANKA_HAND_TCP_OFFSET_M - 0.022;
    out.set(hand);
    out[3] = hand[1]! * off + hand[2]! * zOff;
    out[7] = hand[5]! * off + hand[6]! * zOff;
    out[11] = hand[9]! * off + hand[10]! * zOff;
    return out;
  }

  /**
   * Recompute the kinematic frames for q without touching physics (after a restore: the restored
   * world holds every link at its pose for q, so q also becomes the last applied configuration).
   */
  updateKinematics(q: ArrayLike<number>): void {
    forwardKinematicsInto(this.robot, q, this.fk, this.toolFromFlange);
    for (let j = 0; j < JOINTS; j++) this.lastQ[j] = q[j]!;
    this.contactsStale = true;
    // the fingers' offsets come back with the restored world: read them (exact f32 values)
    for (const [k, h] of this.fingerColliders.entries())
      this.fingerT.set(this.physics.colliderTranslation(h), k * 3);
    this.lastGripperWidthM = Number.NaN;
  }

  /**
   * Arm-carried parts (the contact groups) touching the environment at the current positions:
   * pairs "part|object", sorted; a shared empty array when there are none (control loop).
   */
  envContacts(): string[] {
    // the environment is fixed: when no arm-carried body or finger moved since the last scan
    // (the arm holds still), the touching pairs are the last scan's (its narrow-phase scans are
    // WebAssembly calls that allocate ~1.4 KB per step)
    if (!this.contactsStale) return this.lastContacts;
    const set = this.collisionScratch;
    set.clear();
    this.physics.touching(this.contactGroups, "env", this.noteCollision);
    this.contactsStale = false;
    this.lastContacts = set.size === 0 ? EMPTY : [...set].sort();
    return this.lastContacts;
  }
  /**
   * an arm-carried body or finger moved (or the world was restored) since the last `envContacts`
   * (set by applyArm before the step that moves them: the scan after that step sees them)
   */
  private contactsStale = true;
  private lastContacts: string[] = EMPTY;

  private savedFrames: Float64Array[] | null = null;
  /**
   * Run `fn` with the kinematic frames of joint angles q (rendering a past state, e.g. a camera's
   * latency); physics and the last applied configuration are untouched, the frames come back after.
   */
  withKinematics<T>(q: ArrayLike<number>, fn: () => T): T {
    const frames = this.fk.frames;
    this.savedFrames ??= frames.map(() => new Float64Array(16));
    const saved = this.savedFrames;
    for (let i = 0; i < frames.length; i++) saved[i]!.set(frames[i]!);
    forwardKinematicsInto(this.robot, q, this.fk, this.toolFromFlange);
    try {
      return fn();
    } finally {
      for (let i = 0; i < frames.length; i++) frames[i]!.set(saved[i]!);
    }
  }

  /** Update the arm's render poses for the last `applyArm`. */
  syncRender(): void {
    for (const f of this.renderSync) f();
  }
}
