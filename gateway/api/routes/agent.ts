/** The Standard API an agent plays through: task card, spec, observe, act, reset, finish, submit, instruments. */
import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { ROBOTS } from "../../../robots/franka/models.ts";
import { GatewayError } from "../../errors.ts";
import type { RealtimeSetup } from "../../episode/view.ts";
import type { Gateway } from "../../gateway.ts";
import { guard } from "../auth.ts";
import type { Frame } from "../../../seam/types.ts";
import type { VideoEncoder } from "../../frames/video.ts";
import { actCaptureBytes, type CaptureAdmission, captureBytes } from "../capacity.ts";
import { assertVideoAvailable, makeVideos, videoSpec } from "../video.ts";
import {
  ActRequestSchema,
  ActResponseSchema,
  EmptyBodySchema,
  EpisodeResponseSchema,
  ErrorResponseSchema,
  InstrumentResponseSchema,
  ObserveRequestSchema,
  ObserveResponseSchema,
  SpecSchema,
  SubmitRequestSchema,
  TaskCardSchema,
} from "../schemas.ts";
import { buildSpec, limitsDto } from "../spec.ts";
import { ERROR_RESPONSES as errors, type RouteOptions, timed } from "./common.ts";

export interface AgentRouteOptions extends RouteOptions {
  captures: CaptureAdmission;
  /** a client that disconnects mid-act: stop the motion, or let the chunk finish and record it */
  onClientDisconnect: "finish" | "stop";
  /** act's frames.video (ffmpeg) */
  video: VideoEncoder;
}

export const agentRoutes: FastifyPluginAsync<AgentRouteOptions> = async (app, opts) => {
  const gw = opts.gateway;
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.addHook("onRequest", guard("agent", opts));

  r.get("/v1/task", { schema: { response: { 200: TaskCardSchema, ...errors } } }, async () => {
    const ep = gw.requireEpisode();
    const task = ep.config.task;
    const b = ep.config.budgets;
    const ctx = ep.config.taskContext;
    const bench = ctx && task.benchFacts ? task.benchFacts(ctx, ep.config.level) : undefined;
    return {
      task_id: task.id,
      title: task.title,
      instruction: task.instruction(ep.config.level, ep.config.setting, b, bench),
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
      // per episode: the profile plus this seed's table and board volumes (the spec has no episode)
      safety: limitsDto(gw.bench.name, ep.config.limits),
      ...(bench ? { bench } : {}),
      ...(ep.config.realtime ? { realtime: realtimeCard(ep.config.realtime, gw) } : {}),
      episode: ep.status(),
    };
  });

  r.get("/v1/spec", { schema: { response: { 200: SpecSchema } } }, async () => ({
    ...buildSpec(
      gw.bench.backend.describe(),
      gw.actions,
      gw.bench.maxDtS,
      Object.values(ROBOTS),
      limitsDto(gw.bench.name, gw.bench.limits),
    ),
    video: await videoSpec(opts.video),
  }));

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
      const bytes = captureBytes(gw, req.body.cameras, req.body.depth, 1);
      const done = bytes > 0 ? opts.captures.admit(bytes) : () => {};
      try {
        const out = await ep.observe(req.body);
        return { ...timed(ep), ...out, episode: ep.status() };
      } finally {
        done();
      }
    },
  );

  r.post(
    "/v1/act",
    { schema: { body: ActRequestSchema, response: { 200: ActResponseSchema, ...errors } } },
    async (req, reply) => {
      const ep = gw.requireEpisode();
      if (req.body.start_step !== undefined && ep.config.setting !== "realtime") {
        throw new GatewayError("RB_ERR_REALTIME_ONLY", { field: "start_step", setting: ep.config.setting });
      }
      const f = req.body.frames;
      // a gateway that cannot make video refuses before anything moves
      if (f?.video) await assertVideoAvailable(opts.video);
      const period = gw.bench.backend.describe().controlPeriodS;
      const everyTicks = f ? Math.max(1, Math.round(1 / (f.fps * period))) : 1;
      const bytes = actCaptureBytes(gw, req.body);
      const done = bytes > 0 ? opts.captures.admit(bytes) : () => {};
      const onClose = () => {
        if (reply.raw.writableFinished || opts.onClientDisconnect !== "stop") return;
        req.log.info({ episode: ep.id }, "client disconnected mid-act: stopping the motion");
        // the one stop path: the robot stops at once and the episode ends (aborted, recorded)
        ep.requestStop({ source: "client", detail: "client disconnected mid-act" });
      };
      reply.raw.once("close", onClose);
      if (opts.onClientDisconnect === "stop" && req.raw.socket.destroyed) {
        throw new GatewayError("RB_ERR_CLIENT_ERROR", {
          reason: "the client disconnected before the act began",
        });
      }
      try {
        let captured: readonly Frame[] = [];
        const out = await ep.act(
          req.body,
          f?.video
            ? (frames) => {
                captured = frames;
              }
            : undefined,
        );
        const video: Awaited<ReturnType<typeof makeVideos>> | Record<string, never> = f?.video
          ? await makeVideos(opts.video, gw.frames, captured, {
              everyTicks,
              controlPeriodS: period,
              t0: ep.t0S,
            })
          : {};
        if ("video_error" in video)
          req.log.warn({ video_error: video.video_error }, "act: video not encoded");
        return { ...timed(ep), ...out, ...video, episode: ep.status() };
      } finally {
        done();
      }
    },
  );

  r.post(
    "/v1/reset",
    { schema: { body: EmptyBodySchema, response: { 200: EpisodeResponseSchema, ...errors } } },
    async () => {
      const ep = gw.requireEpisode();
      await ep.reset();
      return { ...timed(ep), episode: ep.status() };
    },
  );

  r.post(
    "/v1/finish",
    { schema: { body: EmptyBodySchema, response: { 200: EpisodeResponseSchema, ...errors } } },
    async () => {
      const ep = gw.requireEpisode();
      await ep.finish();
      return { ...timed(ep), episode: ep.status() };
    },
  );

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
};

/** The realtime pacing as the task card states it. */
function realtimeCard(rt: RealtimeSetup, gw: Gateway) {
  return {
    drive: rt.drive,
    slowdown: rt.slowdown,
    control_period_s: gw.bench.backend.describe().controlPeriodS,
    margin_steps: rt.marginSteps,
    horizon_steps: rt.horizonSteps,
    ...(rt.drive === "stepped" ? { late_tolerance_s: rt.lateToleranceS } : {}),
    command_gap_s: rt.commandGapS,
    ...(rt.measuredSpeed !== undefined ? { measured_speed: rt.measuredSpeed } : {}),
  };
}
