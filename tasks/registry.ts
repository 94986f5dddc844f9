/** Tasks registered by id. */
import { BUZZ_WIRE } from "./buzz-wire/buzz-wire.ts";
import { FREE_MOTION } from "./free-motion.ts";
import { PENDULUM_LENGTH } from "./pendulum/pendulum-length.ts";
import type { TaskDefinition } from "./types.ts";

const TASKS: ReadonlyMap<string, TaskDefinition> = new Map(
  [FREE_MOTION, BUZZ_WIRE, PENDULUM_LENGTH].map((t) => [t.id, t]),
);

export function getTask(id: string): TaskDefinition | undefined {
  return TASKS.get(id);
}

export function listTasks(): TaskDefinition[] {
  return [...TASKS.values()];
}
