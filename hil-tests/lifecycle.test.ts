/**
 * The one lifecycle (seam/lifecycle.ts), walked for EVERY component that has one: each guarded
 * method in each of the five states. Allowed → the call raises no LifecycleError (it may fail
 * for its own reasons: a dummy snapshot, a missing camera); refused → a LifecycleError with the
 * method, the state found and exactly the table's allowed states (and, in `error`, the fault).
 *
 * A new component must be added to COMPONENTS; a new guarded method must be added to its calls
 * (the test fails when a component offers a method of the table that it does not call).
 * Components run on their in-memory doubles (MemoryRosGraph, MemoryLink + fake boards).
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  LIFECYCLE_STATES,
  LIFECYCLE_TABLE,
  LifecycleComponent,
  LifecycleError,
  type LifecycleMethod,
  type LifecycleState,
} from "../seam/lifecycle.ts";
import type { JointTrajectory } from "../seam/types.ts";
import { FR3 } from "../robots/franka/models.ts";
import { createSimBackend } from "../sim/sim-backend.ts";
import { MirrorBackend } from "../drivers/mirror/mirror-backend.ts";
import { FrankaArmDriver } from "../drivers/ros2/franka-arm.ts";
import { GoalStatus } from "../drivers/ros2/transport.ts";
import { MemoryRosGraph, MemoryRosTransport } from "../drivers/ros2/memory-transport.ts";
import { createRealBackend } from "../drivers/real/real-backend.ts";
import { parseRealBackendConfig } from "../drivers/real/real-bench-config.ts";
import { BuzzboxDriver } from "../drivers/serial/buzzbox-driver.ts";
import { FakeBuzzbox } from "../drivers/serial/fake-buzzbox.ts";
import { parseBuzzboxResource } from "../drivers/serial/resource.ts";
import { MemoryLink } from "../drivers/serial/transport-memory.ts";
import { FirmataContact } from "../drivers/firmata/firmata-contact.ts";
import { FakeFirmata } from "../drivers/firmata/fake-firmata.ts";
import { parseFirmataContactResource } from "../drivers/firmata/resource.ts";

const DT = FR3.controlPeriodS;
/** one sample at the home pose (a stream needs at least one) */
const EMPTY_ONE: JointTrajectory = {
  periodS: DT,
  count: 1,
  q: Float64Array.from(FR3.homeQ),
  gripperWidthM: new Float64Array(1),
  rowEndIndex: [0],
};
const EMPTY: JointTrajectory = {
  periodS: DT,
  count: 0,
  q: new Float64Array(0),
  gripperWidthM: new Float64Array(0),
  rowEndIndex: [],
};

type Component = LifecycleComponent;
// biome-ignore lint/suspicious/noExplicitAny: each call knows its component's own method
type Call = (c: any) => unknown;

interface Entry {
  /** a fresh component and what to tear down after it */
  make: () => { c: Component; cleanup: () => Promise<void> | void };
  /** bring a configured component into `error` (its own fault path where it has one) */
  toError: (c: Component) => Promise<void> | void;
  /** one call per guarded method the component offers */
  calls: Partial<Record<LifecycleMethod, Call>>;
}

const backendCalls: Partial<Record<LifecycleMethod, Call>> = {
  describe: (c) => c.describe(),
  read: (c) => c.read(),
  capture: (c) => c.capture([], { depth: false }),
  execute: (c) => c.execute(EMPTY),
  hold: (c) => c.hold(0),
};
const simCalls: Partial<Record<LifecycleMethod, Call>> = {
  ...backendCalls,
  reset: (c) => c.reset({ seed: 2 }),
  snapshot: (c) => c.snapshot(),
  restore: (c) => c.restore(new Uint8Array(16)),
  privilegedState: (c) => c.privilegedState(),
};
const contactCalls: Partial<Record<LifecycleMethod, Call>> = {
  setLamp: (c) => c.setLamp("1"),
  setBuzzer: (c) => c.setBuzzer("1"),
};
const inject = (c: Component) => {
  LifecycleComponent.injectFault(c, { device: "test", message: "injected" });
};

