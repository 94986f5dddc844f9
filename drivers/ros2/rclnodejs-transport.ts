/**
 * RosTransport over native ROS 2 with rclnodejs (optional dependency).
 *
 * rclnodejs is built against a ROS 2 installation, so it is not a regular dependency of the
 * project (`npm ci` never needs ROS). It is loaded when this transport is chosen:
 * - from `RCLNODEJS_PATH` (a package folder; scripts/ros2-setup.sh builds one in
 *   .venv-ros2/node/ and its env.sh sets the variable), else
 * - as the package `rclnodejs` (installed next to the project by its user);
 * a missing package becomes `RB_ERR_ROS_RCLNODEJS_MISSING` with the install steps. The process
 * must run with the ROS environment (LD_LIBRARY_PATH, AMENT_PREFIX_PATH: `source …/env.sh`).
 *
 * Calls (rclnodejs 2.x): one Context per transport (several transports may live in one
 * process), `createNode` + `node.spin()`, `createSubscription(type, topic, cb)`,
 * `createPublisher`, `createClient` → `waitForService` / `sendRequest`, `ActionClient` →
 * `waitForServer` / `sendGoal` → ClientGoalHandle `getResult()` (resolves with the result
 * message; the terminal status is then `handle.status`) / `cancelGoal()`. Publishers, clients
 * and action clients are created once per name and kept.
 *
 * Connection semantics on a graph without a "connection": connected after init. "lost" when a
 * subscribed topic that had publishers has none left (the robot's node left the graph or its
 * DDS lease expired); "connected" again when they are all back. While lost, goals and service
 * calls in flight reject with RB_ERR_ROS_CONNECTION_LOST and new ones with
 * RB_ERR_ROS_NOT_CONNECTED, as over rosbridge.
 */
import { createRequire } from "node:module";
import type { Steps } from "../../seam/steps.ts";
import { DeviceError } from "../errors.ts";
import {
  type ActionGoalHandle,
  type ActionOutcome,
  type CallServiceOptions,
  type ConnectionEvent,
  GoalStatus,
  type GoalStatusCode,
  type PreparedActionGoal,
  preparedAsIs,
  type RosTransport,
  type SendGoalOptions,
  type Unsubscribe,
} from "./transport.ts";

/** Resource: the native node to create. */
export interface RclnodejsTransportOptions {
  /** ROS node name; default "robot_gateway" */
  nodeName?: string;
  /** wait this long for a service or action server; default 5000 ms */
  serverWaitMs?: number;
  /** graph check period (publishers of the subscribed topics), ms; default 50 */
  graphPollMs?: number;
}

/** The loose shape of rclnodejs this adapter uses. */
interface RclPublisher {
  publish(msg: unknown): void;
}
interface RclClient {
  waitForService(timeoutMs: number): Promise<boolean>;
  sendRequest(req: unknown, cb: (res: unknown) => void): void;
}
interface RclNode {
  createSubscription(type: string, topic: string, cb: (msg: unknown) => void): unknown;
  destroySubscription(sub: unknown): void;
  createPublisher(type: string, topic: string): RclPublisher;
  createClient(type: string, service: string): RclClient;
  countPublishers(topic: string): number;
  spin(timeoutMs?: number): void;
  destroy(): void;
}
interface RclGoalHandle {
  isAccepted(): boolean;
  getResult(): Promise<unknown>;
  cancelGoal(): Promise<unknown>;
  readonly status: number;
}
interface RclActionClient {
  waitForServer(timeoutMs: number): Promise<boolean>;
  sendGoal(goal: unknown, feedback?: (f: unknown) => void): Promise<RclGoalHandle>;
  destroy(): void;
}
interface RclContext {
  shutdown(): void;
}
export interface RclModule {
  Context: new () => RclContext;
  init(context?: RclContext): Promise<void>;
  createNode(name: string, namespace?: string, context?: RclContext): RclNode;
  ActionClient: new (node: RclNode, type: string, name: string) => RclActionClient;
}

/**
 * Load rclnodejs or throw RB_ERR_ROS_RCLNODEJS_MISSING. `specifier`: a package folder or name
 * (tests); default `RCLNODEJS_PATH`, else "rclnodejs".
 */
export async function loadRclnodejs(specifier?: string): Promise<RclModule> {
  const target = specifier ?? (process.env.RCLNODEJS_PATH || "rclnodejs");
  try {
    if (target.startsWith("/")) {
      // a package folder: its CommonJS entry (rclnodejs' "require" export)
      return createRequire(import.meta.url)(target) as RclModule;
    }
    const mod = (await import(target)) as { default?: RclModule } & RclModule;
    return mod.default ?? mod;
  } catch (e) {
    throw new DeviceError("RB_ERR_ROS_RCLNODEJS_MISSING", {
      reason: e instanceof Error ? e.message.split("\n")[0] : String(e),
    });
  }
}

