/** What every route plugin is registered with, and the response pieces they share. */
import { r6 } from "../../time.ts";
import type { Episode } from "../../episode/episode.ts";
import type { Gateway } from "../../gateway.ts";
import type { Tokens } from "../auth.ts";
import { ErrorResponseSchema } from "../schemas.ts";

export interface RouteOptions extends Tokens {
  gateway: Gateway;
}

/** Error statuses documented on most routes. */
export const ERROR_RESPONSES = {
  400: ErrorResponseSchema,
  401: ErrorResponseSchema,
  403: ErrorResponseSchema,
  409: ErrorResponseSchema,
  422: ErrorResponseSchema,
};

/** `t` and `time_left_s` of every actionable response (0 without an episode). */
export const timed = (ep: Episode | undefined) => ({
  t: ep ? r6(ep.t()) : 0,
  time_left_s: ep ? r6(ep.timeLeftS()) : 0,
});
