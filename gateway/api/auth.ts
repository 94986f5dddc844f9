/**
 * Bearer-token roles: the agent token opens the Standard API, the operator token the admin API.
 * Each route plugin installs the guard of its role as an onRequest hook.
 */
import { timingSafeEqual } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { GatewayError } from "../errors.ts";
import { sendError } from "./http-errors.ts";

export type Role = "agent" | "operator";

export interface Tokens {
  agentToken: string;
  operatorToken: string;
}

/** Does the Authorization header carry exactly this Bearer token (constant-time comparison)? */
export function tokenMatches(header: string | undefined, token: string): boolean {
  if (!header?.startsWith("Bearer ")) return false;
  const a = Buffer.from(header.slice(7));
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** onRequest hook: 401 without a known token, 403 with the other role's token. */
export function guard(role: Role, tokens: Tokens) {
  const mine = role === "agent" ? tokens.agentToken : tokens.operatorToken;
  const other = role === "agent" ? tokens.operatorToken : tokens.agentToken;
  return async (req: FastifyRequest, reply: FastifyReply) => {
    const auth = req.headers.authorization;
    if (tokenMatches(auth, mine)) return;
    if (tokenMatches(auth, other))
      return sendError(reply, new GatewayError("RB_ERR_FORBIDDEN", { url: req.url }));
    return sendError(reply, new GatewayError("RB_ERR_UNAUTHORIZED"));
  };
}
