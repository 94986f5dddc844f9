/**
 * How to drive the simulated arm: kinematic links placed from a servo model (what sim/ does)
 * versus dynamic links on Rapier revolute impulse joints with position motors (rapier.js 0.21
 * exposes no motors on multibody joints), on the same 7-link Panda capsule model, gravity on, 1 kHz, following the
 * same dense trajectory (the buzz-wire reference path of seed 1). Prints steps/s and the
 * tracking error of the flange against FK of the reference, side by side.
 *
 * Run: npx tsx bench/sim-drive-modes.ts [--repeats N]
 */
import type RAPIER from "@dimforge/rapier3d-compat";
import { interpolateChunk } from "../seam/interpolate.ts";
import type { JointTrajectory } from "../seam/types.ts";
import { fkWorkspace, forwardKinematicsInto } from "../robots/franka/kinematics.ts";
import { PANDA } from "../robots/franka/models.ts";
import { mat4Point, type Vec3 } from "../robots/math.ts";
import { sampleBenchCalibration } from "../sim/buzzwire/bench.ts";
import { wireReferencePath } from "../sim/buzzwire/reference-path.ts";
import { startMarkJoints } from "../calibration/wire-pose.ts";
import { servoAtRest, servoParams, servoStep } from "../sim/servo.ts";
import { loadRapier, quatToMat4, rotationQuat } from "../sim/world.ts";
import { poseToMat4 } from "../robots/math.ts";

const args = process.argv.slice(2);
const ri = args.indexOf("--repeats");
const repeats = ri >= 0 ? Number(args[ri + 1]) : 3;
const DT = PANDA.controlPeriodS;
const R = await loadRapier();

const cal = sampleBenchCalibration(PANDA, 1);
const q0 = startMarkJoints(PANDA, cal.wire, poseToMat4(cal.tool.loopPoseFlange))!;
const ref = wireReferencePath(PANDA, cal, { gripperWidthM: 0.008, seedQ: q0 });
const traj: JointTrajectory = interpolateChunk(
  { q: q0, dq: [0, 0, 0, 0, 0, 0, 0], gripperWidthM: 0.008 },
  ref.rows,
  ref.dtS,
  DT,
);
const ws = fkWorkspace();
/** reference flange positions, world = base frame here */
const refFlange: Vec3[] = [];
for (let i = 0; i < traj.count; i++) {
  const f = forwardKinematicsInto(PANDA, traj.q.subarray(i * 7, i * 7 + 7), ws);
  refFlange.push([f[8]![3]!, f[8]![7]!, f[8]![11]!]);
}

interface Outcome {
  label: string;
  stepsPerS: number;
  /** largest flange position error against the reference, m */
  maxErrM: number;
  /** RMS flange position error, m */
  rmsErrM: number;
}

