/**
 * Gateway errors: the API's view of the one error registry (seam/errors.ts).
 */
import { CodedError, type ErrorCode } from "../seam/errors.ts";

export { ERRORS, type ErrorCode, type ErrorSpec } from "../seam/errors.ts";

/** JSON body of every error response. */
export interface ErrorBody {
  error: { code: ErrorCode; message: string; details: Record<string, unknown> };
}

/** An error a client sees: code from the registry, details for context. */
export class GatewayError extends CodedError {
  constructor(code: ErrorCode, details: Record<string, unknown> = {}, message?: string) {
    super(code, details, message);
    this.name = "GatewayError";
  }

  toBody(): ErrorBody {
    return { error: { code: this.code, message: this.message, details: this.details } };
  }
}

export function isGatewayError(e: unknown): e is GatewayError {
  return e instanceof GatewayError;
}
