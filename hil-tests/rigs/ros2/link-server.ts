/**
 * The rig's native ROS 2 face: a `RigServer` whose actions, services and topics are served on
 * a real DDS graph by the franka_ros2 stand-in node (franka_stand_in.py, rclpy), which this
 * class starts as a child process and talks to over JSON lines on its stdin/stdout (the
 * protocol is described in that file). The rig (franka-rig.ts) does not know the difference:
 * `FrankaRosbridgeRig.start({ backend, server: await Ros2LinkServer.start(...) })`.
 *
 * `setReachable(false)` kills the node (the robot's ROS side disappears from the graph, its
 * goals end); `setReachable(true)` starts a new one that serves the same names.
 *
 * Needs the environment of scripts/ros2-setup.sh: `loadRos2Env()` reads it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { ActionGoalAnswer, ActionHandler, ServiceHandler } from "../rosbridge/rosbridge-server.ts";
import type { RigServer } from "../rosbridge/franka-rig.ts";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, "..", "..", "..");
/** the file scripts/ros2-setup.sh writes last but one (its environment, as JSON) */
export const ROS2_ENV_FILE = join(ROOT, ".venv-ros2", "env.json");
const NODE_SCRIPT = join(HERE, "franka_stand_in.py");
/** Fast DDS profile: loopback only */
export const FASTDDS_PROFILE = join(HERE, "fastdds-localhost.xml");

export interface Ros2Env {
  /** variables to set for a process that uses ROS 2 (rclpy or rclnodejs) */
  vars: Record<string, string>;
  /** the venv's python */
  python: string;
  /** the rclnodejs package folder built by the setup script */
  rclnodejsPath: string;
}

/**
 * The ROS 2 environment written by scripts/ros2-setup.sh, or undefined when it is absent.
 * `domainId` isolates one test graph from others on the same machine.
 */
export function loadRos2Env(domainId?: number): Ros2Env | undefined {
  if (!existsSync(ROS2_ENV_FILE)) return undefined;
  const j = JSON.parse(readFileSync(ROS2_ENV_FILE, "utf8")) as Record<string, string>;
  const { PATH_PREPEND, PYTHON, ...rest } = j;
  const vars: Record<string, string> = {
    ...rest,
    PATH: `${PATH_PREPEND}:${process.env.PATH ?? ""}`,
    FASTRTPS_DEFAULT_PROFILES_FILE: FASTDDS_PROFILE,
    RCUTILS_LOGGING_USE_STDOUT: "0",
    PYTHONUNBUFFERED: "1",
  };
  if (domainId !== undefined) vars.ROS_DOMAIN_ID = String(domainId);
  if (!existsSync(PYTHON!) || !existsSync(rest.RCLNODEJS_PATH!)) return undefined;
  return { vars, python: PYTHON!, rclnodejsPath: rest.RCLNODEJS_PATH! };
}

/** true when this process was started with the ROS 2 environment (LD_LIBRARY_PATH & co.) */
export function hasRos2EnvInProcess(env: Ros2Env): boolean {
  return (process.env.LD_LIBRARY_PATH ?? "").split(":").includes(env.vars.LD_LIBRARY_PATH!.split(":")[0]!);
}

/**
 * For a test file that uses ROS 2 in this process: the environment, with a DDS domain of its
 * own (from the pid) set in process.env before rcl starts. Throws a clear error when
 * scripts/ros2-setup.sh has not run, or when this process was started without its environment
 * (LD_LIBRARY_PATH is read at process start: vitest's "ros2" project sets it).
 */
export function ros2ForThisProcess(): Ros2Env {
  const domainId = 1 + (process.pid % 100);
  const env = loadRos2Env(domainId);
  if (!env) throw new Error(`ROS 2 env missing: run scripts/ros2-setup.sh (no ${ROS2_ENV_FILE})`);
  if (!hasRos2EnvInProcess(env)) {
    throw new Error(
      "this process was started without the ROS 2 environment: run the file through vitest " +
        "(its ros2 project sets it) or `source .venv-ros2/env.sh` first",
    );
  }
  process.env.ROS_DOMAIN_ID = env.vars.ROS_DOMAIN_ID;
  process.env.FASTRTPS_DEFAULT_PROFILES_FILE = FASTDDS_PROFILE;
  process.env.RCLNODEJS_PATH = env.rclnodejsPath;
  return env;
}

type FromNode =
  | { op: "ready" }
  | { op: "goal"; id: string; name: string; goal: unknown }
  | { op: "cancel"; id: string }
  | { op: "call"; id: string; name: string; request: unknown }
  | { op: "subs"; counts: Record<string, number> };

export interface Ros2LinkServerOptions {
  env: Ros2Env;
  /** wait this long for the node to come up; default 20 s */
  startTimeoutMs?: number;
}

export class Ros2LinkServer implements RigServer {
  private child: ChildProcess | undefined;
  private readonly topics = new Map<string, string>();
  private readonly actions = new Map<
    string,
    { type: string; handler: ActionHandler; decidesAcceptance: boolean }
  >();
  private readonly services = new Map<string, { type: string; handler: ServiceHandler }>();
  private readonly goals = new Map<string, AbortController>();
  private counts: Record<string, number> = {};
  private closed = false;

  private constructor(private readonly opts: Ros2LinkServerOptions) {}

  static async start(opts: Ros2LinkServerOptions): Promise<Ros2LinkServer> {
    const s = new Ros2LinkServer(opts);
    await s.spawnNode();
    return s;
  }

  get url(): string {
    return `ros2://domain/${this.opts.env.vars.ROS_DOMAIN_ID ?? "0"}`;
  }

