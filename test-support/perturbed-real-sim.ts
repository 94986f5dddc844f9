/**
 * The hidden "real" bench of the twin tests: a simulator whose servo, latencies and sensors differ
 * from the nominal twin's in ways the twin is never told (per-joint gains, a command transport
 * delay, reading and frame latency, camera and encoder noise). Tests build the twin from the
 * nominal options and this from the same seed; sysid must recover PERTURBATION from its records.
 */
import { PANDA } from "../robots/franka/models.ts";
import type { RobotModel } from "../robots/types.ts";
import { RealismSchema } from "../sim/sensors/realism.ts";
import { createSimBackend, type SimBackend, type SimBackendOptions } from "../sim/sim-backend.ts";

/** what differs (kept out of the twin): gains 1/s per joint, delay in control periods */
export const PERTURBATION = Object.freeze({
  kpPerJoint: [120, 90, 150, 70, 160, 110, 80] as readonly number[],
  delayTicks: 4,
  readingLatencyMs: 1,
  jointNoiseRad: 2e-5,
});

export function perturbedRealSim(
  seed: number,
  extra: Partial<SimBackendOptions> = {},
  robot: RobotModel = PANDA,
): SimBackend {
  return createSimBackend({
    robot,
    seed,
    servo: { kpPerJoint: PERTURBATION.kpPerJoint, delayTicks: PERTURBATION.delayTicks },
    realism: RealismSchema.parse({
      timing: {
        readingLatencyMs: PERTURBATION.readingLatencyMs,
        jointNoiseRad: PERTURBATION.jointNoiseRad,
        frameLatencyMs: 30,
        frameJitterMs: 4,
      },
      domain: false,
    }),
    ...extra,
  });
}

/**
 * The same hidden "real" bench as a bench file's `backend` block (pendulum scene: the arm moves
 * free of the wire): the perturbed servo and the reading latency and noise, no domain
 * randomisation. For tests that serve it through a gateway.
 */
export function perturbedRealBackendBlock(): Record<string, unknown> {
  return {
    type: "sim",
    scene: "pendulum",
    servo: { kpPerJoint: PERTURBATION.kpPerJoint, delayTicks: PERTURBATION.delayTicks },
    realism: {
      timing: { readingLatencyMs: PERTURBATION.readingLatencyMs, jointNoiseRad: PERTURBATION.jointNoiseRad },
      domain: false,
    },
  };
}
