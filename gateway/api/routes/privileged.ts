/**
 * Privileged operator calls on a simulated bench, in an episode started with privileged: true:
 * the simulator's full state, snapshot and restore.
 */
import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { GatewayError } from "../../errors.ts";
import { guard } from "../auth.ts";
import { EmptyBodySchema } from "../schemas.ts";
import type { SnapshotStore } from "../snapshot-store.ts";
import { hasSimPowers } from "../../../seam/types.ts";
import type { RouteOptions } from "./common.ts";

export interface PrivilegedRouteOptions extends RouteOptions {
  snapshots: SnapshotStore;
}

export const privilegedRoutes: FastifyPluginAsync<PrivilegedRouteOptions> = async (app, opts) => {
  const gw = opts.gateway;
  const snapshots = opts.snapshots;
  const r = app.withTypeProvider<ZodTypeProvider>();
  r.addHook("onRequest", guard("operator", opts));

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

  r.get("/v1/admin/privileged/state", async () => privileged().privilegedState());

  r.post("/v1/admin/privileged/snapshot", { schema: { body: EmptyBodySchema } }, async () => {
    const b = privileged();
    return { snapshot_id: snapshots.put(gw.requireEpisode().id, b.snapshot()) };
  });

  r.post(
    "/v1/admin/privileged/restore",
    { schema: { body: z.strictObject({ snapshot_id: z.string() }) } },
    async (req) => {
      const b = privileged();
      const data = snapshots.get(req.body.snapshot_id, gw.requireEpisode().id);
      if (!data) {
        throw new GatewayError("RB_ERR_UNKNOWN_SNAPSHOT", { snapshot_id: req.body.snapshot_id });
      }
      try {
        b.restore(data);
      } catch (e) {
        throw new GatewayError("RB_ERR_PRIVILEGED_UNAVAILABLE", {
          reason: `restore refused: ${e instanceof Error ? e.message : String(e)}`,
        });
      }
      return { restored: req.body.snapshot_id };
    },
  );
};
