/**
 * The buzz-wire bench as physics bodies and render objects, built from a calibration:
 * table, board, the bent wire (thin capsules for physics, a tube for rendering), start and
 * end posts, a lamp, the arm's link capsules (kinematic bodies following FK), the fingers,
 * and the loop (ring capsules + insulated handle) held at the tool.
 *
 * `applyArm` + `step` run once per control tick (allocation-light); `syncRender` runs only
 * when a frame is captured.
 */
import type { Calibration } from "../../calibration/schema.ts";
import { FRANKA_HAND_TCP_OFFSET_M, FRANKA_HAND_YAW_RAD } from "../../robots/franka/models.ts";
import { type FkWorkspace, fkWorkspace, forwardKinematicsInto } from "../../robots/franka/kinematics.ts";
import { type Mat4, mat4Identity, mat4Mul, mat4Point, poseToMat4, type Vec3 } from "../../robots/math.ts";
import type { RobotModel } from "../../robots/types.ts";
import type { Rgb, Scene, SceneObject } from "../render/scene.ts";
import { type ColliderSpec, PhysicsWorld, type Rapier } from "../world.ts";
import { RingWireContact } from "./contact.ts";
import { centreline, pointAt } from "../../calibration/wire-geometry.ts";

/** Physics wire segment length, m. */
export const WIRE_SEGMENT_M = 0.01;
/** Number of capsules approximating the ring. */
export const RING_SEGMENTS = 16;

export const COLORS = Object.freeze({
  background: [200, 215, 230] as Rgb,
  table: [120, 120, 125] as Rgb,
  board: [40, 60, 95] as Rgb,
  wire: [235, 140, 30] as Rgb,
  post: [70, 70, 70] as Rgb,
  loop: [205, 205, 215] as Rgb,
  handle: [30, 30, 30] as Rgb,
  link: [235, 235, 235] as Rgb,
  finger: [60, 60, 60] as Rgb,
  lampOff: [90, 25, 25] as Rgb,
  /** lit lamp: drawn emissive at exactly this colour */
  lampOn: [255, 30, 20] as Rgb,
});

/** Per-tick physics options. */
export interface BenchPhysicsOptions {
  timestepS: number;
  predictionDistanceM: number;
}

/** Contact state after a step. */
export interface BenchContacts {
  /** loop ring touches the wire */
  loopOnWire: boolean;
  /** colliding pairs "a|b" (arm, loop or handle vs table/board/posts), sorted */
  collisions: string[];
}

interface LinkBody {
  body: number;
  frame: number;
}

export class BuzzWireBench {
  readonly physics: PhysicsWorld;
  readonly scene: Scene;
  readonly worldFromBase: Mat4;
  readonly toolFromFlange: Mat4;
  /** wire centreline in the world frame */
  readonly wireWorld: Vec3[];
  private readonly links: LinkBody[] = [];
  private readonly fingerColliders: [number, number];
  /** joint angles of the last `applyArm` (NaN: unknown, place everything) */
  private readonly lastQ = new Float64Array(7).fill(Number.NaN);
  private lastGripperWidthM = Number.NaN;
  /**
   * the finger colliders' offsets in the flange frame as Rapier stores them (f32-rounded), m;
   * compared before moving a finger so that a restored world and a running one decide alike
   */
  private readonly fingerT = new Float64Array(6).fill(Number.NaN);
  private readonly fk: FkWorkspace = fkWorkspace();
  private readonly tmp = new Float64Array(16);
  private readonly tmp2 = new Float64Array(16);
  private readonly handFromFlange: Mat4;
  private readonly lamp: SceneObject;
  private readonly renderSync: Array<() => void> = [];
  private collisionScratch = new Set<string>();

