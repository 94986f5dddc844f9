/**
 * The rosbridge rig (hil-tests/rigs/rosbridge/franka-rig.ts) serving a MirrorBackend under
 * franka_ros2's names, in a child process of its own, as a robot runs on its own computer: the
 * rig's pacing and JSON work do not share the gateway's event loop. Joint states at 100 Hz
 * (franka_ros2 publishes faster; rosbridge JSON at 1 kHz is not a lab's setup). Used by
 * bench/stop-latency.ts and bench/act-turns.ts (`--backend rig`); the parent can pause the joint
 * states (the stale-reading watchdog's source) and close the rig.
 *
 * The child is this file run directly (node --import tsx bench/rig-child.ts).
 */
import { fileURLToPath } from "node:url";
import { MirrorBackend } from "../drivers/mirror/mirror-backend.ts";
import { FrankaRosbridgeRig } from "../hil-tests/rigs/rosbridge/franka-rig.ts";
import { FR3 } from "../robots/franka/models.ts";
import { exitWithBench, spawnOtherComputer } from "./other-computer.ts";

/** The parent's handle of the rig child. */
export interface RigChild {
  /** the rig's rosbridge URL */
  url: string;
  /** pause (false) or resume (true) the joint states */
  jointStates(on: boolean): Promise<void>;
  close(): Promise<void>;
}

const self = fileURLToPath(import.meta.url);

async function rigChildProcess(): Promise<void> {
  exitWithBench();
  const rig = await FrankaRosbridgeRig.start({
    backend: new MirrorBackend({ robot: FR3 }),
    jointStateEveryTicks: 10,
  });
  // test-harness knowledge: the rig's private joint-state publisher is switched off and on
  const rigAny = rig as unknown as { publishJointState: (...a: unknown[]) => void };
  const publish = rigAny.publishJointState.bind(rig);
  process.on("message", (m: { id: number; cmd: string; on?: boolean }) => {
    if (m.cmd === "joint-states") rigAny.publishJointState = m.on ? publish : () => {};
    if (m.cmd === "close") {
      void rig.close().then(() => {
        process.send!({ id: m.id });
        process.exit(0);
      });
      return;
    }
    process.send!({ id: m.id });
  });
  process.send!({ url: rig.url });
}

/** Start the rig in a child process; resolves once it serves. */
export async function startRigChild(): Promise<RigChild> {
  // the robot's own computer: the normal scheduler, not the bench's priority (other-computer.ts)
  const child = spawnOtherComputer(["--import", "tsx", self], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  let next = 0;
  const waiting = new Map<number, () => void>();
  const url = await new Promise<string>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`rig child exited (${code})`)));
    child.on("message", (m: { url?: string; id?: number }) => {
      if (m.url) resolve(m.url);
      if (m.id !== undefined) waiting.get(m.id)?.();
    });
  });
  const call = (cmd: string, extra: Record<string, unknown> = {}) =>
    new Promise<void>((resolve) => {
      const id = next++;
      waiting.set(id, resolve);
      child.send({ id, cmd, ...extra });
    });
  return {
    url,
    jointStates: (on) => call("joint-states", { on }),
    close: async () => {
      const exited = new Promise<void>((r) => child.once("exit", () => r()));
      await call("close");
      await exited;
    },
  };
}

if (process.argv[1] === self) await rigChildProcess();
