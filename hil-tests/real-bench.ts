/**
 * A real bench without hardware, for tier-3 suites and benchmarks: starts the test rigs for one
 * seed and returns a bench config object (the shape of a bench file) whose `backend` is the real
 * backend wired to them.
 *
 * - arm + cameras: the rosbridge rig (`rigs/rosbridge/franka-rig.ts`) on 127.0.0.1:0 serves a
 *   simulator built for `seed` under franka_ros2's names, paced to the wall clock;
 * - contact: the project's buzz-box firmware runs in simavr (`rigs/simavr/simavr-rig.ts`); its
 *   contact pin follows the simulator's own ring–wire contact events, so the contact the gateway
 *   sees travels sim → pin → firmware → UART → pty → serialport → BuzzboxDriver (source "buzzbox");
 * - calibration: the simulator's calibration (the digital twin's, `sampleBenchCalibration`) is
 *   written to a scratch file and named by `calibration:`, as a real bench file names its own.
 *
 * The rigs run in a child process, like a robot on its own computer: a long synchronous
 * computation in the gateway (a chunk pre-check, IK) does not freeze the "robot", and the
 * simulator's physics and rendering do not stall the gateway's event loop. The child is this
 * same file, started with `--rig-child`; parent and child talk over the Node IPC channel.
 *
 * The rig's ROS face is a rosbridge server (default) or, with `ros: "ros2"`, the franka_ros2
 * stand-in node on a real DDS graph (rigs/ros2/link-server.ts; the child takes the ROS 2
 * environment and DDS domain of the process that starts it, see `ros2ForThisProcess`).
 *
 * The handles kill and restart the rig parts (pull the buzz box's plug, make ROS unreachable)
 * for fault tests. Needs socat, gcc-avr, avr-libc, libsimavr-dev, libelf-dev.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { readCalibration } from "../calibration/calibration-file.ts";
import type { Calibration } from "../calibration/schema.ts";
import type { BackendDescription, CameraDescription } from "../seam/types.ts";
import { ROBOTS } from "../robots/franka/models.ts";
import { createSimBackend } from "../sim/sim-backend.ts";
import { type ArmGoalLogEntry, FrankaRosbridgeRig } from "./rigs/rosbridge/franka-rig.ts";
import { loadRos2Env, Ros2LinkServer } from "./rigs/ros2/link-server.ts";
import { buildSimavrRig, FIRMWARE_ELF, type SimavrRig, startSimavrRig } from "./rigs/simavr/simavr-rig.ts";

export interface RealBenchOptions {
  /** episode / wire seed: the simulator behind the rig samples its wire from it */
  seed: number;
  robot?: "fr3" | "panda";
  /** cameras served by the rig and named in the bench config (default none) */
  cameras?: readonly string[];
  /** rig camera publish rate, Hz of rig time (default 5: rendering costs CPU on a shared machine) */
  cameraRateHz?: number;
  /** the bench config's allow-motion switch (default true) */
  allowMotion?: boolean;
  /** task level (default joint_position) */
  level?: string;
  /** bench-file `safety` block (use the same one on the sim bench you compare with) */
  safety?: Record<string, unknown>;
  /**
   * buzz box heartbeat timeout, ms (default 2000: the rig's firmware runs in simavr, a child
   * process a loaded machine can starve for longer than the driver's 350 ms default; a pulled plug
   * is seen from the port itself, and tests of the heartbeat set their own)
   */
  heartbeatTimeoutMs?: number;
  /** how long the rig child may take to start, s (default 30, 60 with `ros: "ros2"`; benchmarks on a loaded machine wait longer) */
  startTimeoutS?: number;
  /**
   * bench-file `shadow` block: a sim twin (built from the same calibration file) receives every
   * accepted trajectory in lockstep with the real backend (compose/twin/shadow-backend.ts)
   */
  shadow?: Record<string, unknown>;
  /**
   * the bench's calibration (default: the twin's, sampled from `seed`): the rig's simulator builds
   * its scene from it — cameras with their lenses, calibration boards, wire — and the bench file
   * names it, as a real bench names its own. A calibration session passes the ground truth
   * it wants a procedure to recover.
   */
  calibration?: Calibration;
  /**
   * the rig's ROS face: a rosbridge server (default; the bench's `ros` is `rosbridge` at `url`),
   * or the franka_ros2 stand-in node on a DDS graph (`ros2`; the bench's `ros` is `rclnodejs`).
   * `ros2` needs the ROS 2 environment in this process (`ros2ForThisProcess()`).
   */
  ros?: "rosbridge" | "ros2";
}

