/**
 * Compose a bench from a validated bench config: the backend (by its `type`, through a table,
 * not an if/else chain), the resolved safety limits, the tool transform and the IK port.
 */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { type Calibration, calibrationSchema } from "../calibration/schema.ts";
import { MirrorBackend } from "../drivers/mirror/mirror-backend.ts";
import { createRealBackend } from "../drivers/real/real-backend.ts";
import { forwardKinematics } from "../robots/franka/kinematics.ts";
import { ikWorkspace, solveIkInto } from "../robots/franka/ik.ts";
import { ROBOTS } from "../robots/franka/models.ts";
import { poseToMat4 } from "../robots/math.ts";
import type { RobotModel } from "../robots/types.ts";
import { sampleBenchCalibration } from "../sim/buzzwire/bench.ts";
import { samplePendulumBench } from "../sim/pendulum/bench.ts";
import { createSimBackend } from "../sim/sim-backend.ts";
import type { IkPort } from "../gateway/episode/actions.ts";
import type { Bench } from "../gateway/gateway.ts";
import { provenanceOf } from "../gateway/recorder/provenance.ts";
import { checkRecordsDir, checkRecordsDirAsync } from "../gateway/recorder/storage.ts";
import { calibrationKeepOuts } from "../gateway/safety/bench-volumes.ts";
import { type EffectiveLimits, resolveLimits } from "../gateway/safety/profile.ts";
import type { Backend } from "../seam/types.ts";
import type { BackendConfig, BenchConfig } from "./bench-config.ts";
import { ShadowBackend } from "./twin/shadow-backend.ts";
import { twinConsoleView } from "./twin/console-view.ts";
import type { SimBackend } from "../sim/sim-backend.ts";

interface Built {
  backend: Backend;
  /** the bench geometry tasks read, per episode seed (the calibration, or the sim's sampled one) */
  taskBench: (seed: number) => Record<string, unknown>;
}

type BackendFactory<K extends BackendConfig["type"]> = (
  cfg: Extract<BackendConfig, { type: K }>,
  ctx: { robot: RobotModel; calibration?: Calibration; seed: number },
) => Built;

/** One entry per backend kind; the compiler reports a missing kind. */
const BACKENDS: { [K in BackendConfig["type"]]: BackendFactory<K> } = {
  mirror: (_cfg, ctx) => ({
    backend: new MirrorBackend({ robot: ctx.robot }),
    taskBench: () => (ctx.calibration ? { ...ctx.calibration } : {}),
  }),
  real: (cfg, ctx) => ({
    backend: createRealBackend(cfg, {
      robot: ctx.robot,
      ...(ctx.calibration ? { calibration: ctx.calibration } : {}),
    }),
    // a real bench's geometry is its calibration file
    taskBench: () => (ctx.calibration ? { ...ctx.calibration } : {}),
  }),
  sim: (cfg, ctx) => {
    const cal = ctx.calibration;
    if (cfg.scene === "pendulum") {
      return {
        backend: createSimBackend({
          robot: ctx.robot,
          seed: ctx.seed,
          scene: "pendulum",
          realism: cfg.realism,
          ...(cfg.servo ? { servo: cfg.servo } : {}),
        }),
        // the pendulum (its hidden length) is sampled from the episode seed, as the sim does
        taskBench: (seed) => ({ ...samplePendulumBench(ctx.robot, seed) }),
      };
    }
    return {
      backend: createSimBackend({
        robot: ctx.robot,
        seed: ctx.seed,
        ...(cal ? { calibration: cal } : {}),
        realism: cfg.realism,
        ...(cfg.servo ? { servo: cfg.servo } : {}),
      }),
      // a calibrated sim is the twin of that bench; otherwise the wire is sampled from the episode seed
      taskBench: (seed) => ({ ...(cal ?? sampleBenchCalibration(ctx.robot, seed)) }),
    };
  },
};

