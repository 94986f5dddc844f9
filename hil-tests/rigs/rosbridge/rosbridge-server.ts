/**
 * A rosbridge v2 protocol peer (server side) on a `ws` WebSocket server — the part of
 * rosbridge_server a test rig needs, JSON only.
 *
 * Ops handled: subscribe / unsubscribe, advertise / unadvertise / publish (from clients),
 * call_service → service_response, send_action_goal → action_feedback / action_result,
 * cancel_action_goal, and the `<action>/_action/cancel_goal` service (cancel all goals).
 * Not supported: CBOR / BSON / PNG compression, fragments, auth, set_level (answered with a
 * status message or ignored).
 *
 * Fault injection: `killConnections()` closes every socket; `setReachable(false)` also refuses
 * new connections (HTTP 503 on upgrade) until `setReachable(true)`.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";

/** The parts of `ws` used here (the package ships no typings and @types/ws is not installed). */
interface WebSocket {
  readonly readyState: number;
  send(data: string): void;
  terminate(): void;
  on(event: "message", cb: (data: Buffer, isBinary: boolean) => void): void;
  on(event: "close" | "error", cb: () => void): void;
}
interface WebSocketServer {
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, cb: (ws: WebSocket) => void): void;
  close(cb: () => void): void;
}
const ws = createRequire(import.meta.url)("ws") as {
  WebSocketServer: new (opts: { noServer: true }) => WebSocketServer;
};
const OPEN = 1;

type Json = Record<string, unknown>;

/** What a rig's action handler gets for one goal. */
export interface ActionGoalContext {
  /** goal id (the client's) */
  id: string;
  /** send a feedback message (only when the client asked for feedback) */
  feedback(values: unknown): void;
  /** aborted when the client cancels the goal or disconnects */
  signal: AbortSignal;
  /**
   * A handler that decides acceptance itself (advertised with `decidesAcceptance`) calls this
   * once it takes the goal; a goal it throws on before is rejected. Over a ROS 2 graph the goal
   * response waits for it (rigs/ros2); rosbridge has no separate acceptance and leaves it unset.
   */
  accepted?: () => void;
}

/** Terminal answer of an action handler. */
export interface ActionGoalAnswer {
  /** action_msgs/GoalStatus: 4 succeeded, 5 canceled, 6 aborted */
  status: number;
  values: unknown;
}

export type ServiceHandler = (args: unknown) => unknown | Promise<unknown>;
export type ActionHandler = (goal: unknown, ctx: ActionGoalContext) => Promise<ActionGoalAnswer>;

interface Client {
  ws: WebSocket;
  /** topic → subscription ids */
  subs: Map<string, Set<string>>;
  goals: Map<string, { action: string; ac: AbortController }>;
}

export interface RosbridgeServerOptions {
  /** default "127.0.0.1" */
  host?: string;
  /** default 0 (any free port) */
  port?: number;
}

export class RosbridgeServer {
  private readonly http: Server;
  private readonly wss: WebSocketServer;
  private readonly clients = new Set<Client>();
  private readonly services = new Map<string, ServiceHandler>();
  private readonly actions = new Map<string, ActionHandler>();
  private readonly publishListeners = new Map<string, Set<(msg: unknown) => void>>();
  private reachable = true;
  /** number of messages sent, by op (for tests and benchmarks) */
  readonly sent = new Map<string, number>();

