/** Tasks registered by id. */
import { FREE_MOTION } from "./free-motion.ts";
import type { TaskDefinition } from "./types.ts";

const TASKS: ReadonlyMap<string, TaskDefinition> = new Map([[FREE_MOTION.id, FREE_MOTION]]);

export function getTask(id: string): TaskDefinition | undefined {
  return TASKS.get(id);
}

export function listTasks(): TaskDefinition[] {
  return [...TASKS.values()];
}