interface Sub {
  topic: string;
  type: string;
  cb: (m: unknown) => void;
  handle?: unknown;
}

export class RclnodejsTransport implements RosTransport {
  readonly endpoint = "rclnodejs";
  private context: RclContext | undefined;
  private node: RclNode | undefined;
  private state: "idle" | "connected" | "lost" | "closed" = "idle";
  private connections = 0;
  private readonly listeners = new Set<(e: ConnectionEvent) => void>();
  private readonly publishers = new Map<string, RclPublisher>();
  private readonly clients = new Map<string, RclClient>();
  private readonly actionClients = new Map<string, RclActionClient>();
  private readonly subs: Sub[] = [];
  /** topics whose publishers the graph check has seen */
  private readonly seenPublishers = new Set<string>();
  /** calls and goals in flight: rejected when the peer is lost or the transport closes */
  private readonly inFlight = new Map<(e: Error) => void, string>();
  private graphTimer: NodeJS.Timeout | undefined;
  private readonly opts: Required<RclnodejsTransportOptions>;

  constructor(
    private readonly rcl: RclModule,
    options: RclnodejsTransportOptions = {},
  ) {
    this.opts = { nodeName: "robot_gateway", serverWaitMs: 5000, graphPollMs: 50, ...options };
  }

  get connected(): boolean {
    return this.state === "connected";
  }

  async connect(): Promise<void> {
    if (this.state === "closed")
      throw new DeviceError("RB_ERR_ROS_TRANSPORT_CLOSED", { operation: "connect" });
    if (this.node) return;
    const context = new this.rcl.Context();
    await this.rcl.init(context);
    this.context = context;
    this.node = this.rcl.createNode(this.opts.nodeName, "", context);
    for (const s of this.subs) s.handle = this.node.createSubscription(s.type, s.topic, s.cb);
    this.node.spin();
    this.graphTimer = setInterval(() => this.checkGraph(), this.opts.graphPollMs);
    this.graphTimer.unref();
    this.setConnected();
  }

  async close(): Promise<void> {
    if (this.state === "closed") return;
    this.state = "closed";
    clearInterval(this.graphTimer);
    this.rejectInFlight((operation) => new DeviceError("RB_ERR_ROS_TRANSPORT_CLOSED", { operation }));
    try {
      this.node?.destroy();
      this.context?.shutdown();
    } finally {
      this.node = undefined;
      for (const l of [...this.listeners]) l({ type: "closed" });
    }
  }

  subscribe<T>(topic: string, type: string, cb: (msg: T) => void): Unsubscribe {
    const entry: Sub = { topic, type, cb: cb as (m: unknown) => void };
    this.subs.push(entry);
    if (this.node) entry.handle = this.node.createSubscription(type, topic, entry.cb);
    return () => {
      const i = this.subs.indexOf(entry);
      if (i >= 0) this.subs.splice(i, 1);
      if (entry.handle && this.node) this.node.destroySubscription(entry.handle);
      entry.handle = undefined;
      if (!this.subs.some((s) => s.topic === topic)) this.seenPublishers.delete(topic);
    };
  }

  publish<T>(topic: string, type: string, msg: T): void {
    if (!this.node || this.state !== "connected") return;
    let p = this.publishers.get(topic);
    if (!p) this.publishers.set(topic, (p = this.node.createPublisher(type, topic)));
    p.publish(msg);
  }

  async callService<Req, Res>(
    service: string,
    type: string,
    request: Req,
    opts?: CallServiceOptions,
  ): Promise<Res> {
    const node = this.requireNode(`call ${service}`);
    const key = `${service}\n${type}`;
    let client = this.clients.get(key);
    if (!client) this.clients.set(key, (client = node.createClient(type, service)));
    const timeoutMs = opts?.timeoutMs ?? 10_000;
    if (!(await client.waitForService(Math.min(timeoutMs, this.opts.serverWaitMs)))) {
      throw new DeviceError("RB_ERR_ROS_SERVICE_TIMEOUT", { service, timeoutMs });
    }
    this.requireNode(`call ${service}`);
    const c = client;
    return new Promise<Res>((resolve, reject) => {
      const fail = (e: Error) => {
        clearTimeout(timer);
        this.inFlight.delete(fail);
        reject(e);
      };
      const timer = setTimeout(
        () => fail(new DeviceError("RB_ERR_ROS_SERVICE_TIMEOUT", { service, timeoutMs })),
        timeoutMs,
      );
      this.inFlight.set(fail, `call ${service}`);
      c.sendRequest(request, (res) => {
        clearTimeout(timer);
        this.inFlight.delete(fail);
        resolve(res as Res);
      });
    });
  }

