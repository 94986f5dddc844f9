/**
 * FrankaArmDriver on the in-memory ROS graph: a trajectory goal runs when the link drops; after
 * the reconnect the driver cancels every goal of the trajectory action (a goal may still run on
 * the robot side). A cancel that fails or is rejected is a fault (RB_ERR_ROS_GOAL_NOT_CANCELLED),
 * never swallowed; an accepted one adds nothing. recover() waits for that cancel's answer (a
 * cancel of all goals cancels whatever the server holds when it arrives: a motion sent before
 * it was processed would be cancelled, as it was over rclnodejs after a stand-in restart), and
 * sends it again when it failed.
 */
import { afterEach, describe, expect, it } from "vitest";
import { FR3 } from "../../robots/franka/models.ts";
import { interpolateChunk } from "../../seam/interpolate.ts";
import type { SensorEvent } from "../../seam/types.ts";
import { waitFor } from "../../test-support/wait.ts";
import { isDeviceError } from "../errors.ts";
import { FrankaArmDriver } from "./franka-arm.ts";
import { parseFrankaRosConfig } from "./franka-config.ts";
import { MemoryRosGraph, MemoryRosTransport } from "./memory-transport.ts";
import { type ActionOutcome, GoalStatus } from "./transport.ts";

const CONFIG = parseFrankaRosConfig({ gripperStateWaitS: 0 });
const CANCEL = `${CONFIG.trajectoryAction}/_action/cancel_goal`;
const NAMES = FR3.joints.map((j) => j.name);
/** the graph's stamps and the driver's clock, s */
const now = () => performance.now() / 1000;
const HOME = [...FR3.homeQ];

const stops: (() => void)[] = [];
afterEach(() => {
  for (const s of stops.splice(0)) s();
});

/** a graph publishing joint states (the arm at HOME, stamped now) at 100 Hz until the test ends */
function publishingGraph(): MemoryRosGraph {
  const graph = new MemoryRosGraph();
  const timer = setInterval(() => {
    const t = now();
    graph.publish(CONFIG.jointStatesTopic, {
      header: { stamp: { sec: Math.floor(t), nanosec: Math.round((t % 1) * 1e9) }, frame_id: "" },
      name: NAMES,
      position: HOME,
      velocity: HOME.map(() => 0),
      effort: HOME.map(() => 0),
    });
  }, 10);
  stops.push(() => clearInterval(timer));
  return graph;
}

/**
 * A graph publishing joint states at 100 Hz and a trajectory server: its first goal runs until
 * cancelled, later ones succeed after 50 ms unless cancelled first. The cancel service (when
 * given) is called before, like a CancelGoal of all goals, every goal the server holds is
 * cancelled: when the request is processed, not when it was sent.
 */
async function start(cancelService?: () => unknown) {
  const graph = publishingGraph();
  let goals = 0;
  const held = new Set<() => void>();
  graph.advertiseAction(CONFIG.trajectoryAction, (_goal, ctx) => {
    goals++;
    const first = goals === 1;
    return new Promise<ActionOutcome<unknown>>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const cancelled = () => {
        held.delete(cancelled);
        clearTimeout(timer);
        resolve({ status: GoalStatus.CANCELED });
      };
      held.add(cancelled);
      ctx.signal.addEventListener("abort", cancelled);
      if (!first)
        timer = setTimeout(() => {
          held.delete(cancelled);
          resolve({ status: GoalStatus.SUCCEEDED, values: { error_code: 0, error_string: "" } });
        }, 50);
    });
  });
  graph.advertiseAction(CONFIG.errorRecoveryAction, async () => ({ status: GoalStatus.SUCCEEDED }));
  const calls: unknown[] = [];
  if (cancelService)
    graph.advertiseService(CANCEL, async (req) => {
      calls.push(req);
      const res = await cancelService();
      if ((res as { return_code?: number }).return_code === 0) for (const c of [...held]) c();
      return res;
    });
  const arm = new FrankaArmDriver({
    transport: new MemoryRosTransport(graph),
    robot: FR3,
    config: CONFIG,
    now,
  });
  stops.push(() => void arm.shutdown());
  const events: SensorEvent[] = [];
  arm.onEvent((e) => events.push(e));
  await arm.configure();
  await arm.activate();
  const r0 = arm.read();
  const traj = interpolateChunk(r0, [[...HOME, r0.gripperWidthM]], 5, FR3.controlPeriodS);
  const running = arm.execute(traj);
  running.catch(() => {});
  await waitFor(() => goals === 1, "goal on the server");
  // the link drops while the goal runs, then comes back
  graph.setLinkUp(false);
  await waitFor(() => events.some((e) => e.type === "fault"), "connection-lost fault");
  graph.setLinkUp(true);
  const faults = () => events.filter((e): e is Extract<SensorEvent, { type: "fault" }> => e.type === "fault");
  /** recover, activate, and a short motion from the measured state */
  const recoverAndMove = async () => {
    await arm.recover();
    await arm.activate();
    const r = arm.read();
    return arm.execute(interpolateChunk(r, [[...HOME, r.gripperWidthM]], 0.2, FR3.controlPeriodS));
  };
  return { arm, calls, faults, goals: () => goals, recoverAndMove };
}

