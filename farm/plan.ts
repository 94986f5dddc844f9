/**
 * A farm run as data: the cells (agent × task × level × bench kind) and their trials, each with
 * a stable id. The same run spec always expands to the same trial ids, so a trial that is added
 * again (a re-submitted run, a retried job) is the same BullMQ job and the same stored result.
 *
 * Seeds follow `robot-gateway run`: with --seed, trial i of every cell gets seed + i − 1; without,
 * seeds come from the run secret (cli/run.ts trialSeed), so every cell sees the same seeds.
 */
import { createHash } from "node:crypto";
import { trialSeed } from "../cli/run.ts";

export interface RunSpec {
  /** run id: letters, digits, `-`, `_`, `.` */
  run: string;
  agents: string[];
  /** task ids; `null` = the worker bench's default task */
  tasks: (string | null)[];
  /** levels; `null` = the task's default level */
  levels: (string | null)[];
  /** bench kinds: the `name` of the benches the workers serve (e.g. sim-buzzwire) */
  benchKinds: string[];
  /** trials per cell */
  trials: number;
  /** base seed (trial i gets seed + i − 1); absent: seeds derived from `secret` */
  seed?: number;
  /** run secret the seeds are derived from when no base seed is given */
  secret: string;
  /** wall-clock seconds a trial may take (cli/run.ts --trial-timeout) */
  trialTimeoutS: number;
  /** run the agents in the bubblewrap sandbox (default true) */
  sandbox: boolean;
  created_at: string;
}

/** One trial: what a worker needs to run it. */
export interface TrialSpec {
  /** stable id: `<run>.<cell>.<trial>` */
  id: string;
  run: string;
  /** cell id: hash of agent, task, level and bench kind */
  cell: string;
  agent: string;
  task: string | null;
  level: string | null;
  benchKind: string;
  /** 0-based index in the cell; trial number = index + 1 */
  index: number;
  seed: number;
}

const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** Is `s` usable as a run id or bench kind (also inside BullMQ queue names and Redis keys)? */
export function isFarmId(s: string): boolean {
  return ID.test(s);
}

export function cellId(agent: string, task: string | null, level: string | null, benchKind: string): string {
  return createHash("sha256")
    .update(JSON.stringify([agent, task, level, benchKind]))
    .digest("hex")
    .slice(0, 10);
}

/** Every trial of the run, cell by cell (pure). */
export function expandRun(spec: RunSpec): TrialSpec[] {
  const out: TrialSpec[] = [];
  for (const benchKind of spec.benchKinds)
    for (const agent of spec.agents)
      for (const task of spec.tasks)
        for (const level of spec.levels) {
          const cell = cellId(agent, task, level, benchKind);
          for (let index = 0; index < spec.trials; index++) {
            out.push({
              id: `${spec.run}.${cell}.${index + 1}`,
              run: spec.run,
              cell,
              agent,
              task,
              level,
              benchKind,
              index,
              seed: trialSeed(spec.seed === undefined ? {} : { seed: spec.seed }, spec.secret, index),
            });
          }
        }
  return out;
}

/** The BullMQ queue that workers of a bench kind serve. */
export function queueName(benchKind: string): string {
  return `rgfarm.${benchKind}`;
}
