/**
 * Rig side of FollowJointTrajectory: goal points → dense control-period samples, the way a
 * joint trajectory controller does it. Segments between knots are quintic Hermite splines
 * through the knots' positions, velocities and accelerations (missing velocities: central
 * differences; missing accelerations: 0). Knot 0 is the measured state at t = 0. Pure.
 */
export interface Knot {
  /** s from the start of the goal */
  t: number;
  /** rad */
  q: number[];
  /** rad/s */
  v: number[];
  /** rad/s² */
  a: number[];
}

export interface GoalPointIn {
  positions: number[];
  velocities?: number[];
  accelerations?: number[];
  /** s */
  t: number;
}

/**
 * @param start measured state (q, dq) at t = 0
 * @param points goal points in model joint order, strictly increasing t > 0
 * @returns dense samples at t = periodS, 2·periodS, … up to the last point's time (count × dof)
 */
export function densifyGoal(
  start: { q: readonly number[]; dq: readonly number[] },
  points: readonly GoalPointIn[],
  periodS: number,
): { count: number; q: Float64Array } {
  const dof = start.q.length;
  const knots: Knot[] = [
    { t: 0, q: [...start.q], v: [...start.dq], a: new Array(dof).fill(0) },
    ...points.map((p) => knotOf(p, 0, dof)),
  ];
  fillVelocities(knots, dof);
  const endT = knots[knots.length - 1]!.t;
  const count = Math.max(0, Math.round(endT / periodS));
  const q = new Float64Array(count * dof);
  let seg = 0;
  for (let i = 0; i < count; i++) {
    const t = Math.min((i + 1) * periodS, endT);
    while (seg < knots.length - 2 && t > knots[seg + 1]!.t) seg++;
    hermite5(knots[seg]!, knots[seg + 1]!, t, q, i * dof);
  }
  return { count, q };
}

/**
 * How joint_trajectory_controller (ros2_controllers, `Trajectory::sample`) samples a trajectory
 * at time `t`: before the first point's time, between the state it had when the trajectory took
 * effect (`before`) and the first point; at or after a point's time, between that point and the
 * next (points already past are passed over: the controller never goes back to them, nor to its
 * own state); after the last point, the last point. Times are absolute (the same clock for all
 * knots). Writes the positions into `out`. Pure, allocation-free.
 */
export function sampleKnots(
  before: Knot,
  points: readonly Knot[],
  t: number,
  out: Float64Array | number[],
): void {
  const n = points.length;
  if (n === 0) {
    for (let j = 0; j < before.q.length; j++) out[j] = before.q[j]!;
    return;
  }
  const first = points[0]!;
  if (t < first.t) {
    hermite5(before, first, t, out);
    return;
  }
  for (let i = 0; i < n - 1; i++) {
    const a = points[i]!;
    const b = points[i + 1]!;
    if (t >= a.t && t < b.t) {
      hermite5(a, b, t, out);
      return;
    }
  }
  const last = points[n - 1]!;
  for (let j = 0; j < last.q.length; j++) out[j] = last.q[j]!;
}

/**
 * Quintic Hermite between two knots at time t (clamped to the segment): the basis of position,
 * velocity·T and acceleration·T² at both ends; positions into `out` from `offset`.
 */
function hermite5(k0: Knot, k1: Knot, t: number, out: Float64Array | number[], offset = 0): void {
  const T = k1.t - k0.t;
  const u = T > 0 ? Math.min(1, Math.max(0, (t - k0.t) / T)) : 1;
  const u2 = u * u;
  const u3 = u2 * u;
  const u4 = u3 * u;
  const u5 = u4 * u;
  const h00 = 1 - 10 * u3 + 15 * u4 - 6 * u5;
  const h10 = u - 6 * u3 + 8 * u4 - 3 * u5;
  const h20 = 0.5 * (u2 - 3 * u3 + 3 * u4 - u5);
  const h01 = 10 * u3 - 15 * u4 + 6 * u5;
  const h11 = -4 * u3 + 7 * u4 - 3 * u5;
  const h21 = 0.5 * (u3 - 2 * u4 + u5);
  for (let j = 0; j < k0.q.length; j++) {
    out[offset + j] =
      h00 * k0.q[j]! +
      h10 * T * (k0.v[j] ?? 0) +
      h20 * T * T * (k0.a[j] ?? 0) +
      h01 * k1.q[j]! +
      h11 * T * (k1.v[j] ?? 0) +
      h21 * T * T * (k1.a[j] ?? 0);
  }
}

/**
 * Goal points (times from the trajectory start) → knots on an absolute clock starting at
 * `startS`; missing velocities by central differences (zero at the last point), missing
 * accelerations zero.
 */
export function goalKnots(points: readonly GoalPointIn[], startS: number, dof: number): Knot[] {
  const knots = points.map((p) => knotOf(p, startS, dof));
  fillVelocities(knots, dof);
  return knots;
}

/** A goal point as a knot at `startS + t`; accelerations zero when not given, velocities filled later. */
function knotOf(p: GoalPointIn, startS: number, dof: number): Knot {
  return {
    t: startS + p.t,
    q: p.positions,
    v: p.velocities?.length === dof ? p.velocities : [],
    a: p.accelerations?.length === dof ? p.accelerations : new Array(dof).fill(0),
  };
}

/** Missing velocities by central differences; zero where a knot has no neighbour on both sides. */
function fillVelocities(knots: Knot[], dof: number): void {
  for (let k = 0; k < knots.length; k++) {
    const kn = knots[k]!;
    if (kn.v.length === dof) continue;
    const prev = knots[k - 1];
    const next = knots[k + 1];
    kn.v = kn.q.map((_, j) => (next && prev ? (next.q[j]! - prev.q[j]!) / (next.t - prev.t) : 0));
  }
}
