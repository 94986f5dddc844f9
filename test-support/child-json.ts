/**
 * A module script run in a node child process from the repository root (with tsx), its last
 * line of output read as JSON: for what must not touch the test worker's own process (real-time
 * scheduling, CPU affinity) or needs node options the worker was not started with (--expose-gc).
 */
import { execFileSync } from "node:child_process";
import { join } from "node:path";

const ROOT = join(import.meta.dirname, "..");

export function childJson<T>(script: string, nodeArgs: readonly string[] = []): T {
  const out = execFileSync(
    process.execPath,
    [...nodeArgs, "--import", "tsx", "--input-type=module", "-e", script],
    {
      cwd: ROOT,
      encoding: "utf8",
    },
  );
  return JSON.parse(out.trim().split("\n").at(-1)!) as T;
}
