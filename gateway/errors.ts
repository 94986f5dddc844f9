/**
 * The one registry of gateway error codes. Every error a client can see is listed here with
 * its HTTP status and a message template; docs/errors.md is checked against this table by a
 * test. Codes are never reused: retire a code by marking it `retired`, never by deleting it.
 */

export interface ErrorSpec {
  status: number;
  /** message template; `{name}` is replaced from details */
  message: string;
  /** what the client should do about it */
  hint: string;
  retired?: true;
}

export const ERRORS = {
  RB_ERR_NOT_FOUND: { status: 404, message: "No route {method} {url}", hint: "See GET /v1/openapi.json." },
  RB_ERR_METHOD_NOT_ALLOWED: {
    status: 405,
    message: "{method} is not allowed on {url}",
    hint: "See GET /v1/openapi.json for the method.",
  },
  RB_ERR_BAD_REQUEST: {
    status: 400,
    message: "Request does not match the schema: {issues}",
    hint: "Fix the fields named in details.issues.",
  },
  RB_ERR_BAD_JSON: { status: 400, message: "Body is not valid JSON: {reason}", hint: "Send a JSON body." },
  RB_ERR_UNSUPPORTED_MEDIA: {
    status: 415,
    message: "Content type {contentType} is not accepted",
    hint: "Send application/json.",
  },
  RB_ERR_BODY_TOO_LARGE: {
    status: 413,
    message: "Body exceeds {limitBytes} bytes",
    hint: "Send fewer rows per chunk.",
  },
  RB_ERR_UNAUTHORIZED: {
    status: 401,
    message: "Missing or invalid bearer token",
    hint: "Send Authorization: Bearer <token>.",
  },
  RB_ERR_FORBIDDEN: {
    status: 403,
    message: "This token may not call {url}",
    hint: "Operator calls need the operator token.",
  },
  RB_ERR_ROWS: {
    status: 400,
    message: "Chunk has {count} rows; allowed 1…{max}",
    hint: "Split the motion into several chunks.",
  },
  RB_ERR_ROW_WIDTH: {
    status: 400,
    message: "Row {row} has {width} values; action {type} needs {expected}",
    hint: "Each row holds exactly the action's columns (GET /v1/spec).",
  },
  RB_ERR_NOT_FINITE: {
    status: 400,
    message: "Row {row}, column {column} is not a finite number",
    hint: "Send finite numbers only.",
  },
  RB_ERR_DT: {
    status: 422,
    message: "dt {dt} s must be a whole multiple of the control period {period} s and at most {max} s",
    hint: "dt is never rounded; pick k·control_period_s.",
  },
  RB_ERR_ACTION_TYPE: {
    status: 422,
    message: "Action type {type} is not open at this level; open: {open}",
    hint: "See GET /v1/task and GET /v1/spec.",
  },
  RB_ERR_UNSAFE_CHUNK: {
    status: 422,
    message: "Chunk refused: {kind} limit at row {row} ({what}: {value} against limit {limit} {unit})",
    hint: "Nothing moved. Slow the chunk down or change its path.",
  },
  RB_ERR_IK_UNREACHABLE: {
    status: 422,
    message: "No joint solution for the pose: {reason}",
    hint: "Choose a reachable pose or another seed.",
  },
  RB_ERR_CALL_TOO_LONG: {
    status: 422,
    message: "Call would advance {seconds} s; at most {max} s per call",
    hint: "Split the motion over several calls.",
  },
  RB_ERR_UNKNOWN_CAMERA: {
    status: 400,
    message: "Unknown camera {camera}; cameras: {cameras}",
    hint: "See GET /v1/spec.",
  },
  RB_ERR_TOO_MANY_FRAMES: {
    status: 422,
    message: "Call would return {count} frames; at most {max}",
    hint: "Lower fps, fewer cameras or a shorter chunk.",
  },
  RB_ERR_UNKNOWN_INSTRUMENT: {
    status: 404,
    message: "Unknown instrument {name}; instruments of this task: {instruments}",
    hint: "See instruments in GET /v1/task.",
  },
  RB_ERR_NO_RESETS: {
    status: 403,
    message: "This task grants no resets",
    hint: "Finish the episode instead.",
  },
  RB_ERR_RESETS_USED: {
    status: 403,
    message: "All {budget} resets are used",
    hint: "Finish the episode instead.",
  },
  RB_ERR_NO_EPISODE: {
    status: 409,
    message: "No episode is running",
    hint: "An operator starts one with POST /v1/admin/episodes.",
  },
  RB_ERR_EPISODE_ENDED: {
    status: 409,
    message: "The episode has ended ({reason})",
    hint: "An operator starts a new one.",
  },
  RB_ERR_BUSY: {
    status: 409,
    message: "Another motion call is in progress",
    hint: "One controlling client per episode; wait for the running call.",
  },
  RB_ERR_ESTOP: {
    status: 409,
    message: "Emergency stop engaged ({reason})",
    hint: "An operator must release it (POST /v1/admin/release).",
  },
  RB_ERR_MOTION_DISABLED: {
    status: 403,
    message: "Motion is disabled on this real bench",
    hint: "An operator must restart the gateway with --allow-motion once the workspace is clear.",
  },
  RB_ERR_NO_SUBMISSION: {
    status: 422,
    message: "Task {task} takes no submission",
    hint: "End the episode with POST /v1/finish.",
  },
  RB_ERR_ALREADY_SUBMITTED: {
    status: 409,
    message: "An answer was already submitted",
    hint: "Only the first submission counts.",
  },
  RB_ERR_FRAME_NOT_FOUND: {
    status: 404,
    message: "Frame {id} does not exist or has expired",
    hint: "Frames are kept for the most recent calls only; fetch them promptly.",
  },
  RB_ERR_SETTING_UNAVAILABLE: {
    status: 422,
    message: "Setting {setting} is not available: {reason}",
    hint: "Use the standard setting.",
  },
  RB_ERR_UNKNOWN_TASK: { status: 404, message: "Unknown task {task}", hint: "See GET /v1/admin/tasks." },
  RB_ERR_LEVEL: { status: 422, message: "Task {task} has no level {level}", hint: "See the task's levels." },
  RB_ERR_PRIVILEGED_UNAVAILABLE: {
    status: 403,
    message: "Privileged access is unavailable: {reason}",
    hint: "Only simulated benches in a setting that allows it offer privileged calls.",
  },
  RB_ERR_BACKEND_FAULT: {
    status: 503,
    message: "Backend fault on {device}: {reason}",
    hint: "The episode ended as a fault; an operator must check the bench.",
  },
  RB_ERR_INTERNAL: { status: 500, message: "Internal error ({id})", hint: "Report the id to the operator." },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;

/** JSON body of every error response. */
export interface ErrorBody {
  error: { code: ErrorCode; message: string; details: Record<string, unknown> };
}

function render(template: string, details: Record<string, unknown>): string {
  return template.replace(/\{(\w+)\}/g, (_, k: string) => {
    const v = details[k];
    if (v === undefined) return `{${k}}`;
    return typeof v === "string" ? v : JSON.stringify(v);
  });
}

/** An error a client sees: code from the registry, details for context. */
export class GatewayError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    readonly details: Record<string, unknown> = {},
    message?: string,
  ) {
    const spec: ErrorSpec = ERRORS[code];
    super(message ?? render(spec.message, details));
    this.name = "GatewayError";
    this.status = spec.status;
  }

  toBody(): ErrorBody {
    return { error: { code: this.code, message: this.message, details: this.details } };
  }
}

export function isGatewayError(e: unknown): e is GatewayError {
  return e instanceof GatewayError;
}
