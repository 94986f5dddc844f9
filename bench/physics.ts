/**
 * Physics throughput on the buzz-wire scene: our simulator (Rapier + exact ring–wire circuit)
 * side by side with MuJoCo's official WebAssembly build (`mujoco-js`) on the same bench.
 *
 * Both run the same scripted motion (the loop carried along the wire, servo-tracked, 1 kHz),
 * with the arm as kinematic bodies (Rapier kinematic position-based bodies / MuJoCo mocap
 * bodies) and the same contact pairs: ring capsules vs wire capsules, arm link capsules and
 * fingers vs table, board and posts. Prints steps/s, real-time factor and the ratio.
 *
 * Run: npx tsx bench/physics.ts [--seed N] [--repeats N]
 */
import loadMujoco from "mujoco-js";
import { interpolateChunk } from "../gateway/motion/interpolate.ts";
import type { JointTrajectory } from "../gateway/seam/types.ts";
import { fkWorkspace, forwardKinematicsInto } from "../robots/franka/kinematics.ts";
import { FRANKA_HAND_TCP_OFFSET_M, PANDA } from "../robots/franka/models.ts";
import { type Mat4, mat4Mul, mat4Point, poseToMat4 } from "../robots/math.ts";
import { wireReferencePath } from "../sim/buzzwire/reference-path.ts";
import { ringSegments, wireSegments } from "../sim/buzzwire/scene.ts";
import { createSimBackend, HANDLE_GRIP_WIDTH_M } from "../sim/sim-backend.ts";
import { servoAtRest, servoParams, servoStep } from "../sim/servo.ts";
import { rotationQuat } from "../sim/world.ts";

const args = process.argv.slice(2);
const arg = (name: string, def: number): number => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const seed = arg("seed", 1);
const repeats = arg("repeats", 3);
const DT = PANDA.controlPeriodS;

async function ours(
  predictionDistanceM: number,
): Promise<{ steps: number; seconds: number; traj: JointTrajectory }> {
  const b = createSimBackend({ robot: PANDA, seed, predictionDistanceM, yieldEveryTicks: 0 });
  await b.configure();
  await b.activate();
  const snap = b.snapshot();
  const r = b.read();
  const ref = wireReferencePath(PANDA, b.currentCalibration(), {
    gripperWidthM: r.gripperWidthM,
    seedQ: r.q,
  });
  const traj = interpolateChunk({ q: r.q, dq: r.dq, gripperWidthM: r.gripperWidthM }, ref.rows, ref.dtS, DT);
  await b.execute(traj); // warm-up
  let best = Infinity;
  for (let k = 0; k < repeats; k++) {
    b.restore(snap);
    const t0 = performance.now();
    await b.execute(traj);
    best = Math.min(best, (performance.now() - t0) / 1000);
  }
  await b.shutdown();
  return { steps: traj.count, seconds: best, traj };
}

function fmt(v: number, d = 0): string {
  return v.toFixed(d).padStart(10);
}

