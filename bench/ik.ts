/**
 * Kinematics benchmark: milliseconds per IK solve (p50 / p99, nearby seed and home seed), per FK
 * call and per Jacobian. Reference, in the same run: one FK call (the unit every IK iteration pays
 * for), and the 5 ms per-solve budget of the ee_pose action.
 *
 *   npx tsx bench/ik.ts [--n 2000]
 */
import { forwardKinematics, fkWorkspace, forwardKinematicsInto } from "../robots/franka/kinematics.ts";
import { ikWorkspace, type IkResult, solveIkInto } from "../robots/franka/ik.ts";
import { jacobianInto, jacobianWorkspace } from "../robots/franka/jacobian.ts";
import { PANDA } from "../robots/franka/models.ts";
import { pct } from "./stats.ts";

const nArg = process.argv.indexOf("--n");
const N = nArg > 0 ? Number(process.argv[nArg + 1]) : 2000;
const model = PANDA;

let s = 12345;
const rnd = (): number => {
  s = (s * 48271) % 2147483647;
  return s / 2147483647;
};
const randomQ = (): number[] => model.joints.map((j) => j.lower + rnd() * (j.upper - j.lower));

// FK / Jacobian per call
const qs = Array.from({ length: 1000 }, randomQ);
const fws = fkWorkspace();
const jws = jacobianWorkspace();
function perCall(label: string, f: (q: number[]) => void, reps = 200): number {
  for (const q of qs) f(q); // warm-up
  const t0 = performance.now();
  for (let r = 0; r < reps; r++) for (const q of qs) f(q);
  const us = ((performance.now() - t0) * 1000) / (reps * qs.length);
  console.log(`${label.padEnd(34)} ${us.toFixed(3)} µs/call`);
  return us;
}
const fkUs = perCall("FK (workspace, reference)", (q) => void forwardKinematicsInto(model, q, fws));
perCall("FK (allocating, poses)", (q) => void forwardKinematics(model, q), 20);
perCall("Jacobian (workspace, incl. FK)", (q) => void jacobianInto(model, q, jws));

// IK
const ws = ikWorkspace();
function runIk(label: string, seeded: boolean): void {
  const times: number[] = [];
  let ok = 0;
  let iters = 0;
  for (let k = 0; k < N; k++) {
    const q = randomQ();
    const target = forwardKinematics(model, q).flange;
    const seedQ = seeded
      ? q.map((v, i) =>
          Math.min(model.joints[i]!.upper, Math.max(model.joints[i]!.lower, v + (rnd() * 2 - 1) * 0.15)),
        )
      : undefined;
    const t0 = performance.now();
    const r: IkResult = solveIkInto(model, target, { seedQ }, ws);
    times.push(performance.now() - t0);
    if (r.ok) ok++;
    iters += r.iterations;
  }
  const p50 = pct(times, 50);
  const p99 = pct(times, 99);
  console.log(
    `IK ${label.padEnd(31)} p50 ${p50.toFixed(3)} ms  p99 ${p99.toFixed(3)} ms  max ${Math.max(...times).toFixed(3)} ms` +
      `  | ${((p50 * 1000) / fkUs).toFixed(0)} FK calls at p50, budget 5 ms` +
      `  | ok ${((100 * ok) / N).toFixed(1)} %, mean iterations ${(iters / N).toFixed(1)}`,
  );
}
runIk("nearby seed (±0.15 rad)", true);
runIk("home seed", false);

// failure path cost: unreachable targets inside and outside the reach sphere
{
  const t0 = performance.now();
  const r = solveIkInto(model, { xyz: [2, 0, 0.5], quat_xyzw: [0, 0, 0, 1] }, {}, ws);
  const t1 = performance.now();
  const r2 = solveIkInto(model, { xyz: [0, 0, 0.05], quat_xyzw: [0, 0, 0, 1] }, {}, ws);
  const t2 = performance.now();
  console.log(
    `IK unreachable, 2 m away            ${(t1 - t0).toFixed(3)} ms (${r.ok ? "ok" : r.reason})\n` +
      `IK hard target, flange near base   ${(t2 - t1).toFixed(3)} ms (${r2.ok ? "ok" : r2.reason})`,
  );
}