  /** pid of the stand-in node (undefined while unreachable) */
  get nodePid(): number | undefined {
    return this.child?.pid;
  }

  hasSubscribers(topic: string): boolean {
    return (this.counts[topic] ?? 0) > 0;
  }

  publish(topic: string, msg: unknown): number {
    if (!this.hasSubscribers(topic)) return 0;
    this.send({ op: "pub", topic, msg });
    return this.counts[topic] ?? 0;
  }

  declareTopic(topic: string, type: string): void {
    this.topics.set(topic, type);
    this.send({ op: "topic", name: topic, type });
  }

  advertiseService(name: string, handler: ServiceHandler, type: string): void {
    this.services.set(name, { type, handler });
    this.send({ op: "service", name, type });
  }

  advertiseAction(
    name: string,
    handler: ActionHandler,
    type: string,
    opts?: { decidesAcceptance?: boolean },
  ): void {
    const decidesAcceptance = opts?.decidesAcceptance === true;
    this.actions.set(name, { type, handler, decidesAcceptance });
    this.send({ op: "action", name, type, decides: decidesAcceptance });
  }

  setReachable(up: boolean): void {
    if (!up) {
      this.killNode();
      return;
    }
    if (!this.child && !this.closed) {
      void this.spawnNode().then(() => this.replay());
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.stopNode();
  }

  // ───────────── the child ─────────────

  private send(m: object): void {
    const c = this.child;
    if (!c?.stdin?.writable) return;
    c.stdin.write(`${JSON.stringify(m)}\n`);
  }

  private replay(): void {
    for (const [name, type] of this.topics) this.send({ op: "topic", name, type });
    for (const [name, a] of this.actions)
      this.send({ op: "action", name, type: a.type, decides: a.decidesAcceptance });
    for (const [name, s] of this.services) this.send({ op: "service", name, type: s.type });
  }

  private spawnNode(): Promise<void> {
    const env = this.opts.env;
    const child = spawn(env.python, [NODE_SCRIPT], {
      env: { ...process.env, ...env.vars },
      stdio: ["pipe", "pipe", "inherit"],
    });
    this.child = child;
    const lines = createInterface({ input: child.stdout! });
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        reject(new Error("the franka_ros2 stand-in node did not start"));
      }, this.opts.startTimeoutMs ?? 20_000);
      child.once("exit", (code, signal) => {
        clearTimeout(timer);
        if (this.child === child) this.child = undefined;
        this.counts = {};
        // goals of a node that is gone end (the rig holds the arm)
        for (const ac of this.goals.values()) ac.abort();
        this.goals.clear();
        reject(new Error(`the franka_ros2 stand-in node exited (${signal ?? code})`));
      });
      lines.on("line", (line) => {
        let m: FromNode;
        try {
          m = JSON.parse(line) as FromNode;
        } catch {
          process.stderr.write(`[franka_stand_in stdout] ${line}\n`);
          return;
        }
        if (m.op === "ready") {
          clearTimeout(timer);
          resolve();
        } else this.onMessage(m);
      });
    });
  }

  private onMessage(m: Exclude<FromNode, { op: "ready" }>): void {
    switch (m.op) {
      case "subs":
        this.counts = m.counts;
        return;
      case "cancel":
        this.goals.get(m.id)?.abort();
        return;
      case "goal": {
        const a = this.actions.get(m.name);
        const ac = new AbortController();
        this.goals.set(m.id, ac);
        // an action that decides acceptance: the node's goal callback waits for "accepted" or
        // "rejected" (a handler that answers without calling accepted() took the goal and ended it)
        let decided = !a?.decidesAcceptance;
        const decide = (op: "accepted" | "rejected", reason?: string) => {
          if (decided || this.goals.get(m.id) !== ac) return;
          decided = true;
          this.send({ op, id: m.id, ...(reason !== undefined ? { reason } : {}) });
        };
        const answer: Promise<ActionGoalAnswer> = a
          ? a.handler(m.goal, {
              id: m.id,
              signal: ac.signal,
              feedback: (values) => {
                if (this.goals.get(m.id) === ac) this.send({ op: "feedback", id: m.id, msg: values });
              },
              accepted: () => decide("accepted"),
            })
          : Promise.resolve({ status: 6, values: {} });
        answer
          .then(
            (r) => {
              decide("accepted");
              return r;
            },
            (e: unknown): ActionGoalAnswer | undefined => {
              if (!decided) {
                decide("rejected", e instanceof Error ? e.message : String(e));
                this.goals.delete(m.id);
                return undefined;
              }
              return { status: 6, values: {} };
            },
          )
          .then((r) => {
            // the node that sent this goal has gone (its goals were aborted when it exited): a
            // late answer must not reach, or end, a goal of the node that replaced it
            if (!r || this.goals.get(m.id) !== ac) return;
            this.goals.delete(m.id);
            this.send({ op: "result", id: m.id, status: r.status, msg: r.values ?? {} });
          });
        return;
      }
      case "call": {
        const s = this.services.get(m.name);
        Promise.resolve(s ? s.handler(m.request) : {})
          .catch(() => ({}))
          .then((res) => this.send({ op: "response", id: m.id, msg: res ?? {} }));
        return;
      }
    }
  }

  private killNode(): void {
    const c = this.child;
    if (!c) return;
    this.child = undefined;
    c.kill("SIGKILL");
  }

  private async stopNode(): Promise<void> {
    const c = this.child;
    if (!c) return;
    this.child = undefined;
    const exited = new Promise<void>((r) => c.once("exit", () => r()));
    c.stdin?.end(); // the node shuts down when its input closes
    const timer = setTimeout(() => c.kill("SIGKILL"), 3000);
    await exited;
    clearTimeout(timer);
  }
}
