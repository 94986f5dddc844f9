/**
 * An independent, deliberately naive checker for tests: FK at every sample, distances by
 * ternary search on the convex distance along each segment (no closed forms, no screening),
 * every rule written out again from the documented definitions. Returns the first violation's
 * kind and sample index, or null.
 */
import { forwardKinematics } from "../../robots/franka/kinematics.ts";
import type { Mat4 } from "../../robots/math.ts";
import type { RobotModel } from "../../robots/types.ts";
import type { JointTrajectory } from "../../seam/types.ts";
import type { EffectiveLimits } from "./profile.ts";

type V3 = [number, number, number];

function minOnSegment(f: (t: number) => number): number {
  let lo = 0;
  let hi = 1;
  for (let k = 0; k < 60; k++) {
    const m1 = lo + (hi - lo) / 3;
    const m2 = hi - (hi - lo) / 3;
    if (f(m1) <= f(m2)) hi = m2;
    else lo = m1;
  }
  return Math.min(f(0), f(1), f((lo + hi) / 2));
}
const lerp = (a: V3, b: V3, t: number): V3 => [
  a[0] + (b[0] - a[0]) * t,
  a[1] + (b[1] - a[1]) * t,
  a[2] + (b[2] - a[2]) * t,
];
const dist = (a: V3, b: V3) => Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
const apply = (m: Mat4, p: readonly number[]): V3 => [
  m[0]! * p[0]! + m[1]! * p[1]! + m[2]! * p[2]! + m[3]!,
  m[4]! * p[0]! + m[5]! * p[1]! + m[6]! * p[2]! + m[7]!,
  m[8]! * p[0]! + m[9]! * p[1]! + m[10]! * p[2]! + m[11]!,
];

