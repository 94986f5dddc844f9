/**
 * The MCP tool layer: EmbodiedLab's T0 tools over the Standard API, through the TS client
 * (gateway/client) with the agent token. The stdio server (`robot-gateway mcp`) and the gateway's
 * streamable-HTTP endpoint (`/mcp`, ./plugin.ts) both build their server here, so the two
 * transports share one implementation.
 *
 * - Tools: get_task_spec, get_observation, get_robot_state, execute_joint_trajectory, set_gripper,
 *   wait, solve_ik, submit_result; execute_tool_poses and jog. A tool that moves the robot with an
 *   action type is listed only while the current episode's level opens that type (the task card's
 *   `actions`): execute_joint_trajectory and set_gripper need `joint_position`, execute_tool_poses
 *   `ee_pose`, jog `jog`. The list is read from the task card on every tools/list.
 * - execute_joint_trajectory / execute_tool_poses take `video: {fps, cameras?}`: the chunk's MP4s
 *   (act's frames.video) come back as embedded `video/mp4` resources beside the JSON.
 * - Input schemas are JSON Schema generated from zod schemas built on gateway/api/schemas.ts;
 *   arguments are validated with the same zod schemas (a mismatch is RB_ERR_BAD_REQUEST).
 * - Every result carries `t` and `time_left_s` (episode seconds) in its JSON; an error is an MCP
 *   tool error (`isError`) whose JSON is the API's `{error: {code, message, details}}` plus the
 *   clock when the episode can still be read.
 * - Only agent calls exist here: the client is an AgentClient, and no operator tool is defined.
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import {
  type ActResponse,
  type AgentClient,
  type ObserveResponse,
  type Reading,
  RobotGatewayError,
  type Spec,
  type TaskCard,
} from "../client/client.ts";
import {
  ActRequestSchema,
  IkRequestSchema,
  ObserveRequestSchema,
  SubmitRequestSchema,
} from "../api/schemas.ts";

/** Longest `wait`, episode seconds (EmbodiedLab's bound). */
export const MAX_WAIT_S = 30;

/** What a tool hands back: JSON (with t and time_left_s) and images. */
interface ToolOutput {
  data: { t: number; time_left_s: number } & Record<string, unknown>;
  images?: { label: string; mimeType: string; data: Buffer }[];
  /** files as embedded resources (act's videos: video/mp4), with the gateway URL they came from */
  resources?: { label: string; uri: string; mimeType: string; data: Buffer }[];
}

interface ToolDef {
  name: string;
  title: string;
  description: string;
  /** zod input schema (an object); built per listing because jog's commands come from the spec */
  input(spec: Spec): z.ZodType;
  /** action types this tool commands; listed only when the level opens one of them */
  needs?: readonly string[];
  readOnly?: boolean;
  run(c: AgentClient, args: never, spec: Spec): Promise<ToolOutput>;
}

const empty = z.object({}).strict();

/** The reading of the newest row, with the tool pose from FK (base frame). */
async function state(c: AgentClient, r: Reading) {
  const fk = await c.fk(r.q);
  return { reading: r, tool_pose: fk.tool, flange_pose: fk.flange };
}

const lastReading = (res: { readings: Reading[] }) => res.readings[res.readings.length - 1];

/** The motion result an agent needs: the clock, what ran, the last reading, what happened. */
function motionData(res: ActResponse) {
  return {
    t: res.t,
    time_left_s: res.time_left_s,
    executed_rows: res.executed_rows,
    clipped: res.clipped,
    reading: lastReading(res) ?? null,
    readings_count: res.readings.length,
    events: res.events,
    safety: res.safety,
    robot_errors: res.robot_errors,
    episode: res.episode,
  };
}

const frameOptions = ActRequestSchema.shape.frames.unwrap().shape;
const videoInput = z
  .object({ fps: frameOptions.fps, cameras: frameOptions.cameras })
  .strict()
  .optional()
  .describe(
    "also return the execution as one MP4 per camera (H.264), attached as a video/mp4 resource; spec video.available says whether the gateway can",
  );