/** Read and validate a calibration file (YAML or JSON). */
export function loadCalibration(path: string): Calibration {
  return calibrationSchema.parse(parseYaml(readFileSync(path, "utf8")));
}

export function ikPort(robot: RobotModel, toolFromFlange: Float64Array): IkPort {
  // one workspace per port (a solve is synchronous; its result is copied out): an act of 300
  // tool poses solves 300 times in a row, and a fresh workspace each time was garbage per row
  const ws = ikWorkspace();
  return {
    solve: (pose, seed) => {
      const r = solveIkInto(robot, pose, { tcp: toolFromFlange, seedQ: seed, restarts: 8 }, ws);
      if (r.ok) return r;
      return {
        ok: false,
        reason: r.reason,
        positionResidualM: r.positionResidualM,
        orientationResidualRad: r.orientationResidualRad,
      };
    },
    fk: (q) => forwardKinematics(robot, q, toolFromFlange).tool,
  };
}

/** seeds whose derived safety limits a composed bench keeps (limitsFor) */
const LIMITS_BY_SEED_KEPT = 16;
/** Build, configure and activate the bench's backend; returns the composed bench. */
export async function composeBench(config: BenchConfig, baseDir = process.cwd()): Promise<Bench> {
  const robot = ROBOTS[config.robot];
  // an unwritable records directory refuses the bench before any device is opened
  const recordsDir = resolve(config.recordsDir);
  checkRecordsDir(recordsDir);
  const calibration = config.calibration ? loadCalibration(resolve(baseDir, config.calibration)) : undefined;
  const make = BACKENDS[config.backend.type] as BackendFactory<BackendConfig["type"]>;
  const made = make(config.backend, {
    robot,
    seed: config.task.seed,
    ...(calibration ? { calibration } : {}),
  });
  const { taskBench } = made;
  // a shadow bench: the gateway drives the composite; the twin is built as a sim bench of the same calibration
  const backend: Backend = config.shadow
    ? new ShadowBackend(
        made.backend,
        BACKENDS.sim(config.shadow, {
          robot,
          seed: config.task.seed,
          ...(calibration ? { calibration } : {}),
        }).backend as SimBackend,
      )
    : made.backend;
  await backend.configure();
  await backend.activate();
  const desc = backend.describe();
  const toolFromFlange = poseToMat4(desc.toolOffset);
  const limits = resolveLimits(robot, config.safety);
  const provenance = provenanceOf(config.name, config, limits);
  // the last few seeds' limits (a run draws a new seed per trial: a gateway left running must not
  // keep one per episode it ever ran)
  const bySeed = new Map<number, EffectiveLimits>();
  const limitsFor = (seed: number): EffectiveLimits => {
    if (!config.keepOutsFromCalibration) return limits;
    let l = bySeed.get(seed);
    if (!l) {
      const geo = calibrationSchema.safeParse(taskBench(seed));
      const derived = geo.success ? calibrationKeepOuts(geo.data) : [];
      l = resolveLimits(robot, { ...config.safety, keepOut: [...config.safety.keepOut, ...derived] });
      bySeed.set(seed, l);
      if (bySeed.size > LIMITS_BY_SEED_KEPT) bySeed.delete(bySeed.keys().next().value!);
    }
    return l;
  };
  return {
    name: config.name,
    backend,
    limits,
    limitsFor,
    toolFromFlange,
    ik: ikPort(robot, toolFromFlange),
    maxDtS: config.maxDtS,
    onClientDisconnect: config.onClientDisconnect,
    taskBench,
    defaults: {
      task: config.task.id,
      ...(config.task.level ? { level: config.task.level } : {}),
      seed: config.task.seed,
    },
    simulated: backend.kind !== "real",
    // a real bench moves only when started with the explicit allow-motion switch
    motionAllowed: config.backend.type !== "real" || config.backend.allowMotion,
    provenance,
    preflight: () => checkRecordsDirAsync(recordsDir),
    ...(backend instanceof ShadowBackend ? { twin: twinConsoleView(backend) } : {}),
  };
}
