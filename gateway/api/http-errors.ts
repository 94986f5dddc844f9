/**
 * The HTTP edge's error shape: every error leaves as {error: {code, message, details}} with the
 * status of its registered code (docs/errors.md). That includes what fastify and Node answer on
 * their own: validation and body-parser errors, a malformed URL or an over-long path parameter
 * (frameworkErrors), an unknown route or a wrong method (404 / 405 with an Allow header),
 * malformed HTTP, oversized headers and request timeouts (clientErrorHandler, written straight
 * to the socket), and requests that arrive while the server closes (503). Anything else is an
 * internal error, logged with the request id.
 */
import type { Socket } from "node:net";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from "fastify";
import { hasZodFastifySchemaValidationErrors } from "fastify-type-provider-zod";
import { CodedError } from "../../seam/errors.ts";
import { GatewayError } from "../errors.ts";

/** Send any coded error (API or device code) with its registered status. */
export function sendError(reply: FastifyReply, e: CodedError): FastifyReply {
  const body = { error: { code: e.code, message: e.message, details: e.details } };
  // over capacity and the like: say when to come back (RFC 9110 Retry-After, seconds)
  const retry = (e.details as { retry_after_s?: unknown } | undefined)?.retry_after_s;
  if (typeof retry === "number" && Number.isFinite(retry)) reply.header("retry-after", String(Math.ceil(retry)));
  return reply.code(e.status).type("application/json").send(body);
}

const pathOf = (url: string) => url.split("?")[0] ?? url;

/** fastify's `frameworkErrors` option: a malformed URL, an over-long path parameter. */
export function frameworkErrors(err: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  const url = pathOf(req.raw.url ?? "");
  if (err.code === "FST_ERR_MAX_PARAM_LENGTH") {
    sendError(
      reply,
      new GatewayError("RB_ERR_URL_TOO_LONG", { url: url.slice(0, 200), max: MAX_PARAM_LENGTH }),
    );
    return;
  }
  sendError(reply, new GatewayError("RB_ERR_BAD_URL", { url: url.slice(0, 200), reason: err.message }));
}

/** Longest path parameter (ids are UUIDs or short names). */
export const MAX_PARAM_LENGTH = 100;

/** fastify's `clientErrorHandler`: Node's parser errors, written to the raw socket in the API's shape. */
export function clientErrorHandler(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  const e =
    err.code === "ERR_HTTP_REQUEST_TIMEOUT"
      ? new GatewayError("RB_ERR_REQUEST_TIMEOUT")
      : err.code === "HPE_HEADER_OVERFLOW"
        ? new GatewayError("RB_ERR_HEADERS_TOO_LARGE")
        : new GatewayError("RB_ERR_CLIENT_ERROR", { reason: err.code ?? "parse error" });
  const body = JSON.stringify(e.toBody());
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${e.status} ${e.status === 408 ? "Request Timeout" : e.status === 431 ? "Request Header Fields Too Large" : "Bad Request"}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/** A route's path as a matcher: `:name` stands for one segment. */
function matcher(url: string): RegExp {
  const esc = url
    .split("/")
    .map((seg) => (seg.startsWith(":") ? "[^/]+" : seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("/");
  return new RegExp(`^${esc}/?$`);
}

/**
 * Install the root handlers (they apply to every plugin). Call before the route plugins are
 * registered: the onRoute hook collects every route so a wrong method answers 405 with Allow.
 */
export function installErrorHandlers(app: FastifyInstance, bodyLimit: number): void {
  const routes: { re: RegExp; methods: Set<string> }[] = [];
  app.addHook("onRoute", (r: RouteOptions) => {
    const methods = Array.isArray(r.method) ? r.method : [r.method];
    let entry = routes.find((x) => x.re.source === matcher(r.url).source);
    if (!entry) routes.push((entry = { re: matcher(r.url), methods: new Set() }));
    for (const m of methods) entry.methods.add(m.toUpperCase());
  });

  app.setNotFoundHandler((req, reply) => {
    const url = pathOf(req.url);
    const allowed = new Set<string>();
    for (const r of routes) if (r.re.test(url)) for (const m of r.methods) allowed.add(m);
    if (allowed.size > 0 && !allowed.has(req.method)) {
      reply.header("allow", [...allowed].sort().join(", "));
      return sendError(reply, new GatewayError("RB_ERR_METHOD_NOT_ALLOWED", { method: req.method, url }));
    }
    return sendError(reply, new GatewayError("RB_ERR_NOT_FOUND", { method: req.method, url }));
  });

  app.setErrorHandler((err: FastifyError, req, reply) => {
    // API codes and device codes from below the seam (e.g. recover with ROS down) keep their status
    if (err instanceof CodedError) return sendError(reply, err);
    if (hasZodFastifySchemaValidationErrors(err)) {
      const issues = err.validation.map((v) => `${v.instancePath || "/"} ${v.message ?? ""}`.trim());
      return sendError(
        reply,
        new GatewayError("RB_ERR_BAD_REQUEST", { issues: issues.join("; "), list: issues }),
      );
    }
    // fastify's own body errors (FST_ERR_CTP_*) carry these statuses
    if (err instanceof SyntaxError || err.statusCode === 400) {
      return sendError(reply, new GatewayError("RB_ERR_BAD_JSON", { reason: err.message }));
    }
    if (err.statusCode === 413)
      return sendError(reply, new GatewayError("RB_ERR_BODY_TOO_LARGE", { limitBytes: bodyLimit }));
    if (err.statusCode === 415) {
      return sendError(
        reply,
        new GatewayError("RB_ERR_UNSUPPORTED_MEDIA", { contentType: req.headers["content-type"] ?? "none" }),
      );
    }
    const id = req.id;
    req.log.error({ err, id }, "internal error");
    return sendError(reply, new GatewayError("RB_ERR_INTERNAL", { id }));
  });
}
