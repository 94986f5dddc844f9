/**
 * Coded errors of the real-bench composition (drivers/real) and the Firmata contact board
 * (drivers/firmata). Drivers may not import the gateway's registry (gateway/errors.ts), so their
 * codes live here, in one table; the gateway maps any of them to `RB_ERR_BACKEND_FAULT` (or, for
 * the allow-motion switch, to a 403-style refusal) when a client would see it. Never reused.
 */

export interface RealErrorSpec {
  /** message template; `{name}` is replaced from details */
  message: string;
  /** what an operator should do about it */
  hint: string;
}

export const REAL_ERRORS = {
  RB_ERR_REAL_MOTION_NOT_ALLOWED: {
    message: "The real bench refuses {operation}: motion is not allowed (backend.allowMotion is false)",
    hint:
      "Start the gateway with --allow-motion (or set backend.allowMotion: true in the bench file) " +
      "once the workspace is clear and an operator stands at the emergency stop.",
  },
  RB_ERR_REAL_DEVICE_FAULT: {
    message:
      "The real bench is in the error state after a device fault ({device}: {reason}); {operation} refused",
    hint: "Restore the device, then call recover() (operator) or restart the gateway.",
  },
  RB_ERR_REAL_NO_CAMERA: {
    message: "Camera {camera} is not configured on this bench; cameras: {cameras}",
    hint: "Name one of the cameras of the bench file's backend.cameras.",
  },
  RB_ERR_FIRMATA_NOT_READY: {
    message: "Firmata board at {path} did not become ready within {timeoutMs} ms ({reason})",
    hint: "Check the path and baud rate (StandardFirmata uses 57600) and that the board runs StandardFirmata.",
  },
  RB_ERR_FIRMATA_PIN: {
    message: "Firmata board at {path} has no pin {pin} supporting {mode}",
    hint: "Fix contactPin / lampPin / buzzerPin in the bench file.",
  },
  RB_ERR_FIRMATA_LINK_DOWN: {
    message: "Firmata board at {path}: link down, cannot {operation}",
    hint: "Wait for the board to reconnect (fault events say when it is lost and back).",
  },
} as const satisfies Record<string, RealErrorSpec>;

export type RealErrorCode = keyof typeof REAL_ERRORS;

function render(template: string, details: Record<string, unknown>): string {
  return template.replace(/\{(\w+)\}/g, (_, k: string) => {
    const v = details[k];
    if (v === undefined) return `{${k}}`;
    return typeof v === "string" ? v : JSON.stringify(v);
  });
}

/** An error of the real-bench drivers: a code from `REAL_ERRORS` plus context. */
export class RealBenchError extends Error {
  readonly hint: string;
  constructor(
    readonly code: RealErrorCode,
    readonly details: Record<string, unknown> = {},
  ) {
    const spec: RealErrorSpec = REAL_ERRORS[code];
    super(`${render(spec.message, details)}. ${spec.hint}`);
    this.name = "RealBenchError";
    this.hint = spec.hint;
  }
}

export function isRealBenchError(e: unknown, code?: RealErrorCode): e is RealBenchError {
  return e instanceof RealBenchError && (code === undefined || e.code === code);
}