export function bruteForceCheck(
  robot: RobotModel,
  L: EffectiveLimits,
  start: { q: readonly number[]; dq: readonly number[]; gripperWidthM: number },
  traj: JointTrajectory,
  tcp?: Mat4,
): { kind: string; i: number } | null {
  const T = traj.periodS;
  if (traj.count * T > L.maxChunkDurationS + 1e-9)
    return {
      kind: "chunk_duration",
      i: Math.min(traj.count - 1, Math.floor(L.maxChunkDurationS / T + 1e-9)),
    };
  const bodies = [
    { link: "tool", frame: 9, a: [0, 0, 0], b: [0, 0, 0], r: 0 },
    ...robot.capsules
      .filter((c) => c.frame >= 1)
      .map((c) => ({ link: c.link, frame: c.frame, a: c.a, b: c.b, r: c.radiusM })),
  ];
  const boxFrames = L.keepOut.map((v) => {
    if (v.type !== "box") return null;
    // the box's own rotation, rebuilt from the (normalised) rows stored in the limits: R = rows^T
    const r = v.rot;
    const m = new Float64Array(16);
    m[0] = r[0]!;
    m[1] = r[3]!;
    m[2] = r[6]!;
    m[4] = r[1]!;
    m[5] = r[4]!;
    m[6] = r[7]!;
    m[8] = r[2]!;
    m[9] = r[5]!;
    m[10] = r[8]!;
    m[15] = 1;
    return m;
  });
  const clearances = (q: readonly number[]): { kind: string; c: number }[] => {
    const frames = forwardKinematics(robot, q, tcp).frames;
    const out: { kind: string; c: number }[] = [];
    for (const body of bodies) {
      const pa = apply(frames[body.frame]!, body.a);
      const pb = apply(frames[body.frame]!, body.b);
      let ws = Number.POSITIVE_INFINITY;
      for (const p of [pa, pb])
        for (let k = 0; k < 3; k++)
          ws = Math.min(ws, p[k]! - L.workspace.minM[k]!, L.workspace.maxM[k]! - p[k]!);
      out.push({ kind: "workspace", c: ws - body.r });
      L.keepOut.forEach((v, vi) => {
        if (v.ignoreLinks.includes(body.link)) {
          out.push({ kind: "keep_out", c: Number.POSITIVE_INFINITY });
          return;
        }
        let d: number;
        if (v.type === "sphere") d = minOnSegment((t) => dist(lerp(pa, pb, t), v.center as V3)) - v.radiusM;
        else if (v.type === "capsule")
          d =
            minOnSegment((t) => {
              // point to segment by projection
              const p = lerp(pa, pb, t);
              const ab = [v.b[0] - v.a[0], v.b[1] - v.a[1], v.b[2] - v.a[2]];
              const ap = [p[0] - v.a[0], p[1] - v.a[1], p[2] - v.a[2]];
              const L2 = ab[0]! ** 2 + ab[1]! ** 2 + ab[2]! ** 2;
              const s =
                L2 > 0
                  ? Math.min(1, Math.max(0, (ap[0]! * ab[0]! + ap[1]! * ab[1]! + ap[2]! * ab[2]!) / L2))
                  : 0;
              return dist(p, lerp(v.a as V3, v.b as V3, s));
            }) - v.radiusM;
        else {
          const R = boxFrames[vi]!;
          d = minOnSegment((t) => {
            const p = lerp(pa, pb, t);
            const rel = [p[0] - v.center[0], p[1] - v.center[1], p[2] - v.center[2]];
            // box coordinates: R^T · rel
            const x = [0, 1, 2].map((k) => R[k]! * rel[0]! + R[4 + k]! * rel[1]! + R[8 + k]! * rel[2]!);
            return Math.hypot(...x.map((xk, k) => Math.max(0, Math.abs(xk) - v.half[k]!)));
          });
        }
        out.push({ kind: "keep_out", c: d - body.r });
      });
    }
    return out;
  };
  const floors = clearances(start.q).map((x) => Math.min(0, x.c) - 1e-9);
  const dof = 7;
  const qAt = (i: number): number[] =>
    i < 0 ? [...start.q] : Array.from(traj.q.subarray(i * dof, i * dof + dof));
  const tool = (q: readonly number[]): V3 => forwardKinematics(robot, q, tcp).tool.xyz;
  let prevV = [...start.dq];
  let prevA = new Array(dof).fill(0) as number[];
  let prevQ = qAt(-1);
  let prevG = start.gripperWidthM;
  for (let i = 0; i < traj.count; i++) {
    const q = qAt(i);
    const v = q.map((x, j) => (x - prevQ[j]!) / T);
    const a = v.map((x, j) => (x - prevV[j]!) / T);
    const jk = a.map((x, j) => (x - prevA[j]!) / T);
    for (let j = 0; j < dof; j++) {
      const lo = Math.min(L.lowerRad[j]!, start.q[j]!);
      const hi = Math.max(L.upperRad[j]!, start.q[j]!);
      if (q[j]! < lo || q[j]! > hi) return { kind: "position", i };
    }
    if (v.some((x, j) => Math.abs(x) > L.maxVelocityRadps[j]!)) return { kind: "velocity", i };
    if (a.some((x, j) => Math.abs(x) > L.maxAccelerationRadps2[j]!)) return { kind: "acceleration", i };
    if (jk.some((x, j) => Math.abs(x) > L.maxJerkRadps3[j]!)) return { kind: "jerk", i };
    if (Math.abs(traj.gripperWidthM[i]! - prevG) / T > L.gripper.maxSpeedMps)
      return { kind: "gripper_speed", i };
    if (dist(tool(q), tool(prevQ)) / T > L.maxToolSpeedMps) return { kind: "tool_speed", i };
    const cs = clearances(q);
    for (let p = 0; p < cs.length; p++) if (cs[p]!.c < floors[p]!) return { kind: cs[p]!.kind, i };
    prevQ = q;
    prevV = v;
    prevA = a;
    prevG = traj.gripperWidthM[i]!;
  }
  return null;
}
