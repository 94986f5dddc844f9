/**
 * Physics throughput on the buzz-wire scene: our simulator (Rapier + exact ring–wire circuit)
 * side by side with MuJoCo's official WebAssembly build (`mujoco-js`) on the same bench.
 *
 * Both run the same scripted motion (the loop carried along the wire, servo-tracked, 1 kHz, same
 * timestep), with the arm as kinematic bodies (Rapier kinematic position-based bodies / MuJoCo
 * mocap bodies) and the same contact pairs: ring capsules vs wire capsules; arm link capsules,
 * finger boxes, ring and handle vs table, board and posts. MuJoCo runs twice, once with explicit
 * `<pair>`s and once with its documented contype/conaffinity filtering (its broad phase picks the
 * candidates); the faster of the two is the reference. Runs are interleaved (ours, MuJoCo pairs,
 * MuJoCo bitmasks, repeat) so a noisy shared machine loads all of them alike; best of N each.
 * Prints steps/s, real-time factor and the ratio side by side.
 *
 * Run: npx tsx bench/physics.ts [--seed N] [--repeats N] [--sweep]   (--sweep: prediction 0.5 / 3 / 20 mm)
 */
import loadMujoco from "mujoco-js";
import { interpolateChunk } from "../seam/interpolate.ts";
import type { JointTrajectory } from "../seam/types.ts";
import { fkWorkspace, forwardKinematicsInto } from "../robots/franka/kinematics.ts";
import { FRANKA_HAND_TCP_OFFSET_M, FRANKA_HAND_YAW_RAD, PANDA } from "../robots/franka/models.ts";
import { type Mat4, mat4Mul, mat4Point, poseToMat4 } from "../robots/math.ts";
import type { Calibration } from "../calibration/schema.ts";
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
const repeats = arg("repeats", 5);
const sweep = args.includes("--sweep");
const DT = PANDA.controlPeriodS;

/** A timed run of the whole scripted motion; returns seconds. */
type Runner = { label: string; steps: number; run: () => Promise<number>; close: () => Promise<void> };

async function ours(
  predictionDistanceM: number,
): Promise<Runner & { traj: JointTrajectory; cal: Calibration }> {
  const b = createSimBackend({ robot: PANDA, seed, predictionDistanceM, yieldEveryTicks: 0 });
  await b.configure();
  await b.activate();
  const snap = b.snapshot();
  const r = b.read();
  const cal = b.currentCalibration();
  const ref = wireReferencePath(PANDA, cal, { gripperWidthM: r.gripperWidthM, seedQ: r.q });
  const traj = interpolateChunk({ q: r.q, dq: r.dq, gripperWidthM: r.gripperWidthM }, ref.rows, ref.dtS, DT);
  let events = 0;
  b.onEvent(() => {
    events++;
  });
  await b.execute(traj); // warm-up
  if (events > 0) throw new Error(`the scripted path touched something (${events} events)`);
  return {
    label: `ours (Rapier, prediction ${predictionDistanceM * 1000} mm)`,
    steps: traj.count,
    traj,
    cal,
    run: async () => {
      b.restore(snap);
      const t0 = performance.now();
      await b.execute(traj);
      return (performance.now() - t0) / 1000;
    },
    close: () => b.shutdown(),
  };
}

function fmt(v: number, d = 0): string {
  return v.toFixed(d).padStart(10);
}

type Filtering = "pairs" | "bitmask";

/**
 * MJCF of the same bench: world geoms, mocap bodies for the arm frames, the fingers and the loop.
 * `pairs`: every geom has contype = conaffinity = 0 and the contact pairs are listed explicitly;
 * `bitmask`: contype/conaffinity bits select the same pairs (env 1, wire 2; arm, ring and handle
 * accept env, the ring also the wire) and MuJoCo's broad phase finds the candidates.
 */
