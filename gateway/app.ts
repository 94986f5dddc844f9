/**
 * The HTTP shell of the gateway: a fastify app built by a factory (testable with inject()).
 * Routes are plugins by concern under api/routes/ (agent API, kinematics, frames, admin,
 * privileged); each installs the guard of its role. They validate with the zod schemas of
 * api/schemas.ts, which also generate GET /v1/openapi.json. Every error leaves as
 * {error: {code, message, details}} (api/http-errors.ts), also fastify's and Node's own.
 * State lives in the Gateway and in small stores passed in (snapshots, capture admission),
 * never in this function. The edge's limits (timeouts, connections, nesting, frames) are
 * documented in docs/http-edge.md.
 */
import { randomUUID } from "node:crypto";
import fastifySwagger from "@fastify/swagger";
import { attachStream } from "./api/stream.ts";
import Fastify, { type FastifyInstance } from "fastify";
import { jsonSchemaTransform, validatorCompiler, type ZodTypeProvider } from "fastify-type-provider-zod";
import { CaptureAdmission } from "./api/capacity.ts";
import {
  clientErrorHandler,
  frameworkErrors,
  installErrorHandlers,
  MAX_PARAM_LENGTH,
  sendError,
} from "./api/http-errors.ts";
import { MAX_BODY_DEPTH, tooDeepAt } from "./api/json-bounds.ts";
import { adminRoutes } from "./api/routes/admin.ts";
import { agentRoutes } from "./api/routes/agent.ts";
import { frameRoutes } from "./api/routes/frames.ts";
import { kinematicsRoutes } from "./api/routes/kinematics.ts";
import { privilegedRoutes } from "./api/routes/privileged.ts";
import { guard } from "./api/auth.ts";
import { consoleRoutes } from "./console/routes.ts";
import { mcpPlugin } from "./mcp/plugin.ts";
import { SnapshotStore } from "./api/snapshot-store.ts";
import { VideoEncoder, type VideoOptions } from "./frames/video.ts";
import { ERRORS, GatewayError } from "./errors.ts";
import type { Gateway } from "./gateway.ts";

/** Limits of the HTTP edge (defaults in HTTP_LIMITS). */
export interface HttpLimits {
  /** the whole request (headers and body) must arrive within this, ms */
  requestTimeoutMs: number;
  /** the headers must arrive within this, ms (≤ requestTimeoutMs) */
  headersTimeoutMs: number;
  /** a socket with no traffic either way is closed after this, ms (longer than any call) */
  idleTimeoutMs: number;
  /** an idle keep-alive connection is closed after this, ms */
  keepAliveTimeoutMs: number;
  /** open connections at most; more are refused at accept */
  maxConnections: number;
  /** calls that capture frames at once */
  maxConcurrentCaptures: number;
}

export const HTTP_LIMITS: HttpLimits = {
  requestTimeoutMs: 10_000,
  headersTimeoutMs: 5_000,
  idleTimeoutMs: 120_000,
  keepAliveTimeoutMs: 5_000,
  maxConnections: 256,
  maxConcurrentCaptures: 16,
};

export interface AppOptions {
  gateway: Gateway;
  agentToken: string;
  operatorToken: string;
  /** max request body, bytes */
  bodyLimitBytes?: number;
  /** structured logging (pino, fastify's own): true for info on stdout, or a level and a stream */
  logger?: boolean | { level?: string; stream?: NodeJS.WritableStream };
  /** simulator snapshots of the privileged API (a fresh store when omitted) */
  snapshots?: SnapshotStore;
  limits?: Partial<HttpLimits>;
  /** act's frames.video: the ffmpeg binary and encode limits (defaults: `ffmpeg` on PATH) */
  video?: Partial<VideoOptions>;
}

/** Refuse token setups where a role would not be separate (checked before anything listens). */
function checkTokens(agentToken: string, operatorToken: string): void {
  if (!agentToken) throw new Error("the agent token is empty: every client could call the agent API");
  if (!operatorToken)
    throw new Error("the operator token is empty: every client could call the operator API");
  if (agentToken === operatorToken) {
    throw new Error(
      "the agent and operator tokens are identical: the agent could e-stop, end episodes and more",
    );
  }
}

/**
 * A JSON body of at least this many characters is parsed in a turn of its own, and checked and
 * validated in the next: JSON.parse takes ~10-15 µs per KB; an act of 300 tool poses is ~23 KB.
 */
const LARGE_BODY_CHARS = 8 * 1024;

