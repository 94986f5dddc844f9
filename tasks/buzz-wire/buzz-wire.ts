/**
 * The buzz-wire game: guide the loop along the bent wire from the start mark to the end mark
 * without touching it. A contact ends the trial (task_failed); reaching the end mark with the
 * wire through the loop and no contact is success.
 *
 * Progress = share of the centreline arc between the start and end marks that the loop has
 * passed (the wire running through the loop) before the first contact; reported continuous
 * and quantised to the bench's checkpoints (default 5 → 20 % steps, as in the published
 * demonstration). The judge reads only readings (via FK with the bench's tool offset) and
 * contact events, so the live gateway and `grade` compute the same result.
 */
import { z } from "zod";
import { toolSchema, wireSchema } from "../../calibration/schema.ts";
import { centreline } from "../../calibration/wire-geometry.ts";
import { fkWorkspace, forwardKinematicsInto } from "../../robots/franka/kinematics.ts";
import type { TaskDefinition, TaskJudge, TaskScore, TaskStatus } from "../types.ts";
import { type ThreadHit, threadedArc, wireGeometry } from "./progress.ts";

/** The hidden instance: the wire and the loop, from the bench calibration. */
export const BuzzWireInstanceSchema = z.object({
  wire: wireSchema,
  loopInnerRadiusM: z.number().positive(),
});
export type BuzzWireInstance = z.infer<typeof BuzzWireInstanceSchema>;

/** The bench context a buzz-wire bench gives (a calibration file's `wire` and `tool`). */
const BenchSchema = z.object({
  wire: BuzzWireInstanceSchema.shape.wire,
  tool: z.object({ loopInnerRadiusM: z.number().positive() }).loose(),
});

/** What benchFacts reads: the visible tool and wire sizes (the loop's own wire is optional). */
const FactsSchema = z.object({
  wire: BuzzWireInstanceSchema.shape.wire,
  tool: toolSchema.partial().required({ loopInnerRadiusM: true }),
});

/** to 0.1 mm: what a ruler on the bench gives, and no float tail that could fingerprint the instance */
const r4 = (m: number) => Math.round(m * 1e4) / 1e4;

/**
 * What a player sees on the bench: loop and wire sizes, how far before the end post success
 * fires, and the grip. Sizes only, to 0.1 mm (the marks' positions, the centreline and
 * the wire's length stay hidden; the end mark's distance from the post is a constant of the
 * bench, painted on the board).
 */
function benchFacts(ctx: { bench: Record<string, unknown> }): Record<string, unknown> {
  const b = FactsSchema.parse(ctx.bench);
  const t = b.tool;
  const lengthM = centreline(b.wire.pointsBase).lengthM;
  const loop: Record<string, unknown> = {
    inner_radius_m: t.loopInnerRadiusM,
    frame:
      "tool frame: origin at the loop centre, z along the loop axis, x from the centre away from the handle",
  };
  if (t.loopWireRadiusM !== undefined) loop.loop_wire_radius_m = t.loopWireRadiusM;
  if (t.handleLengthM !== undefined) loop.handle_length_m = t.handleLengthM;
  return {
    loop,
    wire: {
      radius_m: b.wire.wireRadiusM,
      clearance_m: r4(t.loopInnerRadiusM - b.wire.wireRadiusM),
      note: "the wire is touched when the loop's own wire meets it (the clearance is loop inner radius − wire radius)",
    },
    success: {
      before_end_post_m: r4(lengthM - b.wire.endMarkM + END_TOLERANCE_M),
      rule: "success fires when the loop centre, with the wire through the loop and no touch so far, comes this far (along the wire) before the end post",
    },
    gripper:
      "the loop's handle is held for the whole trial: the gripper column moves the fingers only and has no effect on the loop or the score; send the reading's gripper_width_m",
    depth: "depth images: 16-bit PNG, z-depth along the optical axis in mm, 0 = no return",
  };
}