function mjcf(cal: Calibration, filtering: Filtering): { xml: string; mocapFrames: number[] } {
  const f = (v: readonly number[]) => v.map((x) => x.toFixed(6)).join(" ");
  const worldFromBase = poseToMat4(cal.robotBasePoseWorld);
  const wire = wireSegments(cal.wire.pointsBase.map((p) => mat4Point(worldFromBase, p)));
  const bits = (contype: number, conaffinity: number) =>
    filtering === "bitmask" ? ` contype="${contype}" conaffinity="${conaffinity}"` : "";
  const ENV = bits(1, 0);
  const WIRE = bits(2, 0);
  const ARM = bits(0, 1);
  const RING = bits(0, 3);
  const geoms: string[] = [];
  const bx = cal.board.sizeM;
  const bp = cal.board.poseWorld.xyz;
  geoms.push(
    `<geom name="board" type="box" size="${f([bx[0] / 2, bx[1] / 2, bx[2] / 2])}" pos="${f([bp[0], bp[1], bp[2] - bx[2] / 2])}"${ENV}/>`,
  );
  geoms.push(
    `<geom name="table" type="box" size="0.7 0.6 0.02" pos="${f([0.35, 0, bp[2] - bx[2] - 0.02])}"${ENV}/>`,
  );
  const ends = [wire[0]![0], wire[wire.length - 1]![1]];
  ends.forEach((e, i) => {
    geoms.push(
      `<geom name="post${i}" type="capsule" size="0.004" fromto="${f([e[0], e[1], bp[2]])} ${f([e[0], e[1], e[2] - 0.007])}"${ENV}/>`,
    );
  });
  wire.forEach(([a, b], i) => {
    geoms.push(
      `<geom name="wire${i}" type="capsule" size="${cal.wire.wireRadiusM}" fromto="${f(a)} ${f(b)}"${WIRE}/>`,
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
        return `<geom name="f${fr}_${k}" type="capsule" size="${c.radiusM}" fromto="${f(c.a)} ${f(c.b)}"${ARM}/>`;
      });
    bodies.push(`<body name="frame${fr}" mocap="true">${caps.join("")}</body>`);
    mocapFrames.push(fr);
  }
  for (const side of ["l", "r"]) {
    bodies.push(
      `<body name="finger_${side}" mocap="true"><geom name="finger_${side}" type="box" size="0.009 0.005 0.022"${ARM}/></body>`,
    );
    armGeoms.push(`finger_${side}`);
  }
  const tool = cal.tool;
  const major = tool.loopInnerRadiusM + tool.loopWireRadiusM;
  const ringNames: string[] = [];
  const ring = ringSegments(major).map(([a, b], k) => {
    ringNames.push(`ring${k}`);
    return `<geom name="ring${k}" type="capsule" size="${tool.loopWireRadiusM}" fromto="${f(a)} ${f(b)}"${RING}/>`;
  });
  const rim = tool.loopInnerRadiusM + 2 * tool.loopWireRadiusM;
  const handle = `<geom name="handle" type="capsule" size="0.004" fromto="${f([-(rim + 0.004), 0, 0])} ${f([-(rim + tool.handleLengthM), 0, 0])}"${ARM}/>`;
  bodies.push(`<body name="loop" mocap="true">${ring.join("")}${handle}</body>`);
  const pairs: string[] = [];
  if (filtering === "pairs") {
    for (const r of ringNames)
      for (let i = 0; i < wire.length; i++) pairs.push(`<pair geom1="${r}" geom2="wire${i}"/>`);
    for (const g of [...armGeoms, ...ringNames, "handle"])
      for (const e of env) pairs.push(`<pair geom1="${g}" geom2="${e}"/>`);
  }
  const xml = `<mujoco model="buzzwire">
  <option timestep="${DT}" gravity="0 0 -9.81"/>
  <default><geom contype="0" conaffinity="0"/></default>
  <worldbody>${geoms.join("\n")}
  ${bodies.join("\n")}</worldbody>
  <contact>${pairs.join("")}</contact>
</mujoco>`;
  return { xml, mocapFrames };
}

// biome-ignore lint/suspicious/noExplicitAny: the Emscripten module is untyped
type MujocoModule = any;

