/**
 * MCP over streamable HTTP at `/mcp` (stateless, JSON responses): each POST carries one JSON-RPC
 * message (or batch) and gets its answer; there are no sessions and no server-sent stream, so
 * GET and DELETE answer 405.
 *
 * It acts with the agent token of the request and nothing else: another bearer is refused before
 * MCP sees the request (the operator token with RB_ERR_FORBIDDEN, anything else with
 * RB_ERR_UNAUTHORIZED), the tool layer holds an AgentClient, and the client's requests are served
 * in-process by `inject()` into the agent routes, which refuse every `/v1/admin/` path here too.
 */
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { tokenMatches } from "../api/auth.ts";
import { AgentClient } from "../client/client.ts";
import { GatewayError } from "../errors.ts";
import { createMcpServer } from "./server.ts";

export interface McpPluginOptions {
  agentToken: string;
  operatorToken: string;
}

export const MCP_PATH = "/mcp";

/** fetch over `app.inject()`: the client's calls reach the agent routes without a socket. */
export function injectFetch(app: FastifyInstance): typeof fetch {
  return async (input, init) => {
    const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
    if (url.pathname.startsWith("/v1/admin/") || url.pathname === "/v1/admin") {
      const body = new GatewayError("RB_ERR_FORBIDDEN", { url: url.pathname }).toBody();
      return new Response(JSON.stringify(body), {
        status: 403,
        headers: { "content-type": "application/json" },
      });
    }
    const headers: Record<string, string> = {};
    new Headers(init?.headers).forEach((v, k) => {
      headers[k] = v;
    });
    const res = await app.inject({
      method: (init?.method ?? "GET") as "GET" | "POST",
      url: url.pathname + url.search,
      headers,
      ...(typeof init?.body === "string" ? { payload: init.body } : {}),
    });
    const out = new Headers();
    for (const [k, v] of Object.entries(res.headers)) {
      if (v === undefined) continue;
      for (const x of Array.isArray(v) ? v : [v]) out.append(k, String(x));
    }
    return new Response(res.rawPayload, { status: res.statusCode, headers: out });
  };
}

export async function mcpPlugin(app: FastifyInstance, opts: McpPluginOptions): Promise<void> {
  // one client per base URL the gateway is reached at (it keeps the spec between requests): the
  // base names the resources a tool returns (a chunk's MP4), so their uri is one the MCP client
  // can fetch with its agent token; the calls themselves never leave the process (inject)
  const clients = new Map<string, AgentClient>();
  const clientFor = (req: FastifyRequest): AgentClient => {
    const host = req.headers.host;
    const base = host && /^[A-Za-z0-9.[\]:-]{1,262}$/.test(host) ? `${req.protocol}://${host}` : "http://gateway.inject";
    let c = clients.get(base);
    if (!c) {
      if (clients.size >= 16) clients.clear();
      c = new AgentClient({ url: base, token: opts.agentToken, fetch: injectFetch(app) });
      clients.set(base, c);
    }
    return c;
  };

  const authorize = (req: FastifyRequest) => {
    const auth = req.headers.authorization;
    if (tokenMatches(auth, opts.agentToken)) return;
    if (tokenMatches(auth, opts.operatorToken)) throw new GatewayError("RB_ERR_FORBIDDEN", { url: MCP_PATH });
    throw new GatewayError("RB_ERR_UNAUTHORIZED");
  };

  app.post(MCP_PATH, { schema: { hide: true } }, async (req, reply) => {
    authorize(req);
    const server = createMcpServer(clientFor(req));
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    reply.hijack();
    reply.raw.on("close", () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(req.raw, reply.raw, req.body);
    } catch (e) {
      // hijacked: fastify's error handler no longer answers for this request
      req.log.error({ err: e }, "mcp request failed");
      if (!reply.raw.headersSent) {
        const body = new GatewayError("RB_ERR_INTERNAL", { id: req.id }).toBody();
        reply.raw.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify(body));
      }
    }
  });

  for (const method of ["GET", "DELETE"] as const) {
    app.route({
      method,
      url: MCP_PATH,
      schema: { hide: true },
      handler: async (req) => {
        authorize(req);
        throw new GatewayError("RB_ERR_METHOD_NOT_ALLOWED", { method, url: MCP_PATH });
      },
    });
  }
}
