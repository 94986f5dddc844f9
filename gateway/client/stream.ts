/**
 * The TypeScript client of the `/v1/stream` WebSocket (gateway/api/stream.ts; docs/decisions.md
 * "The realtime setting"): a closed-loop agent's channel. It subscribes to readings at a rate,
 * keeps the latest one, hands every message to listeners, and sends chunks as `act` messages
 * whose answers are matched by id. Errors are the same `RobotGatewayError`s as over HTTP, with
 * the RB_ERR code the gateway sent (a refused upgrade: its 401/403 body; a socket that cannot be
 * opened or closes under a pending call: RB_ERR_GATEWAY_UNREACHABLE; a message that is not what
 * the schema says: RB_ERR_BAD_RESPONSE).
 *
 * Wire format (JSON text messages, one object each):
 *   → {"type":"subscribe","id":…,"rate_hz":N,"events":B}   ← {"type":"subscribed","id":…,"rate_hz":N,"events":B}
 *   ← {"type":"reading","t":…,"reading":{…},"episode":{…}}  at N Hz
 *   ← {"type":"event","episode_id":…,"event":{…}} | {"type":"safety","episode_id":…,"safety":{…}}
 *     as they happen (events: true; copies of what the next response carries)
 *   → {"type":"act","id":…,"action_type":…, dt, rows, start_step?}  (the body of POST /v1/act)
 *   ← {"type":"act_result","id":…, …ActResponse} | {"type":"error","id"?:…,"error":{…}}
 */
import type { IncomingMessage } from "node:http";
import { WebSocket } from "ws";
import { z } from "zod";
import { ERRORS } from "../../seam/errors.ts";
import {
  type ActRequestSchema,
  ActResponseSchema,
  EpisodeStatusSchema,
  ReadingSchema,
  SafetyEventSchema,
  SensorEventSchema,
} from "../api/schemas.ts";
import { type ClientErrorCode, clientError as baseError, RobotGatewayError } from "./errors.ts";

type ActInput = z.input<typeof ActRequestSchema>;
type ActResponse = z.infer<typeof ActResponseSchema>;

export const StreamReadingSchema = z.object({
  type: z.literal("reading"),
  t: z.number().describe("episode seconds when the message was sent"),
  reading: ReadingSchema,
  episode: EpisodeStatusSchema,
});
/** A pushed reading: the robot's state and the episode status (realtime: committed step, queue, late steps). */
export type StreamReading = z.infer<typeof StreamReadingSchema>;

export const StreamEventSchema = z.union([
  z.object({ type: z.literal("event"), episode_id: z.string(), event: SensorEventSchema }),
  z.object({ type: z.literal("safety"), episode_id: z.string(), safety: SafetyEventSchema }),
]);
/** A pushed event: a sensor event (a contact) or a safety event, the moment the episode saw it. */
export type StreamEvent = z.infer<typeof StreamEventSchema>;

export interface StreamOptions {
  /** gateway base URL (http://… or ws://…); the path /v1/stream is added */
  url: string;
  /** the agent token */
  token: string;
  /** check every message against its schema (default true) */
  validate?: boolean;
}

/** A message the gateway pushed, as a listener receives it. */
export type StreamMessage =
  | StreamReading
  | StreamEvent
  | { type: "subscribed"; id?: string; rate_hz: number; events: boolean }
  | ({ type: "act_result"; id?: string } & ActResponse)
  | {
      type: "error";
      id?: string;
      error: { code: string; message: string; details: Record<string, unknown> };
    };

const CALL = "WS /v1/stream";

const clientError = (code: ClientErrorCode, details: Record<string, unknown>) =>
  baseError(code, details, CALL);

function fromBody(body: unknown, status: number): RobotGatewayError | undefined {
  const e = (body as { error?: { code?: unknown; message?: unknown; details?: unknown } } | null)?.error;
  if (typeof e?.code !== "string" || typeof e.message !== "string") return undefined;
  const details = e.details && typeof e.details === "object" ? (e.details as Record<string, unknown>) : {};
  return new RobotGatewayError(e.code, status, e.message, details, CALL);
}

export class StreamClient {
  private latestReading: StreamReading | undefined;
  private readonly listeners = new Set<(m: StreamMessage) => void>();
  private readonly pending = new Map<
    string,
    { resolve: (m: unknown) => void; reject: (e: unknown) => void }
  >();
  private counter = 0;
  private closedWith: RobotGatewayError | undefined;
  private readonly closed: Promise<void>;

  private constructor(
    private readonly ws: WebSocket,
    private readonly validate: boolean,
  ) {
    ws.on("message", (data) => this.onMessage(String(data)));
    this.closed = new Promise((resolve) => {
      ws.on("close", (code) => {
        this.closedWith = clientError("RB_ERR_GATEWAY_UNREACHABLE", {
          url: CALL,
          reason: `the stream closed (code ${code})`,
        });
        for (const p of this.pending.values()) p.reject(this.closedWith);
        this.pending.clear();
        resolve();
      });
    });
  }

