/**
 * `/v1/stream` with `events: true` over a real socket (port 0): the agent-visible events of the
 * running episode are pushed the moment the episode sees them — a contact from the backend, the
 * safety event of an operator e-stop — and the next response still carries
 * them (the push is a copy). A subscription without events gets none.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseBenchConfig } from "../../compose/bench-config.ts";
import { type StartedGateway, startGateway } from "../../compose/start.ts";
import type { MirrorBackend } from "../../drivers/mirror/mirror-backend.ts";
import { waitFor } from "../../test-support/wait.ts";
import { type WsMsg, wsInbox } from "../../test-support/ws.ts";
import { StreamClient } from "../client/stream.ts";
import { contactTask } from "../recorder/testing/contact-task.ts";

let g: StartedGateway;
let wsUrl: string;

beforeAll(async () => {
  const config = parseBenchConfig({ version: 1, name: "ws-events", backend: { type: "mirror" } }, "test");
  g = await startGateway({
    config,
    agentToken: "ev-agent",
    operatorToken: "ev-op",
    observers: null,
    tasks: [contactTask(2)],
    firstEpisode: false,
    listen: { host: "127.0.0.1", port: 0 },
  });
  wsUrl = `${g.url!.replace("http", "ws")}/v1/stream`;
});

afterAll(async () => {
  await g?.close();
});

type Msg = WsMsg;

const connect = () => wsInbox(wsUrl, "ev-agent");

/** an HTTP call over the real socket */
async function http(path: string, body: unknown, token: string): Promise<{ status: number; body: Msg }> {
  const res = await fetch(`${g.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Msg };
}

const backend = () => g.gateway.bench.backend as MirrorBackend;

describe("WebSocket /v1/stream events", () => {
  it("pushes a contact as it happens; the next response still carries it; a subscription without events gets none", async () => {
    const ep = await g.gateway.startEpisode({ task: contactTask(2).id, seed: 1 });
    const { ws, next } = await connect();
    const quiet = await connect();
    quiet.ws.send(JSON.stringify({ type: "subscribe", id: "q", rate_hz: 0 }));
    expect(await quiet.next("subscribed")).toMatchObject({ id: "q", events: false });
    ws.send(JSON.stringify({ type: "subscribe", id: "s", rate_hz: 0, events: true }));
    expect(await next("subscribed")).toMatchObject({ id: "s", rate_hz: 0, events: true });

    backend().emit({ type: "contact", t: backend().now(), closed: true, source: "test" });
    const ev = await next("event");
    expect(ev["episode_id"]).toBe(ep.id);
    expect(ev["event"]).toMatchObject({ type: "contact" });
    expect(typeof ev["event"].t).toBe("number");
    // a copy: the episode's next response carries the same events
    const obs = await http("/v1/observe", { cameras: [] }, "ev-agent");
    expect(obs.status).toBe(200);
    const types = (obs.body as Msg)["events"].map((e: Msg) => e["type"]);
    expect(types.filter((t: string) => t === "contact")).toHaveLength(1);
    expect(quiet.inbox.filter((m) => m["type"] === "event" || m["type"] === "safety")).toEqual([]);
    ws.close();
    quiet.ws.close();
  });

  it("pushes the safety event of an operator e-stop; events: not a boolean is refused with the HTTP code", async () => {
    await g.gateway.startEpisode({ task: "free-motion", seed: 2 });
    const { ws, next } = await connect();
    ws.send(JSON.stringify({ type: "subscribe", id: "bad", rate_hz: 0, events: "yes" }));
    expect(await next("error")).toMatchObject({ id: "bad", error: { code: "RB_ERR_BAD_REQUEST" } });
    ws.send(JSON.stringify({ type: "subscribe", id: "s", rate_hz: 0, events: true }));
    await next("subscribed");
    const r = await http("/v1/admin/estop", { reason: "stream test" }, "ev-op");
    expect(r.status).toBe(200);
    const safety = await next("safety");
    expect(JSON.stringify(safety["safety"])).toContain("estop");
    await http("/v1/admin/release", {}, "ev-op");
    ws.close();
  });

  it("the TypeScript client subscribes to events and hands them over typed, cause before effect", async () => {
    const ep = await g.gateway.startEpisode({ task: "free-motion", seed: 3 });
    const c = await StreamClient.connect({ url: g.url!, token: "ev-agent" });
    try {
      await c.subscribe(0, { events: true });
      const seen: string[] = [];
      c.on((m) => {
        if (m.type === "event" || m.type === "safety") seen.push(m.type);
      });
      const got = c.nextEvent();
      // free motion stops on a contact: the contact is pushed first, then its stop's safety event
      backend().emit({ type: "contact", t: backend().now(), closed: true, source: "test" });
      const e = await got;
      expect(e.type).toBe("event");
      expect(e.episode_id).toBe(ep.id);
      if (e.type === "event") expect(e.event.type).toBe("contact");
      await waitFor(() => seen.length >= 2);
      expect(seen).toEqual(["event", "safety"]);
    } finally {
      await c.close();
    }
  });
});