/** A franka_ros2 robot side on a MemoryRosGraph: joint states every 5 ms, actions that succeed. */
function rosRobot(): { graph: MemoryRosGraph; stop: () => void } {
  const graph = new MemoryRosGraph();
  const names = FR3.joints.map((j) => j.name);
  const stamp = () => {
    const t = performance.now() / 1000;
    return { sec: Math.floor(t), nanosec: Math.round((t % 1) * 1e9) };
  };
  const timer = setInterval(() => {
    graph.publish("/franka/joint_states", {
      header: { stamp: stamp(), frame_id: "" },
      name: names,
      position: [...FR3.homeQ],
      velocity: names.map(() => 0),
      effort: names.map(() => 0),
    });
    graph.publish("/franka_gripper/joint_states", {
      header: { stamp: stamp(), frame_id: "" },
      name: ["fr3_finger_joint1", "fr3_finger_joint2"],
      position: [0.02, 0.02],
      velocity: [0, 0],
      effort: [0, 0],
    });
  }, 5);
  const ok = async () => ({ status: GoalStatus.SUCCEEDED, values: { success: true, error: "" } });
  for (const a of ["move", "grasp", "homing"]) graph.advertiseAction(`/franka_gripper/${a}`, ok);
  graph.advertiseAction("/action_server/error_recovery", ok);
  graph.advertiseAction("/fr3_arm_controller/follow_joint_trajectory", async () => ({
    status: GoalStatus.SUCCEEDED,
    values: { error_code: 0, error_string: "" },
  }));
  graph.advertiseService("/franka_gripper/stop", () => ({ success: true, message: "" }));
  return { graph, stop: () => clearInterval(timer) };
}

const franka = (): Entry["make"] => () => {
  const robot = rosRobot();
  const c = new FrankaArmDriver({
    transport: new MemoryRosTransport(robot.graph),
    robot: FR3,
    now: () => performance.now() / 1000,
  });
  (c as unknown as { graph: MemoryRosGraph }).graph = robot.graph;
  return { c, cleanup: robot.stop };
};

/** the components, each with its own fault path into `error` where it has one */
const COMPONENTS: Record<string, Entry> = {
  "sim (buzz-wire)": {
    make: () => ({ c: createSimBackend({ robot: FR3, seed: 1 }), cleanup: () => {} }),
    toError: inject,
    calls: simCalls,
  },
  "sim (pendulum)": {
    make: () => ({ c: createSimBackend({ robot: FR3, seed: 1, scene: "pendulum" }), cleanup: () => {} }),
    toError: inject,
    calls: simCalls,
  },
  mirror: {
    make: () => ({ c: new MirrorBackend({ robot: FR3 }), cleanup: () => {} }),
    toError: inject,
    calls: { ...backendCalls, reset: (c) => c.reset({ seed: 2 }) },
  },
  "franka arm driver": {
    make: franka(),
    // the ROS connection drops: the driver's own fault path
    toError: (c) => (c as unknown as { graph: MemoryRosGraph }).graph.setLinkUp(false),
    calls: {
      read: (c) => c.read(),
      execute: (c) => c.execute(EMPTY),
      hold: (c) => c.hold(0),
      recover: (c) => c.recover(),
      errorRecovery: (c) => c.errorRecovery(),
      gripperMove: (c) => c.gripperMove(0.04),
      gripperGrasp: (c) => c.gripperGrasp(0.02),
      gripperHoming: (c) => c.gripperHoming(),
      gripperStop: (c) => c.gripperStop(),
      follow: (c) => c.follow({ signal: AbortSignal.abort() }),
      // the guard throws at once; an accepted stream goal is left to the controller (its answer is not awaited)
      streamReplace: (c) => {
        void c.streamReplace(EMPTY_ONE, 0, FR3.homeQ);
      },
    },
  },
  "real backend": {
    make: () => {
      const robot = rosRobot();
      const c = createRealBackend(
        parseRealBackendConfig({
          type: "real",
          ros: { type: "rosbridge", url: "ws://127.0.0.1:1" },
          cameras: [],
          contact: { type: "none" },
          allowMotion: true,
        }),
        { robot: FR3, transport: new MemoryRosTransport(robot.graph) },
      );
      (c as unknown as { graph: MemoryRosGraph }).graph = robot.graph;
      return { c, cleanup: robot.stop };
    },
    // the arm's ROS connection drops: a device fault event puts the bench into error
    toError: (c) => (c as unknown as { graph: MemoryRosGraph }).graph.setLinkUp(false),
    calls: { ...backendCalls, recover: (c) => c.recover(0.01) },
  },
  "buzz box driver": {
    make: () => {
      const link = new MemoryLink();
      const board = new FakeBuzzbox({
        write: (d) => link.send(d),
        clockUs: () => Math.round(performance.now() * 1000),
      });
      link.onHostWrite((d) => board.receive(d));
      board.startHeartbeat(20);
      const c = new BuzzboxDriver({
        resource: parseBuzzboxResource({ type: "buzzbox", path: "/dev/memory0", helloTimeoutMs: 500 }),
        open: link.opener,
      });
      return { c, cleanup: () => board.stopHeartbeat() };
    },
    toError: inject,
    calls: { ...contactCalls, ping: (c) => c.ping() },
  },
  "firmata contact": {
    make: () => {
      const link = new MemoryLink();
      const board = new FakeFirmata({ write: (d) => link.send(Buffer.from(d).toString("latin1")) });
      // a serial line is not re-entrant: the board answers after the write returns
      link.onHostWrite((s) => setImmediate(() => board.receive(Buffer.from(s, "latin1"))));
      const c = new FirmataContact({
        resource: parseFirmataContactResource({
          type: "firmata",
          path: "/dev/memory1",
          contactPin: 2,
          lampPin: 9,
          buzzerPin: 8,
          reportVersionTimeoutMs: 20,
          readyTimeoutMs: 3000,
        }),
        open: link.opener,
      });
      return { c, cleanup: () => {} };
    },
    toError: inject,
    calls: contactCalls,
  },
};

