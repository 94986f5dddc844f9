/**
 * RosTransport over rosbridge v2 (WebSocket, JSON) with roslib@2.
 *
 * - Topics use roslib's `Topic` (which re-subscribes and re-advertises after a reconnect).
 * - Services and actions are sent as raw rosbridge ops (`call_service`, `send_action_goal`,
 *   `cancel_action_goal`) through `Ros.callOnConnection`, because roslib's `Action` reports a
 *   non-successful goal only as a string (the FollowJointTrajectory `error_code` would be lost)
 *   and neither helper can time out or forget a call.
 * - Reconnection: after a loss, retries with exponential backoff
 *   (initialDelayMs · factor^n, capped at maxDelayMs) until it succeeds or close() is called.
 * - The socket is our own roslib transport (rosbridge-socket.ts, over `ws` as roslib's): a goal
 *   prepared with prepareActionGoal carries its JSON text, serialised in steps (json-steps.ts), and
 *   goes out as that text; every other message is stringified when sent, as roslib does.
 */
import * as roslibModule from "roslib";
import type { Steps } from "../../seam/steps.ts";
import { DeviceError } from "../errors.ts";
import { stringifySteps } from "./json-steps.ts";
import {
  JSON_TEXT,
  type RosbridgeMessage,
  type RosbridgeSocket,
  rosbridgeSocket,
} from "./rosbridge-socket.ts";
import {
  type ActionGoalHandle,
  type ActionOutcome,
  type CallServiceOptions,
  type ConnectionEvent,
  GoalStatus,
  type GoalStatusCode,
  type PreparedActionGoal,
  type RosTransport,
  type SendGoalOptions,
  type Unsubscribe,
} from "./transport.ts";

/** Resource: where rosbridge is and how to keep the connection. */
export interface RoslibTransportOptions {
  /** rosbridge WebSocket URL, e.g. "ws://127.0.0.1:9090" */
  url: string;
  /** connect() gives up after this long; default 5000 ms */
  connectTimeoutMs?: number;
  /** first reconnect delay; default 100 ms */
  reconnectInitialDelayMs?: number;
  /** reconnect delay cap; default 5000 ms */
  reconnectMaxDelayMs?: number;
  /** backoff factor; default 2 */
  reconnectFactor?: number;
}

/**
 * The parts of roslib@2 this adapter uses. roslib's bundled typings do not resolve under
 * NodeNext (extensionless re-export), so the shapes are declared here.
 */
interface RoslibRos {
  connect(url: string): Promise<void>;
  close(): void;
  on(event: string, fn: (arg: never) => void): unknown;
  off(event: string, fn: (arg: never) => void): unknown;
  callOnConnection(message: object): void;
}
interface RoslibTopic<T> {
  subscribe(cb: (msg: T) => void): void;
  unsubscribe(cb?: (msg: T) => void): void;
  publish(msg: T): void;
}
interface RoslibModule {
  Ros: new (opts: {
    url?: string;
    transportFactory?: (url: string) => Promise<RosbridgeSocket>;
  }) => RoslibRos;
  Topic: new <T>(opts: {
    ros: RoslibRos;
    name: string;
    messageType: string;
    reconnect_on_close?: boolean;
  }) => RoslibTopic<T>;
}
const { Ros, Topic } = roslibModule as unknown as RoslibModule;

interface Pending {
  reject(e: Error): void;
  operation: string;
}

/** Loose shape of the rosbridge messages this adapter reads. */
interface WireMessage {
  op: string;
  id?: string;
  result?: boolean;
  values?: unknown;
  status?: number;
}

let seq = 0;
const nextId = (kind: string, name: string): string => `${kind}:${name}:${++seq}:${Date.now().toString(36)}`;

export class RoslibTransport implements RosTransport {
  readonly endpoint: string;
  private readonly ros: RoslibRos = new Ros({ transportFactory: rosbridgeSocket });
  private readonly opts: Required<RoslibTransportOptions>;
  private state: "idle" | "connecting" | "connected" | "lost" | "closed" = "idle";
  private readonly listeners = new Set<(e: ConnectionEvent) => void>();
  private readonly pending = new Set<Pending>();
  private readonly publishers = new Map<string, RoslibTopic<unknown>>();
  private reconnectTimer: NodeJS.Timeout | undefined;
  private attempt = 0;
  private connectCount = 0;
  private firstConnect: { resolve(): void; reject(e: Error): void } | undefined;

