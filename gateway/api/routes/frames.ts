/** GET /v1/frames/:id: the images an observe or act call referenced, encoded on first fetch. */
import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { GatewayError } from "../../errors.ts";
import { guard } from "../auth.ts";
import type { RouteOptions } from "./common.ts";

export const frameRoutes: FastifyPluginAsync<RouteOptions> = async (app, opts) => {
  const gw = opts.gateway;
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.addHook("onRequest", guard("agent", opts));

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
};
