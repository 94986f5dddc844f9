/**
 * RosTransport: the few operations the ROS drivers need from a ROS 2 connection (STYLE.md §6).
 * The core (franka-arm, ros-camera) only sees this interface; adapters at the edge implement
 * it over rosbridge (roslib-transport.ts), native ROS 2 (rclnodejs-transport.ts) or memory
 * (memory-transport.ts, for unit tests).
 *
 * Type names are ROS 2 interface names; both "pkg/msg/Type" and "pkg/Type" are accepted by
 * rosbridge, the drivers use the full form ("sensor_msgs/msg/JointState").
 *
 * Connection semantics shared by all adapters:
 * - subscriptions outlive connection losses: an adapter re-subscribes after it reconnects;
 * - a publish while disconnected is dropped (never queued: stale commands are dangerous);
 * - a service call or action goal while disconnected rejects at once with
 *   `RB_ERR_ROS_NOT_CONNECTED`; one in flight when the connection drops rejects with
 *   `RB_ERR_ROS_CONNECTION_LOST`.
 */

import { doneSteps, type Steps } from "../../seam/steps.ts";

/** Removes a subscription or listener; safe to call twice. */
export type Unsubscribe = () => void;

/** action_msgs/msg/GoalStatus codes. */
export const GoalStatus = {
  UNKNOWN: 0,
  ACCEPTED: 1,
  EXECUTING: 2,
  CANCELING: 3,
  SUCCEEDED: 4,
  CANCELED: 5,
  ABORTED: 6,
} as const;
export type GoalStatusCode = (typeof GoalStatus)[keyof typeof GoalStatus];

/** How an action goal ended (the server answered). */
export interface ActionOutcome<R> {
  /** terminal goal status (SUCCEEDED, CANCELED, ABORTED, or UNKNOWN when rejected) */
  status: GoalStatusCode;
  /** the action's result message; absent when the server sent none (e.g. rejected goal) */
  values?: R;
  /** the server's text when it sent no result message */
  message?: string;
}

/** A goal in flight. */
export interface ActionGoalHandle<R> {
  /**
   * Resolves with the terminal outcome; rejects only when no outcome can arrive
   * (not connected, connection lost, transport closed).
   */
  result: Promise<ActionOutcome<R>>;
  /** ask the server to cancel the goal; no-op after the result arrived */
  cancel(): void;
}

/** A goal made ready to send by `RosTransport.prepareActionGoal`: nothing has reached the server yet. */
export interface PreparedActionGoal<F, R> {
  /** send it now (a short turn: the preparation did the long work); as `sendActionGoal` */
  send(opts?: SendGoalOptions<F>): ActionGoalHandle<R>;
}

export interface SendGoalOptions<F> {
  /** called with each feedback message */
  onFeedback?: (feedback: F) => void;
}

export interface CallServiceOptions {
  /** reject with RB_ERR_ROS_SERVICE_TIMEOUT after this long; default 10 000 ms */
  timeoutMs?: number;
}

export type ConnectionEvent =
  | { type: "connected" /** how many times the connection was (re)established so far */; count: number }
  | { type: "lost"; reason: string }
  | { type: "closed" };

export interface RosTransport {
  /** for logs and fault records, e.g. "ws://127.0.0.1:9090" or "rclnodejs" */
  readonly endpoint: string;
  /** true while a connection is up */
  readonly connected: boolean;
  /** open the connection; resolves once connected, rejects with a coded error otherwise */
  connect(): Promise<void>;
  /** close for good (no reconnection); pending calls and goals reject */
  close(): Promise<void>;
  /** subscribe to a topic; the callback gets each message */
  subscribe<T>(topic: string, type: string, cb: (msg: T) => void): Unsubscribe;
  /** publish one message (dropped while disconnected) */
  publish<T>(topic: string, type: string, msg: T): void;
  /** call a service */
  callService<Req, Res>(service: string, type: string, request: Req, opts?: CallServiceOptions): Promise<Res>;
  /** send an action goal */
  sendActionGoal<G, F, R>(
    action: string,
    type: string,
    goal: G,
    opts?: SendGoalOptions<F>,
  ): ActionGoalHandle<R>;
  /**
   * Make an action goal ready to send, as steps that may pause (seam/steps.ts): what the adapter
   * does to a goal before it goes out (rosbridge: its JSON text, ~1.2 ms for a 3 s trajectory) is
   * done in them, so that `send()` is short. Nothing reaches the server before `send()`; a
   * prepared goal never sent is dropped. The goal must not change meanwhile.
   */
  prepareActionGoal<G, F, R>(action: string, type: string, goal: G): Steps<PreparedActionGoal<F, R>>;
  /** be told when the connection comes up, drops, or is closed */
  onConnectionChange(listener: (e: ConnectionEvent) => void): Unsubscribe;
}

/**
 * `prepareActionGoal` of a transport with nothing to prepare ahead (the memory graph, rclnodejs:
 * its `sendActionGoal` converts the goal itself): done at once, sent as `sendActionGoal` sends.
 */
export function preparedAsIs<G, F, R>(
  t: RosTransport,
  action: string,
  type: string,
  goal: G,
): Steps<PreparedActionGoal<F, R>> {
  return doneSteps({ send: (opts) => t.sendActionGoal<G, F, R>(action, type, goal, opts) });
}