const chunkInput = (columns: string) =>
  ActRequestSchema.pick({ dt: true })
    .extend({
      rows: z
        .array(z.array(z.number()))
        .min(1)
        .describe(
          `one row per dt: ${columns}; at most budgets.max_rows_per_chunk rows and budgets.max_call_s s`,
        ),
      video: videoInput,
    })
    .strict();

type ChunkArgs = { dt: number; rows: number[][]; video?: { fps: number; cameras?: string[] } };

/** One chunk through act; with `video`, the MP4s come back as resources beside the motion data. */
async function runChunk(c: AgentClient, type: string, args: ChunkArgs): Promise<ToolOutput> {
  const v = args.video;
  const res = await c.act({
    type,
    dt: args.dt,
    rows: args.rows,
    ...(v ? { frames: { fps: v.fps, ...(v.cameras ? { cameras: v.cameras } : {}), video: true } } : {}),
  });
  const data = {
    ...motionData(res),
    ...(res.videos ? { videos: res.videos } : {}),
    ...(res.video_error ? { video_error: res.video_error } : {}),
  };
  const resources: NonNullable<ToolOutput["resources"]> = [];
  for (const ref of res.videos ?? []) {
    const file = await c.video(ref);
    resources.push({
      label: `video ${ref.camera}: ${ref.frames} frames at ${ref.fps} fps of episode time (from t = ${ref.t_start} s); GET ${ref.url} with the agent token`,
      uri: c.url + ref.url,
      mimeType: ref.content_type,
      data: file.data,
    });
  }
  return { data, ...(resources.length ? { resources } : {}) };
}

/** A joint chunk that holds the arm and moves the gripper to `widthM` over about `durationS`. */
function gripperRows(
  spec: Spec,
  card: TaskCard,
  q: readonly number[],
  fromM: number,
  widthM: number,
  durationS: number,
) {
  const period = spec.control.control_period_s;
  const maxDtSteps = Math.max(1, Math.floor(spec.control.max_dt_s / period + 1e-9));
  const maxRows = card.budgets.max_rows_per_chunk;
  // the fewest rows at the coarsest dt that still cover the duration
  const steps = Math.max(1, Math.round(durationS / period));
  const n = Math.min(maxRows, Math.max(1, Math.ceil(steps / maxDtSteps)));
  const dtSteps = Math.min(maxDtSteps, Math.max(1, Math.ceil(steps / n)));
  const rows: number[][] = [];
  for (let k = 1; k <= n; k++) {
    const s = k / n;
    const m = s * s * (3 - 2 * s);
    rows.push([...q, fromM + (widthM - fromM) * m]);
  }
  return { rows, dt: Number((dtSteps * period).toFixed(9)) };
}

