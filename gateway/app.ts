/**
 * The HTTP shell of the gateway: a fastify app built by a factory (testable with inject()).
 * Routes validate with the zod schemas of api/schemas.ts, which also generate
 * GET /v1/openapi.json. Every error leaves as {error: {code, message, details}}.
 */
import { randomUUID, timingSafeEqual } from "node:crypto";
import fastifySwagger from "@fastify/swagger";
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from "fastify";
import {
  hasZodFastifySchemaValidationErrors,
  jsonSchemaTransform,
  validatorCompiler,
  type ZodTypeProvider,
} from "fastify-type-provider-zod";
import { z } from "zod";
import { ROBOTS } from "../robots/franka/models.ts";
import { hasSimPowers } from "../seam/types.ts";
import { listTasks } from "../tasks/registry.ts";
import { r6 } from "./time.ts";
import {
  ActRequestSchema,
  ActResponseSchema,
  EpisodeResponseSchema,
  EpisodeSummarySchema,
  ErrorResponseSchema,
  EstopRequestSchema,
  FkRequestSchema,
  FkResponseSchema,
  IkRequestSchema,
  IkResponseSchema,
  InstrumentResponseSchema,
  ObserveRequestSchema,
  ObserveResponseSchema,
  SpecSchema,
  StartEpisodeRequestSchema,
  SubmitRequestSchema,
  TaskCardSchema,
} from "./api/schemas.ts";
import { buildSpec } from "./api/spec.ts";
import { ERRORS, GatewayError, isGatewayError } from "./errors.ts";
import type { Episode } from "./episode/episode.ts";
import type { Gateway } from "./gateway.ts";
import { episodeSummary } from "./episode/summary.ts";
import { consoleRoutes } from "./console/routes.ts";
import { mcpPlugin } from "./mcp/plugin.ts";

export interface AppOptions {
  gateway: Gateway;
  agentToken: string;
  operatorToken: string;
  /** max request body, bytes */
  bodyLimitBytes?: number;
  logger?: boolean;
}

type Role = "agent" | "operator";

