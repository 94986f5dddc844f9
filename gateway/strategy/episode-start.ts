/**
 * Strategy "at start": bring a bench that cannot `reset()` (a real bench) to the start pose of
 * the coming episode by driving it home under the safety supervisor (`homeBench`). A simulated
 * bench teleports in `backend.reset()` instead and never comes here.
 *
 * Called by `Gateway.startEpisode` before the episode (and its judge and recorder) exist, so the
 * homing move is not part of any episode's record or score.
 */
import type { Bench } from "../bench.ts";
import type { EStopLatch } from "../safety/estop.ts";
import { HomeError, type HomeResult, homeBench } from "./home.ts";
import { startPoseFor } from "./start-pose.ts";

/**
 * Drive `bench` to the start pose of episode `seed` (the wire's start mark on a buzz-wire bench,
 * the robot's home otherwise), keeping the gripper's opening. Returns null without moving when
 * the bench may not move (a real bench started without the allow-motion switch). An engaged
 * e-stop refuses the move; engaging it during the move aborts it. Throws `HomeError`.
 */
export async function homeForEpisode(
  bench: Bench,
  seed: number,
  estop?: EStopLatch,
): Promise<HomeResult | null> {
  if (!bench.motionAllowed) return null;
  if (estop?.isEngaged) {
    throw new HomeError("execute", `the e-stop is engaged (${estop.current?.reason ?? "operator"})`);
  }
  const backend = bench.backend;
  const robot = backend.describe().robot;
  const { targetQ } = startPoseFor(robot, bench.taskBench(seed));
  const ac = new AbortController();
  const off = estop?.onChange((engaged, rec) => {
    if (engaged) ac.abort(`e-stop: ${rec.reason ?? "operator"}`);
  });
  try {
    return await homeBench(backend, {
      limits: bench.limitsFor(seed),
      targetQ,
      tcp: bench.toolFromFlange,
      signal: ac.signal,
    });
  } finally {
    off?.();
  }
}