  sendActionGoal<G, F, R>(
    action: string,
    type: string,
    goal: G,
    opts?: SendGoalOptions<F>,
  ): ActionGoalHandle<R> {
    let handle: RclGoalHandle | undefined;
    let cancelled = false;
    let settled = false;
    const run = async (): Promise<ActionOutcome<R>> => {
      const node = this.requireNode(`goal ${action}`);
      const key = `${action}\n${type}`;
      let client = this.actionClients.get(key);
      if (!client) this.actionClients.set(key, (client = new this.rcl.ActionClient(node, type, action)));
      if (!(await client.waitForServer(this.opts.serverWaitMs))) {
        throw new DeviceError("RB_ERR_ROS_ACTION_FAILED", { action, reason: "no action server" });
      }
      this.requireNode(`goal ${action}`);
      // a goal request (or its answer) can be lost while DDS still matches a new client with
      // the server: fail loudly after serverWaitMs instead of waiting forever
      handle = await withDeadline(
        client.sendGoal(goal, opts?.onFeedback ? (f) => opts.onFeedback!(f as F) : undefined),
        this.opts.serverWaitMs,
        () =>
          new DeviceError("RB_ERR_ROS_ACTION_FAILED", {
            action,
            reason: `no answer to the goal request within ${this.opts.serverWaitMs} ms`,
          }),
      );
      if (!handle.isAccepted()) return { status: GoalStatus.UNKNOWN, message: "goal rejected" };
      if (cancelled) handle.cancelGoal().catch(() => {});
      const values = (await handle.getResult()) as R;
      return { status: handle.status as GoalStatusCode, values };
    };
    const result = new Promise<ActionOutcome<R>>((resolve, reject) => {
      const fail = (e: Error) => {
        this.inFlight.delete(fail);
        if (!settled) reject(e);
        settled = true;
      };
      this.inFlight.set(fail, `goal ${action}`);
      run().then(
        (o) => {
          this.inFlight.delete(fail);
          if (!settled) resolve(o);
          settled = true;
        },
        (e: unknown) => fail(e instanceof Error ? e : new Error(String(e))),
      );
    });
    result.catch(() => {});
    return {
      result,
      cancel: () => {
        if (settled) return;
        cancelled = true;
        if (handle) handle.cancelGoal().catch(() => {});
      },
    };
  }

  /**
   * nothing prepared ahead: rclnodejs converts the goal into its native message inside
   * `ActionClient.sendGoal`, after the wait for the server (not measured here: no ROS 2 install)
   */
  prepareActionGoal<G, F, R>(action: string, type: string, goal: G): Steps<PreparedActionGoal<F, R>> {
    return preparedAsIs<G, F, R>(this, action, type, goal);
  }

  onConnectionChange(listener: (e: ConnectionEvent) => void): Unsubscribe {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  // ───────────── graph: is the peer still there? ─────────────

  private checkGraph(): void {
    const node = this.node;
    if (!node || this.state === "closed") return;
    let missing: string | undefined;
    for (const topic of new Set(this.subs.map((s) => s.topic))) {
      const n = node.countPublishers(topic);
      if (n > 0) this.seenPublishers.add(topic);
      else if (this.seenPublishers.has(topic)) missing ??= topic;
    }
    if (missing && this.state === "connected") {
      this.state = "lost";
      const reason = `no publisher left on ${missing} (the ROS 2 peer left the graph)`;
      this.rejectInFlight(
        (operation) =>
          new DeviceError("RB_ERR_ROS_CONNECTION_LOST", { url: `${this.endpoint}: ${reason}`, operation }),
      );
      for (const l of [...this.listeners]) l({ type: "lost", reason });
    } else if (!missing && this.state === "lost") {
      this.setConnected();
    }
  }

  private setConnected(): void {
    this.state = "connected";
    this.connections++;
    for (const l of [...this.listeners]) l({ type: "connected", count: this.connections });
  }

  private rejectInFlight(error: (operation: string) => Error): void {
    const entries = [...this.inFlight];
    this.inFlight.clear();
    for (const [fail, operation] of entries) fail(error(operation));
  }

  private requireNode(operation: string): RclNode {
    if (!this.node || this.state !== "connected") {
      throw new DeviceError("RB_ERR_ROS_NOT_CONNECTED", { url: this.endpoint, operation });
    }
    return this.node;
  }
}

/** `p`, or the error of `fail()` after `ms` */
function withDeadline<T>(p: Promise<T>, ms: number, fail: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(fail()), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * Create the native transport. Throws RB_ERR_ROS_RCLNODEJS_MISSING (with install steps)
 * when rclnodejs is not installed.
 */
export async function createRclnodejsTransport(
  options: RclnodejsTransportOptions = {},
  specifier?: string,
): Promise<RosTransport> {
  return new RclnodejsTransport(await loadRclnodejs(specifier), options);
}