  private constructor() {
    this.http = createServer((_req, res) => {
      res.statusCode = 426;
      res.end("rosbridge: WebSocket only");
    });
    this.wss = new ws.WebSocketServer({ noServer: true });
    this.http.on("upgrade", (req, socket, head) => {
      if (!this.reachable) {
        socket.end("HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n\r\n");
        return;
      }
      this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws));
    });
  }

  static async start(opts: RosbridgeServerOptions = {}): Promise<RosbridgeServer> {
    const s = new RosbridgeServer();
    await new Promise<void>((resolve, reject) => {
      s.http.once("error", reject);
      s.http.listen(opts.port ?? 0, opts.host ?? "127.0.0.1", () => resolve());
    });
    return s;
  }

  /** ws://host:port */
  get url(): string {
    const a = this.http.address() as AddressInfo;
    return `ws://${a.address}:${a.port}`;
  }

  /** number of open client connections */
  get connectionCount(): number {
    return this.clients.size;
  }

  /** true when at least one client subscribes to `topic` */
  hasSubscribers(topic: string): boolean {
    for (const c of this.clients) if ((c.subs.get(topic)?.size ?? 0) > 0) return true;
    return false;
  }

  /** publish a message to every subscriber of `topic`; returns how many got it */
  publish(topic: string, msg: unknown): number {
    let text: string | undefined;
    let n = 0;
    for (const c of this.clients) {
      if (!c.subs.get(topic)?.size || c.ws.readyState !== OPEN) continue;
      text ??= JSON.stringify({ op: "publish", topic, msg });
      c.ws.send(text);
      n++;
    }
    if (n > 0) this.count("publish");
    return n;
  }

  /** rosbridge clients name the types: nothing to declare */
  declareTopic(_topic: string, _type: string): void {}

  advertiseService(name: string, handler: ServiceHandler, _type?: string): void {
    this.services.set(name, handler);
  }

  advertiseAction(name: string, handler: ActionHandler, _type?: string): void {
    this.actions.set(name, handler);
  }

  /** listen to what clients publish on `topic` */
  onClientPublish(topic: string, cb: (msg: unknown) => void): () => void {
    let set = this.publishListeners.get(topic);
    if (!set) this.publishListeners.set(topic, (set = new Set()));
    set.add(cb);
    return () => set.delete(cb);
  }

  /** close every client socket (their goals are cancelled, as rosbridge does) */
  killConnections(): void {
    for (const c of this.clients) c.ws.terminate();
  }

  /** refuse (false) or accept (true) new connections; false also kills open ones */
  setReachable(up: boolean): void {
    this.reachable = up;
    if (!up) this.killConnections();
  }

  async close(): Promise<void> {
    this.killConnections();
    await new Promise<void>((r) => this.wss.close(() => r()));
    await new Promise<void>((r) => this.http.close(() => r()));
  }

  private accept(ws: WebSocket): void {
    const client: Client = { ws, subs: new Map(), goals: new Map() };
    this.clients.add(client);
    ws.on("message", (data, isBinary) => {
      if (isBinary) {
        this.send(client, {
          op: "status",
          level: "error",
          msg: "binary (CBOR/BSON) messages are not supported",
        });
        return;
      }
      let m: Json;
      try {
        m = JSON.parse(String(data)) as Json;
      } catch {
        this.send(client, { op: "status", level: "error", msg: "invalid JSON" });
        return;
      }
      this.handle(client, m);
    });
    ws.on("close", () => {
      this.clients.delete(client);
      for (const g of client.goals.values()) g.ac.abort();
      client.goals.clear();
    });
    ws.on("error", () => {});
  }

  private handle(c: Client, m: Json): void {
    const op = String(m.op);
    switch (op) {
      case "subscribe": {
        const topic = String(m.topic);
        let ids = c.subs.get(topic);
        if (!ids) c.subs.set(topic, (ids = new Set()));
        ids.add(String(m.id ?? `anon:${ids.size}`));
        return;
      }
      case "unsubscribe": {
        const ids = c.subs.get(String(m.topic));
        if (!ids) return;
        if (m.id === undefined) ids.clear();
        else ids.delete(String(m.id));
        return;
      }
      case "advertise":
      case "unadvertise":
        return;
      case "publish": {
        for (const cb of this.publishListeners.get(String(m.topic)) ?? []) cb(m.msg);
        return;
      }
      case "call_service":
        void this.callService(c, m);
        return;
      case "send_action_goal":
        void this.runGoal(c, m);
        return;
      case "cancel_action_goal": {
        c.goals.get(String(m.id))?.ac.abort();
        return;
      }
      default:
        this.send(c, {
          op: "status",
          level: "warning",
          msg: `op ${op} is not supported by this rig`,
          id: m.id,
        });
    }
  }

  private async callService(c: Client, m: Json): Promise<void> {
    const service = String(m.service);
    const id = m.id as string | undefined;
    const cancelAll = /^(.*)\/_action\/cancel_goal$/.exec(service);
    if (cancelAll) {
      const action = cancelAll[1]!;
      for (const cl of this.clients) for (const g of cl.goals.values()) if (g.action === action) g.ac.abort();
      this.send(c, {
        op: "service_response",
        id,
        service,
        result: true,
        values: { return_code: 0, goals_canceling: [] },
      });
      return;
    }
    const handler = this.services.get(service);
    if (!handler) {
      this.send(c, {
        op: "service_response",
        id,
        service,
        result: false,
        values: `Service ${service} does not exist`,
      });
      return;
    }
    try {
      const values = await handler(m.args ?? {});
      this.send(c, { op: "service_response", id, service, result: true, values });
    } catch (e) {
      this.send(c, { op: "service_response", id, service, result: false, values: String(e) });
    }
  }

  private async runGoal(c: Client, m: Json): Promise<void> {
    const action = String(m.action);
    const id = String(m.id ?? `goal:${Math.random()}`);
    const handler = this.actions.get(action);
    if (!handler) {
      this.send(c, {
        op: "action_result",
        id,
        action,
        status: 6,
        result: false,
        values: `Action ${action} does not exist`,
      });
      return;
    }
    const ac = new AbortController();
    c.goals.set(id, { action, ac });
    const wantFeedback = m.feedback === true;
    try {
      const answer = await handler(m.args ?? {}, {
        id,
        signal: ac.signal,
        feedback: (values) => {
          if (wantFeedback && c.goals.has(id)) this.send(c, { op: "action_feedback", id, action, values });
        },
      });
      this.send(c, {
        op: "action_result",
        id,
        action,
        status: answer.status,
        result: true,
        values: answer.values,
      });
    } catch (e) {
      this.send(c, { op: "action_result", id, action, status: 6, result: false, values: String(e) });
    } finally {
      c.goals.delete(id);
    }
  }

  private send(c: Client, m: Json): void {
    if (c.ws.readyState !== OPEN) return;
    c.ws.send(JSON.stringify(m));
    this.count(String(m.op));
  }

  private count(op: string): void {
    this.sent.set(op, (this.sent.get(op) ?? 0) + 1);
  }
}