/** What the simulator behind the rig is doing (test-only knowledge; an agent never sees it). */
export interface RigSimState {
  /** rig (simulator) seconds */
  t: number;
  q: number[];
  contactClosed: boolean;
  /** pacing slices that finished later than their wall deadline */
  overruns: number;
  /** contact closings the simulator itself saw since the rig started (the box's pin follows them) */
  contactCloses: number;
}

/** The simulator's own description of the bench (test-only knowledge, e.g. to compare CameraInfo with). */
export interface RigSimDescription {
  cameras: CameraDescription[];
  toolOffset: BackendDescription["toolOffset"];
}

export interface RealBench {
  /** bench config object for `testGateway` (validated like a bench file) */
  readonly bench: Record<string, unknown>;
  /** the bench calibration (the twin's), as written to `calibrationPath` */
  readonly calibration: Calibration;
  readonly calibrationPath: string;
  /** the rosbridge URL (with `ros: "ros2"`: the stand-in's `ros2://domain/N`) */
  readonly url: string;
  /** the stable path of the buzz box's serial link (the bench's contact `path`) */
  readonly linkPath: string;
  /** the simulator's state behind the rig */
  simState(): Promise<RigSimState>;
  /** the simulator's cameras and tool offset */
  simDescription(): Promise<RigSimDescription>;
  /** SIGKILL the simavr runner: like pulling the box's USB cable (the pty disappears) */
  killBuzzbox(): Promise<void>;
  /** start a new simavr runner behind the same stable link path, contact pin set from the sim */
  restartBuzzbox(): Promise<void>;
  /**
   * ROS unreachable (false: the rosbridge WebSocket closes and refuses new connections; the
   * ros2 stand-in node is killed) or reachable again (true)
   */
  setRosReachable(up: boolean): Promise<void>;
  /** arm goals reach the rig's controller `ms` late (a slow link; 0: at once) */
  delayGoals(ms: number): Promise<void>;
  /** what the rig's controller did with every arm goal, in arrival order */
  goalLog(): Promise<ArmGoalLogEntry[]>;
  /** stop the rigs and remove the scratch folder (idempotent) */
  close(): Promise<void>;
}

type Request =
  | { op: "simState" }
  | { op: "simDescription" }
  | { op: "killBuzzbox" }
  | { op: "restartBuzzbox" }
  | { op: "setRosReachable"; up: boolean }
  | { op: "delayGoals"; ms: number }
  | { op: "goalLog" }
  | { op: "close" };

interface ChildHello {
  op: "ready";
  url: string;
}

interface ChildReply {
  op: "reply";
  id: number;
  ok: boolean;
  value?: unknown;
  error?: string;
}

const HERE = fileURLToPath(import.meta.url);
const CHILD_FLAG = "--rig-child";

