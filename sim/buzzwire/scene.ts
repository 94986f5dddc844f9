/**
 * The buzz-wire bench as physics bodies and render objects, built from a calibration:
 * table, board, the bent wire (thin capsules for physics, a tube for rendering), start and
 * end posts, a lamp, the arm's link capsules (kinematic bodies following FK), the fingers,
 * and the loop (ring capsules + insulated handle) held at the tool.
 *
 * `arm.applyArm` + `step` run once per control tick (allocation-light); `syncRender` runs only
 * when a frame is captured.
 */
import { clonePose } from "../../calibration/camera-pose.ts";
import type { Calibration } from "../../calibration/schema.ts";
import { centreline, pointAt } from "../../calibration/wire-geometry.ts";
import { startMarkJoints } from "../../calibration/wire-pose.ts";
import {
  type Mat4,
  mat4Identity,
  mat4Mul,
  mat4Point,
  mat4RigidInverse,
  mat4ToPose,
  poseToMat4,
  type Vec3,
} from "../../robots/math.ts";
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
import { segmentPose, translationPose } from "../render/placement.ts";
import type { Rgb, Scene, SceneObject } from "../render/scene.ts";
import { type ColliderSpec, PhysicsWorld, type Rapier } from "../world.ts";
import { RingWireContact } from "./contact.ts";
import { addCalibrationBoards } from "../render/calibration-board.ts";

/** Gripper opening while holding the loop's handle, m. */
export const HANDLE_GRIP_WIDTH_M = 0.008;

/** Physics wire segment length, m. */
export const WIRE_SEGMENT_M = 0.01;
/** Number of capsules approximating the ring. */
export const RING_SEGMENTS = 16;

export const COLORS = Object.freeze({
  ...BENCH_COLORS,
  board: [40, 60, 95] as Rgb,
  wire: [235, 140, 30] as Rgb,
  post: [70, 70, 70] as Rgb,
  loop: [205, 205, 215] as Rgb,
  handle: [30, 30, 30] as Rgb,
  finger: [60, 60, 60] as Rgb,
  lampOff: [90, 25, 25] as Rgb,
  /** lit lamp: drawn emissive at exactly this colour */
  lampOn: [255, 30, 20] as Rgb,
});

export class BuzzWireBench implements BenchScene {
  readonly kind = "buzzwire" as const;
  readonly physics: PhysicsWorld;
  readonly scene: Scene;
  readonly worldFromBase: Mat4;
  readonly toolFromFlange: Mat4;
  /** wire centreline in the world frame */
  readonly wireWorld: Vec3[];
  /** the arm with its fingers; the loop rides on its flange body */
  readonly arm: ArmRig;
  private readonly lamp: SceneObject;
  private readonly renderSync: Array<() => void> = [];

  constructor(
    R: Rapier,
    readonly robot: RobotModel,
    readonly calibration: Calibration,
    opts: BenchPhysicsOptions,
  ) {
    this.physics = new PhysicsWorld(R, opts);
    this.worldFromBase = poseToMat4(calibration.robotBasePoseWorld);
    this.toolFromFlange = poseToMat4(calibration.tool.loopPoseFlange);
    const { scene, add } = benchRenderScene();
    this.scene = scene;
    const I = mat4Identity();

    // board and table (table top = board bottom)
    const board = calibration.board;
    const boardPose = poseToMat4(board.poseWorld);
    const [bx, by, bz] = board.sizeM;
    const boardCentre = translationPose([0, 0, -bz / 2]);
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
    addTable(this.physics, tableTopZ, add);

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
      const pose = translationPose([top[0], top[1], boardTopZ + len / 2]);
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
      pose: translationPose(lampPos),
      color: COLORS.lampOff,
      emissive: false,
    });

    // the arm: link bodies, fingers on the flange body; the loop's parts are checked against
    // the environment like the links
    this.arm = new ArmRig(
      this.physics,
      robot,
      {
        worldFromBase: this.worldFromBase,
        toolFromFlange: this.toolFromFlange,
        linkColor: COLORS.link,
        fingerColor: COLORS.finger,
        contactGroups: ["arm", "loop", "handle"],
      },
      add,
    );
    const flangeBody = this.arm.flangeBody;

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
    this.physics.addColliders(flangeBody, ringCaps, { group: "loop", name: "loop" }, this.toolFromFlange);
    const rim = tool.loopInnerRadiusM + 2 * tool.loopWireRadiusM;
    const handleR = 0.004;
    const handleA: Vec3 = [-(rim + handleR), 0, 0];
    const handleB: Vec3 = [-(rim + tool.handleLengthM), 0, 0];
    this.physics.addColliders(
      flangeBody,
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
    // ChArUco boards of a calibration session: drawn only (no physics body)
    addCalibrationBoards(calibration.calibrationBoards ?? [], add, this.renderSync, (out) =>
      this.arm.flangeWorld(out),
    );
    const handleLocal = segmentPose(handleA, handleB);
    this.renderSync.push(() => {
      this.arm.toolWorld(ringObj.pose);
      mat4Mul(ringObj.pose, handleLocal, handleObj.pose);
    });
  }

  private readonly circuit: RingWireContact;
  private readonly loopTmp = new Float64Array(16);

  /** One physics step, then the exact contact state at the new positions (hot path). */
  step(): BenchContacts {
    this.physics.step();
    const onWire = this.circuit.ringTouchesWire(this.arm.toolWorld(this.loopTmp));
    return { loopOnWire: onWire, collisions: this.arm.envContacts() };
  }

  /** Update render poses from the current physics state; `lampLit` while the circuit is closed. */
  syncRender(lampLit: boolean): Scene {
    this.arm.syncRender();
    for (const f of this.renderSync) f();
    this.lamp.color = lampLit ? COLORS.lampOn : COLORS.lampOff;
    this.lamp.emissive = lampLit;
    return this.scene;
  }

  get description(): Calibration {
    return this.calibration;
  }

  private startCache: BenchStart | undefined;
  /** the loop at the wire's start mark (IK from home; home when unreachable), holding the handle */
  get start(): BenchStart {
    const cal = this.calibration;
    this.startCache ??= {
      basePose: clonePose(cal.robotBasePoseWorld),
      toolOffset: clonePose(cal.tool.loopPoseFlange),
      q: startMarkJoints(this.robot, cal.wire, this.toolFromFlange, this.robot.homeQ) ?? [
        ...this.robot.homeQ,
      ],
      gripperM: HANDLE_GRIP_WIDTH_M,
      cameras: cal.cameras,
    };
    return this.startCache;
  }

  /** the circuit is the backend's contact state; nothing else to report */
  afterStep(): void {}

  saveState(): Record<string, unknown> {
    return {};
  }

  restoreState(): void {}

  privileged(ctx: { contactClosed: boolean }): Record<string, unknown> {
    const cal = this.calibration;
    const loopWorld = this.arm.toolWorld(new Float64Array(16));
    const baseFromWorld = mat4RigidInverse(this.worldFromBase);
    return {
      wire: {
        pointsBase: cal.wire.pointsBase.map((p) => [...p]),
        wireRadiusM: cal.wire.wireRadiusM,
        startMarkM: cal.wire.startMarkM,
        endMarkM: cal.wire.endMarkM,
        checkpointCount: cal.wire.checkpointCount,
      },
      loop: {
        innerRadiusM: cal.tool.loopInnerRadiusM,
        poseWorld: mat4ToPose(loopWorld),
        poseBase: mat4ToPose(mat4Mul(baseFromWorld, loopWorld)),
      },
      contactClosed: ctx.contactClosed,
    };
  }

  free(): void {
    this.physics.free();
  }
}

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