  constructor(options: RoslibTransportOptions) {
    this.opts = {
      connectTimeoutMs: 5000,
      reconnectInitialDelayMs: 100,
      reconnectMaxDelayMs: 5000,
      reconnectFactor: 2,
      ...options,
    };
    this.endpoint = options.url;
    this.ros.on("connection", () => this.handleConnection());
    this.ros.on("close", () => this.handleClose());
    this.ros.on("error", () => {
      // a "close" always follows; nothing to do here
    });
  }

  get connected(): boolean {
    return this.state === "connected";
  }

  connect(): Promise<void> {
    if (this.state === "closed") {
      return Promise.reject(new DeviceError("RB_ERR_ROS_TRANSPORT_CLOSED", { operation: "connect" }));
    }
    if (this.state === "connected") return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.firstConnect = undefined;
        this.stopReconnecting();
        this.state = "idle";
        this.ros.close();
        reject(
          new DeviceError("RB_ERR_ROS_CONNECT_TIMEOUT", {
            url: this.endpoint,
            timeoutMs: this.opts.connectTimeoutMs,
          }),
        );
      }, this.opts.connectTimeoutMs);
      this.firstConnect = {
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      this.state = "connecting";
      this.tryConnect();
    });
  }

  async close(): Promise<void> {
    if (this.state === "closed") return;
    this.state = "closed";
    this.stopReconnecting();
    this.firstConnect?.reject(new DeviceError("RB_ERR_ROS_TRANSPORT_CLOSED", { operation: "connect" }));
    this.firstConnect = undefined;
    this.rejectPending((op) => new DeviceError("RB_ERR_ROS_TRANSPORT_CLOSED", { operation: op }));
    this.ros.close();
    this.emit({ type: "closed" });
  }

  subscribe<T>(topic: string, type: string, cb: (msg: T) => void): Unsubscribe {
    const t = new Topic<T>({ ros: this.ros, name: topic, messageType: type, reconnect_on_close: true });
    t.subscribe(cb);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      t.unsubscribe(cb);
    };
  }

  publish<T>(topic: string, type: string, msg: T): void {
    if (this.state !== "connected") return;
    let t = this.publishers.get(topic);
    if (!t) {
      t = new Topic<unknown>({ ros: this.ros, name: topic, messageType: type, reconnect_on_close: true });
      this.publishers.set(topic, t);
    }
    t.publish(msg);
  }

  callService<Req, Res>(
    service: string,
    type: string,
    request: Req,
    opts?: CallServiceOptions,
  ): Promise<Res> {
    const operation = `call ${service}`;
    if (this.state !== "connected") {
      return Promise.reject(new DeviceError("RB_ERR_ROS_NOT_CONNECTED", { url: this.endpoint, operation }));
    }
    const timeoutMs = opts?.timeoutMs ?? 10_000;
    const id = nextId("call_service", service);
    return new Promise<Res>((resolve, reject) => {
      const p: Pending = {
        reject: (e) => {
          cleanup();
          reject(e);
        },
        operation,
      };
      const onMessage = (m: WireMessage) => {
        if (m.op !== "service_response") return;
        cleanup();
        if (m.result) resolve(m.values as Res);
        else
          reject(new DeviceError("RB_ERR_ROS_SERVICE_FAILED", { service, reason: String(m.values ?? "") }));
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new DeviceError("RB_ERR_ROS_SERVICE_TIMEOUT", { service, timeoutMs }));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.pending.delete(p);
        this.ros.off(id, onMessage as never);
      };
      this.pending.add(p);
      this.ros.on(id, onMessage as never);
      this.ros.callOnConnection({ op: "call_service", id, service, type, args: request });
    });
  }

  sendActionGoal<G, F, R>(
    action: string,
    type: string,
    goal: G,
    opts?: SendGoalOptions<F>,
  ): ActionGoalHandle<R> {
    const id = nextId("send_action_goal", action);
    return this.sendGoal(id, action, goalMessage(id, action, type, goal), opts);
  }

  /** the goal's send_action_goal message and its JSON text, made in steps (pause points: json-steps.ts) */
  *prepareActionGoal<G, F, R>(action: string, type: string, goal: G): Steps<PreparedActionGoal<F, R>> {
    const id = nextId("send_action_goal", action);
    const message = goalMessage(id, action, type, goal);
    const text = yield* stringifySteps(message);
    return { send: (opts) => this.sendGoal<F, R>(id, action, { ...message, [JSON_TEXT]: text }, opts) };
  }

  private sendGoal<F, R>(
    id: string,
    action: string,
    message: ReturnType<typeof goalMessage> & RosbridgeMessage,
    opts?: SendGoalOptions<F>,
  ): ActionGoalHandle<R> {
    const operation = `goal ${action}`;
    if (this.state !== "connected") {
      const result = Promise.reject(
        new DeviceError("RB_ERR_ROS_NOT_CONNECTED", { url: this.endpoint, operation }),
      );
      result.catch(() => {});
      return { result, cancel: () => {} };
    }
    let settled = false;
    const result = new Promise<ActionOutcome<R>>((resolve, reject) => {
      const p: Pending = {
        reject: (e) => {
          cleanup();
          reject(e);
        },
        operation,
      };
      const onMessage = (m: WireMessage) => {
        if (m.op === "action_feedback") {
          opts?.onFeedback?.(m.values as F);
          return;
        }
        if (m.op !== "action_result") return;
        cleanup();
        const status = (m.status ?? GoalStatus.UNKNOWN) as GoalStatusCode;
        if (m.result && typeof m.values === "object" && m.values !== null) {
          resolve({ status, values: m.values as R });
        } else {
          resolve({
            status: m.result ? status : status === GoalStatus.SUCCEEDED ? GoalStatus.ABORTED : status,
            message: String(m.values ?? ""),
          });
        }
      };
      const cleanup = () => {
        settled = true;
        this.pending.delete(p);
        this.ros.off(id, onMessage as never);
      };
      this.pending.add(p);
      this.ros.on(id, onMessage as never);
      this.ros.callOnConnection(message);
    });
    result.catch(() => {});
    return {
      result,
      cancel: () => {
        if (settled || this.state !== "connected") return;
        this.ros.callOnConnection({ op: "cancel_action_goal", id, action });
      },
    };
  }

  onConnectionChange(listener: (e: ConnectionEvent) => void): Unsubscribe {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private tryConnect(): void {
    this.ros.connect(this.endpoint).catch(() => this.scheduleReconnect());
  }

  private handleConnection(): void {
    if (this.state === "closed") {
      this.ros.close();
      return;
    }
    this.state = "connected";
    this.attempt = 0;
    this.connectCount++;
    this.firstConnect?.resolve();
    this.firstConnect = undefined;
    this.emit({ type: "connected", count: this.connectCount });
  }

  private handleClose(): void {
    if (this.state === "closed" || this.state === "idle") return;
    if (this.state === "connected") {
      this.state = "lost";
      this.rejectPending(
        (op) => new DeviceError("RB_ERR_ROS_CONNECTION_LOST", { url: this.endpoint, operation: op }),
      );
      this.emit({ type: "lost", reason: "websocket closed" });
    }
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.state === "closed" || this.state === "idle" || this.reconnectTimer) return;
    const delay = Math.min(
      this.opts.reconnectMaxDelayMs,
      this.opts.reconnectInitialDelayMs * this.opts.reconnectFactor ** this.attempt,
    );
    this.attempt++;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      if (this.state === "closed" || this.state === "idle") return;
      this.tryConnect();
    }, delay);
  }

  private stopReconnecting(): void {
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
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

/** rosbridge v2 `send_action_goal` (feedback always asked for); one shape for sent and prepared goals */
function goalMessage(id: string, action: string, type: string, goal: unknown) {
  return { op: "send_action_goal", id, action, action_type: type, args: goal, feedback: true };
}

/** Create a rosbridge transport (not yet connected). */
export function createRoslibTransport(options: RoslibTransportOptions): RosTransport {
  return new RoslibTransport(options);
}
