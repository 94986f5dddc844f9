/**
 * One HTTP helper for in-process API tests: a call through fastify's `inject()` with the
 * agent's or the operator's token, answering the status and the parsed body (JSON, or the raw
 * bytes of a frame).
 */
import type { FastifyInstance } from "fastify";

export interface ApiTarget {
  app: FastifyInstance;
  agent: Record<string, string>;
  operator: Record<string, string>;
}

export interface ApiAnswer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: tests read response bodies freely
  body: any;
  /** the raw response text (JSON bodies) */
  text: string;
}

export async function api(
  g: ApiTarget,
  method: "GET" | "POST",
  url: string,
  body?: unknown,
  who: "agent" | "operator" = "agent",
): Promise<ApiAnswer> {
  const res = await g.app.inject({
    method,
    url,
    headers: who === "agent" ? g.agent : g.operator,
    ...(body !== undefined ? { payload: body as object } : {}),
  });
  const json = res.headers["content-type"]?.toString().startsWith("application/json");
  return { status: res.statusCode, body: json ? res.json() : res.rawPayload, text: res.body };
}