/** Arm bodies: one per frame 1…7 carrying that frame's capsules (frame 8's ride on link 7). */
function armBodies(world: RAPIER.World, kind: "kinematic" | "dynamic", q: ArrayLike<number>) {
  const f = forwardKinematicsInto(PANDA, q, fkWorkspace());
  const bodies: RAPIER.RigidBody[] = [];
  const base = world.createRigidBody(R.RigidBodyDesc.fixed());
  for (let i = 1; i <= 7; i++) {
    const o = f[i]!;
    // body frame: at the joint's origin, world-aligned at q (kinematic: the DH frame itself)
    const desc = kind === "dynamic" ? R.RigidBodyDesc.dynamic() : R.RigidBodyDesc.kinematicPositionBased();
    desc.setTranslation(o[3]!, o[7]!, o[11]!);
    if (kind === "kinematic") desc.setRotation(rotationQuat(o));
    const body = world.createRigidBody(desc);
    for (const c of PANDA.capsules.filter((k) => k.frame === i || (i === 7 && k.frame === 8))) {
      const fr = f[c.frame]!;
      const toLocal = (p: readonly number[]): Vec3 => {
        const w = mat4Point(fr, p);
        if (kind === "kinematic") {
          // into the DH frame of body i
          const d: Vec3 = [w[0] - o[3]!, w[1] - o[7]!, w[2] - o[11]!];
          return [
            o[0]! * d[0] + o[4]! * d[1] + o[8]! * d[2],
            o[1]! * d[0] + o[5]! * d[1] + o[9]! * d[2],
            o[2]! * d[0] + o[6]! * d[1] + o[10]! * d[2],
          ];
        }
        return [w[0] - o[3]!, w[1] - o[7]!, w[2] - o[11]!];
      };
      const a = toLocal(c.a);
      const b = toLocal(c.b);
      const len = Math.hypot(b[0] - a[0], b[1] - a[1], b[2] - a[2]);
      const cd = R.ColliderDesc.capsule(len / 2, c.radiusM)
        .setTranslation((a[0] + b[0]) / 2, (a[1] + b[1]) / 2, (a[2] + b[2]) / 2)
        .setRotation(yTo([(b[0] - a[0]) / len, (b[1] - a[1]) / len, (b[2] - a[2]) / len]))
        .setDensity(1000)
        .setCollisionGroups(0); // the arm does not collide with itself here
      world.createCollider(cd, body);
    }
    bodies.push(body);
  }
  return { base, bodies, frames: f };
}

function yTo(v: Vec3): { x: number; y: number; z: number; w: number } {
  const dot = v[1];
  if (dot < -0.999999) return { x: 1, y: 0, z: 0, w: 0 };
  const cx = v[2];
  const cz = -v[0];
  const w = 1 + dot;
  const n = Math.hypot(cx, cz, w);
  return { x: cx / n, y: 0, z: cz / n, w: w / n };
}

function errorStats(err: Float64Array): { max: number; rms: number } {
  let max = 0;
  let s = 0;
  for (const e of err) {
    max = Math.max(max, e);
    s += e * e;
  }
  return { max, rms: Math.sqrt(s / err.length) };
}

function kinematic(): Outcome {
  const world = new R.World({ x: 0, y: 0, z: -9.81 });
  world.timestep = DT;
  const { bodies } = armBodies(world, "kinematic", q0);
  const p = servoParams(PANDA);
  const fw = fkWorkspace();
  const err = new Float64Array(traj.count);
  const quat = { x: 0, y: 0, z: 0, w: 1 };
  const v = { x: 0, y: 0, z: 0 };
  const flangeIn7: Vec3 = [0, 0, PANDA.dh[7]?.d ?? 0.107];
  const m = new Float64Array(16);
  let best = Infinity;
  for (let rep = 0; rep < repeats; rep++) {
    const s = servoAtRest(q0, 0.008);
    const t0 = performance.now();
    for (let i = 0; i < traj.count; i++) {
      servoStep(s, p, traj.q, i * 7, 0.008, DT);
      const f = forwardKinematicsInto(PANDA, s.q, fw);
      for (let k = 0; k < 7; k++) {
        const o = f[k + 1]!;
        v.x = o[3]!;
        v.y = o[7]!;
        v.z = o[11]!;
        bodies[k]!.setNextKinematicTranslation(v);
        bodies[k]!.setNextKinematicRotation(rotationQuat(o, quat));
      }
      world.step();
      // the flange from link 7's simulated pose
      const b7 = bodies[6]!;
      const r = b7.rotation();
      const t = b7.translation();
      quatToMat4(r.x, r.y, r.z, r.w, m);
      m[3] = t.x;
      m[7] = t.y;
      m[11] = t.z;
      const fl = mat4Point(m, flangeIn7);
      const e = refFlange[i]!;
      err[i] = Math.hypot(fl[0] - e[0], fl[1] - e[1], fl[2] - e[2]);
    }
    best = Math.min(best, (performance.now() - t0) / 1000);
  }
  world.free();
  const st = errorStats(err);
  return {
    label: "kinematic links + servo model (sim/)",
    stepsPerS: traj.count / best,
    maxErrM: st.max,
    rmsErrM: st.rms,
  };
}

