/**
 * WebSocket /v1/stream over a real socket (port 0) on the sim in the realtime setting: readings
 * pushed at the requested rate, chunks with the same schemas and errors as HTTP, token checks.
 */
import type { IncomingMessage } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { parseBenchConfig } from "../../compose/bench-config.ts";
import { type StartedGateway, startGateway } from "../../compose/start.ts";
import { type WsMsg, wsInbox } from "../../test-support/ws.ts";

let g: StartedGateway;
let wsUrl: string;

beforeAll(async () => {
  const config = parseBenchConfig(
    { version: 1, name: "ws", backend: { type: "sim" }, task: { id: "free-motion", seed: 1 } },
    "test",
  );
  g = await startGateway({
    config,
    agentToken: "ws-agent",
    operatorToken: "ws-op",
    observers: null,
    realtime: { slowdown: 1 },
    firstEpisode: { task: "free-motion", setting: "realtime", seed: 1 },
    listen: { host: "127.0.0.1", port: 0 },
  });
  wsUrl = `${g.url!.replace("http", "ws")}/v1/stream`;
});

afterAll(async () => {
  await g?.close();
});

type Msg = WsMsg;

const connect = (token: string) => wsInbox(wsUrl, token);

function refusal(token: string): Promise<{ status: number; body: Msg }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${token}` } });
    ws.on("error", () => {});
    ws.on("unexpected-response", (_req, res: IncomingMessage) => {
      let body = "";
      res.on("data", (c: Buffer) => {
        body += String(c);
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(body) as Msg }));
    });
  });
}

describe("WebSocket /v1/stream", () => {
  it("refuses a missing or operator token on the upgrade, in the API's error shape", async () => {
    const none = await refusal("nope");
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe("RB_ERR_UNAUTHORIZED");
    const op = await refusal("ws-op");
    expect(op.status).toBe(403);
    expect(op.body.error.code).toBe("RB_ERR_FORBIDDEN");
  });

  it("pushes readings at the requested rate and accepts chunks with the HTTP schemas and errors", async () => {
    const { ws, next } = await connect("ws-agent");
    ws.send(JSON.stringify({ type: "subscribe", id: "s", rate_hz: 50 }));
    expect(await next("subscribed")).toMatchObject({ id: "s", rate_hz: 50 });
    const r = await next("reading");
    expect(r["reading"].q).toHaveLength(7);
    expect(r["episode"].realtime.slowdown).toBe(1);
    const q = r["reading"].q as number[];
    const grip = r["reading"].gripper_width_m as number;

    ws.send(JSON.stringify({ type: "act", id: "a1", type_: "x" }));
    const bad = await next("error");
    expect(bad).toMatchObject({ id: "a1", error: { code: "RB_ERR_BAD_REQUEST" } });

    ws.send("{not json");
    expect((await next("error"))["error"].code).toBe("RB_ERR_BAD_JSON");

    // the act body of HTTP, its action type as action_type (the message's type is "act")
    ws.send(
      JSON.stringify({
        type: "act",
        id: "a2",
        action_type: "joint_position",
        dt: 0.01,
        rows: [[...q, grip]],
      }),
    );
    const ok = await next("act_result");
    expect(ok).toMatchObject({ id: "a2", executed_rows: 0 });
    expect(typeof ok["start_step"]).toBe("number");

    ws.send(
      JSON.stringify({
        type: "act",
        id: "a3",
        action_type: "joint_position",
        dt: 0.01,
        rows: [[...q, grip]],
        start_step: 0,
      }),
    );
    const past = await next("error");
    expect(past["id"]).toBe("a3");
    expect(["RB_ERR_SPLICE_PAST", "RB_ERR_SPLICE_MARGIN"]).toContain(past["error"].code);
    ws.close();
  });

  it("an act with frames reserves its frame memory as over HTTP: no room is RB_ERR_OVER_CAPACITY before anything moves", async () => {
    const { ws, next } = await connect("ws-agent");
    const r = g.gateway.bench.backend.read();
    // another holder counts (nearly) the whole frame budget
    const frames = g.gateway.frames;
    const release = frames.hold([{ byteLength: frames.usage.maxBytes - 1024 } as Uint8Array]);
    try {
      ws.send(
        JSON.stringify({
          type: "act",
          id: "f1",
          action_type: "joint_position",
          dt: 0.01,
          rows: [[...r.q, r.gripperWidthM]],
          frames: { fps: 10 },
        }),
      );
      const e = await next("error");
      expect(e).toMatchObject({
        id: "f1",
        error: { code: "RB_ERR_OVER_CAPACITY", details: { resource: "frame memory" } },
      });
    } finally {
      release();
      ws.close();
    }
  });
});