export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  checkTokens(opts.agentToken, opts.operatorToken);
  const limits = { ...HTTP_LIMITS, ...opts.limits };
  const bodyLimit = opts.bodyLimitBytes ?? 1024 * 1024;
  const logger =
    opts.logger === undefined || opts.logger === false
      ? false
      : {
          level: opts.logger === true ? "info" : (opts.logger.level ?? "info"),
          ...(opts.logger !== true && opts.logger.stream ? { stream: opts.logger.stream } : {}),
          // the default serialisers log no headers; should one ever, no token leaves in a log line
          redact: ["req.headers.authorization", "headers.authorization"],
        };
  const app = Fastify({
    logger,
    genReqId: () => randomUUID(),
    bodyLimit,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // our own 503 below answers in the API's shape
    return503OnClosing: false,
    requestTimeout: limits.requestTimeoutMs,
    connectionTimeout: limits.idleTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    http: {
      headersTimeout: Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs),
      // how often Node checks the two timeouts above (its default, 30 s, lets slow bodies linger)
      connectionsCheckingInterval: Math.max(50, Math.min(1_000, limits.headersTimeoutMs / 2)),
    },
    frameworkErrors,
    clientErrorHandler,
  }).withTypeProvider<ZodTypeProvider>();
  app.server.maxConnections = limits.maxConnections;
  app.setValidatorCompiler(validatorCompiler);
  // Responses are built by this server and typed by the same zod schemas at compile time; the
  // schemas document them (OpenAPI) and the contract test validates every response shape. Encoding
  // them through zod again on every call cost ~0.2 ms per act, so the wire format is plain JSON.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  await app.register(fastifySwagger, {
    openapi: {
      info: { title: "robot-gateway Standard API", version: "1" },
      components: {
        securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
      },
    },
    transform: jsonSchemaTransform,
  });
  installErrorHandlers(app, bodyLimit);
  // fastify's own JSON parser (the same errors and prototype-poisoning rules); for a large body
  // the socket read, the parse and the validation (then, for an act, the chunk rules) are three
  // turns of the event loop, not one: an e-stop or a contact's bytes that arrive meanwhile wait
  // for one of them, ~0.3-0.5 ms for an act of 300 tool poses (#10)
  const json = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (req, body, done) => {
    const text = body.toString(); // parseAs "string": already one
    if (text.length < LARGE_BODY_CHARS) return json(req, text, done);
    setImmediate(() => json(req, text, (err, value) => setImmediate(() => done(err, value))));
  });

  let closing = false;
  app.addHook("preClose", async () => {
    closing = true;
  });
  app.addHook("onRequest", async (req, reply) => {
    reply.header("x-request-id", req.id);
    if (closing) {
      reply.header("connection", "close");
      return sendError(reply, new GatewayError("RB_ERR_SHUTTING_DOWN"));
    }
  });
  // no body may nest deeper than any field needs (a deep value overflows recursive walks later)
  app.addHook("preValidation", async (req) => {
    const at = req.body === undefined ? undefined : tooDeepAt(req.body, MAX_BODY_DEPTH);
    if (at !== undefined) throw new GatewayError("RB_ERR_JSON_TOO_DEEP", { max: MAX_BODY_DEPTH, path: at });
  });

  const routeOpts = { gateway: opts.gateway, agentToken: opts.agentToken, operatorToken: opts.operatorToken };
  const captures = new CaptureAdmission(opts.gateway.frames, limits.maxConcurrentCaptures);
  await app.register(agentRoutes, {
    ...routeOpts,
    captures,
    onClientDisconnect: opts.gateway.bench.onClientDisconnect ?? "finish",
    video: new VideoEncoder(opts.video),
  });
  await app.register(kinematicsRoutes, routeOpts);
  await app.register(frameRoutes, routeOpts);
  await app.register(adminRoutes, routeOpts);
  await app.register(privilegedRoutes, { ...routeOpts, snapshots: opts.snapshots ?? new SnapshotStore() });
  await app.register(consoleRoutes, {
    gateway: opts.gateway,
    hub: opts.gateway.console,
    operatorGuard: guard("operator", routeOpts),
  });
  await app.register(mcpPlugin, { agentToken: opts.agentToken, operatorToken: opts.operatorToken });
  attachStream(app, opts.gateway, routeOpts, captures);

  app.get("/v1/openapi.json", { schema: { hide: true } }, async () => app.swagger());

  return app;
}

/** Every error code, for docs and tests. */
export const ERROR_CODES = Object.keys(ERRORS);