/** Start the rigs for `seed` (in a child process) and describe them as a real bench. */
export async function startRealBench(opts: RealBenchOptions): Promise<RealBench> {
  buildSimavrRig(); // once here, so the child never runs make
  const robotId = opts.robot ?? "fr3";
  const robot = ROBOTS[robotId];
  const dir = mkdtempSync(join(tmpdir(), "real-bench-"));
  const linkPath = join(dir, "buzzbox-tty");
  // the calibration is the twin's: the same function the child's simulator samples its wire with
  // (or the caller's, which the child's simulator then builds its scene from)
  let calibration = opts.calibration;
  if (!calibration) {
    const probe = createSimBackend({ robot, seed: opts.seed });
    await probe.configure();
    calibration = probe.currentCalibration();
    await probe.shutdown();
  }
  const calibrationPath = join(dir, "calibration.json");
  writeFileSync(calibrationPath, JSON.stringify(calibration, null, 1));

  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      HERE,
      CHILD_FLAG,
      JSON.stringify({
        robot: robotId,
        seed: opts.seed,
        linkPath,
        cameraRateHz: opts.cameraRateHz ?? 5,
        ...(opts.calibration ? { calibrationPath } : {}),
        ros: opts.ros ?? "rosbridge",
      }),
    ],
    { stdio: ["ignore", "inherit", "inherit", "ipc"] },
  );
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  let exited = false;
  const exitedP = new Promise<void>((r) =>
    child.once("exit", () => {
      exited = true;
      for (const p of pending.values()) p.reject(new Error("the rig child process exited"));
      pending.clear();
      r();
    }),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const startS = opts.startTimeoutS ?? (opts.ros === "ros2" ? 60 : 30);
    const timer = setTimeout(
      () => reject(new Error(`the rig child did not start within ${startS} s`)),
      startS * 1000,
    );
    child.on("message", (m: ChildHello | ChildReply) => {
      if (m.op === "ready") {
        clearTimeout(timer);
        resolve(m.url);
      } else if (m.op === "reply") {
        const p = pending.get(m.id);
        pending.delete(m.id);
        if (m.ok) p?.resolve(m.value);
        else p?.reject(new Error(m.error));
      }
    });
    void exitedP.then(() => {
      clearTimeout(timer);
      reject(new Error("the rig child exited during start"));
    });
  }).catch(async (e) => {
    child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
    throw e;
  });
  const call = (req: Request): Promise<unknown> => {
    if (exited) return Promise.reject(new Error("the rig child process exited"));
    const id = nextId++;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      child.send({ ...req, id });
    });
  };

  const bench = {
    name: `rig-real-${robotId}-seed${opts.seed}`,
    robot: robotId,
    backend: {
      type: "real",
      ros:
        opts.ros === "ros2"
          ? { type: "rclnodejs" }
          : { type: "rosbridge", url, reconnectInitialDelayMs: 50, reconnectMaxDelayMs: 200 },
      cameras: (opts.cameras ?? []).map((name) => ({
        name,
        imageTopic: `/${name}/image_raw/compressed`,
        cameraInfoTopic: `/${name}/camera_info`,
      })),
      contact: {
        type: "buzzbox",
        path: linkPath,
        debounceMs: 2,
        heartbeatTimeoutMs: opts.heartbeatTimeoutMs ?? 2000,
        pingIntervalMs: 200,
        reconnectInitialMs: 50,
        reconnectMaxMs: 200,
      },
      allowMotion: opts.allowMotion ?? true,
    },
    calibration: calibrationPath,
    ...(opts.safety ? { safety: opts.safety } : {}),
    ...(opts.shadow ? { shadow: opts.shadow } : {}),
    task: { id: "buzz-wire", seed: opts.seed, level: opts.level ?? "joint_position" },
  };

  let closed = false;
  return {
    bench,
    calibration,
    calibrationPath,
    url,
    linkPath,
    simState: () => call({ op: "simState" }) as Promise<RigSimState>,
    simDescription: () => call({ op: "simDescription" }) as Promise<RigSimDescription>,
    killBuzzbox: async () => void (await call({ op: "killBuzzbox" })),
    restartBuzzbox: async () => void (await call({ op: "restartBuzzbox" })),
    setRosReachable: async (up) => void (await call({ op: "setRosReachable", up })),
    delayGoals: async (ms) => void (await call({ op: "delayGoals", ms })),
    goalLog: () => call({ op: "goalLog" }) as Promise<ArmGoalLogEntry[]>,
    close: async () => {
      if (closed) return;
      closed = true;
      await call({ op: "close" }).catch(() => undefined);
      const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exitedP;
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// ───────────────────────────── the child: the "robot computer" ─────────────────────────────

async function runChild(arg: string): Promise<void> {
  const o = JSON.parse(arg) as {
    robot: "fr3" | "panda";
    seed: number;
    linkPath: string;
    cameraRateHz: number;
    calibrationPath?: string;
    ros: "rosbridge" | "ros2";
  };
  const sim = createSimBackend({
    robot: ROBOTS[o.robot],
    seed: o.seed,
    ...(o.calibrationPath ? { calibration: readCalibration(o.calibrationPath) } : {}),
  });
  await sim.configure();
  await sim.activate();
  // warm the physics up (JIT) before the rig paces it against the wall clock: holding the start
  // pose changes nothing but the simulator's time
  await sim.hold(1);
  let avr: SimavrRig | undefined;
  let contactCloses = 0;
  // the sim's own contact drives the box's contact pin (a contact while the box is unplugged is lost, as on a bench)
  sim.onEvent((e) => {
    if (e.type !== "contact") return;
    if (e.closed) contactCloses++;
    avr?.setContact(e.closed);
  });
  const startAvr = async () => {
    avr = await startSimavrRig({ linkPath: o.linkPath, elf: FIRMWARE_ELF });
    avr.setContact(sim.privilegedState().contactClosed === true);
  };
  // the ros2 face: the environment and DDS domain this child inherited from the test process
  const server = o.ros === "ros2" ? await startRos2Face() : undefined;
  const rig = await FrankaRosbridgeRig.start({
    backend: sim,
    host: "127.0.0.1",
    cameraRateHz: o.cameraRateHz,
    ...(server ? { server } : {}),
  });
  await startAvr();
  const ops: { [K in Request["op"]]: (r: Extract<Request, { op: K }>) => Promise<unknown> } = {
    simState: async () => {
      const r = sim.read();
      return {
        t: r.t,
        q: r.q,
        contactClosed: sim.privilegedState().contactClosed === true,
        overruns: rig.overruns,
        contactCloses,
      } satisfies RigSimState;
    },
    simDescription: async () => {
      const d = sim.describe();
      // plain JSON over IPC
      return JSON.parse(JSON.stringify({ cameras: d.cameras, toolOffset: d.toolOffset })) as RigSimDescription;
    },
    killBuzzbox: async () => {
      const a = avr;
      avr = undefined;
      await a?.kill();
    },
    restartBuzzbox: async () => {
      if (avr) throw new Error("the simavr buzz box is still running");
      await startAvr();
    },
    setRosReachable: async (r) => rig.server.setReachable(r.up),
    delayGoals: async (r) => rig.delayGoals(r.ms),
    goalLog: async () => rig.goalLog.map((e) => ({ ...e })),
    close: async () => {
      await avr?.kill();
      avr = undefined;
      await rig.close();
      await sim.shutdown();
      setImmediate(() => process.exit(0));
    },
  };
  process.on("message", (m: Request & { id: number }) => {
    const run = ops[m.op] as (r: Request) => Promise<unknown>;
    run(m).then(
      (value) => process.send?.({ op: "reply", id: m.id, ok: true, value }),
      (e: unknown) => process.send?.({ op: "reply", id: m.id, ok: false, error: String(e) }),
    );
  });
  // the parent went away: do not linger
  process.on("disconnect", () => {
    void (avr?.kill() ?? Promise.resolve()).finally(() => process.exit(0));
  });
  process.send?.({ op: "ready", url: rig.url } satisfies ChildHello);
}

async function startRos2Face(): Promise<Ros2LinkServer> {
  const domain = process.env.ROS_DOMAIN_ID;
  const env = loadRos2Env(domain === undefined ? undefined : Number(domain));
  if (!env) throw new Error("ROS 2 env missing: run scripts/ros2-setup.sh");
  return Ros2LinkServer.start({ env });
}

if (process.argv[2] === CHILD_FLAG && process.argv[1] === HERE) {
  runChild(process.argv[3] ?? "{}").catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
