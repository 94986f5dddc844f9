/**
 * Coded errors of these drivers. The codes themselves live in the one registry beside the
 * Backend seam (seam/errors.ts), which drivers may import; the gateway reports any of
 * them inside RB_ERR_BACKEND_FAULT when a client would see it.
 */
import { CodedError, type ErrorCode } from "../../seam/errors.ts";

export type RealErrorCode = Extract<
  ErrorCode,
  `RB_ERR_REAL_${string}` | `RB_ERR_FIRMATA_${string}` | "RB_ERR_MOTION_DISABLED"
>;

/** An error of these drivers: a registered code plus context; the message ends with the hint. */
export class RealBenchError extends CodedError<RealErrorCode> {
  constructor(code: RealErrorCode, details: Record<string, unknown> = {}) {
    super(code, details);
    this.message = `${this.message}. ${this.hint}`;
    this.name = "RealBenchError";
  }
}

export function isRealBenchError(e: unknown, code?: RealErrorCode): e is RealBenchError {
  return e instanceof RealBenchError && (code === undefined || e.code === code);
}