function motors(stiffness: number, damping: number): Outcome {
  const world = new R.World({ x: 0, y: 0, z: -9.81 });
  world.timestep = DT;
  const { base, bodies, frames } = armBodies(world, "dynamic", q0);
  const joints: RAPIER.RevoluteImpulseJoint[] = [];
  for (let k = 0; k < 7; k++) {
    const o = frames[k + 1]!;
    const axis = { x: o[2]!, y: o[6]!, z: o[10]! }; // joint k+1 turns about z of frame k+1
    const parent = k === 0 ? base : bodies[k - 1]!;
    const pp = parent.translation();
    const anchor1 = { x: o[3]! - pp.x, y: o[7]! - pp.y, z: o[11]! - pp.z };
    const data = R.JointData.revolute(anchor1, { x: 0, y: 0, z: 0 }, axis);
    const j = world.createImpulseJoint(data, parent, bodies[k]!, true) as RAPIER.RevoluteImpulseJoint;
    j.configureMotorModel(R.MotorModel.AccelerationBased);
    joints.push(j);
  }
  // the flange in link 7's world-aligned-at-q0 body frame
  const fl0 = frames[8]!;
  const o7 = frames[7]!;
  const flangeLocal: Vec3 = [fl0[3]! - o7[3]!, fl0[7]! - o7[7]!, fl0[11]! - o7[11]!];
  const err = new Float64Array(traj.count);
  const m = new Float64Array(16);
  const start = world.takeSnapshot();
  let best = Infinity;
  let w = world;
  for (let rep = 0; rep < repeats; rep++) {
    if (rep > 0) {
      w.free();
      w = R.World.restoreSnapshot(start);
    }
    const js = joints.map((j) => w.getImpulseJoint(j.handle) as RAPIER.RevoluteImpulseJoint);
    const b7 = w.getRigidBody(bodies[6]!.handle);
    const t0 = performance.now();
    for (let i = 0; i < traj.count; i++) {
      for (let k = 0; k < 7; k++) {
        const qr = traj.q[i * 7 + k]!;
        const qp = i > 0 ? traj.q[(i - 1) * 7 + k]! : q0[k]!;
        js[k]!.configureMotor(qr - q0[k]!, (qr - qp) / DT, stiffness, damping);
      }
      w.step();
      const r = b7.rotation();
      const t = b7.translation();
      quatToMat4(r.x, r.y, r.z, r.w, m);
      m[3] = t.x;
      m[7] = t.y;
      m[11] = t.z;
      const fl = mat4Point(m, flangeLocal);
      const e = refFlange[i]!;
      err[i] = Math.hypot(fl[0] - e[0], fl[1] - e[1], fl[2] - e[2]);
    }
    best = Math.min(best, (performance.now() - t0) / 1000);
  }
  w.free();
  const st = errorStats(err);
  const kp = Math.sqrt(stiffness);
  return {
    label: `impulse joints + position motors (ω ${kp.toFixed(0)}/s)`,
    stepsPerS: traj.count / best,
    maxErrM: st.max,
    rmsErrM: st.rms,
  };
}

const results: Outcome[] = [kinematic()];
for (const w of [100, 300, 1000]) results.push(motors(w * w, 2 * w));
console.log(
  `7-link Panda capsule arm, gravity on, ${traj.count} steps of ${DT * 1000} ms (best of ${repeats})`,
);
console.log(
  `${"drive".padEnd(48)}${"steps/s".padStart(10)}${"max err mm".padStart(12)}${"rms err mm".padStart(12)}`,
);
for (const r of results)
  console.log(
    `${r.label.padEnd(48)}${r.stepsPerS.toFixed(0).padStart(10)}${(r.maxErrM * 1000).toFixed(4).padStart(12)}${(r.rmsErrM * 1000).toFixed(4).padStart(12)}`,
  );
