/**
 * Resource → RosTransport. The transport kind is a discriminated union (STYLE.md §8):
 * `rosbridge` (roslib over WebSocket) or `rclnodejs` (native ROS 2, optional package).
 */
import { z } from "zod";
import { createRclnodejsTransport } from "./rclnodejs-transport.ts";
import { createRoslibTransport } from "./roslib-transport.ts";
import type { RosTransport } from "./transport.ts";

export const RosTransportResourceSchema = z.discriminatedUnion("type", [
  z.strictObject({
    type: z.literal("rosbridge"),
    /** rosbridge WebSocket URL */
    url: z.string().regex(/^wss?:\/\//),
    connectTimeoutMs: z.number().int().positive().optional(),
    reconnectInitialDelayMs: z.number().int().positive().optional(),
    reconnectMaxDelayMs: z.number().int().positive().optional(),
    reconnectFactor: z.number().min(1).optional(),
  }),
  z.strictObject({
    type: z.literal("rclnodejs"),
    nodeName: z.string().min(1).optional(),
    serverWaitMs: z.number().int().positive().optional(),
  }),
]);
export type RosTransportResource = z.infer<typeof RosTransportResourceSchema>;

type Factories = {
  [K in RosTransportResource["type"]]: (
    r: Extract<RosTransportResource, { type: K }>,
  ) => Promise<RosTransport>;
};

const FACTORIES: Factories = {
  rosbridge: async ({ type: _t, ...opts }) => createRoslibTransport(opts),
  rclnodejs: async ({ type: _t, ...opts }) => createRclnodejsTransport(opts),
};

/** Validate the resource and build its (not yet connected) transport. */
export async function createRosTransport(resource: RosTransportResource): Promise<RosTransport> {
  const r = RosTransportResourceSchema.parse(resource);
  return (FACTORIES[r.type] as (x: RosTransportResource) => Promise<RosTransport>)(r);
}
