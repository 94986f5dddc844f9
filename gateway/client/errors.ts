/**
 * The errors of the TS clients (HTTP and stream): `RobotGatewayError` carries the RB_ERR code
 * the gateway answered (or the client's own, below), the HTTP status and the details.
 */
import { ERRORS, type ErrorCode, renderTemplate } from "../../seam/errors.ts";

/** Codes a client raises itself, beside those the gateway answers with. */
export type ClientErrorCode = "RB_ERR_GATEWAY_UNREACHABLE" | "RB_ERR_BAD_RESPONSE";

/** An error of a gateway call: the RB_ERR code (docs/errors.md), HTTP status and details. */
export class RobotGatewayError extends Error {
  constructor(
    /** RB_ERR_* code (a registered one; a gateway newer than this client may send others) */
    readonly code: ErrorCode | (string & {}),
    /** HTTP status (for the codes a client raises itself, the registry's) */
    readonly status: number,
    message: string,
    readonly details: Record<string, unknown> = {},
    /** the call, e.g. `POST /v1/act` */
    readonly call = "",
  ) {
    super(message);
    this.name = "RobotGatewayError";
  }

  /** the registry's hint for the code, when it is one this client knows */
  get hint(): string | undefined {
    return (ERRORS as Record<string, { hint: string }>)[this.code]?.hint;
  }

  /** The `{error: {code, message, details}}` body shape of the API. */
  toBody(): { error: { code: string; message: string; details: Record<string, unknown> } } {
    return { error: { code: this.code, message: this.message, details: this.details } };
  }
}

export function clientError(
  code: ClientErrorCode,
  details: Record<string, unknown>,
  call: string,
): RobotGatewayError {
  const spec = ERRORS[code];
  return new RobotGatewayError(code, spec.status, renderTemplate(spec.message, details), details, call);
}

export function isRobotGatewayError(e: unknown): e is RobotGatewayError {
  return e instanceof RobotGatewayError;
}
