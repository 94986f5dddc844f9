/**
 * Property: no chunk the pre-check accepts makes the simulated arm break a limit. Random
 * measured states and random chunks are interpolated, pre-checked, and — when accepted — replayed
 * through the simulator's servo model (sim/servo.ts). The servo itself saturates at the published
 * limits, so the property that can fail is the one the runtime monitor enforces: measured
 * velocities within the monitor's limit and tracking error within the profile's bound at every
 * tick — an accepted chunk runs to the end without a safety stop — besides the published limits.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FR3, PANDA } from "../../robots/franka/models.ts";
import { servoAtRest, servoParams, servoStep } from "../../sim/servo.ts";
import { interpolateChunk } from "../../seam/interpolate.ts";
import { clipRows, precheckChunk } from "./precheck.ts";
import { parseSafetyProfile, resolveLimits } from "./profile.ts";

describe("accepted chunks replayed through the sim servo model", () => {
  for (const robot of [PANDA, FR3]) {
    it(`never exceed ${robot.id}'s published limits`, { timeout: 120_000 }, () => {
      const limits = resolveLimits(
        robot,
        parseSafetyProfile({ workspace: { minM: [-2, -2, -2], maxM: [2, 2, 2] } }),
      );
      const params = servoParams(robot);
      const P = robot.controlPeriodS;
      let accepted = 0;
      fc.assert(
        fc.property(
          fc.array(fc.double({ min: 0.1, max: 0.9, noNaN: true }), { minLength: 7, maxLength: 7 }),
          fc.array(
            fc.array(fc.double({ min: -0.15, max: 0.15, noNaN: true }), { minLength: 7, maxLength: 7 }),
            {
              minLength: 1,
              maxLength: 8,
            },
          ),
          fc.integer({ min: 20, max: 300 }),
          (startShare, deltas, dtTicks) => {
            const q0 = robot.joints.map(
              (_j, i) => limits.lowerRad[i]! + startShare[i]! * (limits.upperRad[i]! - limits.lowerRad[i]!),
            );
            let cur = q0;
            const rawRows = deltas.map((d) => {
              cur = cur.map((v, i) => v + d[i]!);
              return [...cur, 0.04];
            });
            const { rows } = clipRows(rawRows, limits);
            const start = { q: q0, dq: q0.map(() => 0), gripperWidthM: 0.04 };
            const traj = interpolateChunk(start, rows, dtTicks * P, P);
            const verdict = precheckChunk({ robot, limits, start, trajectory: traj });
            if (!verdict.ok) return;
            accepted++;
            const s = servoAtRest(q0, 0.04);
            const prevDq = new Float64Array(7);
            let broken = "";
            for (let i = 0; i < traj.count + 200 && !broken; i++) {
              const k = Math.min(i, traj.count - 1);
              prevDq.set(s.dq);
              servoStep(s, params, traj.q, k * 7, traj.gripperWidthM[k]!, P);
              for (let j = 0; j < 7; j++) {
                const jt = robot.joints[j]!;
                const acc = Math.abs(s.dq[j]! - prevDq[j]!) / P;
                const err = Math.abs(s.q[j]! - traj.q[k * 7 + j]!);
                if (s.q[j]! < jt.lower || s.q[j]! > jt.upper)
                  broken = `tick ${i} joint ${j + 1} position ${s.q[j]}`;
                else if (Math.abs(s.dq[j]!) > limits.monitorMaxVelocityRadps[j]!)
                  broken = `tick ${i} joint ${j + 1} velocity ${s.dq[j]} above the monitor's limit`;
                else if (err > limits.trackingErrorBoundRad)
                  broken = `tick ${i} joint ${j + 1} tracking error ${err}`;
                else if (Math.abs(s.dq[j]!) > jt.maxVelocity + 1e-9)
                  broken = `tick ${i} joint ${j + 1} velocity ${s.dq[j]}`;
                else if (acc > jt.maxAcceleration + 1e-6)
                  broken = `tick ${i} joint ${j + 1} acceleration ${acc}`;
              }
            }
            expect(broken).toBe("");
          },
        ),
        { numRuns: 80 },
      );
      // the property must have been exercised on accepted chunks, not only on refusals
      expect(accepted).toBeGreaterThan(10);
    });
  }
});