/** MJCF of the same bench: world geoms, mocap bodies for the arm frames, explicit contact pairs. */
function mjcf(cal: ReturnType<typeof calibrationOf>): { xml: string; mocapFrames: number[] } {
  const f = (v: readonly number[]) => v.map((x) => x.toFixed(6)).join(" ");
  const worldFromBase = poseToMat4(cal.robotBasePoseWorld);
  const wire = wireSegments(cal.wire.pointsBase.map((p) => mat4Point(worldFromBase, p)));
  const geoms: string[] = [];
  const bx = cal.board.sizeM;
  const bp = cal.board.poseWorld.xyz;
  geoms.push(
    `<geom name="board" type="box" size="${f([bx[0] / 2, bx[1] / 2, bx[2] / 2])}" pos="${f([bp[0], bp[1], bp[2] - bx[2] / 2])}"/>`,
  );
  geoms.push(
    `<geom name="table" type="box" size="0.7 0.6 0.02" pos="${f([0.35, 0, bp[2] - bx[2] - 0.02])}"/>`,
  );
  const ends = [wire[0]![0], wire[wire.length - 1]![1]];
  ends.forEach((e, i) => {
    geoms.push(
      `<geom name="post${i}" type="capsule" size="0.004" fromto="${f([e[0], e[1], bp[2]])} ${f([e[0], e[1], e[2] - 0.007])}"/>`,
    );
  });
  wire.forEach(([a, b], i) => {
    geoms.push(
      `<geom name="wire${i}" type="capsule" size="${cal.wire.wireRadiusM}" fromto="${f(a)} ${f(b)}"/>`,
    );
  });
  const env = ["board", "table", "post0", "post1"];
  const bodies: string[] = [];
  const mocapFrames: number[] = [];
  const armGeoms: string[] = [];
  const frames = [...new Set(PANDA.capsules.map((c) => c.frame))]
    .filter((fr) => fr !== 0)
    .sort((a, b) => a - b);
  for (const fr of frames) {
    const caps = PANDA.capsules
      .filter((c) => c.frame === fr)
      .map((c, k) => {
        armGeoms.push(`f${fr}_${k}`);
        return `<geom name="f${fr}_${k}" type="capsule" size="${c.radiusM}" fromto="${f(c.a)} ${f(c.b)}"/>`;
      });
    bodies.push(`<body name="frame${fr}" mocap="true">${caps.join("")}</body>`);
    mocapFrames.push(fr);
  }
  for (const side of ["l", "r"]) {
    bodies.push(
      `<body name="finger_${side}" mocap="true"><geom name="finger_${side}" type="box" size="0.009 0.005 0.022"/></body>`,
    );
    armGeoms.push(`finger_${side}`);
  }
  const major = cal.tool.loopInnerRadiusM + cal.tool.loopWireRadiusM;
  const ring = ringSegments(major).map(
    ([a, b], k) =>
      `<geom name="ring${k}" type="capsule" size="${cal.tool.loopWireRadiusM}" fromto="${f(a)} ${f(b)}"/>`,
  );
  bodies.push(`<body name="loop" mocap="true">${ring.join("")}</body>`);
  const pairs: string[] = [];
  for (let k = 0; k < ring.length; k++)
    for (let i = 0; i < wire.length; i++) pairs.push(`<pair geom1="ring${k}" geom2="wire${i}"/>`);
  for (const g of armGeoms) for (const e of env) pairs.push(`<pair geom1="${g}" geom2="${e}"/>`);
  const xml = `<mujoco model="buzzwire">
  <option timestep="${DT}" gravity="0 0 -9.81"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>${geoms.join("\n")}
  ${bodies.join("\n")}</worldbody>
  <contact>${pairs.join("")}</contact>
</mujoco>`;
  return { xml, mocapFrames };
}

function calibrationOf(b: ReturnType<typeof createSimBackend>) {
  return b.currentCalibration();
}