export const TOOLS: readonly ToolDef[] = [
  {
    name: "get_task_spec",
    title: "Task card and robot spec",
    description:
      "The task card of the current episode (instruction, level, open action types, budgets, submission schema) and the robot spec (joints and limits, control period and max dt, action columns and jog commands, cameras with intrinsics, distortion and pose, world conventions).",
    readOnly: true,
    input: () => empty,
    async run(c) {
      const [task, spec, obs] = await Promise.all([c.task(), c.spec(), c.observe({ cameras: [] })]);
      return { data: { t: obs.t, time_left_s: obs.time_left_s, task, spec } };
    },
  },
  {
    name: "get_observation",
    title: "Camera images",
    description:
      "Camera images now (RGB as JPEG image content; depth as a 16-bit PNG in millimetres of z-depth, 0 = no return, when depth is true), with the joint reading and the observation_id to cite as evidence. Does not advance time.",
    readOnly: true,
    input: () => ObserveRequestSchema.pick({ cameras: true, depth: true }).strict(),
    async run(c, args: { cameras?: string[]; depth: boolean }) {
      const obs: ObserveResponse = await c.observe({
        ...(args.cameras ? { cameras: args.cameras } : {}),
        depth: args.depth,
        encoding: "jpeg",
      });
      const images: NonNullable<ToolOutput["images"]> = [];
      for (const f of obs.frames) {
        images.push({
          label: `${f.camera} rgb at t=${f.t}`,
          mimeType: "image/jpeg",
          data: (await c.frame(f.rgb)).data,
        });
        if (f.depth)
          images.push({
            label: `${f.camera} depth (16-bit PNG, mm) at t=${f.t}`,
            mimeType: "image/png",
            data: (await c.frame(f.depth)).data,
          });
      }
      return {
        data: {
          t: obs.t,
          time_left_s: obs.time_left_s,
          observation_id: obs.observation_id,
          reading: lastReading(obs) ?? null,
          frames: obs.frames.map((f) => ({ camera: f.camera, t: f.t, depth: f.depth !== undefined })),
          events: obs.events,
          safety: obs.safety,
          episode: obs.episode,
        },
        images,
      };
    },
  },
  {
    name: "get_robot_state",
    title: "Robot state",
    description:
      "The newest joint reading (q rad, dq rad/s, gripper opening m) with the tool and flange pose in the base frame (FK), sensor and safety events since the last call, and the episode status. Does not advance time.",
    readOnly: true,
    input: () => empty,
    async run(c) {
      const obs = await c.observe({ cameras: [] });
      const r = lastReading(obs)!;
      return {
        data: {
          t: obs.t,
          time_left_s: obs.time_left_s,
          observation_id: obs.observation_id,
          ...(await state(c, r)),
          events: obs.events,
          safety: obs.safety,
          episode: obs.episode,
        },
      };
    },
  },
  {
    name: "execute_joint_trajectory",
    title: "Execute a joint trajectory",
    description:
      "Run one chunk of joint-position rows (7 joint angles in rad, then the gripper opening in m), one row every dt seconds (dt a whole multiple of control_period_s, at most max_dt_s). The path is checked against the safety limits before anything moves; a refused chunk moves nothing. Returns the last reading, clipped entries, events and the episode status.",
    needs: ["joint_position"],
    input: () => chunkInput("q1…q7 (rad), gripper_width (m)"),
    async run(c, args: ChunkArgs) {
      return runChunk(c, "joint_position", args);
    },
  },
  {
    name: "execute_tool_poses",
    title: "Execute tool poses",
    description:
      "Run one chunk of tool poses in the robot base frame (x y z in m, quaternion qx qy qz qw, then the gripper opening in m), one row every dt seconds; the gateway solves IK per row and runs the joint path like execute_joint_trajectory.",
    needs: ["ee_pose"],
    input: () => chunkInput("x y z (m), qx qy qz qw, gripper_width (m)"),
    async run(c, args: ChunkArgs) {
      return runChunk(c, "ee_pose", args);
    },
  },
  {
    name: "jog",
    title: "Jog",
    description:
      "Discrete jog commands, one every dt seconds, each applied to the pose the previous one reached: ±x ±y ±z move the tool point along the base axes by the linear step, ±roll ±pitch ±yaw rotate about the base axes through the tool point by the angular step, open/close change the gripper by its step, stay holds (step sizes: spec control.actions[type=jog].step_sizes).",
    needs: ["jog"],
    input(spec) {
      const words = spec.control.actions.find((a) => a.type === "jog")?.commands ?? [];
      const command = words.length > 0 ? z.enum(words as [string, ...string[]]) : z.string();
      return ActRequestSchema.pick({ dt: true })
        .extend({ commands: z.array(command).min(1).describe("jog command words, in order") })
        .strict();
    },
    async run(c, args: { dt: number; commands: string[] }, spec) {
      const words = spec.control.actions.find((a) => a.type === "jog")?.commands ?? [];
      const rows = args.commands.map((w) => [words.indexOf(w)]);
      return { data: motionData(await c.act({ type: "jog", dt: args.dt, rows })) };
    },
  },
  {
    name: "set_gripper",
    title: "Set the gripper opening",
    description:
      "Move the gripper to an opening (m) over about duration_s seconds while the arm holds its joints (one joint-position chunk). While the buzz-wire loop is held, the gripper column does nothing.",
    needs: ["joint_position"],
    input: () =>
      z
        .object({
          width_m: z
            .number()
            .min(0)
            .describe("gripper opening, m (spec robot.gripper.min_width_m … max_width_m)"),
          duration_s: z.number().positive().max(MAX_WAIT_S).default(0.5).describe("seconds for the move"),
        })
        .strict(),
    async run(c, args: { width_m: number; duration_s: number }, spec) {
      const [card, obs] = await Promise.all([c.task(), c.observe({ cameras: [] })]);
      const r = lastReading(obs)!;
      const chunk = gripperRows(spec, card, r.q, r.gripper_width_m, args.width_m, args.duration_s);
      return { data: motionData(await c.act({ type: "joint_position", ...chunk })) };
    },
  },
  {
    name: "wait",
    title: "Wait",
    description: `Hold the last command while episode time passes (at most ${MAX_WAIT_S} s; longer than budgets.max_call_s is split into several holds), then return the robot state, the events that happened and the episode status.`,
    input: () =>
      z
        .object({ seconds: z.number().min(0).max(MAX_WAIT_S).describe("episode seconds to hold, ≤ 30") })
        .strict(),
    async run(c, args: { seconds: number }) {
      const card = await c.task();
      const step = card.budgets.max_call_s;
      let left = args.seconds;
      const events: ObserveResponse["events"] = [];
      const safety: ObserveResponse["safety"] = [];
      let obs = await c.observe({ cameras: [], advance_s: Math.min(left, step) });
      for (;;) {
        events.push(...obs.events);
        safety.push(...obs.safety);
        left -= Math.min(left, step);
        if (left <= 1e-9 || obs.episode.status === "ended") break;
        obs = await c.observe({ cameras: [], advance_s: Math.min(left, step) });
      }
      return {
        data: {
          t: obs.t,
          time_left_s: obs.time_left_s,
          observation_id: obs.observation_id,
          ...(await state(c, lastReading(obs)!)),
          events,
          safety,
          episode: obs.episode,
        },
      };
    },
  },
  {
    name: "solve_ik",
    title: "Solve IK",
    description:
      "Joint angles that put the tool at a pose in the robot base frame (xyz m, quaternion xyzw), seeded by q_seed or the current joints, with the residuals. Never moves the robot or advances time; an unreachable pose is RB_ERR_IK_UNREACHABLE.",
    readOnly: true,
    input: () => IkRequestSchema,
    async run(c, args: z.infer<typeof IkRequestSchema>) {
      return { data: await c.ik(args) };
    },
  },
  {
    name: "submit_result",
    title: "Submit the result and end the episode",
    description:
      "End the episode. With an answer (tasks whose card has a submission schema) it is submitted with the observation ids in evidence; without one the episode is finished. Nothing can move afterwards.",
    input: () => SubmitRequestSchema.partial().strict(),
    async run(c, args: { answer?: unknown; evidence?: string[] }) {
      const res =
        args.answer === undefined ? await c.finish() : await c.submit(args.answer, args.evidence ?? []);
      return { data: res };
    },
  },
];

