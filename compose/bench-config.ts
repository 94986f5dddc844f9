/**
 * The bench file (YAML or JSON): which backend, which robot, the safety profile, the task and
 * the calibration. Validated strictly once at start (unknown keys are errors, every problem is
 * reported with its path), then frozen. Backend kinds are a discriminated union on `type`.
 */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { deepFreeze } from "../calibration/schema.ts";
import { RealBackendConfigSchema } from "../drivers/real/real-bench-config.ts";
import { SafetyProfileSchema } from "../gateway/safety/profile.ts";
import { RealismSchema } from "../sim/sensors/realism.ts";
import { SimServoSchema } from "../sim/servo.ts";

export const MirrorBackendConfigSchema = z.strictObject({
  type: z.literal("mirror"),
});

export const SimBackendConfigSchema = z.strictObject({
  type: z.literal("sim"),
  /** which bench the simulator builds: the buzz-wire game or the pendulum with a photogate */
  scene: z.enum(["buzzwire", "pendulum"]).default("buzzwire"),
  /** sensor realism ({} = consumer RGB-D defaults; docs/sensor-realism.md); false = ideal sensors */
  realism: z.union([z.literal(false), RealismSchema]).default(false),
  /** the joint servo model (written by `robot-gateway sysid`; default: the nominal servo) */
  servo: SimServoSchema.optional(),
});

export const BackendConfigSchema = z.discriminatedUnion("type", [
  MirrorBackendConfigSchema,
  SimBackendConfigSchema,
  RealBackendConfigSchema,
]);
export type BackendConfig = z.infer<typeof BackendConfigSchema>;

export const BenchConfigSchema = z.strictObject({
  version: z.literal(1),
  /** bench name shown in records and logs */
  name: z.string().min(1),
  robot: z.enum(["panda", "fr3"]).default("fr3"),
  backend: BackendConfigSchema,
  /** path of the calibration file, relative to the bench file */
  calibration: z.string().optional(),
  safety: SafetyProfileSchema.default(SafetyProfileSchema.parse({})),
  /** add the calibration's table and board as keep-out volumes to the safety profile */
  keepOutsFromCalibration: z.boolean().default(true),
  task: z
    .strictObject({
      id: z.string().default("free-motion"),
      level: z.string().optional(),
      seed: z.number().int().min(0).default(0),
    })
    .default({ id: "free-motion", seed: 0 }),
  /** largest dt between two chunk rows, s */
  maxDtS: z.number().positive().default(0.5),
  /** a client that disconnects mid-act: "finish" runs the accepted chunk to its end and records it; "stop" stops the motion at once */
  onClientDisconnect: z.enum(["finish", "stop"]).default("finish"),
  /**
   * shadow twin: a simulated twin (of the same calibration) that receives every accepted
   * trajectory in lockstep; its divergence goes beside each record (compose/twin/)
   */
  shadow: SimBackendConfigSchema.optional(),
  /** act's frames.video: the ffmpeg binary (Debian's ffmpeg with libx264; a name on PATH or a path) */
  video: z
    .strictObject({ ffmpegPath: z.string().min(1).default("ffmpeg") })
    .default({ ffmpegPath: "ffmpeg" }),
  /** where episode records go, relative to the working directory */
  recordsDir: z.string().default("records"),
  /**
   * CPU scheduling of the gateway process under `serve` and `run` (cli/scheduling.ts).
   * `rtPriority`: SCHED_FIFO priority of the event loop's thread, where every stop is issued
   * (the process's other threads one below; processes it starts stay normal), as ros2_control
   * runs its control thread (priority 50). Absent: the normal scheduler. A bench that asks and
   * cannot get it does not start (RB_ERR_RT_SCHEDULING).
   * `cpuAffinity`: the CPUs every thread of the gateway runs on, as ros2_control_node's
   * `cpu_affinity`; the agents `run` starts get the CPUs left. Absent: every CPU. A CPU the
   * process may not use refuses the start (RB_ERR_CPU_AFFINITY).
   */
  scheduling: z
    .strictObject({
      rtPriority: z.number().int().min(2).max(99).optional(),
      cpuAffinity: z.array(z.number().int().min(0).max(4095)).min(1).optional(),
    })
    .default({}),
});
export type BenchConfig = z.infer<typeof BenchConfigSchema>;

export class BenchConfigError extends Error {
  constructor(
    readonly source: string,
    readonly issues: readonly { path: string; message: string }[],
  ) {
    super(
      `invalid bench file ${source}:\n${issues.map((i) => `  - ${i.path || "(root)"}: ${i.message}`).join("\n")}`,
    );
    this.name = "BenchConfigError";
  }
}

/** Validate a parsed bench object; throws BenchConfigError listing every issue. */
export function parseBenchConfig(raw: unknown, source = "<inline>"): BenchConfig {
  const r = BenchConfigSchema.safeParse(raw);
  if (!r.success) {
    throw new BenchConfigError(
      source,
      r.error.issues.map((i) => ({ path: i.path.join("."), message: i.message })),
    );
  }
  return deepFreeze(r.data);
}

/** Read and validate a bench file (YAML or JSON). Relative paths inside resolve against its folder. */
export function loadBenchFile(path: string): { config: BenchConfig; baseDir: string } {
  const text = readFileSync(path, "utf8");
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (e) {
    throw new BenchConfigError(path, [{ path: "", message: `not YAML/JSON: ${(e as Error).message}` }]);
  }
  return { config: parseBenchConfig(raw, path), baseDir: dirname(resolve(path)) };
}

/**
 * The built-in bench when no file is given: the simulated buzz-wire bench (an FR3 with the
 * loop in its gripper; the wire is sampled from the episode seed).
 */
export const DEFAULT_BENCH: BenchConfig = parseBenchConfig(
  {
    version: 1,
    name: "sim-buzzwire",
    robot: "fr3",
    backend: { type: "sim" },
    task: { id: "buzz-wire", seed: 1 },
  },
  "<built-in>",
);