/** a promise and its resolve */
function gate<T>() {
  let open: (v: T) => void = () => {};
  const p = new Promise<T>((r) => {
    open = r;
  });
  return { p, open };
}

describe("FrankaArmDriver: cancelling the goals after a reconnect", () => {
  it("a cancel_goal that fails (no answer) is a fault, not swallowed", async () => {
    const { faults } = await start();
    await waitFor(() => faults().length === 2, "cancel fault", 10_000);
    expect(faults()[1]!.message).toMatch(
      /^RB_ERR_ROS_GOAL_NOT_CANCELLED: .*cancel_goal.*a trajectory may still run on the robot/,
    );
  });

  it("a rejected cancel (return_code ERROR_REJECTED) is a fault", async () => {
    const { faults, calls } = await start(() => ({ return_code: 1, goals_canceling: [] }));
    await waitFor(() => faults().length === 2, "cancel fault");
    expect(calls).toHaveLength(1);
    expect(faults()[1]!.message).toMatch(/RB_ERR_ROS_GOAL_NOT_CANCELLED: .*rejected the cancel/);
  });

  it("an accepted cancel (or no goal left) adds no fault", async () => {
    for (const code of [0, 2, 3]) {
      const { faults, calls } = await start(() => ({ return_code: code, goals_canceling: [] }));
      await waitFor(() => calls.length === 1, "cancel_goal called");
      await new Promise((r) => setTimeout(r, 50));
      expect(faults(), `return_code ${code}`).toHaveLength(1);
      for (const s of stops.splice(0)) s();
    }
  });

  it("recover() waits for the answer of that cancel: the next motion is not cancelled by it", async () => {
    const answer = gate<unknown>();
    const { calls, goals, recoverAndMove } = await start(() => answer.p);
    await waitFor(() => calls.length === 1, "cancel_goal on the server");
    const moved = recoverAndMove();
    moved.catch(() => {});
    // the cancel is on the server, unanswered: no new goal may reach the server meanwhile
    await new Promise((r) => setTimeout(r, 100));
    expect(goals()).toBe(1);
    answer.open({ return_code: 0, goals_canceling: [] });
    const res = await moved;
    expect(res.outcome).toBe("completed");
    expect(goals()).toBe(2);
    expect(calls).toHaveLength(1);
  });

  it("recover() sends the cancel again when it failed, and refuses while it fails", async () => {
    let code = 1;
    const { arm, calls, faults, recoverAndMove } = await start(() => ({
      return_code: code,
      goals_canceling: [],
    }));
    await waitFor(() => faults().length === 2, "cancel fault");
    const err = await arm.recover().catch((e: unknown) => e);
    expect(isDeviceError(err, "RB_ERR_ROS_GOAL_NOT_CANCELLED")).toBe(true);
    expect(arm.lifecycle).toBe("error");
    expect(calls).toHaveLength(2);
    code = 0;
    expect((await recoverAndMove()).outcome).toBe("completed");
    expect(calls).toHaveLength(3);
  });
});

/**
 * Streamed goals against a controller that ends a preempted goal as joint_trajectory_controller
 * ≥ 4.41 does (ABORTED, INVALID_GOAL, "Current goal preempted by new incoming action."): a
 * replacement, not a fault; the same answer for the last goal (nothing newer sent: the controller
 * was deactivated) is a fault.
 */
describe("FrankaArmDriver: streamed goals preempted with ABORTED / INVALID_GOAL", () => {
  async function streaming() {
    const graph = publishingGraph();
    let active: ((out: ActionOutcome<unknown>) => void) | undefined;
    const preempted = {
      status: GoalStatus.ABORTED,
      values: { error_code: -1, error_string: "Current goal preempted by new incoming action." },
    };
    graph.advertiseAction(CONFIG.trajectoryAction, () => {
      active?.(preempted);
      return new Promise<ActionOutcome<unknown>>((resolve) => {
        active = resolve;
      });
    });
    const arm = new FrankaArmDriver({
      transport: new MemoryRosTransport(graph),
      robot: FR3,
      config: CONFIG,
      now,
    });
    stops.push(() => void arm.shutdown());
    const events: SensorEvent[] = [];
    arm.onEvent((e) => events.push(e));
    await arm.configure();
    await arm.activate();
    const r = arm.read();
    const chunk = interpolateChunk(r, [[...HOME, r.gripperWidthM]], 0.05, FR3.controlPeriodS);
    const deactivated = () => active?.(preempted);
    return { arm, events, chunk, deactivated };
  }

  it("the preempted goal is a replacement: it switched, no fault", async () => {
    const { arm, events, chunk } = await streaming();
    const t0 = performance.now() / 1000;
    void arm.streamReplace(chunk, t0 + 1, HOME);
    const second = arm.streamReplace(chunk, t0 + 2, HOME);
    const { switchedByT } = await second;
    expect(switchedByT).toBeGreaterThan(0);
    expect(events.filter((e) => e.type === "fault")).toEqual([]);
    expect(arm.lifecycle).toBe("active");
  });

  it("the same answer for the newest goal (nothing newer sent) is a device fault", async () => {
    const { arm, events, chunk, deactivated } = await streaming();
    const sent = arm.streamReplace(chunk, performance.now() / 1000 + 1, HOME);
    sent.catch(() => {});
    await waitFor(() => (arm as unknown as { goal?: unknown }).goal !== undefined, "goal running");
    await new Promise((r) => setTimeout(r, 20));
    deactivated();
    await expect(sent).rejects.toThrow(/INVALID_GOAL/);
    await waitFor(() => events.some((e) => e.type === "fault"), "fault");
    expect(arm.lifecycle).toBe("error");
  });
});

