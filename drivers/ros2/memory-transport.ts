/**
 * In-memory RosTransport double (shipped code, STYLE.md §7): a tiny ROS graph in one process.
 * The "robot side" of a test publishes topics and serves services and actions on a
 * `MemoryRosGraph`; drivers talk to it through `MemoryRosTransport`s. Fault injection:
 * `setLinkUp(false)` drops every connection (pending calls reject, listeners hear "lost"),
 * `setLinkUp(true)` lets them reconnect; `failNextConnect()` makes the next connect fail.
 */
import type { Steps } from "../../seam/steps.ts";
import { DeviceError } from "../errors.ts";
import {
  type ActionGoalHandle,
  type ActionOutcome,
  type CallServiceOptions,
  type ConnectionEvent,
  GoalStatus,
  type PreparedActionGoal,
  preparedAsIs,
  type RosTransport,
  type SendGoalOptions,
  type Unsubscribe,
} from "./transport.ts";

/** What an action handler on the graph receives. */
export interface MemoryActionContext<F> {
  feedback(f: F): void;
  /** aborted when the client cancels the goal */
  signal: AbortSignal;
}

type ServiceHandler = (req: unknown) => unknown | Promise<unknown>;
type ActionHandler = (goal: unknown, ctx: MemoryActionContext<unknown>) => Promise<ActionOutcome<unknown>>;

export class MemoryRosGraph {
  private readonly transports = new Set<MemoryRosTransport>();
  private readonly services = new Map<string, ServiceHandler>();
  private readonly actions = new Map<string, ActionHandler>();
  private readonly publishListeners = new Map<string, Set<(msg: unknown) => void>>();
  private linkUp = true;
  private connectFailures = 0;
  /** every client publish, in order (for assertions) */
  readonly published: { topic: string; type: string; msg: unknown }[] = [];

  /** true while clients can connect */
  get isLinkUp(): boolean {
    return this.linkUp;
  }

  /** deliver a message to every connected subscriber of `topic` */
  publish(topic: string, msg: unknown): void {
    for (const t of this.transports) t._deliver(topic, msg);
  }

  advertiseService<Req, Res>(name: string, handler: (req: Req) => Res | Promise<Res>): void {
    this.services.set(name, handler as ServiceHandler);
  }

  advertiseAction<G, F, R>(
    name: string,
    handler: (goal: G, ctx: MemoryActionContext<F>) => Promise<ActionOutcome<R>>,
  ): void {
    this.actions.set(name, handler as unknown as ActionHandler);
  }

  /** listen to what clients publish on `topic` */
  onPublish(topic: string, cb: (msg: unknown) => void): Unsubscribe {
    let set = this.publishListeners.get(topic);
    if (!set) this.publishListeners.set(topic, (set = new Set()));
    set.add(cb);
    return () => set.delete(cb);
  }

  /** drop (false) or restore (true) every connection */
  setLinkUp(up: boolean): void {
    if (this.linkUp === up) return;
    this.linkUp = up;
    for (const t of this.transports) up ? t._linkRestored() : t._linkLost("link down (injected)");
  }

  /** make the next `n` connect() calls fail */
  failNextConnect(n = 1): void {
    this.connectFailures += n;
  }

  /** @internal */ _attach(t: MemoryRosTransport): void {
    this.transports.add(t);
  }
  /** @internal */ _detach(t: MemoryRosTransport): void {
    this.transports.delete(t);
  }
  /** @internal */ _takeConnectFailure(): boolean {
    if (this.connectFailures <= 0) return false;
    this.connectFailures--;
    return true;
  }
  /** @internal */ _clientPublish(topic: string, type: string, msg: unknown): void {
    this.published.push({ topic, type, msg });
    for (const cb of this.publishListeners.get(topic) ?? []) cb(msg);
  }
  /** @internal */ _service(name: string): ServiceHandler | undefined {
    return this.services.get(name);
  }
  /** @internal */ _action(name: string): ActionHandler | undefined {
    return this.actions.get(name);
  }
}

interface Pending {
  reject(e: Error): void;
  operation: string;
}

export class MemoryRosTransport implements RosTransport {
  readonly endpoint = "memory";
  private state: "idle" | "connected" | "lost" | "closed" = "idle";
  private readonly subs = new Map<string, Set<(msg: unknown) => void>>();
  private readonly listeners = new Set<(e: ConnectionEvent) => void>();
  private readonly pending = new Set<Pending>();
  private connectCount = 0;

  constructor(private readonly graph: MemoryRosGraph) {}

  get connected(): boolean {
    return this.state === "connected";
  }

  async connect(): Promise<void> {
    if (this.state === "closed")
      throw new DeviceError("RB_ERR_ROS_TRANSPORT_CLOSED", { operation: "connect" });
    if (this.state === "connected") return;
    if (!this.graph.isLinkUp || this.graph._takeConnectFailure()) {
      throw new DeviceError("RB_ERR_ROS_CONNECT_TIMEOUT", { url: this.endpoint, timeoutMs: 0 });
    }
    this.graph._attach(this);
    this.becomeConnected();
  }

