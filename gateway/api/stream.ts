/**
 * WebSocket `/v1/stream` (agent token, as `Authorization: Bearer …` on the upgrade request): a
 * closed-loop agent's channel. JSON text messages, one object each:
 *
 *   → {"type":"subscribe","rate_hz":50,"events":true}   readings pushed at that rate (0 stops
 *                                                  them); with events, each event as it happens
 *   ← {"type":"reading","t":…,"reading":{…},"episode":{…}}
 *   ← {"type":"event","episode_id":…,"event":{type,t,data}}        a sensor event (a contact)
 *   ← {"type":"safety","episode_id":…,"safety":{t,kind,message,details}}   a safety event
 *   → {"type":"act","id":"a1","action_type":"joint_position", …}   the body of POST /v1/act, its
 *                                                  `type` as action_type; the same checks
 *   ← {"type":"act_result","id":"a1", …ActResponse} or {"type":"error","id":"a1","error":{…}}
 *
 * Pushed events are the ones the agent's next act/observe response carries anyway (they are
 * copies: the responses still carry them), sent the moment the episode sees them; a closed-loop
 * agent reacts to a contact without polling.
 *
 * Errors carry the same codes and body as HTTP (a message that is not JSON: RB_ERR_BAD_JSON; a
 * body that does not match: RB_ERR_BAD_REQUEST). A wrong or missing token is answered 401/403
 * on the upgrade, in the API's error shape.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { FastifyInstance } from "fastify";
import { type WebSocket, WebSocketServer } from "ws";
import { GatewayError } from "../errors.ts";
import type { Gateway } from "../gateway.ts";
import { type Tokens, tokenMatches } from "./auth.ts";
import { actCaptureBytes, type CaptureAdmission } from "./capacity.ts";
import { ActRequestSchema } from "./schemas.ts";

export const STREAM_PATH = "/v1/stream";
/** the fastest reading push a client may ask for, Hz */
const MAX_RATE_HZ = 500;

function refuseUpgrade(socket: Duplex, err: GatewayError): void {
  const body = JSON.stringify(err.toBody());
  const reason = err.status === 403 ? "Forbidden" : "Unauthorized";
  socket.end(
    `HTTP/1.1 ${err.status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/** Serve `/v1/stream` on the app's HTTP server. */
export function attachStream(
  app: FastifyInstance,
  gw: Gateway,
  tokens: Tokens,
  /** the HTTP API's capture admission: an act with frames reserves its frame memory here too */
  captures?: CaptureAdmission,
): void {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024 });
  app.server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (req.url ?? "").split("?")[0];
    if (path !== STREAM_PATH) {
      socket.destroy();
      return;
    }
    const auth = req.headers.authorization;
    if (!tokenMatches(auth, tokens.agentToken)) {
      const err = tokenMatches(auth, tokens.operatorToken)
        ? new GatewayError("RB_ERR_FORBIDDEN", { url: STREAM_PATH })
        : new GatewayError("RB_ERR_UNAUTHORIZED");
      refuseUpgrade(socket, err);
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => session(ws, gw, captures));
  });
  // before the HTTP server closes: it waits for every socket, the upgraded ones too, so clients
  // still connected at onClose would hold the shutdown forever
  app.addHook("preClose", async () => {
    for (const c of wss.clients) c.terminate();
    wss.close();
  });
}

function session(ws: WebSocket, gw: Gateway, captures: CaptureAdmission | undefined): void {
  let timer: NodeJS.Timeout | undefined;
  let offEvents: (() => void) | undefined;
  const send = (m: unknown) => {
    if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(m));
  };
  const fail = (id: unknown, err: unknown) => {
    const e = err instanceof GatewayError ? err : new GatewayError("RB_ERR_INTERNAL", { id: randomUUID() });
    send({ type: "error", ...(id !== undefined ? { id } : {}), ...e.toBody() });
  };
  ws.on("close", () => {
    clearInterval(timer);
    offEvents?.();
  });
  ws.on("message", async (data) => {
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(String(data)) as Record<string, unknown>;
      if (typeof msg !== "object" || msg === null || Array.isArray(msg)) throw new Error("not an object");
    } catch (e) {
      return fail(undefined, new GatewayError("RB_ERR_BAD_JSON", { reason: (e as Error).message }));
    }
    const { type, id, ...rest } = msg;
    try {
      if (type === "subscribe") {
        const rate = rest["rate_hz"];
        if (typeof rate !== "number" || !(rate >= 0) || rate > MAX_RATE_HZ) {
          throw new GatewayError("RB_ERR_BAD_REQUEST", {
            issues: `/rate_hz must be a number in [0, ${MAX_RATE_HZ}]`,
            list: [`/rate_hz must be a number in [0, ${MAX_RATE_HZ}]`],
          });
        }
        const events = rest["events"] ?? false;
        if (typeof events !== "boolean") {
          throw new GatewayError("RB_ERR_BAD_REQUEST", {
            issues: "/events must be a boolean",
            list: ["/events must be a boolean"],
          });
        }
        clearInterval(timer);
        timer = undefined;
        offEvents?.();
        offEvents = undefined;
        if (events) {
          offEvents = gw.onAgentEvent((e, episodeId) =>
            send(
              e.kind === "event"
                ? { type: "event", episode_id: episodeId, event: e.event }
                : { type: "safety", episode_id: episodeId, safety: e.event },
            ),
          );
        }
        if (rate > 0) {
          timer = setInterval(() => {
            const ep = gw.episode;
            if (!ep) return;
            try {
              send({
                type: "reading",
                t: ep.t(),
                reading: ep.toReading(gw.bench.backend.read()),
                episode: ep.status(),
              });
            } catch {
              // the backend has shut down (the gateway is closing): no more readings
              clearInterval(timer);
            }
          }, 1000 / rate);
        }
        return send({ type: "subscribed", ...(id !== undefined ? { id } : {}), rate_hz: rate, events });
      }
      if (type === "act") {
        // the message's `type` is the message kind: the act body's action type travels as action_type
        const { action_type, ...body } = rest;
        const parsed = ActRequestSchema.safeParse({ ...body, type: action_type });
        if (!parsed.success) {
          const list = parsed.error.issues.map((i) => `/${i.path.join("/")} ${i.message}`);
          throw new GatewayError("RB_ERR_BAD_REQUEST", { issues: list.join("; "), list });
        }
        const ep = gw.requireEpisode();
        if (parsed.data.start_step !== undefined && ep.config.setting !== "realtime") {
          throw new GatewayError("RB_ERR_REALTIME_ONLY", { field: "start_step", setting: ep.config.setting });
        }
        // an act with frames reserves its frame memory like the HTTP act (503 when it does not fit)
        const bytes = captures ? actCaptureBytes(gw, parsed.data) : 0;
        const done = captures && bytes > 0 ? captures.admit(bytes) : () => {};
        let out: Awaited<ReturnType<typeof ep.act>>;
        try {
          out = await ep.act(parsed.data);
        } finally {
          done();
        }
        return send({
          type: "act_result",
          ...(id !== undefined ? { id } : {}),
          t: ep.t(),
          time_left_s: ep.timeLeftS(),
          ...out,
          episode: ep.status(),
        });
      }
      throw new GatewayError("RB_ERR_BAD_REQUEST", {
        issues: "/type must be subscribe or act",
        list: ["/type must be subscribe or act"],
      });
    } catch (e) {
      fail(id, e);
    }
  });
}
