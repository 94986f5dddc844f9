/**
 * Property tests of the pre-check:
 * (i) the verdict depends on nothing backend-specific: a sim bench and a real bench that name
 *     the same robot and the same safety section judge every chunk identically;
 * (ii) every verdict agrees with an independent brute-force checker (an accepted chunk has no
 *     violating sample; a refused one fails first at the same sample with the same kind).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { forwardKinematics } from "../../robots/franka/kinematics.ts";
import { ROBOTS } from "../../robots/franka/models.ts";
import { interpolateChunk } from "../../seam/interpolate.ts";
import { bruteForceCheck } from "./bruteforce.testutil.ts";
import { parseSafetyProfile, resolveLimits } from "./profile.ts";
import { precheckChunk } from "./precheck.ts";
import { withCapsules } from "./testing.ts";

const SAFETY_YAML = `
jointPositionMarginRad: 0.05
velocityFraction: 0.5
accelerationFraction: 0.5
jerkFraction: 0.5
maxToolSpeedMps: 0.3
workspace: { minM: [-0.5, -0.8, 0.0], maxM: [0.9, 0.8, 1.2] }
keepOut:
  - { type: box, name: board, centerM: [0.75, 0, 0.05], halfExtentsM: [0.1, 0.3, 0.05], quatXyzw: [0, 0, 0.2588, 0.9659] }
  - { type: capsule, name: post_left, aM: [0.45, -0.2, 0.3], bM: [0.45, -0.2, 0.55], radiusM: 0.01 }
  - { type: sphere, name: post_right, centerM: [0.35, 0.1, 0.5], radiusM: 0.03 }
stopOnEvents: [contact]
`;

/** Bench files as a bench loader would see them: same robot and safety section, different backends. */
const SIM_BENCH = {
  backend: { type: "sim", scene: "buzzwire", physicsHz: 1000 },
  robot: "panda" as const,
  safety: parseYaml(SAFETY_YAML) as unknown,
};
const REAL_BENCH = parseYaml(`
backend:
  type: real
  rosbridgeUrl: ws://127.0.0.1:9090
  jointStatesTopic: franka/joint_states
  trajectoryAction: /fr3_arm_controller/follow_joint_trajectory
  serial: { path: /dev/ttyACM0, baud: 115200 }
robot: panda
safety:
${SAFETY_YAML.trim()
  .split("\n")
  .map((l) => `  ${l}`)
  .join("\n")}
`) as { robot: "panda"; safety: unknown };

function benchSafety(bench: { robot: "panda"; safety: unknown }) {
  const robot = withCapsules(ROBOTS[bench.robot]);
  return { robot, limits: resolveLimits(robot, parseSafetyProfile(bench.safety)) };
}

const sim = benchSafety(SIM_BENCH);
const real = benchSafety(REAL_BENCH);
const HOME = sim.robot.homeQ;

/** random measured state near home and a short chunk of random row steps */
const scenario = fc.record({
  q0: fc.array(fc.double({ min: -0.3, max: 0.3, noNaN: true }), { minLength: 7, maxLength: 7 }),
  dq0: fc.oneof(
    fc.constant([0, 0, 0, 0, 0, 0, 0]),
    fc.array(fc.double({ min: -0.05, max: 0.05, noNaN: true }), { minLength: 7, maxLength: 7 }),
  ),
  g0: fc.double({ min: 0.0, max: 0.08, noNaN: true }),
  dtSteps: fc.constantFrom(10, 20, 50),
  steps: fc.array(
    fc.record({
      dq: fc.array(fc.double({ min: -0.06, max: 0.06, noNaN: true }), { minLength: 7, maxLength: 7 }),
      dg: fc.double({ min: -0.004, max: 0.004, noNaN: true }),
    }),
    { minLength: 1, maxLength: 6 },
  ),
});

type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;

function build(s: Scenario) {
  const start = { q: HOME.map((v, j) => v + s.q0[j]!), dq: s.dq0, gripperWidthM: s.g0 };
  const rows: number[][] = [];
  let prev = [...start.q, s.g0];
  for (const st of s.steps) {
    const row = [
      ...prev.slice(0, 7).map((v, j) => v + st.dq[j]!),
      Math.min(0.08, Math.max(0, prev[7]! + st.dg)),
    ];
    rows.push(row);
    prev = row;
  }
  const dtS = s.dtSteps * sim.robot.controlPeriodS;
  return { start, rows, dtS, traj: interpolateChunk(start, rows, dtS, sim.robot.controlPeriodS) };
}

describe("precheckChunk properties", () => {
  it("(i) sim and real bench configs of the same robot give identical verdicts", () => {
    expect(real.limits).toEqual(sim.limits);
    fc.assert(
      fc.property(scenario, (s) => {
        const { start, traj } = build(s);
        const a = precheckChunk({ robot: sim.robot, limits: sim.limits, start, trajectory: traj });
        const b = precheckChunk({ robot: real.robot, limits: real.limits, start, trajectory: traj });
        expect(b).toEqual(a);
      }),
      { numRuns: 200 },
    );
  });

  // 60 random chunks, each checked against a per-sample brute force: seconds of CPU, so the deadline
  // is generous for a loaded machine (it is a hang detector, not a speed assertion)
  it("(ii) every verdict agrees with an independent brute-force checker", { timeout: 180_000 }, () => {
    const kinds = new Map<string, number>();
    const tool = forwardKinematics(sim.robot, HOME).tool.xyz;
    expect(tool[2]).toBeGreaterThan(0.3); // the keep-outs above sit around the home tool point
    fc.assert(
      fc.property(scenario, (s) => {
        const { start, traj } = build(s);
        const fast = precheckChunk({
          robot: sim.robot,
          limits: sim.limits,
          start,
          trajectory: traj,
          geometryStride: 7,
        });
        const slow = bruteForceCheck(sim.robot, sim.limits, start, traj);
        const k = fast.ok ? "ok" : fast.violation.kind;
        kinds.set(k, (kinds.get(k) ?? 0) + 1);
        expect(fast.ok ? null : { kind: fast.violation.kind, i: fast.violation.sampleIndex }).toEqual(slow);
      }),
      { numRuns: 60 },
    );
    // the generator must exercise both outcomes, or the property says little
    expect(kinds.get("ok") ?? 0).toBeGreaterThan(0);
    expect([...kinds.keys()].filter((k) => k !== "ok").length).toBeGreaterThan(1);
    console.log("verdicts:", Object.fromEntries(kinds));
  });
});
