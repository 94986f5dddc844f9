/**
 * The HTTP edge over real sockets (app.listen on port 0): every answer of fastify and Node in the
 * API's error shape, 405 with Allow, slow bodies cut off (also after a 401), 503 while closing,
 * token setups refused at start, loopback parsing, and structured logs without tokens.
 */
import { connect, type Socket } from "node:net";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { isLoopback } from "../../cli/serve.ts";
import { AGENT_TOKEN, OPERATOR_TOKEN, type TestGateway, testGateway } from "../../compose/testing.ts";
import { DeviceError } from "../../drivers/errors.ts";
import { waitFor } from "../../test-support/wait.ts";
import { buildApp } from "../app.ts";

let g: TestGateway | undefined;
const extra: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const a of extra.splice(0)) await a.close();
  await g?.close();
  g = undefined;
});

/** Send raw bytes; resolve with everything the server wrote once it closes the connection. */
function raw(port: number, text: string | Buffer, opts: { end?: boolean } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(port, "127.0.0.1");
    let out = "";
    s.on("data", (d) => {
      out += d.toString("latin1");
    });
    // a reset (a refused connection) ends the exchange like a close: what arrived is the answer
    s.on("error", (e: NodeJS.ErrnoException) => (e.code === "ECONNRESET" ? undefined : reject(e)));
    s.on("close", () => resolve(out));
    s.write(text);
    if (opts.end) s.end();
  });
}

// biome-ignore lint/suspicious/noExplicitAny: tests read response bodies freely
function parse(resp: string): { status: number; headers: Record<string, string>; body: any } {
  const [head, ...rest] = resp.split("\r\n\r\n");
  const lines = head!.split("\r\n");
  const headers: Record<string, string> = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(":");
    headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
  }
  const text = rest.join("\r\n\r\n");
  return { status: Number(lines[0]!.split(" ")[1]), headers, body: text ? JSON.parse(text) : undefined };
}

function expectShape(body: unknown, code: string) {
  expect(body).toEqual({ error: { code, message: expect.any(String), details: expect.any(Object) } });
}

async function listen(
  limits = {},
  logStream?: PassThrough,
): Promise<{ port: number; app: Awaited<ReturnType<typeof buildApp>> }> {
  g ??= await testGateway({ backend: { type: "mirror" } });
  const app = await buildApp({
    gateway: g.gateway,
    agentToken: AGENT_TOKEN,
    operatorToken: OPERATOR_TOKEN,
    limits,
    ...(logStream ? { logger: { stream: logStream } } : {}),
  });
  extra.push(app);
  await app.listen({ host: "127.0.0.1", port: 0 });
  return { port: (app.server.address() as { port: number }).port, app };
}

const auth = `Authorization: Bearer ${AGENT_TOKEN}\r\n`;

describe("fastify's and Node's own answers are in the documented shape", () => {
  it("malformed URL → 400 RB_ERR_BAD_URL; over-long path parameter → 414 RB_ERR_URL_TOO_LONG", async () => {
    const { port } = await listen();
    const bad = parse(
      await raw(port, `GET /v1/frames/%E0%A4%A HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`),
    );
    expect(bad.status).toBe(400);
    expectShape(bad.body, "RB_ERR_BAD_URL");
    const long = parse(
      await raw(
        port,
        `GET /v1/frames/${"a".repeat(300)} HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`,
      ),
    );
    expect(long.status).toBe(414);
    expectShape(long.body, "RB_ERR_URL_TOO_LONG");
  });

  it("oversized headers → 431, garbage → 400 RB_ERR_CLIENT_ERROR, written by the clientError handler", async () => {
    const { port } = await listen();
    const big = parse(
      await raw(port, `GET /v1/spec HTTP/1.1\r\nHost: x\r\nX-Big: ${"b".repeat(20_000)}\r\n\r\n`),
    );
    expect(big.status).toBe(431);
    expectShape(big.body, "RB_ERR_HEADERS_TOO_LARGE");
    const garbage = parse(await raw(port, "NOT HTTP AT ALL\r\n\r\n"));
    expect(garbage.status).toBe(400);
    expectShape(garbage.body, "RB_ERR_CLIENT_ERROR");
  });

  it("a wrong method → 405 RB_ERR_METHOD_NOT_ALLOWED with Allow; an unknown path stays 404", async () => {
    const { port } = await listen();
    const del = parse(
      await raw(port, `DELETE /v1/act HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`),
    );
    expect(del.status).toBe(405);
    expect(del.headers.allow).toBe("POST");
    expectShape(del.body, "RB_ERR_METHOD_NOT_ALLOWED");
    const put = parse(
      await raw(port, `PUT /v1/frames/abc HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`),
    );
    expect(put.status).toBe(405);
    expect(put.headers.allow).toBe("GET, HEAD");
    const nope = parse(
      await raw(port, `GET /v1/nope HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`),
    );
    expect(nope.status).toBe(404);
    expectShape(nope.body, "RB_ERR_NOT_FOUND");
  });

  it("a slow body is cut off with 408 RB_ERR_REQUEST_TIMEOUT, also after a 401", async () => {
    const { port } = await listen({ requestTimeoutMs: 300, headersTimeoutMs: 200 });
    const head = (a: string) =>
      `POST /v1/act HTTP/1.1\r\nHost: x\r\n${a}Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"type":`;
    // the socket stays open after the partial body; the server must close it on its own
    const slow = parse(await raw(port, head(auth)));
    expect(slow.status).toBe(408);
    expectShape(slow.body, "RB_ERR_REQUEST_TIMEOUT");
    const unauth = await raw(port, head(""));
    // the 401 comes first; then the connection is closed (raw() resolves only on close)
    expect(unauth).toContain("RB_ERR_UNAUTHORIZED");
  });

  it("a request that arrives while the server closes → 503 RB_ERR_SHUTTING_DOWN", async () => {
    const { port, app } = await listen();
    // count data the server has parsed (our listener runs after the HTTP parser's own)
    let parsed = 0;
    app.server.on("connection", (sock: Socket) =>
      sock.on("data", () => {
        parsed++;
      }),
    );
    // one request in flight (body not complete) keeps close() waiting
    const holder: Socket = connect(port, "127.0.0.1");
    holder.on("error", () => {});
    holder.write(
      `POST /v1/observe HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{`,
    );
    // a second connection has sent part of its headers
    let out = "";
    const late: Socket = connect(port, "127.0.0.1");
    late.on("data", (d) => {
      out += d.toString();
    });
    late.on("error", () => {});
    late.write(`GET /v1/spec HTTP/1.1\r\nHost: x\r\n`);
    await waitFor(() => parsed >= 2, "both partial requests reached the server");
    const closed = app.close();
    late.write(`${auth}\r\n`);
    await waitFor(() => out.includes("\r\n\r\n{"), "the answer to the late request");
    const res = parse(out);
    expect(res.status).toBe(503);
    expectShape(res.body, "RB_ERR_SHUTTING_DOWN");
    holder.destroy();
    late.destroy();
    await closed;
  });
});