  /** Open the stream; a refused token rejects with the gateway's code (401/403). */
  static connect(o: StreamOptions): Promise<StreamClient> {
    const base = o.url.replace(/\/+$/, "").replace(/^http/, "ws");
    const url = `${base}/v1/stream`;
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { headers: { authorization: `Bearer ${o.token}` } });
      let settled = false;
      ws.on("unexpected-response", (_req, res: IncomingMessage) => {
        let text = "";
        res.on("data", (c: Buffer) => {
          text += String(c);
        });
        res.on("end", () => {
          settled = true;
          let body: unknown;
          try {
            body = JSON.parse(text);
          } catch {
            body = undefined;
          }
          reject(
            fromBody(body, res.statusCode ?? 0) ??
              clientError("RB_ERR_BAD_RESPONSE", {
                call: CALL,
                issues: `HTTP ${res.statusCode} on the upgrade without an error body`,
              }),
          );
        });
      });
      ws.on("error", (e) => {
        if (settled) return;
        settled = true;
        reject(clientError("RB_ERR_GATEWAY_UNREACHABLE", { url, reason: e.message }));
      });
      ws.on("open", () => {
        settled = true;
        resolve(new StreamClient(ws, o.validate ?? true));
      });
    });
  }

  /** The latest reading pushed (undefined before the first). */
  get latest(): StreamReading | undefined {
    return this.latestReading;
  }

  /** Every message the gateway pushes (readings, answers, errors without an id); returns unsubscribe. */
  on(listener: (m: StreamMessage) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /**
   * Push readings at `rateHz` (0 stops them) and, with `events`, each sensor and safety event as
   * it happens; resolves when the gateway confirms.
   */
  async subscribe(rateHz: number, opts: { events?: boolean } = {}): Promise<void> {
    await this.call({ type: "subscribe", rate_hz: rateHz, events: opts.events ?? false });
  }

  /** The next event pushed after now (subscribe with `events: true`). */
  nextEvent(): Promise<StreamEvent> {
    return this.nextOf((m): m is StreamEvent => m.type === "event" || m.type === "safety");
  }

  /** The next reading pushed after now (rejects with RB_ERR_GATEWAY_UNREACHABLE if the stream closes first). */
  nextReading(): Promise<StreamReading> {
    return this.nextOf((m): m is StreamReading => m.type === "reading");
  }

  private nextOf<T extends StreamMessage>(is: (m: StreamMessage) => m is T): Promise<T> {
    return new Promise((resolve, reject) => {
      if (this.closedWith) return reject(this.closedWith);
      const off = this.on((m) => {
        if (!is(m)) return;
        off();
        resolve(m);
      });
      // a stream that closes first ends the wait with its error
      void this.closed.then(() => {
        off();
        reject(this.closedWith);
      });
    });
  }

  /**
   * One chunk, as POST /v1/act (realtime: answers at once with `start_step`); rejects with the
   * gateway's code (e.g. RB_ERR_SPLICE_MARGIN naming the earliest step).
   */
  async act(req: ActInput): Promise<ActResponse> {
    const { type, ...body } = req;
    const m = (await this.call({ ...body, type: "act", action_type: type })) as Record<string, unknown>;
    const { type: _t, id: _id, ...out } = m;
    if (this.validate) {
      const r = ActResponseSchema.safeParse(out);
      if (!r.success) throw this.badResponse(r.error);
    }
    return out as ActResponse;
  }

  /** Close the stream; pending calls reject with RB_ERR_GATEWAY_UNREACHABLE. */
  async close(): Promise<void> {
    if (this.ws.readyState === this.ws.OPEN) this.ws.close();
    await this.closed;
  }

  private call(msg: Record<string, unknown>): Promise<unknown> {
    if (this.closedWith) return Promise.reject(this.closedWith);
    const id = `c${++this.counter}`;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ ...msg, id }));
    });
  }

  private badResponse(e: z.ZodError): RobotGatewayError {
    const issues = e.issues.map((i) => `/${i.path.join("/")} ${i.message}`).join("; ");
    return clientError("RB_ERR_BAD_RESPONSE", { call: CALL, issues });
  }

  private onMessage(text: string): void {
    let m: Record<string, unknown>;
    try {
      m = JSON.parse(text) as Record<string, unknown>;
    } catch {
      this.emit({
        type: "error",
        ...clientError("RB_ERR_BAD_RESPONSE", { call: CALL, issues: "a message is not JSON" }).toBody(),
      });
      return;
    }
    const id = typeof m["id"] === "string" ? m["id"] : undefined;
    const waiting = id !== undefined ? this.pending.get(id) : undefined;
    if (m["type"] === "reading") {
      if (this.validate) {
        const r = StreamReadingSchema.safeParse(m);
        if (!r.success) {
          this.emit({ type: "error", ...this.badResponse(r.error).toBody() });
          return;
        }
      }
      this.latestReading = m as StreamReading;
    }
    if (this.validate && (m["type"] === "event" || m["type"] === "safety")) {
      const r = StreamEventSchema.safeParse(m);
      if (!r.success) {
        this.emit({ type: "error", ...this.badResponse(r.error).toBody() });
        return;
      }
    }
    if (waiting && id !== undefined) {
      this.pending.delete(id);
      if (m["type"] === "error") waiting.reject(fromBody(m, statusOf(m)) ?? this.badShape());
      else waiting.resolve(m);
    }
    this.emit(m as StreamMessage);
  }

  private badShape(): RobotGatewayError {
    return clientError("RB_ERR_BAD_RESPONSE", { call: CALL, issues: "an error message without code" });
  }

  private emit(m: StreamMessage): void {
    for (const l of this.listeners) l(m);
  }
}

/** A stream error carries no HTTP status: the registry's status of its code (0 when unknown). */
function statusOf(m: Record<string, unknown>): number {
  const code = (m["error"] as { code?: unknown } | undefined)?.code;
  return typeof code === "string" ? ((ERRORS as Record<string, { status: number }>)[code]?.status ?? 0) : 0;
}
