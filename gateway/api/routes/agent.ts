/** The Standard API an agent plays through: task card, spec, observe, act, reset, finish, submit, instruments. */
import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { ROBOTS } from "../../../robots/franka/models.ts";
import { guard } from "../auth.ts";
import {
  ActRequestSchema,
  ActResponseSchema,
  EpisodeResponseSchema,
  ErrorResponseSchema,
  InstrumentResponseSchema,
  ObserveRequestSchema,
  ObserveResponseSchema,
  SpecSchema,
  SubmitRequestSchema,
  TaskCardSchema,
} from "../schemas.ts";
import { buildSpec } from "../spec.ts";
import { ERROR_RESPONSES as errors, type RouteOptions, timed } from "./common.ts";

export const agentRoutes: FastifyPluginAsync<RouteOptions> = async (app, opts) => {
  const gw = opts.gateway;
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.addHook("onRequest", guard("agent", opts));

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

  r.post("/v1/reset", { schema: { response: { 200: EpisodeResponseSchema, ...errors } } }, async () => {
    const ep = gw.requireEpisode();
    await ep.reset();
    return { ...timed(ep), episode: ep.status() };
  });

  r.post("/v1/finish", { schema: { response: { 200: EpisodeResponseSchema, ...errors } } }, async () => {
    const ep = gw.requireEpisode();
    ep.finish();
    return { ...timed(ep), episode: ep.status() };
  });

  r.post(
    "/v1/submit",
    { schema: { body: SubmitRequestSchema, response: { 200: EpisodeResponseSchema, ...errors } } },
    async (req) => {
      const ep = gw.requireEpisode();
      ep.submit(req.body.answer, req.body.evidence);
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
};