describe("connection cap", () => {
  it("connections beyond maxConnections are closed at accept; the ones within are served", async () => {
    const { port, app } = await listen({ maxConnections: 2 });
    const open = () => new Promise<number>((r, j) => app.server.getConnections((e, n) => (e ? j(e) : r(n))));
    const held = [connect(port, "127.0.0.1"), connect(port, "127.0.0.1")];
    try {
      for (const s of held) s.on("error", () => {});
      let n = 0;
      await waitFor(() => {
        void open().then((c) => {
          n = c;
        });
        return n === 2;
      }, "two connections held");
      // the third is accepted by the kernel and closed by Node at once, without an answer
      const third = await raw(port, `GET /v1/spec HTTP/1.1\r\nHost: x\r\n${auth}\r\n`);
      expect(third).toBe("");
      held[0]!.destroy();
      await waitFor(() => {
        void open().then((c) => {
          n = c;
        });
        return n === 1;
      }, "one connection left");
      // with room again, a request is served
      const served = await raw(port, `GET /v1/spec HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`);
      expect(parse(served).status).toBe(200);
    } finally {
      for (const s of held) s.destroy();
    }
  });
});

describe("tokens and bind addresses", () => {
  it("refuses identical, or empty, tokens at start", async () => {
    g = await testGateway({ backend: { type: "mirror" } });
    const gateway = g.gateway;
    await expect(buildApp({ gateway, agentToken: "same", operatorToken: "same" })).rejects.toThrow(
      /identical/,
    );
    await expect(buildApp({ gateway, agentToken: "", operatorToken: "op" })).rejects.toThrow(
      /agent token is empty/,
    );
  });

  it("isLoopback parses the address instead of testing a prefix", () => {
    for (const h of ["127.0.0.1", "127.3.4.5", "::1", "[::1]", "::ffff:127.0.0.1", "localhost"]) {
      expect(isLoopback(h), h).toBe(true);
    }
    for (const h of [
      "127.example.com",
      "127.0.0.1.nip.io",
      "0.0.0.0",
      "::",
      "10.0.0.1",
      "::ffff:10.0.0.1",
      "127",
    ]) {
      expect(isLoopback(h), h).toBe(false);
    }
  });
});

describe("structured logs", () => {
  it("logs every request with its id (also answered in x-request-id) and never a token", async () => {
    const log = new PassThrough();
    let text = "";
    log.on("data", (d) => {
      text += d.toString();
    });
    const { port } = await listen({}, log);
    const base = `http://127.0.0.1:${port}`;
    const ok = await fetch(`${base}/v1/spec`, { headers: { authorization: `Bearer ${AGENT_TOKEN}` } });
    const id = ok.headers.get("x-request-id");
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    await fetch(`${base}/v1/admin/state`, { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } });
    await fetch(`${base}/v1/admin/state`, { headers: { authorization: `Bearer ${AGENT_TOKEN}` } });
    await fetch(`${base}/v1/spec`, { headers: { authorization: "Bearer wrong-token-value" } });
    await waitFor(
      () => text.split("\n").filter((l) => l.includes("request completed")).length >= 4,
      "4 log lines",
    );
    const lines = text
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.some((l) => l.reqId === id)).toBe(true);
    expect(text).not.toContain(AGENT_TOKEN);
    expect(text).not.toContain(OPERATOR_TOKEN);
    expect(text).not.toContain("wrong-token-value");
  });
});

describe("device codes at the operator API", () => {
  it("recover with ROS down answers 503 RB_ERR_ROS_NOT_CONNECTED, not 500", async () => {
    g = await testGateway({ backend: { type: "mirror" } });
    // the mirror stands for a real bench whose ROS link is down: its recover() raises the device code
    (g.gateway.bench.backend as { recover?: () => Promise<void> }).recover = async () => {
      throw new DeviceError("RB_ERR_ROS_NOT_CONNECTED", { url: "ws://127.0.0.1:9", operation: "recover" });
    };
    const res = await g.app.inject({ method: "POST", url: "/v1/admin/recover", headers: g.operator });
    expect(res.statusCode).toBe(503);
    expectShape(res.json(), "RB_ERR_ROS_NOT_CONNECTED");
  });
});
