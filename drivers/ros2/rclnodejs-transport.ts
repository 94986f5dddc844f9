/**
 * RosTransport over native ROS 2 with rclnodejs (optional dependency).
 *
 * rclnodejs needs a sourced ROS 2 installation at install time, so it is not a regular
 * dependency: it is loaded with a dynamic import when this transport is chosen, and a missing
 * package becomes `RB_ERR_ROS_RCLNODEJS_MISSING` with the install steps.
 *
 * Not exercised by the test suite beyond the missing-package path (no ROS 2 on CI); the calls
 * follow rclnodejs' documented API (init, Node, createSubscription/Publisher/Client,
 * ActionClient.sendGoal → ClientGoalHandle.getResult/cancelGoal, spin).
 * A native graph has no "connection": connected after init, "lost" is never emitted.
 */
import { DeviceError } from "../errors.ts";
import {
  type ActionGoalHandle,
  type ActionOutcome,
  type CallServiceOptions,
  type ConnectionEvent,
  GoalStatus,
  type GoalStatusCode,
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
}

/** The loose shape of rclnodejs this adapter uses. */
interface RclNode {
  createSubscription(type: string, topic: string, cb: (msg: unknown) => void): unknown;
  destroySubscription(sub: unknown): void;
  createPublisher(type: string, topic: string): { publish(msg: unknown): void };
  createClient(
    type: string,
    service: string,
  ): {
    waitForService(timeoutMs: number): Promise<boolean>;
    sendRequest(req: unknown, cb: (res: unknown) => void): void;
  };
  destroy(): void;
}
interface RclGoalHandle {
  isAccepted(): boolean;
  getResult(): Promise<unknown>;
  cancelGoal(): Promise<unknown>;
  readonly status?: number;
}
interface RclModule {
  init(): Promise<void>;
  shutdown(): void;
  Node: new (name: string) => RclNode;
  ActionClient: new (
    node: RclNode,
    type: string,
    name: string,
  ) => {
    waitForServer(timeoutMs: number): Promise<boolean>;
    sendGoal(goal: unknown, feedback?: (f: unknown) => void): Promise<RclGoalHandle>;
  };
  spin(node: RclNode): void;
}

/** Load rclnodejs or throw RB_ERR_ROS_RCLNODEJS_MISSING. `specifier` is for tests. */
export async function loadRclnodejs(specifier = "rclnodejs"): Promise<RclModule> {
  try {
    const mod = (await import(specifier)) as { default?: RclModule } & RclModule;
    return mod.default ?? mod;
  } catch (e) {
    throw new DeviceError("RB_ERR_ROS_RCLNODEJS_MISSING", {
      reason: e instanceof Error ? e.message.split("\n")[0] : String(e),
    });
  }
}

export class RclnodejsTransport implements RosTransport {
  readonly endpoint = "rclnodejs";
  private node: RclNode | undefined;
  private state: "idle" | "connected" | "closed" = "idle";
  private readonly listeners = new Set<(e: ConnectionEvent) => void>();
  private readonly publishers = new Map<string, { publish(msg: unknown): void }>();
  private readonly pendingSubs: {
    topic: string;
    type: string;
    cb: (m: unknown) => void;
    handle?: unknown;
  }[] = [];
  private readonly opts: Required<RclnodejsTransportOptions>;

  constructor(
    private readonly rcl: RclModule,
    options: RclnodejsTransportOptions = {},
  ) {
    this.opts = { nodeName: "robot_gateway", serverWaitMs: 5000, ...options };
  }

  get connected(): boolean {
    return this.state === "connected";
  }

  async connect(): Promise<void> {
    if (this.state === "closed")
      throw new DeviceError("RB_ERR_ROS_TRANSPORT_CLOSED", { operation: "connect" });
    if (this.state === "connected") return;
    await this.rcl.init();
    this.node = new this.rcl.Node(this.opts.nodeName);
    for (const s of this.pendingSubs) s.handle = this.node.createSubscription(s.type, s.topic, s.cb);
    this.rcl.spin(this.node);
    this.state = "connected";
    for (const l of [...this.listeners]) l({ type: "connected", count: 1 });
  }

  async close(): Promise<void> {
    if (this.state === "closed") return;
    this.state = "closed";
    this.node?.destroy();
    this.rcl.shutdown();
    for (const l of [...this.listeners]) l({ type: "closed" });
  }

  subscribe<T>(topic: string, type: string, cb: (msg: T) => void): Unsubscribe {
    const entry: { topic: string; type: string; cb: (m: unknown) => void; handle?: unknown } = {
      topic,
      type,
      cb: cb as (m: unknown) => void,
    };
    this.pendingSubs.push(entry);
    if (this.node) entry.handle = this.node.createSubscription(type, topic, entry.cb);
    return () => {
      const i = this.pendingSubs.indexOf(entry);
      if (i >= 0) this.pendingSubs.splice(i, 1);
      if (entry.handle && this.node) this.node.destroySubscription(entry.handle);
      entry.handle = undefined;
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
    const client = node.createClient(type, service);
    const timeoutMs = opts?.timeoutMs ?? 10_000;
    if (!(await client.waitForService(Math.min(timeoutMs, this.opts.serverWaitMs)))) {
      throw new DeviceError("RB_ERR_ROS_SERVICE_TIMEOUT", { service, timeoutMs });
    }
    return new Promise<Res>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new DeviceError("RB_ERR_ROS_SERVICE_TIMEOUT", { service, timeoutMs })),
        timeoutMs,
      );
      client.sendRequest(request, (res) => {
        clearTimeout(timer);
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
    const run = async (): Promise<ActionOutcome<R>> => {
      const node = this.requireNode(`goal ${action}`);
      const client = new this.rcl.ActionClient(node, type, action);
      if (!(await client.waitForServer(this.opts.serverWaitMs))) {
        throw new DeviceError("RB_ERR_ROS_ACTION_FAILED", { action, reason: "no action server" });
      }
      handle = await client.sendGoal(goal, (f) => opts?.onFeedback?.(f as F));
      if (!handle.isAccepted()) return { status: GoalStatus.UNKNOWN, message: "goal rejected" };
      if (cancelled) void handle.cancelGoal();
      const res = (await handle.getResult()) as { status?: number; result?: R } | R;
      // rclnodejs versions differ: some resolve with the result message, some with {status, result}
      const wrapped = res as { status?: number; result?: R };
      if (wrapped && typeof wrapped === "object" && "result" in wrapped && "status" in wrapped) {
        return {
          status: (wrapped.status ?? GoalStatus.UNKNOWN) as GoalStatusCode,
          values: wrapped.result as R,
        };
      }
      return { status: (handle.status ?? GoalStatus.SUCCEEDED) as GoalStatusCode, values: res as R };
    };
    const result = run();
    result.catch(() => {});
    return {
      result,
      cancel: () => {
        cancelled = true;
        if (handle) void handle.cancelGoal();
      },
    };
  }

  onConnectionChange(listener: (e: ConnectionEvent) => void): Unsubscribe {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private requireNode(operation: string): RclNode {
    if (!this.node || this.state !== "connected") {
      throw new DeviceError("RB_ERR_ROS_NOT_CONNECTED", { url: this.endpoint, operation });
    }
    return this.node;
  }
}

/**
 * Create the native transport. Throws RB_ERR_ROS_RCLNODEJS_MISSING (with install steps)
 * when rclnodejs is not installed.
 */
export async function createRclnodejsTransport(
  options: RclnodejsTransportOptions = {},
  specifier = "rclnodejs",
): Promise<RosTransport> {
  return new RclnodejsTransport(await loadRclnodejs(specifier), options);
}