/**
 * A chunk's goal is built (and, over rosbridge, serialised) in slices before it is sent (#10): a
 * stop or an abort between two slices means the server never gets the goal and the execute ends
 * as stopped / aborted with nothing executed; meanwhile the driver is busy; a link lost meanwhile
 * lost no goal. Slices of 0 ms: a turn of the event loop at every pause point.
 */
describe("FrankaArmDriver: a chunk's goal prepared in slices", () => {
  async function slicing() {
    const graph = publishingGraph();
    let goals = 0;
    graph.advertiseAction(CONFIG.trajectoryAction, (_goal, ctx) => {
      goals++;
      return new Promise<ActionOutcome<unknown>>((resolve) => {
        const t = setTimeout(
          () => resolve({ status: GoalStatus.SUCCEEDED, values: { error_code: 0, error_string: "" } }),
          20,
        );
        ctx.signal.addEventListener("abort", () => {
          clearTimeout(t);
          resolve({ status: GoalStatus.CANCELED });
        });
      });
    });
    const cancels: unknown[] = [];
    graph.advertiseService(CANCEL, (req) => {
      cancels.push(req);
      return { return_code: 0, goals_canceling: [] };
    });
    const arm = new FrankaArmDriver({
      transport: new MemoryRosTransport(graph),
      robot: FR3,
      config: CONFIG,
      now,
      goalSliceMs: 0,
    });
    stops.push(() => void arm.shutdown());
    await arm.configure();
    await arm.activate();
    const r = arm.read();
    // 3 s of 10 ms rows: 300 goal points, 18 pause points in the build
    const traj = interpolateChunk(
      r,
      Array.from({ length: 300 }, () => [...HOME, r.gripperWidthM]),
      0.01,
      FR3.controlPeriodS,
    );
    return { graph, arm, traj, goals: () => goals, cancels };
  }
  const turns = async (n: number) => {
    for (let i = 0; i < n; i++) await new Promise<void>((r) => setImmediate(r));
  };

  it("a stop between two slices: the goal is never sent, the execute ends stopped, stop() settles", async () => {
    const { arm, traj, goals } = await slicing();
    for (const k of [0, 1, 5, 15]) {
      const running = arm.execute(traj);
      await turns(k);
      const stopped = arm.stop("contact");
      const res = await running;
      expect(res, `stop after ${k} turns`).toMatchObject({ outcome: "stopped", samplesExecuted: 0 });
      await stopped;
    }
    await new Promise((r) => setTimeout(r, 50));
    expect(goals()).toBe(0);
    // not stopped: the same chunk reaches the server once, and the driver is free again
    const res = await arm.execute(traj);
    expect(res.outcome).toBe("completed");
    expect(goals()).toBe(1);
  });

  it("an abort between two slices: the goal is never sent, the execute ends aborted", async () => {
    const { arm, traj, goals } = await slicing();
    const ac = new AbortController();
    const running = arm.execute(traj, { signal: ac.signal });
    await turns(3);
    ac.abort();
    expect(await running).toMatchObject({ outcome: "aborted", samplesExecuted: 0 });
    await new Promise((r) => setTimeout(r, 50));
    expect(goals()).toBe(0);
  });

  it("while its goal is prepared the arm is busy: a second execute and a stream are refused", async () => {
    const { arm, traj, goals } = await slicing();
    const running = arm.execute(traj);
    await turns(2);
    const second = await arm.execute(traj).catch((e: unknown) => e);
    expect(isDeviceError(second, "RB_ERR_ROS_MOTION_BUSY")).toBe(true);
    let streamed: unknown;
    try {
      await arm.streamReplace(traj, 0, HOME);
    } catch (e) {
      streamed = e;
    }
    expect(isDeviceError(streamed, "RB_ERR_ROS_MOTION_BUSY")).toBe(true);
    expect((await running).outcome).toBe("completed");
    expect(goals()).toBe(1);
  });

  it("the link lost while the goal is prepared: nothing sent, no goal counted lost (no cancel after the reconnect)", async () => {
    const { graph, arm, traj, goals, cancels } = await slicing();
    const running = arm.execute(traj);
    await turns(2);
    graph.setLinkUp(false);
    const err = await running.catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "RB_ERR_LIFECYCLE" });
    graph.setLinkUp(true);
    await new Promise((r) => setTimeout(r, 50));
    expect(goals()).toBe(0);
    expect(cancels).toHaveLength(0);
  });
});
