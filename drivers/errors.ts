/**
 * The one coded error of every driver below the seam (ROS 2, cameras, the real-bench
 * composition, Firmata and buzz-box contact boards). The codes live in the one registry beside
 * the Backend seam (seam/errors.ts), which drivers may import; the gateway reports any of them
 * inside RB_ERR_BACKEND_FAULT when a client would see it.
 */
import { CodedError, type ErrorCode } from "../seam/errors.ts";

/** The registry's device codes. */
export type DeviceErrorCode = Extract<
  ErrorCode,
  | `RB_ERR_ROS_${string}`
  | `RB_ERR_REAL_${string}`
  | `RB_ERR_FIRMATA_${string}`
  | `RB_ERR_BUZZBOX_${string}`
  // shared with the API: one code per meaning
  | "RB_ERR_UNKNOWN_CAMERA"
  | "RB_ERR_MOTION_DISABLED"
>;

/** A driver's error: a registered device code plus context; the message ends with the hint. */
export class DeviceError<C extends DeviceErrorCode = DeviceErrorCode> extends CodedError<C> {
  constructor(code: C, details: Record<string, unknown> = {}) {
    super(code, details);
    this.message = `${this.message}. ${this.hint}`;
    this.name = "DeviceError";
  }
}

export function isDeviceError<C extends DeviceErrorCode>(e: unknown, code?: C): e is DeviceError<C> {
  return e instanceof DeviceError && (code === undefined || e.code === code);
}
