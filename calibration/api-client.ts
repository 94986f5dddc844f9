/**
 * The gateway API as calibration procedures use it: plain HTTP calls of the Standard and
 * operator API (observe, act, fk, spec, frames), so a procedure runs the same on the sim and on
 * a real bench. The transport is pluggable: `fetch` against a URL (the CLI), or fastify's
 * `inject()` in tests — the same requests either way.
 */
import type { CameraDescription } from "../seam/types.ts";
import sharp from "sharp";
import { CodedError } from "../seam/errors.ts";
import type { ImageU8 } from "./board-detect.ts";

/** One HTTP exchange: method, path, JSON body, who calls → status and parsed body (or bytes). */
export type Transport = (
  method: "GET" | "POST",
  path: string,
  body: unknown,
  who: "agent" | "operator",
) => Promise<{ status: number; body: unknown }>;

/** A transport over fetch to a running gateway. */
export function fetchTransport(baseUrl: string, tokens: { agent: string; operator?: string }): Transport {
  return async (method, path, body, who) => {
    const token = who === "agent" ? tokens.agent : (tokens.operator ?? tokens.agent);
    const send = () =>
      fetch(new URL(path, baseUrl), {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body !== undefined ? { "content-type": "application/json" } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
    let res: Response;
    try {
      res = await send();
    } catch (e) {
      // a keep-alive socket the gateway closed while a long fit kept this process busy: send a
      // request that changes nothing again (never an act, never an observe that advances time)
      const reset = (e as { cause?: { code?: string } }).cause?.code === "ECONNRESET";
      const harmless =
        method === "GET" ||
        path.startsWith("/v1/kinematics/") ||
        (path === "/v1/observe" && !(body as { advance_s?: number } | undefined)?.advance_s);
      if (!reset || !harmless) throw e;
      res = await send();
    }
    const type = res.headers.get("content-type") ?? "";
    return {
      status: res.status,
      body: type.startsWith("application/json") ? await res.json() : new Uint8Array(await res.arrayBuffer()),
    };
  };
}

export interface Reading {
  t: number;
  q: number[];
  dq: number[];
  gripper_width_m: number;
}

export interface Pose {
  xyz: [number, number, number];
  quat_xyzw: [number, number, number, number];
}

/** A camera as GET /v1/spec publishes it: the seam's description, less the depth flag. */
export type SpecCamera = Omit<CameraDescription, "depth" | "pose"> & { pose: Pose };

/** An API error answer, kept whole so a procedure can report why (e.g. a refused chunk). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(`${status} ${code}: ${message}`);
  }
}

export class BenchApi {
  constructor(private readonly call: Transport) {}

  private async json<T>(
    method: "GET" | "POST",
    path: string,
    body?: unknown,
    who: "agent" | "operator" = "agent",
  ): Promise<T> {
    const r = await this.call(method, path, body, who);
    if (r.status >= 400) {
      const e = (r.body as { error?: { code?: string; message?: string } })?.error;
      throw new ApiError(r.status, e?.code ?? "HTTP", e?.message ?? JSON.stringify(r.body));
    }
    return r.body as T;
  }

  spec(): Promise<{
    control: { control_period_s: number; max_dt_s: number };
    cameras: SpecCamera[];
    robot: { dof: number; base_pose: Pose };
  }> {
    return this.json("GET", "/v1/spec");
  }

  /** The latest reading (an observe that does not advance time). */
  async reading(): Promise<Reading> {
    const o = await this.json<{ readings: Reading[] }>("POST", "/v1/observe", { cameras: [] });
    const r = o.readings[o.readings.length - 1];
    if (!r)
      throw new CodedError("RB_ERR_CALIB_BAD_INPUT", { what: "observe", reason: "no reading returned" });
    return r;
  }

  /** Frames of the named cameras (lossless PNG), decoded to RGB, with the reading of that instant. */
  async capture(cameras: string[]): Promise<{ reading: Reading; images: Map<string, ImageU8> }> {
    const o = await this.json<{ readings: Reading[]; frames: Array<{ camera: string; rgb: string }> }>(
      "POST",
      "/v1/observe",
      { cameras, encoding: "png" },
    );
    const images = new Map<string, ImageU8>();
    for (const f of o.frames) {
      const r = await this.call("GET", f.rgb, undefined, "agent");
      if (r.status !== 200 || !(r.body instanceof Uint8Array))
        throw new ApiError(r.status, "HTTP", `frame ${f.rgb} could not be fetched`);
      const { data, info } = await sharp(r.body).removeAlpha().raw().toBuffer({ resolveWithObject: true });
      images.set(f.camera, {
        width: info.width,
        height: info.height,
        channels: info.channels === 1 ? 1 : 3,
        data: new Uint8Array(data.buffer, data.byteOffset, data.length),
      });
    }
    const reading = o.readings[o.readings.length - 1];
    if (!reading)
      throw new CodedError("RB_ERR_CALIB_BAD_INPUT", { what: "observe", reason: "no reading returned" });
    return { reading, images };
  }

  /** Depth frames (z-depth in mm, 0 = no return) of the named cameras, with the reading of that instant. */
  async captureDepth(
    cameras: string[],
  ): Promise<{ reading: Reading; depth: Map<string, { width: number; height: number; mm: Uint16Array }> }> {
    const o = await this.json<{ readings: Reading[]; frames: Array<{ camera: string; depth?: string }> }>(
      "POST",
      "/v1/observe",
      { cameras, depth: true, encoding: "png" },
    );
    const depth = new Map<string, { width: number; height: number; mm: Uint16Array }>();
    for (const f of o.frames) {
      if (!f.depth) continue;
      const r = await this.call("GET", f.depth, undefined, "agent");
      if (r.status !== 200 || !(r.body instanceof Uint8Array))
        throw new ApiError(r.status, "HTTP", `frame ${f.depth} could not be fetched`);
      const { data, info } = await sharp(r.body)
        .toColourspace("grey16")
        .raw({ depth: "ushort" })
        .toBuffer({ resolveWithObject: true });
      const mm = new Uint16Array(info.width * info.height);
      for (let i = 0; i < mm.length; i++) mm[i] = data.readUInt16LE(i * 2);
      depth.set(f.camera, { width: info.width, height: info.height, mm });
    }
    const reading = o.readings[o.readings.length - 1];
    if (!reading)
      throw new CodedError("RB_ERR_CALIB_BAD_INPUT", { what: "observe", reason: "no reading returned" });
    return { reading, depth };
  }

  act(
    dt: number,
    rows: number[][],
  ): Promise<{
    executed_rows: number;
    readings: Reading[];
    events: Array<{ type: string; data: unknown }>;
    safety: unknown[];
    episode: { status: string; reason?: string };
  }> {
    return this.json("POST", "/v1/act", { type: "joint_position", dt, rows });
  }

  fk(q: number[]): Promise<{ tool: Pose; flange: Pose }> {
    return this.json("POST", "/v1/kinematics/fk", { q });
  }

  ik(pose: Pose, qSeed?: number[]): Promise<{ q: number[]; position_residual_m: number }> {
    return this.json("POST", "/v1/kinematics/ik", { pose, ...(qSeed ? { q_seed: qSeed } : {}) });
  }

  /** Longest motion one call may take, s (the task card's max_call_s). */
  async maxCallS(): Promise<number> {
    const t = await this.json<{ budgets?: { max_call_s?: number } }>("GET", "/v1/task");
    return t.budgets?.max_call_s ?? 10;
  }

  /**
   * Move to joint target `q` along minimum-jerk paths (rest to rest; split into several calls
   * when one would take longer than a call may), then let the arm settle. The gateway's safety
   * supervisor checks every chunk; a refusal comes back as an ApiError (nothing moved).
   */
  async moveTo(
    q: readonly number[],
    opts: { maxJointSpeedRadS?: number; settleS?: number } = {},
  ): Promise<Reading> {
    let start = await this.reading();
    const spec = await this.spec();
    const period = spec.control.control_period_s;
    const dt = Math.min(spec.control.max_dt_s, Math.round(0.1 / period) * period);
    const settleS = opts.settleS ?? 0.3;
    const maxT = (await this.maxCallS()) - settleS - 0.5;
    const delta = Math.max(...q.map((v, j) => Math.abs(v - start.q[j]!)));
    // minimum jerk peaks at 1.875 · Δ / T
    const T = Math.max(1, (1.875 * delta) / (opts.maxJointSpeedRadS ?? 0.4));
    const segments = Math.ceil(T / maxT);
    const from = [...start.q];
    for (let sgm = 1; sgm <= segments; sgm++) {
      const goal = q.map((v, j) => from[j]! + ((v - from[j]!) * sgm) / segments);
      const n = Math.ceil(T / segments / dt);
      const rows: number[][] = [];
      for (let k = 1; k <= n; k++) {
        const s = k / n;
        const m = s * s * s * (10 - 15 * s + 6 * s * s);
        rows.push([...goal.map((v, j) => start.q[j]! + (v - start.q[j]!) * m), start.gripper_width_m]);
      }
      // hold the last row while the servo settles
      for (let k = 0; k < Math.ceil(settleS / dt); k++) rows.push([...goal, start.gripper_width_m]);
      const res = await this.act(dt, rows);
      if (res.episode.status !== "running")
        throw new ApiError(
          409,
          "RB_ERR_EPISODE_ENDED",
          `the move ended the episode (${res.episode.reason ?? res.episode.status}; events ${JSON.stringify(res.events)}; safety ${JSON.stringify(res.safety)})`,
        );
      start = res.readings[res.readings.length - 1] ?? (await this.reading());
    }
    return start;
  }
}
