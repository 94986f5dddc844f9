/** The operator API: episodes, tasks, e-stop, recover, bench state. */
import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { listTasks } from "../../../tasks/registry.ts";
import { episodeSummary } from "../../episode/summary.ts";
import { GatewayError } from "../../errors.ts";
import { guard } from "../auth.ts";
import {
  EmptyBodySchema,
  EpisodeSummarySchema,
  ErrorResponseSchema,
  EstopRequestSchema,
  StartEpisodeRequestSchema,
} from "../schemas.ts";
import { ERROR_RESPONSES as errors, type RouteOptions } from "./common.ts";

export const adminRoutes: FastifyPluginAsync<RouteOptions> = async (app, opts) => {
  const gw = opts.gateway;
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.addHook("onRequest", guard("operator", opts));

  r.post(
    "/v1/admin/episodes",
    {
      schema: {
        body: StartEpisodeRequestSchema.default({ setting: "standard", privileged: false }),
        response: { 200: EpisodeSummarySchema, ...errors },
      },
    },
    async (req) => episodeSummary(await gw.startEpisode(req.body)),
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
    async () => ({ episodes: gw.episodes().map(episodeSummary) }),
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

  r.post("/v1/admin/release", { schema: { body: EmptyBodySchema } }, async () => gw.releaseEstop());

  r.post("/v1/admin/recover", { schema: { body: EmptyBodySchema } }, async () => {
    const b = gw.bench.backend;
    if (!b.recover)
      throw new GatewayError("RB_ERR_BACKEND_UNSUPPORTED", {
        backend: b.kind,
        operation: "recover",
        reason: "it has no devices to recover",
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
};
