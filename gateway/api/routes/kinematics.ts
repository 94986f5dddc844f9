/** Forward and inverse kinematics for the agent: pure queries, they never advance time. */
import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { GatewayError } from "../../errors.ts";
import { guard } from "../auth.ts";
import { FkRequestSchema, FkResponseSchema, IkRequestSchema, IkResponseSchema } from "../schemas.ts";
import { ERROR_RESPONSES as errors, type RouteOptions, timed } from "./common.ts";

export const kinematicsRoutes: FastifyPluginAsync<RouteOptions> = async (app, opts) => {
  const gw = opts.gateway;
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.addHook("onRequest", guard("agent", opts));

  r.post(
    "/v1/kinematics/fk",
    { schema: { body: FkRequestSchema, response: { 200: FkResponseSchema, ...errors } } },
    async (req) => {
      const fk = gw.fk(req.body.q);
      return { ...timed(gw.episode), tool: fk.tool, flange: fk.flange };
    },
  );

  r.post(
    "/v1/kinematics/ik",
    { schema: { body: IkRequestSchema, response: { 200: IkResponseSchema, ...errors } } },
    async (req) => {
      const dof = gw.bench.backend.describe().robot.dof;
      if (req.body.q_seed && req.body.q_seed.length !== dof) {
        throw new GatewayError("RB_ERR_Q_WIDTH", { field: "q_seed", width: req.body.q_seed.length, dof });
      }
      const seed = req.body.q_seed ?? gw.bench.backend.read().q;
      const sol = gw.bench.ik.solve(req.body.pose, seed);
      if (!sol.ok)
        throw new GatewayError("RB_ERR_IK_UNREACHABLE", {
          reason: sol.reason,
          position_residual_m: sol.positionResidualM,
          orientation_residual_rad: sol.orientationResidualRad,
        });
      return {
        ...timed(gw.episode),
        q: sol.q,
        position_residual_m: sol.positionResidualM,
        orientation_residual_rad: sol.orientationResidualRad,
      };
    },
  );
};