const RUNNING: TaskStatus = Object.freeze({ state: "running" });
const SUCCESS: TaskStatus = Object.freeze({ state: "success" });

/** How close to the start mark the loop must first be threaded, as a share of the course. */
const START_WINDOW = 0.1;
/** The end counts as reached within this arc distance of the end mark, m (the post's half width). */
const END_TOLERANCE_M = 0.003;
/** Progress resolution: shares are rounded to this, so float noise at the start scores exactly 0. */
const SHARE_RESOLUTION = 1e-6;

function instruction(
  level: string,
  _setting: string,
  b: { timeLimitS: number; maxRowsPerChunk: number; maxCallS: number },
  bench?: Record<string, unknown>,
): string {
  const act = {
    joint_position: "`joint_position`: rows of 7 joint angles (rad) and the gripper opening (m).",
    ee_pose:
      "`ee_pose`: rows of the tool pose `x y z qx qy qz qw` in the robot base frame plus the gripper opening; the gateway solves IK per row. `joint_position` is open too.",
    jog: "`jog`: rows of one command index into `control.actions[type=jog].commands` of `GET /v1/spec` (step sizes listed there). ±x/±y/±z move the tool point along the robot base axes; ±roll/±pitch/±yaw turn the tool about the base x/y/z axes through the tool point (the loop centre stays put); one command per row, each row takes `dt` (a whole multiple of `control.control_period_s`, at most `control.max_dt_s`; the step over `dt` must stay under `safety.max_tool_speed_m_s`).",
  } as Record<string, string>;
  const facts = bench as ReturnType<typeof benchFacts> | undefined;
  const loop = facts?.loop as { inner_radius_m?: number } | undefined;
  const wire = facts?.wire as { radius_m?: number; clearance_m?: number } | undefined;
  const success = facts?.success as { before_end_post_m?: number } | undefined;
  const seen: string[] = facts
    ? [
        `- On the bench: loop inner radius ${loop?.inner_radius_m} m, wire radius ${wire?.radius_m} m (clearance ${wire?.clearance_m} m each way around the wire); all in the task card's \`bench\`.`,
        `- Success fires when the loop reaches the end mark, ${success?.before_end_post_m} m along the wire before the end post.`,
        "- The gripper holds the loop's handle all trial: the gripper column moves only the fingers and has no effect on the loop; send the reading's width.",
        "- Depth images are 16-bit PNGs of z-depth along the optical axis in mm; 0 means no return.",
        "- The limits the safety supervisor enforces (fractions of the robot's published limits) and the table and board volumes are in the task card's `safety`.",
      ]
    : [];
  return [
    "# Buzz wire",
    "",
    "The robot holds a metal loop (the **tool** frame: origin at the loop centre, z along the loop axis).",
    "A bent wire runs across the board in front of the robot; at the start the wire runs through the loop",
    "near the start post. Guide the loop along the wire to the end post **without touching the wire**.",
    "",
    "- Touching the wire closes a circuit: the lamp on the board lights up and the trial ends at once.",
    "- Your score is the share of the wire the loop has passed before the trial ended; checkpoints along",
    "  the wire quantise it. Reaching the end post without a touch is full success.",
    "- You see the bench only through the cameras (`POST /v1/observe`, `frames` of `POST /v1/act`) and the",
    "  joint readings. `POST /v1/kinematics/fk` and `/ik` help you move the tool; they never advance time.",
    "- Frames: robot base frame, z up; SI units (m, rad, s); quaternions x y z w. Camera poses and",
    "  intrinsics are in `GET /v1/spec` (OpenCV convention).",
    `- Action at this level: ${act[level] ?? level}`,
    "- Chunks run on the robot's trajectory controller; the safety supervisor refuses chunks that are",
    "  too fast or that would hit the table or the board (nothing moves then). Move slowly near the wire.",
    `- Budgets: ${b.timeLimitS} s of episode time, at most ${b.maxRowsPerChunk} rows per chunk, ${b.maxCallS} s per call. No resets.`,
    "- The trial ends on a touch, when you reach the end, when you call `POST /v1/finish`, or when time runs out.",
    ...seen,
  ].join("\n");
}

