/**
 * The HTTP edge's error shape: every error leaves as {error: {code, message, details}} with the
 * status of its registered code (docs/errors.md). Fastify's own errors (body parsing, media
 * type, size) are mapped to registered codes here; anything else is an internal error, logged
 * with its id.
 */
import { randomUUID } from "node:crypto";
import type { FastifyError, FastifyInstance, FastifyReply } from "fastify";
import { hasZodFastifySchemaValidationErrors } from "fastify-type-provider-zod";
import { GatewayError, isGatewayError } from "../errors.ts";

export function sendError(reply: FastifyReply, e: GatewayError): FastifyReply {
  return reply.code(e.status).type("application/json").send(e.toBody());
}

/** Install the not-found and error handlers of the root instance (they apply to every plugin). */
export function installErrorHandlers(app: FastifyInstance, bodyLimit: number): void {
  app.setNotFoundHandler((req, reply) => {
    sendError(
      reply,
      new GatewayError("RB_ERR_NOT_FOUND", { method: req.method, url: req.url.split("?")[0] }),
    );
  });

  app.setErrorHandler((err: FastifyError, req, reply) => {
    if (isGatewayError(err)) return sendError(reply, err);
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
    const id = randomUUID();
    req.log.error({ err, id }, "internal error");
    return sendError(reply, new GatewayError("RB_ERR_INTERNAL", { id }));
  });
}