async function mujoco(
  traj: JointTrajectory,
): Promise<{ steps: number; seconds: number; contacts: number; pairs: number }> {
  const b = createSimBackend({ robot: PANDA, seed });
  await b.configure();
  const cal = calibrationOf(b);
  const startQ = b.read().q;
  await b.shutdown();
  const { xml, mocapFrames } = mjcf(cal);
  // biome-ignore lint/suspicious/noExplicitAny: the Emscripten FS is untyped
  const mj: any = await loadMujoco();
  mj.FS.mkdir("/bench");
  mj.FS.writeFile("/bench/buzzwire.xml", xml);
  const model = mj.MjModel.loadFromXML("/bench/buzzwire.xml");
  const data = new mj.MjData(model);
  const worldFromBase = poseToMat4(cal.robotBasePoseWorld);
  const tool = poseToMat4(cal.tool.loopPoseFlange);
  const ws = fkWorkspace();
  const params = servoParams(PANDA);
  const w = new Float64Array(16);
  const hand = new Float64Array(16);
  const yaw = new Float64Array(16);
  const c = Math.cos(-Math.PI / 4);
  const s = Math.sin(-Math.PI / 4);
  yaw.set([c, -s, 0, 0, s, c, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]);
  const setMocap = (i: number, m: Mat4) => {
    const pos = data.mocap_pos;
    const quat = data.mocap_quat;
    pos[i * 3] = m[3];
    pos[i * 3 + 1] = m[7];
    pos[i * 3 + 2] = m[11];
    const q = rotationQuat(m);
    quat[i * 4] = q.w;
    quat[i * 4 + 1] = q.x;
    quat[i * 4 + 2] = q.y;
    quat[i * 4 + 3] = q.z;
  };
  let contacts = 0;
  const run = (): number => {
    const servo = servoAtRest(startQ, HANDLE_GRIP_WIDTH_M);
    const t0 = performance.now();
    for (let i = 0; i < traj.count; i++) {
      servoStep(servo, params, traj.q, i * 7, traj.gripperWidthM[i]!, DT);
      const fr = forwardKinematicsInto(PANDA, servo.q, ws, tool);
      let k = 0;
      for (const frame of mocapFrames) setMocap(k++, mat4Mul(worldFromBase, fr[frame]!, w));
      mat4Mul(mat4Mul(worldFromBase, fr[8]!, hand), yaw, w);
      for (const sgn of [1, -1]) {
        hand.set(w);
        const off = sgn * (servo.gripperWidthM / 2 + 0.005);
        const z = FRANKA_HAND_TCP_OFFSET_M - 0.022;
        hand[3] = w[3]! + w[1]! * off + w[2]! * z;
        hand[7] = w[7]! + w[5]! * off + w[6]! * z;
        hand[11] = w[11]! + w[9]! * off + w[10]! * z;
        setMocap(k++, hand);
      }
      setMocap(k++, mat4Mul(worldFromBase, fr[9]!, w));
      mj.mj_step(model, data);
      contacts += data.ncon;
    }
    return (performance.now() - t0) / 1000;
  };
  run();
  let best = Infinity;
  for (let k = 0; k < repeats; k++) {
    mj.mj_resetData(model, data);
    best = Math.min(best, run());
  }
  const pairs = model.npair;
  data.delete();
  model.delete();
  return { steps: traj.count, seconds: best, contacts, pairs };
}

const variants = [0.0005, 0.003, 0.02];
const results: Array<{ label: string; steps: number; seconds: number }> = [];
let traj: JointTrajectory | null = null;
for (const p of variants) {
  const r = await ours(p);
  traj = r.traj;
  results.push({ label: `ours (Rapier, prediction ${p * 1000} mm)`, steps: r.steps, seconds: r.seconds });
}
const m = await mujoco(traj!);
results.push({
  label: `mujoco-js (mocap arm, ${m.pairs} explicit pairs)`,
  steps: m.steps,
  seconds: m.seconds,
});

console.log(`buzz-wire scene, seed ${seed}, ${traj!.count} steps of ${DT * 1000} ms (best of ${repeats})`);
console.log(`${"engine".padEnd(48)}${"steps/s".padStart(10)}${"RTF".padStart(10)}`);
for (const r of results) {
  const sps = r.steps / r.seconds;
  console.log(`${r.label.padEnd(48)}${fmt(sps)}${fmt(sps * DT, 1)}`);
}
const oursDefault = results[1]!;
const ratio = m.seconds / oursDefault.seconds;
console.log(`ratio ours(3 mm) / mujoco steps/s: ${ratio.toFixed(2)} (target ≥ 1.0); RTF target ≥ 20`);
if (m.contacts > 0) console.log(`note: MuJoCo saw ${m.contacts} contact-steps on the scripted path`);