export const BUZZ_WIRE: TaskDefinition = {
  id: "buzz-wire",
  title: "Buzz wire",
  settings: ["standard"],
  levels: {
    joint_position: { actions: ["joint_position"] },
    ee_pose: { actions: ["joint_position", "ee_pose"] },
    jog: { actions: ["jog"] },
  },
  defaultLevel: "ee_pose",
  budgets: {
    timeLimitS: 600,
    resets: 0,
    maxRowsPerChunk: 500,
    maxFramesPerCall: 64,
    maxCallS: 20,
    maxSteps: 5000,
  },
  hidesSuccess: false,
  instruction,
  benchFacts,
  sampleInstance: (_seed, ctx) => {
    const bench = BenchSchema.parse(ctx.bench);
    return { wire: bench.wire, loopInnerRadiusM: bench.tool.loopInnerRadiusM } satisfies BuzzWireInstance;
  },
  createJudge: (raw, ctx): TaskJudge => {
    const inst = BuzzWireInstanceSchema.parse(raw);
    const w = inst.wire;
    const geo = wireGeometry(w.pointsBase, w.wireRadiusM, inst.loopInnerRadiusM);
    const courseM = w.endMarkM - w.startMarkM;
    const ws = fkWorkspace();
    const hit: ThreadHit = { sM: Number.NaN, offsetM: 0 };
    const checkpoints = w.checkpointCount;
    const stages: Record<string, number | null> = { start: null };
    for (let k = 1; k <= checkpoints; k++) stages[`checkpoint_${k}`] = null;
    let started = false;
    let bestShare = 0;
    let contact: { t: number; share: number } | null = null;
    let succeededAt: number | null = null;

    // status() runs every control tick: answer with constants, build the failure once
    let failed: TaskStatus | null = null;
    const status = (): TaskStatus => {
      if (contact) {
        failed ??= {
          state: "failed",
          reason: `wire contact at ${(contact.share * 100).toFixed(1)} % of the course`,
        };
        return failed;
      }
      return succeededAt !== null ? SUCCESS : RUNNING;
    };

    return {
      onReading(r) {
        if (contact || succeededAt !== null) return;
        const frames = forwardKinematicsInto(ctx.robot, r.q, ws, ctx.toolFromFlange);
        threadedArc(geo, frames[9]!, hit);
        if (Number.isNaN(hit.sM)) return;
        const remainingM = w.endMarkM - hit.sM;
        const raw = remainingM <= END_TOLERANCE_M ? 1 : (hit.sM - w.startMarkM) / courseM;
        const share = Math.round(raw / SHARE_RESOLUTION) * SHARE_RESOLUTION;
        if (!started) {
          if (share > START_WINDOW) return;
          started = true;
          stages.start = r.t;
        }
        if (share <= bestShare) return;
        bestShare = Math.min(1, share);
        for (let k = 1; k <= checkpoints; k++) {
          const key = `checkpoint_${k}`;
          if (stages[key] === null && bestShare >= k / checkpoints - 1e-9) stages[key] = r.t;
        }
        if (bestShare >= 1) succeededAt = r.t;
      },
      onEvent(e) {
        if (e.type === "contact" && e.data.closed === true && !contact && succeededAt === null) {
          contact = { t: e.t, share: bestShare };
        }
      },
      status,
      score(): TaskScore {
        const q = Math.floor(bestShare * checkpoints + 1e-9) / checkpoints;
        return {
          progress: bestShare,
          progressQuantised: q,
          stages: { ...stages },
          details: {
            contact_t: contact?.t ?? null,
            success_t: succeededAt,
            course_m: courseM,
            checkpoints,
          },
        };
      },
    };
  },
};
