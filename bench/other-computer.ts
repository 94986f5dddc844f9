/**
 * Child processes of a latency bench that stand in for another computer (the robot's controller,
 * the agent or operator on their own machine), started so that they compete for the CPU as such
 * a process would, not as the bench's own priority would have them.
 *
 * A quiet bench runs in a session of its own with its autogroup raised and `nice -n -15`
 * (bench/stop-latency.ts, "Priority"); a child inherits both: its session's autogroup is the
 * bench's (weight of nice −15, ≈ 28 × a normal process's) and its nice is −15. That makes the
 * rig and the client heavier than anything else on the machine, the kernel's own workers
 * included: a byte written into a pty (or delivered by a USB serial adapter) reaches the reader
 * through `flush_to_ldisc` on the `events_unbound` workqueue, run by a kworker at nice 0, which
 * then waited behind the boosted rig (ftrace, workqueue_queue_work → workqueue_execute_start:
 * p99 1.2 ms, max 9.6 ms over a contact run). Here such a child gets a session of its own
 * (setsid: an autogroup of nice 0) and nice 0: the normal scheduler, as the bench's text says.
 * It ends when the bench's IPC channel closes (a new session no longer shares the bench's
 * terminal signals). When the bench runs on some of the machine's CPUs only (`taskset -c 1 …`,
 * standing in for a gateway with `scheduling.cpuAffinity`), such a child runs on the others.
 */
import { type ChildProcess, type SpawnOptions, spawn, spawnSync } from "node:child_process";
import { cpus, setPriority } from "node:os";
import { allowedCpus, formatCpuList } from "../cli/scheduling.ts";

/** Spawn `node` (`process.execPath`) with `args` as a process of another computer; needs an "ipc" stdio slot. */
export function spawnOtherComputer(args: string[], options: SpawnOptions): ChildProcess {
  const child = spawn(process.execPath, args, { ...options, detached: true });
  if (child.pid !== undefined) {
    try {
      setPriority(child.pid, 0);
    } catch {
      // lowering a priority is always allowed; a child already gone is reported by its exit
    }
    const mine = allowedCpus();
    const others = cpus()
      .map((_, i) => i)
      .filter((c) => !mine.includes(c));
    // -a: every thread it has made so far; the ones it makes later inherit its main thread's
    if (others.length) {
      const r = spawnSync("taskset", ["-a", "-p", "-c", formatCpuList(others), String(child.pid)], {
        encoding: "utf8",
      });
      if (r.status !== 0)
        console.error(
          `other-computer: child left on the bench's CPUs (taskset: ${r.stderr || r.error?.message})`,
        );
    }
  }
  return child;
}

/** In such a child: exit when the bench goes (its IPC channel closes). */
export function exitWithBench(): void {
  process.on("disconnect", () => process.exit(0));
}