  constructor(
    R: Rapier,
    readonly robot: RobotModel,
    readonly calibration: Calibration,
    opts: BenchPhysicsOptions,
  ) {
    this.physics = new PhysicsWorld(R, {
      timestepS: opts.timestepS,
      predictionDistanceM: opts.predictionDistanceM,
    });
    this.worldFromBase = poseToMat4(calibration.robotBasePoseWorld);
    this.toolFromFlange = poseToMat4(calibration.tool.loopPoseFlange);
    this.handFromFlange = mat4Identity();
    const cy = Math.cos(FRANKA_HAND_YAW_RAD);
    const sy = Math.sin(FRANKA_HAND_YAW_RAD);
    this.handFromFlange[0] = cy;
    this.handFromFlange[1] = -sy;
    this.handFromFlange[4] = sy;
    this.handFromFlange[5] = cy;
    const objects: SceneObject[] = [];
    this.scene = { objects, background: COLORS.background, lightDir: [0.3, -0.4, 1] };
    const add = (o: SceneObject): SceneObject => {
      objects.push(o);
      return o;
    };
    const I = mat4Identity();

    // board and table (table top = board bottom)
    const board = calibration.board;
    const boardPose = poseToMat4(board.poseWorld);
    const [bx, by, bz] = board.sizeM;
    const boardCentre = translationMat(0, 0, -bz / 2);
    const boardPoseC = mat4Mul(boardPose, boardCentre);
    this.physics.addBody(
      "fixed",
      boardPoseC,
      [{ kind: "box", centre: [0, 0, 0], halfExtentsM: [bx / 2, by / 2, bz / 2] }],
      {
        group: "env",
        name: "board",
      },
    );
    add({
      id: "board",
      shape: { kind: "box", halfExtentsM: [bx / 2, by / 2, bz / 2] },
      pose: boardPoseC,
      color: COLORS.board,
    });
    const tableTopZ = boardPoseC[11]! - bz / 2;
    const tableHalf: Vec3 = [0.7, 0.6, 0.02];
    const tablePose = translationMat(0.35, 0, tableTopZ - tableHalf[2]);
    this.physics.addBody("fixed", tablePose, [{ kind: "box", centre: [0, 0, 0], halfExtentsM: tableHalf }], {
      group: "env",
      name: "table",
    });
    add({
      id: "table",
      shape: { kind: "box", halfExtentsM: tableHalf },
      pose: tablePose,
      color: COLORS.table,
    });

    // wire: world-frame centreline, thin capsules every WIRE_SEGMENT_M
    const wire = calibration.wire;
    this.wireWorld = wire.pointsBase.map((p) => mat4Point(this.worldFromBase, p));
    const wireSegs = wireSegments(this.wireWorld);
    const wireCaps: ColliderSpec[] = wireSegs.map(([a, b]) => ({
      kind: "capsule",
      a,
      b,
      radiusM: wire.wireRadiusM,
    }));
    this.physics.addBody("fixed", I, wireCaps, { group: "wire", name: "wire" });
    add({
      id: "wire",
      shape: { kind: "tube", points: this.wireWorld, radiusM: wire.wireRadiusM },
      pose: I,
      color: COLORS.wire,
    });

    // posts from the board top to the wire ends
    const boardTopZ = boardPose[11]!;
    const ends: Array<[string, Vec3]> = [
      ["post_start", this.wireWorld[0]!],
      ["post_end", this.wireWorld[this.wireWorld.length - 1]!],
    ];
    for (const [id, top] of ends) {
      const postR = 0.004;
      const bottom: Vec3 = [top[0], top[1], boardTopZ];
      const len = top[2] - boardTopZ;
      const pose = translationMat(top[0], top[1], boardTopZ + len / 2);
      this.physics.addBody(
        "fixed",
        I,
        [{ kind: "capsule", a: bottom, b: [top[0], top[1], top[2] - postR - 0.003], radiusM: postR }],
        { group: "env", name: id },
      );
      add({
        id,
        shape: { kind: "cylinder", halfLengthM: len / 2, radiusM: postR },
        pose,
        color: COLORS.post,
      });
    }

    // lamp on the board corner
    const lampPos = mat4Point(boardPose, [bx / 2 - 0.03, by / 2 - 0.03, 0.015]);
    this.lamp = add({
      id: "lamp",
      shape: { kind: "sphere", radiusM: 0.015 },
      pose: translationMat(lampPos[0], lampPos[1], lampPos[2]),
      color: COLORS.lampOff,
      emissive: false,
    });

    // arm link capsules: one kinematic body per frame that carries capsules
    const byFrame = new Map<number, ColliderSpec[]>();
    for (const c of robot.capsules) {
      const list = byFrame.get(c.frame) ?? [];
      list.push({ kind: "capsule", a: [...c.a], b: [...c.b], radiusM: c.radiusM });
      byFrame.set(c.frame, list);
      const obj = add({
        id: c.link,
        shape: { kind: "capsule", halfLengthM: dist(c.a, c.b) / 2, radiusM: c.radiusM },
        pose: mat4Identity(),
        color: COLORS.link,
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
        this.physics.addBody("fixed", this.worldFromBase, caps, { group: "base", name });
        continue;
      }
      this.links.push({
        body: this.physics.addBody("kinematic", mat4Identity(), caps, { group: "arm", name }),
        frame,
      });
    }

    // fingers: boxes in the hand frame, moved along hand y by ± width / 2; colliders on the flange
    // body (moved within it only when the opening changes), so they cost no pose update per tick
    const flange = this.links.find((l) => l.frame === 8);
    if (!flange) throw new Error("the robot model has no collision capsule on the flange frame (8)");
    const fingerHalf: Vec3 = [0.009, 0.005, 0.022];
    const fingerBox: ColliderSpec[] = [{ kind: "box", centre: [0, 0, 0], halfExtentsM: fingerHalf }];
    const flangeFromHand = this.handFromFlange;
    this.fingerColliders = [
      this.physics.addColliders(
        flange.body,
        fingerBox,
        { group: "arm", name: "finger_left" },
        flangeFromHand,
      )[0]!,
      this.physics.addColliders(
        flange.body,
        fingerBox,
        { group: "arm", name: "finger_right" },
        flangeFromHand,
      )[0]!,
    ];
    for (const [k, id] of ["finger_left", "finger_right"].entries()) {
      const obj = add({
        id,
        shape: { kind: "box", halfExtentsM: fingerHalf },
        pose: mat4Identity(),
        color: COLORS.finger,
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

    // the loop: ring capsules (circuit) + handle (insulated), in the loop frame
    const tool = calibration.tool;
    const major = tool.loopInnerRadiusM + tool.loopWireRadiusM;
    const ringSegs = ringSegments(major);
    this.circuit = new RingWireContact(wireSegs, wire.wireRadiusM, ringSegs, tool.loopWireRadiusM);
    const ringCaps: ColliderSpec[] = ringSegs.map(([a, b]) => ({
      kind: "capsule",
      a,
      b,
      radiusM: tool.loopWireRadiusM,
    }));
    // ring and handle ride on the flange body at the tool offset; the handle is insulated: its own group
    this.physics.addColliders(flange.body, ringCaps, { group: "loop", name: "loop" }, this.toolFromFlange);
    const rim = tool.loopInnerRadiusM + 2 * tool.loopWireRadiusM;
    const handleR = 0.004;
    const handleA: Vec3 = [-(rim + handleR), 0, 0];
    const handleB: Vec3 = [-(rim + tool.handleLengthM), 0, 0];
    this.physics.addColliders(
      flange.body,
      [{ kind: "capsule", a: handleA, b: handleB, radiusM: handleR }],
      { group: "handle", name: "handle" },
      this.toolFromFlange,
    );
    const ringObj = add({
      id: "loop",
      shape: { kind: "torus", majorRadiusM: major, minorRadiusM: tool.loopWireRadiusM },
      pose: mat4Identity(),
      color: COLORS.loop,
    });
    const handleObj = add({
      id: "handle",
      shape: { kind: "cylinder", halfLengthM: tool.handleLengthM / 2, radiusM: handleR },
      pose: mat4Identity(),
      color: COLORS.handle,
    });
    const handleLocal = segmentPose(handleA, handleB);
    this.renderSync.push(() => {
      this.loopWorld(ringObj.pose);
      mat4Mul(ringObj.pose, handleLocal, handleObj.pose);
    });
  }

  private readonly circuit: RingWireContact;
  private readonly loopTmp = new Float64Array(16);

  /** world ← flange for the last `applyArm` (valid after the call). */
  flangeWorld(out: Mat4): Mat4 {
    return mat4Mul(this.worldFromBase, this.fk.frames[8]!, out);
  }

  /** world ← loop frame for the last `applyArm`. */
  loopWorld(out: Mat4): Mat4 {
    return mat4Mul(this.worldFromBase, this.fk.frames[9]!, out);
  }

  /**
   * Put every arm-carried body at the pose for joint angles q and finger opening (hot path).
   * With `teleport` the bodies jump there at once (reset / restore), otherwise they are moved
   * kinematically during the next step. Only bodies whose frame moved get a new pose (a link
   * depends on the joints before it), and the fingers move only when the opening changed.
   */
  applyArm(q: ArrayLike<number>, gripperWidthM: number, teleport = false): void {
    const f = forwardKinematicsInto(this.robot, q, this.fk, this.toolFromFlange);
    // first joint that changed since the last call: frames ≤ that index did not move
    let firstChanged = teleport ? 0 : 7;
    for (let j = 0; j < 7 && firstChanged === 7; j++) if (q[j] !== this.lastQ[j]) firstChanged = j;
    for (let j = 0; j < 7; j++) this.lastQ[j] = q[j]!;
    const w = this.tmp;
    for (const l of this.links) {
      if (l.frame <= firstChanged) continue;
      mat4Mul(this.worldFromBase, f[l.frame]!, w);
      if (teleport) this.physics.teleport(l.body, w);
      else this.physics.setKinematicPose(l.body, w);
    }
    if (teleport || gripperWidthM !== this.lastGripperWidthM) {
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
    for (let j = 0; j < 7; j++) this.lastQ[j] = q[j]!;
    // the fingers' offsets come back with the restored world: read them (exact f32 values)
    for (let k = 0; k < 2; k++) {
      const t = this.physics.colliderTranslation(this.fingerColliders[k]!);
      this.fingerT.set(t, k * 3);
    }
    this.lastGripperWidthM = Number.NaN;
  }

  /** Ring–wire clearance found by the last step, m (Infinity when the wire is far). */
  get ringWireClearanceM(): number {
    return this.circuit.lastClearanceM;
  }

  /** One physics step, then the exact contact state at the new positions (hot path). */
  step(): BenchContacts {
    this.physics.step();
    const onWire = this.circuit.ringTouchesWire(this.loopWorld(this.loopTmp));
    const set = this.collisionScratch;
    set.clear();
    const note = (a: { name: string }, b: { name: string }): void => {
      set.add(`${a.name}|${b.name}`);
    };
    this.physics.touching("arm", "env", note);
    this.physics.touching("loop", "env", note);
    this.physics.touching("handle", "env", note);
    return { loopOnWire: onWire, collisions: set.size === 0 ? EMPTY : [...set].sort() };
  }

  /** Update render poses from the current physics state; `lampLit` while the circuit is closed. */
  syncRender(lampLit: boolean): Scene {
    for (const f of this.renderSync) f();
    this.lamp.color = lampLit ? COLORS.lampOn : COLORS.lampOff;
    this.lamp.emissive = lampLit;
    return this.scene;
  }

  free(): void {
    this.physics.free();
  }
}

const EMPTY: string[] = [];

/** The wire's physics capsules: segment end points (same frame as the centreline), every WIRE_SEGMENT_M. */
export function wireSegments(points: readonly Vec3[]): Array<[Vec3, Vec3]> {
  const cl = centreline(points);
  const n = Math.max(1, Math.round(cl.lengthM / WIRE_SEGMENT_M));
  const out: Array<[Vec3, Vec3]> = [];
  for (let i = 0; i < n; i++)
    out.push([pointAt(cl, (cl.lengthM * i) / n), pointAt(cl, (cl.lengthM * (i + 1)) / n)]);
  return out;
}

/**
 * The ring's physics capsules in the loop frame (ring in the xy plane): a regular polygon whose
 * chord midpoints lie on the major radius.
 */
export function ringSegments(majorRadiusM: number): Array<[Vec3, Vec3]> {
  const rv = majorRadiusM / Math.cos(Math.PI / RING_SEGMENTS);
  const out: Array<[Vec3, Vec3]> = [];
  for (let i = 0; i < RING_SEGMENTS; i++) {
    const a0 = (2 * Math.PI * i) / RING_SEGMENTS;
    const a1 = (2 * Math.PI * (i + 1)) / RING_SEGMENTS;
    out.push([
      [rv * Math.cos(a0), rv * Math.sin(a0), 0],
      [rv * Math.cos(a1), rv * Math.sin(a1), 0],
    ]);
  }
  return out;
}

function translationMat(x: number, y: number, z: number): Mat4 {
  const m = mat4Identity();
  m[3] = x;
  m[7] = y;
  m[11] = z;
  return m;
}

function dist(a: readonly number[], b: readonly number[]): number {
  return Math.hypot(b[0]! - a[0]!, b[1]! - a[1]!, b[2]! - a[2]!);
}

/** Pose whose z axis runs from a to b, centred between them. */
export function segmentPose(a: readonly number[], b: readonly number[]): Mat4 {
  const d: Vec3 = [b[0]! - a[0]!, b[1]! - a[1]!, b[2]! - a[2]!];
  const n = Math.hypot(...d) || 1;
  const z: Vec3 = [d[0] / n, d[1] / n, d[2] / n];
  const h: Vec3 = Math.abs(z[2]) < 0.9 ? [0, 0, 1] : [1, 0, 0];
  let x: Vec3 = [h[1] * z[2] - h[2] * z[1], h[2] * z[0] - h[0] * z[2], h[0] * z[1] - h[1] * z[0]];
  const xn = Math.hypot(...x);
  x = [x[0] / xn, x[1] / xn, x[2] / xn];
  const y: Vec3 = [z[1] * x[2] - z[2] * x[1], z[2] * x[0] - z[0] * x[2], z[0] * x[1] - z[1] * x[0]];
  const m = mat4Identity();
  m[0] = x[0];
  m[1] = y[0];
  m[2] = z[0];
  m[3] = (a[0]! + b[0]!) / 2;
  m[4] = x[1];
  m[5] = y[1];
  m[6] = z[1];
  m[7] = (a[1]! + b[1]!) / 2;
  m[8] = x[2];
  m[9] = y[2];
  m[10] = z[2];
  m[11] = (a[2]! + b[2]!) / 2;
  return m;
}