const TRANSITIONS = ["configure", "activate", "deactivate", "shutdown"] as const;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f();
});

async function inState(entry: Entry, state: LifecycleState): Promise<Component> {
  const { c, cleanup } = entry.make();
  cleanups.push(cleanup, () => c.shutdown());
  if (state === "unconfigured") return c;
  await c.configure();
  if (state === "active") await c.activate();
  if (state === "error") await entry.toError(c);
  if (state === "finalized") await c.shutdown();
  expect(c.lifecycle).toBe(state);
  return c;
}

async function outcome(run: () => unknown): Promise<unknown> {
  try {
    await run();
    return undefined;
  } catch (e) {
    return e;
  }
}

function check(method: LifecycleMethod, state: LifecycleState, err: unknown, c: Component): void {
  const allowed: readonly LifecycleState[] = LIFECYCLE_TABLE[method];
  const where = `${method}() in ${state}`;
  if (allowed.includes(state)) {
    expect(err instanceof LifecycleError, `${where}: allowed, but ${String(err)}`).toBe(false);
    return;
  }
  expect(err, `${where}: refused`).toBeInstanceOf(LifecycleError);
  const le = err as LifecycleError;
  expect({ method: le.method, found: le.found, allowed: le.allowed }).toEqual({
    method,
    found: state,
    allowed,
  });
  expect(le.code).toBe("RB_ERR_LIFECYCLE");
  if (state === "error") expect(le.fault).toEqual((c as { lifecycleFault?: unknown }).lifecycleFault);
  expect(c.lifecycle, `${where}: a refused call changes nothing`).toBe(state);
}

describe("the one lifecycle table, every (method, state) pair of every component", () => {
  for (const [name, entry] of Object.entries(COMPONENTS)) {
    describe(name, () => {
      it("calls every guarded method it offers", () => {
        const { c, cleanup } = entry.make();
        cleanups.push(cleanup);
        const offered = (Object.keys(LIFECYCLE_TABLE) as LifecycleMethod[]).filter(
          (m) => typeof (c as unknown as Record<string, unknown>)[m] === "function",
        );
        const walked = [...TRANSITIONS, ...Object.keys(entry.calls)].sort();
        expect(offered.sort()).toEqual(walked);
      });

      for (const state of LIFECYCLE_STATES) {
        it(`in ${state}`, async () => {
          // methods that leave the state as it is: one component in this state for all of them
          const c = await inState(entry, state);
          for (const [method, call] of Object.entries(entry.calls) as [LifecycleMethod, Call][]) {
            if (method === "recover") continue;
            check(method, state, await outcome(() => call(c)), c);
            if (c.lifecycle !== state)
              throw new Error(`${method}() in ${state} left the state ${c.lifecycle}`);
          }
          // transitions (and recover): a fresh component each
          const moves: [LifecycleMethod, Call][] = TRANSITIONS.map((m) => [m, (x: Component) => x[m]()]);
          if (entry.calls.recover) moves.push(["recover", entry.calls.recover]);
          for (const [method, call] of moves) {
            const fresh = await inState(entry, state);
            check(method, state, await outcome(() => call(fresh)), fresh);
          }
        }, 30_000);
      }
    });
  }

  it("transitions land where the table says", async () => {
    const { c, cleanup } = COMPONENTS.mirror!.make();
    cleanups.push(cleanup);
    expect(c.lifecycle).toBe("unconfigured");
    await c.configure();
    expect(c.lifecycle).toBe("inactive");
    await c.activate();
    expect(c.lifecycle).toBe("active");
    await c.deactivate();
    expect(c.lifecycle).toBe("inactive");
    expect(LifecycleComponent.injectFault(c, { device: "d", message: "m" })).toBe(true);
    expect(c.lifecycle).toBe("error");
    expect(LifecycleComponent.injectFault(c, { device: "d2", message: "m2" })).toBe(false);
    await c.shutdown();
    await c.shutdown();
    expect(c.lifecycle).toBe("finalized");
    expect(LifecycleComponent.injectFault(c, { device: "d", message: "m" })).toBe(false);
    expect(c.lifecycle).toBe("finalized");
  });
});
