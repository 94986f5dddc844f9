/**
 * stringifySteps gives JSON.stringify's text, byte for byte: on rosbridge send_action_goal
 * messages carrying FollowJointTrajectory goals of several sizes (with -0, the smallest subnormal,
 * huge and non-finite numbers), on arbitrary values (fast-check), and with a pause point after
 * every goal point. Each check runs with the leaves as sent (containers of up to LEAF_VALUES values
 * handed to JSON.stringify whole) and with every container walked.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FR3 } from "../../robots/franka/models.ts";
import { interpolateChunk } from "../../seam/interpolate.ts";
import { runSteps } from "../../seam/steps.ts";
import { LEAF_VALUES, stringifySteps } from "./json-steps.ts";
import { buildFollowJointTrajectoryGoal } from "./trajectory-goal.ts";

const names = FR3.joints.map((j) => j.name);
const start = { q: [...FR3.homeQ], dq: new Array(7).fill(0), gripperWidthM: 0.08 };

/** a send_action_goal message for a chunk of `rows` rows of 10 ms (as the roslib transport sends it) */
function message(rows: number) {
  const out = Array.from({ length: rows }, (_, r) => [
    ...FR3.homeQ.map((v, j) => v + 0.02 * Math.sin(r / 30 + j)),
    0.08,
  ]);
  const goal = buildFollowJointTrajectoryGoal(interpolateChunk(start, out, 0.01, 0.001), start, names, 0.01);
  return {
    op: "send_action_goal",
    id: "send_action_goal:/fr3_arm_controller/follow_joint_trajectory:1:m1",
    action: "/fr3_arm_controller/follow_joint_trajectory",
    action_type: "control_msgs/action/FollowJointTrajectory",
    args: goal,
    feedback: true,
  };
}

/** both ways: leaves of LEAF_VALUES values (as sent), and every container walked (leaf size 0) */
const LEAVES = [LEAF_VALUES, 0];

/** the steps run to the end, and how many pause points they had */
function run(value: unknown, leafValues = LEAF_VALUES): { text: string | undefined; pauses: number } {
  const work = stringifySteps(value, leafValues);
  let pauses = 0;
  for (;;) {
    const r = work.next();
    if (r.done) return { text: r.value, pauses };
    pauses++;
  }
}

describe("stringifySteps", () => {
  it("serialises send_action_goal messages of 1 to 300 goal points exactly as JSON.stringify", () => {
    for (const rows of [1, 12, 100, 300]) {
      const m = message(rows);
      const { text, pauses } = run(m);
      expect(text).toBe(JSON.stringify(m));
      expect(run(m, 0).text).toBe(text);
      // a pause point after every goal point: a slice can end after any of them (a goal of one
      // point is one leaf)
      if (rows > 1) expect(pauses).toBeGreaterThanOrEqual(m.args.trajectory.points.length);
      expect(JSON.parse(text!)).toEqual(JSON.parse(JSON.stringify(m)));
    }
  });

  it("keeps JSON.stringify's number texts: -0, subnormals, huge, exponents, non-finite", () => {
    const m = message(12);
    const specials = [
      -0,
      5e-324,
      -5e-324,
      1e-300,
      2.2250738585072014e-308,
      1.7976931348623157e308,
      -1.7976931348623157e308,
      1e21,
      123456789012345680000,
      0.1 + 0.2,
      1e-7,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
      Number.MAX_SAFE_INTEGER,
    ];
    const pts = m.args.trajectory.points;
    specials.forEach((x, k) => {
      const p = pts[k % pts.length]!;
      p.positions[k % 7] = x;
      p.velocities[(k + 3) % 7] = x;
      p.accelerations[(k + 5) % 7] = x;
    });
    m.args.trajectory.header.frame_id = 'base "link"\n\u2028\ud800';
    const { text } = run(m);
    expect(text).toBe(JSON.stringify(m));
    expect(run(m, 0).text).toBe(JSON.stringify(m));
    expect(text).toContain('"positions":[0,');
    expect(text).toContain("5e-324");
    expect(text).toContain("1.7976931348623157e+308");
    expect(text).toContain("null");
  });

  it("equals JSON.stringify on arbitrary values, or throws where it throws", () => {
    fc.assert(
      fc.property(
        fc.anything({
          withBoxedValues: true,
          withMap: true,
          withSet: true,
          withObjectString: true,
          withNullPrototype: true,
          withBigInt: true,
          withDate: true,
          withTypedArray: true,
          withSparseArray: true,
          withUnicodeString: true,
        }),
        (v) => {
          let expected: string | undefined;
          try {
            expected = JSON.stringify(v);
          } catch (e) {
            for (const n of LEAVES) {
              expect(() => runSteps(stringifySteps(v, n))).toThrow((e as Error).constructor as never);
            }
            return;
          }
          for (const n of LEAVES) expect(runSteps(stringifySteps(v, n))).toBe(expected);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("applies toJSON with the property's key and leaves out what serialises to nothing", () => {
    const keyed = { toJSON: (key: string) => `key=${key}` };
    const v = {
      a: [keyed, undefined, () => 1, Symbol("s"), { b: keyed, c: undefined }],
      d: keyed,
      e: new Date(0),
      f: Object.assign(Object.create(null), { g: [1, { h: 2 }] }),
      __proto__x: 1,
      ["__proto__"]: { i: [] },
    };
    for (const n of LEAVES) {
      expect(runSteps(stringifySteps(v, n))).toBe(JSON.stringify(v));
      expect(runSteps(stringifySteps(keyed, n))).toBe(JSON.stringify(keyed));
      expect(runSteps(stringifySteps(undefined, n))).toBe(undefined);
    }
  });

  it("refuses a cycle with a TypeError, as JSON.stringify does", () => {
    const a: unknown[] = [1, { x: [] }];
    a.push({ back: a });
    expect(() => JSON.stringify(a)).toThrow(TypeError);
    for (const n of LEAVES) expect(() => runSteps(stringifySteps(a, n))).toThrow(TypeError);
  });
});