function tokenMatches(header: string | undefined, token: string): boolean {
  if (!header?.startsWith("Bearer ")) return false;
  const a = Buffer.from(header.slice(7));
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

function sendError(reply: FastifyReply, e: GatewayError): FastifyReply {
  return reply.code(e.status).type("application/json").send(e.toBody());
}

export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const gw = opts.gateway;
  const bodyLimit = opts.bodyLimitBytes ?? 1024 * 1024;
  const app = Fastify({
    logger: opts.logger ?? false,
    bodyLimit,
    return503OnClosing: true,
  }).withTypeProvider<ZodTypeProvider>();
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

  const guard = (role: Role) => async (req: FastifyRequest, reply: FastifyReply) => {
    const auth = req.headers.authorization;
    if (tokenMatches(auth, role === "agent" ? opts.agentToken : opts.operatorToken)) return;
    const other = role === "agent" ? opts.operatorToken : opts.agentToken;
    if (tokenMatches(auth, other))
      return sendError(reply, new GatewayError("RB_ERR_FORBIDDEN", { url: req.url }));
    return sendError(reply, new GatewayError("RB_ERR_UNAUTHORIZED"));
  };

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

  const errors = {
    400: ErrorResponseSchema,
    401: ErrorResponseSchema,
    403: ErrorResponseSchema,
    409: ErrorResponseSchema,
    422: ErrorResponseSchema,
  };
  const timed = (ep: Episode | undefined) => ({
    t: ep ? r6(ep.t()) : 0,
    time_left_s: ep ? r6(ep.timeLeftS()) : 0,
  });

  // ---------------------------------------------------------------- agent API
  await app.register(async (agent) => {
    const r = agent.withTypeProvider<ZodTypeProvider>();
    r.addHook("onRequest", guard("agent"));

    r.get("/v1/task", { schema: { response: { 200: TaskCardSchema, ...errors } } }, async () => {
      const ep = gw.requireEpisode();
      const task = ep.config.task;
      const b = ep.config.budgets;
      return {
        task_id: task.id,
        title: task.title,
        instruction: task.instruction(ep.config.level, ep.config.setting, b),
        setting: ep.config.setting,
        level: ep.config.level,
        actions: [...(task.levels[ep.config.level]?.actions ?? [])],
        budgets: {
          time_limit_s: b.timeLimitS,
          resets: b.resets,
          max_rows_per_chunk: b.maxRowsPerChunk,
          max_frames_per_call: b.maxFramesPerCall,
          max_call_s: b.maxCallS,
          max_steps: b.maxSteps,
        },
        ...(task.submission ? { submission: task.submission } : {}),
        ...(task.instruments ? { instruments: [...task.instruments] } : {}),
        episode: ep.status(),
      };
    });

    r.get("/v1/spec", { schema: { response: { 200: SpecSchema } } }, async () =>
      buildSpec(gw.bench.backend.describe(), gw.actions, gw.bench.maxDtS, Object.values(ROBOTS)),
    );

    r.post(
      "/v1/observe",
      {
        schema: {
          body: ObserveRequestSchema.default({ advance_s: 0, depth: false, encoding: "jpeg" }),
          response: { 200: ObserveResponseSchema, ...errors },
        },
      },
      async (req) => {
        const ep = gw.requireEpisode();
        const out = await ep.observe(req.body);
        return { ...timed(ep), ...out, episode: ep.status() };
      },
    );

    r.post(
      "/v1/act",
      { schema: { body: ActRequestSchema, response: { 200: ActResponseSchema, ...errors } } },
      async (req) => {
        const ep = gw.requireEpisode();
        const out = await ep.act(req.body);
        return { ...timed(ep), ...out, episode: ep.status() };
      },
    );

    r.post(
      "/v1/kinematics/fk",
      { schema: { body: FkRequestSchema, response: { 200: FkResponseSchema, ...errors } } },
      async (req) => {
        const fk = gw.fk(req.body.q);
        return {
          ...timed(gw.episode),
          tool: fk.tool,
          flange: fk.flange,
        };
      },
    );

    r.post(
      "/v1/kinematics/ik",
      { schema: { body: IkRequestSchema, response: { 200: IkResponseSchema, ...errors } } },
      async (req) => {
        const ep = gw.episode;
        const seed = req.body.q_seed ?? gw.bench.backend.read().q;
        const sol = gw.bench.ik.solve(req.body.pose, seed);
        if (!sol.ok)
          throw new GatewayError("RB_ERR_IK_UNREACHABLE", {
            reason: sol.reason,
            position_residual_m: sol.positionResidualM,
            orientation_residual_rad: sol.orientationResidualRad,
          });
        return {
          ...timed(ep),
          q: sol.q,
          position_residual_m: sol.positionResidualM,
          orientation_residual_rad: sol.orientationResidualRad,
        };
      },
    );

    r.post("/v1/reset", { schema: { response: { 200: EpisodeResponseSchema, ...errors } } }, async () => {
      const ep = gw.requireEpisode();
      await ep.reset();
      return { ...timed(ep), episode: ep.status() };
    });

    r.post("/v1/finish", { schema: { response: { 200: EpisodeResponseSchema, ...errors } } }, async () => {
      const ep = gw.requireEpisode();
      await ep.finish();
      return { ...timed(ep), episode: ep.status() };
    });

    r.post(
      "/v1/submit",
      { schema: { body: SubmitRequestSchema, response: { 200: EpisodeResponseSchema, ...errors } } },
      async (req) => {
        const ep = gw.requireEpisode();
        await ep.submit(req.body.answer, req.body.evidence);
        return { ...timed(ep), episode: ep.status() };
      },
    );

    r.get(
      "/v1/instruments/:name",
      {
        schema: {
          params: z.object({ name: z.string().max(100) }),
          response: { 200: InstrumentResponseSchema, 404: ErrorResponseSchema },
        },
      },
      async (req) => {
        const ep = gw.requireEpisode();
        return { ...timed(ep), ...ep.instrument(req.params.name) };
      },
    );

    r.get(
      "/v1/frames/:id",
      { schema: { params: z.object({ id: z.string().max(100) }) } },
      async (req, reply) => {
        const img = gw.frames.get(req.params.id);
        if (!img) throw new GatewayError("RB_ERR_FRAME_NOT_FOUND", { id: req.params.id });
        const { contentType, data } = await img;
        return reply.type(contentType).send(data);
      },
    );
  });

  // ---------------------------------------------------------------- operator API
  await app.register(async (op) => {
    const r = op.withTypeProvider<ZodTypeProvider>();
    r.addHook("onRequest", guard("operator"));

    r.post(
      "/v1/admin/episodes",
      {
        schema: {
          body: StartEpisodeRequestSchema.default({ setting: "standard", privileged: false }),
          response: { 200: EpisodeSummarySchema, ...errors },
        },
      },
      async (req) => {
        const ep = await gw.startEpisode(req.body);
        return episodeSummary(ep);
      },
    );

    r.get("/v1/admin/tasks", async () => ({
      tasks: listTasks().map((t) => ({
        id: t.id,
        title: t.title,
        levels: Object.keys(t.levels),
        default_level: t.defaultLevel,
        settings: [...t.settings],
      })),
    }));

    r.get(
      "/v1/admin/episodes",
      { schema: { response: { 200: z.object({ episodes: z.array(EpisodeSummarySchema) }) } } },
      async () => ({
        episodes: gw.episodes().map(episodeSummary),
      }),
    );

    r.get(
      "/v1/admin/episodes/:id",
      {
        schema: {
          params: z.object({ id: z.string().max(100) }),
          response: { 200: EpisodeSummarySchema, 404: ErrorResponseSchema },
        },
      },
      async (req) => {
        const ep = gw.findEpisode(req.params.id);
        if (!ep) throw new GatewayError("RB_ERR_NOT_FOUND", { method: "GET", url: req.url });
        return episodeSummary(ep);
      },
    );

    r.post(
      "/v1/admin/episodes/:id/end",
      {
        schema: {
          params: z.object({ id: z.string().max(100) }),
          body: z
            .strictObject({
              reason: z.enum(["finished", "aborted"]).default("aborted"),
              detail: z.string().max(500).optional(),
            })
            .default({ reason: "aborted" }),
          response: { 200: EpisodeSummarySchema, 404: ErrorResponseSchema, 409: ErrorResponseSchema },
        },
      },
      async (req) => {
        const ep = gw.findEpisode(req.params.id);
        if (!ep) throw new GatewayError("RB_ERR_NOT_FOUND", { method: "POST", url: req.url });
        if (ep.isEnded) throw new GatewayError("RB_ERR_EPISODE_ENDED", { reason: ep.endReason });
        await gw.stopAndEnd(
          { source: "operator", detail: req.body.detail ?? "ended by the operator" },
          req.body.reason,
          ep,
        );
        return episodeSummary(ep);
      },
    );

    r.post(
      "/v1/admin/estop",
      { schema: { body: EstopRequestSchema.default({ reason: "operator" }) } },
      async (req) => gw.engageEstop(req.body.reason),
    );

    r.post("/v1/admin/release", async () => gw.releaseEstop());

    r.post("/v1/admin/recover", async () => {
      const b = gw.bench.backend;
      if (!b.recover)
        throw new GatewayError("RB_ERR_SETTING_UNAVAILABLE", {
          setting: "recover",
          reason: `the ${b.kind} backend has nothing to recover`,
        });
      await b.recover();
      return { backend: { kind: b.kind, lifecycle: b.lifecycle } };
    });

    r.get("/v1/admin/state", async () => {
      const ep = gw.episode;
      return {
        bench: gw.bench.name,
        backend: { kind: gw.bench.backend.kind, lifecycle: gw.bench.backend.lifecycle },
        estop: gw.estop,
        reading: gw.bench.backend.read(),
        episode: ep ? { ...episodeSummary(ep), instance: ep.config.instance, counters: ep.counters } : null,
      };
    });

    const privileged = () => {
      const ep = gw.requireEpisode();
      const b = gw.bench.backend;
      if (!gw.bench.simulated || !hasSimPowers(b)) {
        throw new GatewayError("RB_ERR_PRIVILEGED_UNAVAILABLE", { reason: "the bench is not simulated" });
      }
      if (!ep.config.privileged) {
        throw new GatewayError("RB_ERR_PRIVILEGED_UNAVAILABLE", {
          reason: "the episode was not started with privileged: true",
        });
      }
      return b;
    };
    // snapshots belong to the episode that took them: a new episode starts with none
    const snapshots = new Map<string, { episode: string; data: Uint8Array }>();
    r.get("/v1/admin/privileged/state", async () => privileged().privilegedState());
    r.post("/v1/admin/privileged/snapshot", async () => {
      const b = privileged();
      const episode = gw.requireEpisode().id;
      for (const [k, v] of snapshots) if (v.episode !== episode) snapshots.delete(k);
      const id = randomUUID();
      snapshots.set(id, { episode, data: b.snapshot() });
      return { snapshot_id: id };
    });
    r.post(
      "/v1/admin/privileged/restore",
      { schema: { body: z.strictObject({ snapshot_id: z.string() }) } },
      async (req) => {
        const b = privileged();
        const snap = snapshots.get(req.body.snapshot_id);
        if (!snap || snap.episode !== gw.requireEpisode().id) {
          throw new GatewayError("RB_ERR_NOT_FOUND", { method: "snapshot", url: req.body.snapshot_id });
        }
        try {
          b.restore(snap.data);
        } catch (e) {
          throw new GatewayError("RB_ERR_PRIVILEGED_UNAVAILABLE", {
            reason: `restore refused: ${e instanceof Error ? e.message : String(e)}`,
          });
        }
        return { restored: req.body.snapshot_id };
      },
    );
  });

  await app.register(consoleRoutes, { gateway: gw, hub: gw.console, operatorGuard: guard("operator") });
  await app.register(mcpPlugin, { agentToken: opts.agentToken, operatorToken: opts.operatorToken });

  // ---------------------------------------------------------------- public
  app.get("/v1/openapi.json", { schema: { hide: true } }, async () => app.swagger());

  return app;
}

/** Every error code, for docs and tests. */
export const ERROR_CODES = Object.keys(ERRORS);
