/**
 * The TypeScript client of the Standard API (`import { AgentClient } from "robot-gateway/client"`).
 *
 * One method per call of DESIGN.md §2, typed from the same zod schemas the gateway validates
 * with (gateway/api/schemas.ts). Responses are checked against those schemas (turn it off with
 * `validate: false`) and returned as the gateway sent them, so a field the gateway adds later is
 * never stripped. Every error the gateway answers becomes a `RobotGatewayError` carrying its
 * RB_ERR code, status and details; a gateway that cannot be reached is `RB_ERR_GATEWAY_UNREACHABLE`,
 * a response that is not what the schema says is `RB_ERR_BAD_RESPONSE`.
 *
 * `AgentClient` holds the agent token and reaches only agent calls; `OperatorClient` holds the
 * operator token (episodes, e-stop, state) and is for harnesses such as `robot-gateway run`,
 * never for an agent. Camera helpers (project a base-frame point, back-project a depth pixel)
 * are in ./camera.ts, the `/v1/stream` WebSocket client (`StreamClient`) in ./stream.ts; both
 * are re-exported here. `act` with `frames.video` returns `videos`; `video()` fetches one.
 */
import type { z } from "zod";
import { clientError, RobotGatewayError } from "./errors.ts";
import {
  type ActRequestSchema,
  ActResponseSchema,
  type CameraSpecSchema,
  EpisodeResponseSchema,
  EpisodeSummarySchema,
  type EstopRequestSchema,
  FkResponseSchema,
  type FrameRefSchema,
  type IkRequestSchema,
  IkResponseSchema,
  InstrumentResponseSchema,
  type ObserveRequestSchema,
  ObserveResponseSchema,
  type PoseSchema,
  type ReadingSchema,
  SpecSchema,
  type StartEpisodeRequestSchema,
  TaskCardSchema,
  type VideoRefSchema,
} from "../api/schemas.ts";

export { backProjectPixel, cameraView, type CameraView, projectPoint } from "./camera.ts";

// ------------------------------------------------------------------ types (from the schemas)

export type TaskCard = z.infer<typeof TaskCardSchema>;
export type Spec = z.infer<typeof SpecSchema>;
export type CameraSpec = z.infer<typeof CameraSpecSchema>;
export type PoseDto = z.infer<typeof PoseSchema>;
export type Reading = z.infer<typeof ReadingSchema>;
export type FrameRef = z.infer<typeof FrameRefSchema>;
/** what a caller may send to observe (defaults filled by the gateway) */
export type ObserveInput = z.input<typeof ObserveRequestSchema>;
export type ObserveResponse = z.infer<typeof ObserveResponseSchema>;
export type ActInput = z.input<typeof ActRequestSchema>;
export type ActResponse = z.infer<typeof ActResponseSchema>;
/** act's `videos[i]` (with `frames: {…, video: true}`) */
export type VideoRef = z.infer<typeof VideoRefSchema>;
export type FkResponse = z.infer<typeof FkResponseSchema>;
export type IkInput = z.input<typeof IkRequestSchema>;
export type IkResponse = z.infer<typeof IkResponseSchema>;
export type EpisodeResponse = z.infer<typeof EpisodeResponseSchema>;
export type InstrumentResponse = z.infer<typeof InstrumentResponseSchema>;
export type EpisodeSummary = z.infer<typeof EpisodeSummarySchema>;
export type StartEpisodeInput = z.input<typeof StartEpisodeRequestSchema>;
export type EstopInput = z.input<typeof EstopRequestSchema>;

/** An image from GET /v1/frames/:id. */
export interface FrameImage {
  contentType: string;
  data: Buffer;
}

/** A depth image decoded from its 16-bit PNG: z-depth in millimetres, 0 = no return. */
export interface DepthImage {
  width: number;
  height: number;
  /** row-major, mm */
  mm: Uint16Array;
}