async function mujoco(
  mj: MujocoModule,
  cal: Calibration,
  traj: JointTrajectory,
  filtering: Filtering,
): Promise<Runner & { touchContacts: number; pairs: number }> {
  const startQ = Array.from(traj.q.subarray(0, 7));
  const { xml, mocapFrames } = mjcf(cal, filtering);
  const path = `/bench/buzzwire-${filtering}.xml`;
  mj.FS.writeFile(path, xml);
  const model = mj.MjModel.loadFromXML(path);
  const data = new mj.MjData(model);
  const worldFromBase = poseToMat4(cal.robotBasePoseWorld);
  const tool = poseToMat4(cal.tool.loopPoseFlange);
  const ws = fkWorkspace();
  const params = servoParams(PANDA);
  const w = new Float64Array(16);
  const hand = new Float64Array(16);
  const yaw = new Float64Array(16);
  const c = Math.cos(FRANKA_HAND_YAW_RAD);
  const s = Math.sin(FRANKA_HAND_YAW_RAD);
  yaw.set([c, -s, 0, 0, s, c, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]);
  const quat = { x: 0, y: 0, z: 0, w: 1 };
  const setMocap = (i: number, m: Mat4) => {
    const pos = data.mocap_pos;
    const mq = data.mocap_quat;
    pos[i * 3] = m[3];
    pos[i * 3 + 1] = m[7];
    pos[i * 3 + 2] = m[11];
    const q = rotationQuat(m, quat);
    mq[i * 4] = q.w;
    mq[i * 4 + 1] = q.x;
    mq[i * 4 + 2] = q.y;
    mq[i * 4 + 3] = q.z;
  };
  const place = (q: ArrayLike<number>, gripperWidthM: number) => {
    const fr = forwardKinematicsInto(PANDA, q, ws, tool);
    let k = 0;
    for (const frame of mocapFrames) setMocap(k++, mat4Mul(worldFromBase, fr[frame]!, w));
    mat4Mul(mat4Mul(worldFromBase, fr[8]!, hand), yaw, w);
    for (const sgn of [1, -1]) {
      hand.set(w);
      const off = sgn * (gripperWidthM / 2 + 0.005);
      const z = FRANKA_HAND_TCP_OFFSET_M - 0.022;
      hand[3] = w[3]! + w[1]! * off + w[2]! * z;
      hand[7] = w[7]! + w[5]! * off + w[6]! * z;
      hand[11] = w[11]! + w[9]! * off + w[10]! * z;
      setMocap(k++, hand);
    }
    const loop = mat4Mul(worldFromBase, fr[9]!, w);
    setMocap(k++, loop);
    return loop;
  };
  // sanity: with the loop pushed 16 mm sideways onto the wire, this model must report contacts
  const loop = place(startQ, HANDLE_GRIP_WIDTH_M);
  const side = 0.016;
  const pos = data.mocap_pos;
  const li = mocapFrames.length + 2;
  pos[li * 3] = loop[3]! + loop[1]! * side;
  pos[li * 3 + 1] = loop[7]! + loop[5]! * side;
  pos[li * 3 + 2] = loop[11]! + loop[9]! * side;
  mj.mj_forward(model, data);
  const touchContacts = data.ncon;
  let contacts = 0;
  const runOnce = (): number => {
    mj.mj_resetData(model, data);
    const servo = servoAtRest(startQ, HANDLE_GRIP_WIDTH_M);
    const t0 = performance.now();
    for (let i = 0; i < traj.count; i++) {
      servoStep(servo, params, traj.q, i * 7, traj.gripperWidthM[i]!, DT);
      place(servo.q, servo.gripperWidthM);
      mj.mj_step(model, data);
      contacts += data.ncon;
    }
    return (performance.now() - t0) / 1000;
  };
  runOnce(); // warm-up
  if (contacts > 0)
    throw new Error(`MuJoCo (${filtering}) saw ${contacts} contact-steps on the scripted path`);
  return {
    label:
      filtering === "pairs"
        ? `mujoco-js (mocap arm, ${model.npair} explicit pairs)`
        : "mujoco-js (mocap arm, contype/conaffinity)",
    steps: traj.count,
    touchContacts,
    pairs: model.npair,
    run: async () => runOnce(),
    close: async () => {
      data.delete();
      model.delete();
    },
  };
}

const oursMain = await ours(0.003);
const oursExtra = sweep ? [await ours(0.0005), await ours(0.02)] : [];
const mj: MujocoModule = await loadMujoco();
mj.FS.mkdir("/bench");
const mjPairs = await mujoco(mj, oursMain.cal, oursMain.traj, "pairs");
const mjBits = await mujoco(mj, oursMain.cal, oursMain.traj, "bitmask");
const runners: Runner[] = [oursMain, ...oursExtra, mjPairs, mjBits];
const best = new Map<Runner, number>(runners.map((r) => [r, Infinity]));
for (let k = 0; k < repeats; k++) for (const r of runners) best.set(r, Math.min(best.get(r)!, await r.run()));
for (const r of runners) await r.close();

const sps = (r: Runner) => r.steps / best.get(r)!;
console.log(
  `buzz-wire scene, seed ${seed}, ${oursMain.steps} steps of ${DT * 1000} ms (best of ${repeats}, interleaved)`,
);
console.log(`${"engine".padEnd(52)}${"steps/s".padStart(10)}${"RTF".padStart(10)}`);
for (const r of runners) console.log(`${r.label.padEnd(52)}${fmt(sps(r))}${fmt(sps(r) * DT, 1)}`);
// a MuJoCo model that misses the forced contact does not check contacts and cannot be the reference
const valid = [mjPairs, mjBits].filter((r) => r.touchContacts > 0);
if (valid.length === 0) throw new Error("no MuJoCo model reported the forced contact");
const ref = valid.reduce((a, b) => (sps(b) > sps(a) ? b : a));
console.log(
  `ratio ours(3 mm) / ${ref.label}: ${(sps(oursMain) / sps(ref)).toFixed(2)} (target ≥ 1.0); ours RTF ${(sps(oursMain) * DT).toFixed(1)} (target ≥ 20)`,
);
console.log(
  `check: loop pushed 16 mm onto the wire → MuJoCo contacts: pairs ${mjPairs.touchContacts}, contype/conaffinity ${mjBits.touchContacts}` +
    " (0: MuJoCo filters mocap-vs-world geoms, that model checks nothing and is not a reference)",
);