  async close(): Promise<void> {
    if (this.state === "closed") return;
    this.state = "closed";
    this.graph._detach(this);
    this.rejectPending((op) => new DeviceError("RB_ERR_ROS_TRANSPORT_CLOSED", { operation: op }));
    this.emit({ type: "closed" });
  }

  subscribe<T>(topic: string, _type: string, cb: (msg: T) => void): Unsubscribe {
    let set = this.subs.get(topic);
    if (!set) this.subs.set(topic, (set = new Set()));
    const fn = cb as (msg: unknown) => void;
    set.add(fn);
    return () => set.delete(fn);
  }

  publish<T>(topic: string, type: string, msg: T): void {
    if (this.state !== "connected") return;
    this.graph._clientPublish(topic, type, msg);
  }

  callService<Req, Res>(
    service: string,
    _type: string,
    request: Req,
    opts?: CallServiceOptions,
  ): Promise<Res> {
    if (this.state !== "connected") {
      return Promise.reject(
        new DeviceError("RB_ERR_ROS_NOT_CONNECTED", { url: this.endpoint, operation: `call ${service}` }),
      );
    }
    const handler = this.graph._service(service);
    const timeoutMs = opts?.timeoutMs ?? 10_000;
    return new Promise<Res>((resolve, reject) => {
      const p: Pending = { reject, operation: `call ${service}` };
      this.pending.add(p);
      const done = () => {
        clearTimeout(timer);
        this.pending.delete(p);
      };
      const timer = setTimeout(() => {
        done();
        reject(new DeviceError("RB_ERR_ROS_SERVICE_TIMEOUT", { service, timeoutMs }));
      }, timeoutMs);
      if (!handler) {
        // like rosbridge: an unknown service never answers until the timeout
        return;
      }
      Promise.resolve()
        .then(() => handler(request))
        .then(
          (res) => {
            if (!this.pending.has(p)) return;
            done();
            resolve(res as Res);
          },
          (e: unknown) => {
            if (!this.pending.has(p)) return;
            done();
            reject(new DeviceError("RB_ERR_ROS_SERVICE_FAILED", { service, reason: String(e) }));
          },
        );
    });
  }

  sendActionGoal<G, F, R>(
    action: string,
    _type: string,
    goal: G,
    opts?: SendGoalOptions<F>,
  ): ActionGoalHandle<R> {
    if (this.state !== "connected") {
      return {
        result: Promise.reject(
          new DeviceError("RB_ERR_ROS_NOT_CONNECTED", { url: this.endpoint, operation: `goal ${action}` }),
        ),
        cancel: () => {},
      };
    }
    const handler = this.graph._action(action);
    const ac = new AbortController();
    let settled = false;
    const result = new Promise<ActionOutcome<R>>((resolve, reject) => {
      const p: Pending = { reject, operation: `goal ${action}` };
      this.pending.add(p);
      const finish = () => {
        settled = true;
        this.pending.delete(p);
      };
      if (!handler) {
        finish();
        resolve({ status: GoalStatus.ABORTED, message: `no action server ${action}` });
        return;
      }
      const ctx: MemoryActionContext<unknown> = {
        feedback: (f) => {
          if (!settled && this.state === "connected") opts?.onFeedback?.(f as F);
        },
        signal: ac.signal,
      };
      Promise.resolve()
        .then(() => handler(goal, ctx))
        .then(
          (out) => {
            if (settled || !this.pending.has(p)) return;
            finish();
            resolve(out as ActionOutcome<R>);
          },
          (e: unknown) => {
            if (settled || !this.pending.has(p)) return;
            finish();
            reject(new DeviceError("RB_ERR_ROS_ACTION_FAILED", { action, reason: String(e) }));
          },
        );
    });
    result.catch(() => {});
    return {
      result,
      cancel: () => {
        if (!settled && this.state === "connected") ac.abort();
      },
    };
  }

  /** nothing to prepare in memory: the goal object is what the graph's handler gets */
  prepareActionGoal<G, F, R>(action: string, type: string, goal: G): Steps<PreparedActionGoal<F, R>> {
    return preparedAsIs<G, F, R>(this, action, type, goal);
  }

  onConnectionChange(listener: (e: ConnectionEvent) => void): Unsubscribe {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** @internal */ _deliver(topic: string, msg: unknown): void {
    if (this.state !== "connected") return;
    for (const cb of this.subs.get(topic) ?? []) cb(msg);
  }
  /** @internal */ _linkLost(reason: string): void {
    if (this.state !== "connected") return;
    this.state = "lost";
    this.rejectPending(
      (op) => new DeviceError("RB_ERR_ROS_CONNECTION_LOST", { url: this.endpoint, operation: op }),
    );
    this.emit({ type: "lost", reason });
  }
  /** @internal */ _linkRestored(): void {
    if (this.state === "lost") this.becomeConnected();
  }

  private becomeConnected(): void {
    this.state = "connected";
    this.connectCount++;
    this.emit({ type: "connected", count: this.connectCount });
  }

  private rejectPending(make: (operation: string) => Error): void {
    const all = [...this.pending];
    this.pending.clear();
    for (const p of all) p.reject(make(p.operation));
  }

  private emit(e: ConnectionEvent): void {
    for (const l of [...this.listeners]) l(e);
  }
}