/** An RGB image decoded from its JPEG or PNG: 8-bit, 3 channels, row-major. */
export interface RgbImage {
  width: number;
  height: number;
  /** r g b r g b …, row-major */
  data: Uint8Array;
}

/** z-depth in metres at pixel (u, v) (nearest pixel), or null where the sensor saw nothing. */
export function depthAt(d: DepthImage, u: number, v: number): number | null {
  const x = Math.round(u);
  const y = Math.round(v);
  if (x < 0 || y < 0 || x >= d.width || y >= d.height) return null;
  const mm = d.mm[y * d.width + x]!;
  return mm === 0 ? null : mm / 1000;
}

// ------------------------------------------------------------------ errors

export {
  type ClientErrorCode,
  clientError,
  isRobotGatewayError,
  RobotGatewayError,
} from "./errors.ts";
export { StreamClient, type StreamMessage, type StreamOptions, type StreamReading } from "./stream.ts";

// ------------------------------------------------------------------ transport

export interface ClientOptions {
  /** gateway base URL, e.g. http://127.0.0.1:8080 */
  url: string;
  /** bearer token */
  token: string;
  /** check every JSON response against its schema (default true) */
  validate?: boolean;
  /** fetch implementation (default globalThis.fetch) */
  fetch?: typeof fetch;
}

type Method = "GET" | "POST";

/** The HTTP part shared by both clients. */
class Http {
  readonly url: string;
  private readonly auth: string;
  private readonly validate: boolean;
  private readonly fetchImpl: typeof fetch;

  constructor(o: ClientOptions) {
    this.url = o.url.replace(/\/+$/, "");
    this.auth = `Bearer ${o.token}`;
    this.validate = o.validate ?? true;
    this.fetchImpl = o.fetch ?? globalThis.fetch;
  }

