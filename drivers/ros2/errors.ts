/**
 * Coded errors of these drivers. The codes themselves live in the one registry beside the
 * Backend seam (seam/errors.ts), which drivers may import; the gateway reports any of
 * them inside RB_ERR_BACKEND_FAULT when a client would see it.
 */
import { CodedError, type ErrorCode } from "../../seam/errors.ts";

export type RosErrorCode = Extract<ErrorCode, `RB_ERR_ROS_${string}` | "RB_ERR_UNKNOWN_CAMERA">;

/** An error of these drivers: a registered code plus context; the message ends with the hint. */
export class RosDriverError extends CodedError<RosErrorCode> {
  constructor(code: RosErrorCode, details: Record<string, unknown> = {}) {
    super(code, details);
    this.message = `${this.message}. ${this.hint}`;
    this.name = "RosDriverError";
  }
}

export function isRosDriverError(e: unknown, code?: RosErrorCode): e is RosDriverError {
  return e instanceof RosDriverError && (code === undefined || e.code === code);
}