// ------------------------------------------------------------------ the MCP side

function jsonSchema(s: z.ZodType): Tool["inputSchema"] {
  const js = z.toJSONSchema(s, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  delete js.$schema;
  return { ...js, type: "object" } as Tool["inputSchema"];
}

function toolsOpen(card: TaskCard | null): ToolDef[] {
  return TOOLS.filter((t) => !t.needs || (card !== null && t.needs.some((a) => card.actions.includes(a))));
}

/** The tools listed for the current episode (level-dependent), as MCP tool definitions. */
export async function listTools(c: AgentClient): Promise<Tool[]> {
  const [card, spec] = await Promise.all([c.task().catch(() => null), c.spec()]);
  return toolsOpen(card).map((t) => ({
    name: t.name,
    title: t.title,
    description: t.description,
    inputSchema: jsonSchema(t.input(spec)),
    annotations: { title: t.title, readOnlyHint: !!t.readOnly, openWorldHint: false },
  }));
}

function errorBody(e: unknown): {
  error: { code: string; message: string; details: Record<string, unknown> };
} {
  if (e instanceof RobotGatewayError) return e.toBody();
  const message = e instanceof Error ? e.message : String(e);
  return { error: { code: "RB_ERR_INTERNAL", message, details: {} } };
}

async function clock(c: AgentClient): Promise<{ t: number; time_left_s: number } | Record<string, never>> {
  try {
    const o = await c.observe({ cameras: [] });
    return { t: o.t, time_left_s: o.time_left_s };
  } catch {
    return {};
  }
}

/** Run one tool call; never throws (errors are tool errors carrying the RB_ERR code). */
export async function callTool(c: AgentClient, name: string, args: unknown): Promise<CallToolResult> {
  const fail = async (e: unknown): Promise<CallToolResult> => {
    const body = { ...errorBody(e), ...(await clock(c)) };
    return {
      isError: true,
      content: [{ type: "text", text: JSON.stringify(body) }],
      structuredContent: body,
    };
  };
  const tool = TOOLS.find((t) => t.name === name);
  if (!tool)
    return fail(
      new RobotGatewayError(
        "RB_ERR_NOT_FOUND",
        404,
        `No tool ${name}`,
        { method: "tools/call", url: name },
        "tools/call",
      ),
    );
  try {
    const spec = await c.spec();
    const parsed = tool.input(spec).safeParse(args ?? {});
    if (!parsed.success) {
      const list = parsed.error.issues.map((i) => `/${i.path.join("/")} ${i.message}`);
      return fail(
        new RobotGatewayError(
          "RB_ERR_BAD_REQUEST",
          400,
          `Request does not match the schema: ${list.join("; ")}`,
          { issues: list.join("; "), list },
          `tools/call ${name}`,
        ),
      );
    }
    const out = await tool.run(c, parsed.data as never, spec);
    const content: CallToolResult["content"] = [{ type: "text", text: JSON.stringify(out.data) }];
    for (const img of out.images ?? []) {
      content.push({ type: "text", text: img.label });
      content.push({ type: "image", mimeType: img.mimeType, data: img.data.toString("base64") });
    }
    for (const r of out.resources ?? []) {
      content.push({ type: "text", text: r.label });
      content.push({
        type: "resource",
        resource: { uri: r.uri, mimeType: r.mimeType, blob: r.data.toString("base64") },
      });
    }
    return { content, structuredContent: out.data };
  } catch (e) {
    return fail(e);
  }
}

/** Install the tool handlers on an MCP server (before it connects). */
export function installTools(server: McpServer, c: AgentClient): void {
  server.server.registerCapabilities({ tools: { listChanged: false } });
  server.server.setRequestHandler(ListToolsRequestSchema, async () => {
    try {
      return { tools: await listTools(c) };
    } catch (e) {
      // the listing needs the spec: a gateway that cannot answer is a protocol error with its code
      const { error } = errorBody(e);
      throw new McpError(ErrorCode.InternalError, `${error.code}: ${error.message}`, error);
    }
  });
  server.server.setRequestHandler(CallToolRequestSchema, async (req) =>
    callTool(c, req.params.name, req.params.arguments),
  );
}