  private async send(method: Method, path: string, body: unknown): Promise<Response> {
    const call = `${method} ${path}`;
    try {
      return await this.fetchImpl(this.url + path, {
        method,
        headers: {
          authorization: this.auth,
          ...(body !== undefined ? { "content-type": "application/json" } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    } catch (e) {
      const reason = e instanceof Error ? ((e.cause as Error | undefined)?.message ?? e.message) : String(e);
      throw clientError("RB_ERR_GATEWAY_UNREACHABLE", { url: this.url, reason }, call);
    }
  }

  private async fail(res: Response, call: string): Promise<never> {
    const text = await res.text();
    let err: { code?: unknown; message?: unknown; details?: unknown } | undefined;
    try {
      err = (JSON.parse(text) as { error?: typeof err }).error;
    } catch {
      err = undefined;
    }
    if (typeof err?.code === "string" && typeof err.message === "string") {
      const details =
        err.details && typeof err.details === "object" ? (err.details as Record<string, unknown>) : {};
      throw new RobotGatewayError(err.code, res.status, err.message, details, call);
    }
    throw clientError(
      "RB_ERR_BAD_RESPONSE",
      { call, issues: `HTTP ${res.status} without an error body: ${text.slice(0, 200)}` },
      call,
    );
  }

  /** A JSON call; the response is checked against `schema` (when validating) and returned as sent. */
  async json<S extends z.ZodType>(
    method: Method,
    path: string,
    schema: S | null,
    body?: unknown,
  ): Promise<z.infer<S>> {
    const call = `${method} ${path}`;
    const res = await this.send(method, path, body);
    if (!res.ok) return this.fail(res, call);
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw clientError("RB_ERR_BAD_RESPONSE", { call, issues: "the body is not JSON" }, call);
    }
    if (schema && this.validate) {
      const r = schema.safeParse(json);
      if (!r.success) {
        const issues = r.error.issues.map((i) => `/${i.path.join("/")} ${i.message}`).join("; ");
        throw clientError("RB_ERR_BAD_RESPONSE", { call, issues }, call);
      }
    }
    return json as z.infer<S>;
  }

  /** A JSON call whose answer has no schema of its own (operator state, OpenAPI). */
  plain<T>(method: Method, path: string, body?: unknown): Promise<T> {
    return this.json(method, path, null, body) as Promise<T>;
  }

  /** A binary GET (frames). */
  async binary(path: string): Promise<FrameImage> {
    const call = `GET ${path}`;
    const res = await this.send("GET", path, undefined);
    if (!res.ok) return this.fail(res, call);
    return {
      contentType: res.headers.get("content-type") ?? "application/octet-stream",
      data: Buffer.from(await res.arrayBuffer()),
    };
  }
}

// ------------------------------------------------------------------ agent client

/** The Standard API with the agent token. */
export class AgentClient {
  private readonly http: Http;
  private specCache: Promise<Spec> | undefined;

  constructor(opts: ClientOptions) {
    this.http = new Http(opts);
  }

  get url(): string {
    return this.http.url;
  }

  /** GET /v1/task — the task card of the current episode. */
  task(): Promise<TaskCard> {
    return this.http.json("GET", "/v1/task", TaskCardSchema);
  }

  /** GET /v1/spec — robot, limits, actions, cameras (fetched once and kept: it does not change). */
  spec(opts: { refresh?: boolean } = {}): Promise<Spec> {
    if (!this.specCache || opts.refresh) {
      const p = this.http.json("GET", "/v1/spec", SpecSchema);
      // a failed fetch is not kept
      p.catch(() => {
        if (this.specCache === p) this.specCache = undefined;
      });
      this.specCache = p;
    }
    return this.specCache;
  }

  /** POST /v1/observe — frames now, or after holding the last command for `advance_s`. */
  observe(req: ObserveInput = {}): Promise<ObserveResponse> {
    return this.http.json("POST", "/v1/observe", ObserveResponseSchema, req);
  }

  /** POST /v1/act — one chunk of rows of an action type. */
  act(req: ActInput): Promise<ActResponse> {
    return this.http.json("POST", "/v1/act", ActResponseSchema, req);
  }

  /** POST /v1/kinematics/fk — tool and flange pose in the base frame; never advances time. */
  fk(q: readonly number[]): Promise<FkResponse> {
    return this.http.json("POST", "/v1/kinematics/fk", FkResponseSchema, { q });
  }

  /** POST /v1/kinematics/ik — joints for a tool pose in the base frame; never advances time. */
  ik(req: IkInput): Promise<IkResponse> {
    return this.http.json("POST", "/v1/kinematics/ik", IkResponseSchema, req);
  }

  /** POST /v1/reset — only when the task grants resets. */
  reset(): Promise<EpisodeResponse> {
    return this.http.json("POST", "/v1/reset", EpisodeResponseSchema, {});
  }

  /** POST /v1/finish — the agent ends the episode. */
  finish(): Promise<EpisodeResponse> {
    return this.http.json("POST", "/v1/finish", EpisodeResponseSchema, {});
  }

  /** POST /v1/submit — the answer of a task that asks for one, with observation ids as evidence. */
  submit(answer: unknown, evidence: readonly string[]): Promise<EpisodeResponse> {
    return this.http.json("POST", "/v1/submit", EpisodeResponseSchema, { answer, evidence });
  }

  /** GET /v1/instruments/:name — every reading of a bench instrument so far. */
  instrument(name: string): Promise<InstrumentResponse> {
    return this.http.json("GET", `/v1/instruments/${encodeURIComponent(name)}`, InstrumentResponseSchema);
  }

  /** GET /v1/frames/:id — an image by the URL a frame reference carries (`frames[i].rgb`). */
  frame(ref: string): Promise<FrameImage> {
    return this.http.binary(framePath(ref));
  }

  /**
   * GET /v1/frames/:id — the MP4 of an act call's execution by the URL of `videos[i]` (asked
   * with `frames: {fps, video: true}`); `path`: also write it to that file.
   */
  async video(ref: string | VideoRef, path?: string): Promise<FrameImage> {
    const v = await this.frame(typeof ref === "string" ? ref : ref.url);
    if (path) {
      const { writeFile } = await import("node:fs/promises");
      await writeFile(path, v.data);
    }
    return v;
  }

  /** An RGB frame (`frames[i].rgb`) decoded to 8-bit RGB. */
  async rgb(ref: string): Promise<RgbImage> {
    const img = await this.frame(ref);
    const { default: sharp } = await import("sharp");
    const { data, info } = await sharp(img.data).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    return {
      width: info.width,
      height: info.height,
      data: new Uint8Array(data.buffer, data.byteOffset, data.length),
    };
  }

  /** A depth frame (`frames[i].depth`) decoded to millimetres. */
  async depth(ref: string): Promise<DepthImage> {
    const img = await this.frame(ref);
    const { default: sharp } = await import("sharp");
    const { data, info } = await sharp(img.data)
      .toColourspace("grey16")
      .raw({ depth: "ushort" })
      .toBuffer({ resolveWithObject: true });
    const mm = new Uint16Array(data.buffer, data.byteOffset, data.length / 2);
    return { width: info.width, height: info.height, mm };
  }

  /** GET /v1/openapi.json */
  openapi(): Promise<Record<string, unknown>> {
    return this.http.plain("GET", "/v1/openapi.json");
  }
}

/** Frame references are paths (`/v1/frames/…`); an absolute URL of the same gateway is accepted too. */
function framePath(ref: string): string {
  if (ref.startsWith("/v1/frames/")) return ref;
  if (/^https?:\/\//.test(ref)) {
    const u = new URL(ref);
    if (u.pathname.startsWith("/v1/frames/")) return u.pathname;
  }
  return `/v1/frames/${encodeURIComponent(ref)}`;
}

// ------------------------------------------------------------------ operator client

/** The operator API (`/v1/admin/…`) with the operator token: harnesses and graders, never agents. */
export class OperatorClient {
  private readonly http: Http;

  constructor(opts: ClientOptions) {
    this.http = new Http(opts);
  }

  /** POST /v1/admin/episodes — start an episode. */
  startEpisode(req: StartEpisodeInput = {}): Promise<EpisodeSummary> {
    return this.http.json("POST", "/v1/admin/episodes", EpisodeSummarySchema, req);
  }

  /** GET /v1/admin/episodes/:id — status, result.json once ended, record path. */
  episode(id: string): Promise<EpisodeSummary> {
    return this.http.json("GET", `/v1/admin/episodes/${encodeURIComponent(id)}`, EpisodeSummarySchema);
  }

  /** GET /v1/admin/episodes */
  async episodes(): Promise<EpisodeSummary[]> {
    const r = await this.http.plain<{ episodes: EpisodeSummary[] }>("GET", "/v1/admin/episodes");
    return (r as { episodes: EpisodeSummary[] }).episodes;
  }

  /** POST /v1/admin/episodes/:id/end — stop motion and end a running episode. */
  endEpisode(
    id: string,
    body: { reason?: "finished" | "aborted"; detail?: string } = {},
  ): Promise<EpisodeSummary> {
    return this.http.json(
      "POST",
      `/v1/admin/episodes/${encodeURIComponent(id)}/end`,
      EpisodeSummarySchema,
      body,
    );
  }

  /** GET /v1/admin/tasks */
  tasks(): Promise<{
    tasks: { id: string; title: string; levels: string[]; default_level: string; settings: string[] }[];
  }> {
    return this.http.plain("GET", "/v1/admin/tasks");
  }

  /** POST /v1/admin/estop — latches until released. */
  estop(req: EstopInput = {}): Promise<Record<string, unknown>> {
    return this.http.plain("POST", "/v1/admin/estop", req);
  }

  /** POST /v1/admin/release */
  release(): Promise<Record<string, unknown>> {
    return this.http.plain("POST", "/v1/admin/release", {});
  }

  /** GET /v1/admin/state — full state for dashboards and graders. */
  state(): Promise<Record<string, unknown>> {
    return this.http.plain("GET", "/v1/admin/state");
  }
}
