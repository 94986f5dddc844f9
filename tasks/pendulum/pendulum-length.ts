/**
 * Pendulum length ("act to know"): a pendulum hangs at rest on a stand in front of the robot,
 * a photogate's beam crosses the bottom of its swing. The agent must set it swinging, read the
 * photogate, determine the rod length and submit it once with evidence, leaving the arm back at
 * its start pose.
 *
 * The judge reads only the episode stream: readings (arm pose at submission), the photogate's
 * `instrument` events, the observation ids the gateway issued with their times, and the
 * submission. Success = answer within tolerance AND evidence valid (every cited id was issued,
 * at least one was issued after the first photogate event) AND the arm back within the joint
 * tolerance of its start pose. The process score counts five milestones: changed the apparatus
 * (first photogate event) → observed the feedback (an observation after it) → readings suffice
 * (enough full periods recorded) → result within tolerance → bench restored.
 */
import { z } from "zod";
import type { TaskDefinition, TaskJudge, TaskScore, TaskStatus } from "../types.ts";

/** The hidden instance and the rule's parameters. */
export const PendulumInstanceSchema = z.object({
  /** hinge axis to bob centre, m (hidden) */
  lengthM: z.number().positive(),
  /** joint angles the arm must be back at when submitting, rad */
  startQ: z.array(z.number()).min(1),
  /** accepted relative error of the answer */
  toleranceRel: z.number().positive(),
  /** accepted deviation from startQ per joint at submission, rad */
  restoreTolRad: z.number().positive(),
  /** full swing periods the photogate must have recorded for "readings suffice" */
  minPeriods: z.number().int().positive(),
});
export type PendulumInstance = z.infer<typeof PendulumInstanceSchema>;

/** The bench context a pendulum bench gives (sim/pendulum/bench.ts's spec; backend-independent data). */
const BenchSchema = z
  .object({
    pendulum: z.object({ lengthM: z.number().positive() }).loose(),
    startQ: z.array(z.number()).min(1),
  })
  .loose();

/** The answer the agent submits. */
export const PendulumAnswerSchema = z.object({ length_m: z.number().finite().positive() }).strict();

/** JSON schema of the submission's `answer` (shown in the task card). */
export const PENDULUM_SUBMISSION = Object.freeze({
  type: "object",
  properties: {
    length_m: {
      type: "number",
      exclusiveMinimum: 0,
      description: "the pendulum's length in metres: from the hinge axis to the centre of the bob",
    },
  },
  required: ["length_m"],
  additionalProperties: false,
});

export const PENDULUM_TOLERANCE_REL = 0.03;
export const PENDULUM_RESTORE_TOL_RAD = 0.05;
export const PENDULUM_MIN_PERIODS = 3;
export const PHOTOGATE = "photogate";

/** Milestone names in order (also the stage names of the score). */
export const PENDULUM_STAGES = [
  "apparatus_changed",
  "feedback_observed",
  "readings_suffice",
  "result_within_tolerance",
  "bench_restored",
] as const;

function instruction(
  level: string,
  _setting: string,
  b: { timeLimitS: number; maxRowsPerChunk: number; maxCallS: number; maxSteps: number },
): string {
  const act: Record<string, string> = {
    joint_position: "`joint_position`: rows of 7 joint angles (rad) and the gripper opening (m).",
    ee_pose:
      "`ee_pose`: rows of the tool pose `x y z qx qy qz qw` in the robot base frame plus the gripper opening; the gateway solves IK per row. `joint_position` is open too.",
  };
  return [
    "# Pendulum length",
    "",
    "A pendulum hangs at rest from a hinge on a stand on the table in front of the robot: a small steel",
    "bob on a light rod. A **photogate** (a light beam between two posts) crosses the bottom of the swing.",
    "**Goal: determine the pendulum's length** — from the hinge axis to the centre of the bob, in metres —",
    "and submit it once.",
    "",
    "- The robot carries the Franka Hand; the **tool** frame is the point between the fingertips (z along the",
    "  approach direction). The arm may touch the bob; it must not touch the stand, the gate posts or the table.",
    "- The photogate reports every change of its beam: `blocked` is 1 when the beam is interrupted, 0 when it",
    "  is clear. `GET /v1/instruments/photogate` returns every change recorded so far, each with its time `t`",
    "  in episode seconds, and an `observation_id`. The changes also appear in the `events` of `act` and",
    "  `observe` responses. At the start the bob rests in the beam.",
    "- Observe with `POST /v1/observe` (camera frames; `advance_s` lets time pass while the arm holds still).",
    "  Each observation and each instrument export carries an `observation_id`.",
    "- Submit once with `POST /v1/submit` and body",
    '  `{"answer": {"length_m": <number>}, "evidence": ["<observation_id>", …]}`. Cite the observations your',
    "  answer rests on; evidence must be ids this gateway issued to you in this trial, taken after you set the",
    "  apparatus in motion. The first submission ends the trial.",
    `- When you submit, the arm must be back at its start pose (every joint within ${PENDULUM_RESTORE_TOL_RAD} rad of the`,
    "  joint angles it had at the start of the trial), clear of the apparatus.",
    "- The answer counts when it is within a few per cent of the true length.",
    "- Frames: robot base frame, z up; SI units (m, rad, s); quaternions x y z w; local gravitational",
    "  acceleration 9.81 m/s². Camera poses and intrinsics are in `GET /v1/spec` (OpenCV convention).",
    `- Action at this level: ${act[level] ?? level}`,
    "- Chunks run on the robot's trajectory controller; the safety supervisor refuses chunks that are too",
    "  fast or that leave the workspace (nothing moves then). A collision with the stand, the gate or the table",
    "  stops the robot and ends the trial.",
    `- Budgets: ${b.timeLimitS} s of episode time, at most ${b.maxRowsPerChunk} rows per chunk, ${b.maxCallS} s per call,`,
    `  ${b.maxSteps} motion calls. No resets.`,
    "- The trial ends when you submit, when you call `POST /v1/finish` (no answer), on a collision or safety",
    "  stop, or when time runs out.",
  ].join("\n");
}

/** Passes of the bob through the beam: completed blocked intervals (1 then 0). */
function completedPasses(gate: readonly { t: number; blocked: boolean }[]): number[] {
  const mids: number[] = [];
  for (let i = 0; i + 1 < gate.length; i++) {
    const a = gate[i]!;
    const b = gate[i + 1]!;
    if (a.blocked && !b.blocked) mids.push((a.t + b.t) / 2);
  }
  return mids;
}

export const PENDULUM_LENGTH: TaskDefinition = {
  id: "pendulum-length",
  title: "Pendulum length",
  settings: ["standard"],
  levels: {
    joint_position: { actions: ["joint_position"] },
    ee_pose: { actions: ["joint_position", "ee_pose"] },
  },
  defaultLevel: "ee_pose",
  budgets: {
    timeLimitS: 300,
    resets: 0,
    maxRowsPerChunk: 500,
    maxFramesPerCall: 64,
    maxCallS: 20,
    maxSteps: 500,
  },
  // the agent learns nothing about its answer before the trial ends
  hidesSuccess: true,
  submission: PENDULUM_SUBMISSION,
  instruments: [PHOTOGATE],
  instruction,
  sampleInstance: (_seed, ctx) => {
    const bench = BenchSchema.parse(ctx.bench);
    return {
      lengthM: bench.pendulum.lengthM,
      startQ: [...bench.startQ],
      toleranceRel: PENDULUM_TOLERANCE_REL,
      restoreTolRad: PENDULUM_RESTORE_TOL_RAD,
      minPeriods: PENDULUM_MIN_PERIODS,
    } satisfies PendulumInstance;
  },
  createJudge: (raw): TaskJudge => {
    const inst = PendulumInstanceSchema.parse(raw);
    const dof = inst.startQ.length;
    /** the latest measured joint angles (the start pose until the first reading) */
    const lastQ = Float64Array.from(inst.startQ);
    const gate: { t: number; blocked: boolean }[] = [];
    const observations = new Map<string, number>();
    const stages: Record<string, number | null> = Object.fromEntries(PENDULUM_STAGES.map((s) => [s, null]));
    let lastT = 0;
    let submission: {
      t: number;
      answerM: number | null;
      relError: number | null;
      evidenceValid: boolean;
      evidenceReason: string | null;
      maxJointDevRad: number;
    } | null = null;

    const neededPasses = 2 * inst.minPeriods + 1;
    const firstGateT = (): number | null => gate[0]?.t ?? null;

    const status = (): TaskStatus => {
      if (!submission) return { state: "running" };
      if (submission.answerM === null)
        return { state: "failed", reason: "the answer is not a positive length" };
      if (!submission.evidenceValid)
        return { state: "failed", reason: `evidence: ${submission.evidenceReason}` };
      if ((submission.relError ?? 1) > inst.toleranceRel)
        return { state: "failed", reason: "answer out of tolerance" };
      if (submission.maxJointDevRad > inst.restoreTolRad)
        return { state: "failed", reason: "the arm was not back at its start pose" };
      return { state: "success" };
    };

    return {
      onReading(r) {
        lastT = r.t;
        for (let j = 0; j < dof; j++) lastQ[j] = r.q[j]!;
      },
      onEvent(e) {
        lastT = Math.max(lastT, e.t);
        if (e.type !== "instrument" || e.data.name !== PHOTOGATE || submission) return;
        const values = e.data.values as Record<string, unknown> | undefined;
        const blocked = values?.blocked;
        if (blocked !== 0 && blocked !== 1) return;
        gate.push({ t: e.t, blocked: blocked === 1 });
        if (stages.apparatus_changed === null) stages.apparatus_changed = e.t;
        if (stages.readings_suffice === null && completedPasses(gate).length >= neededPasses)
          stages.readings_suffice = e.t;
      },
      onObservation(id, t) {
        lastT = Math.max(lastT, t);
        observations.set(id, t);
        const g = firstGateT();
        if (stages.feedback_observed === null && g !== null && t > g && !submission)
          stages.feedback_observed = t;
      },
      onSubmit(answer, evidence, known) {
        if (submission) return;
        const t = lastT;
        const parsed = PendulumAnswerSchema.safeParse(answer);
        const answerM = parsed.success ? parsed.data.length_m : null;
        const relError = answerM === null ? null : Math.abs(answerM - inst.lengthM) / inst.lengthM;
        let evidenceReason: string | null = null;
        const g = firstGateT();
        if (evidence.length === 0) evidenceReason = "no observation cited";
        else if (evidence.some((id) => !known.has(id)))
          evidenceReason = "cites an id this gateway never issued";
        else if (g === null) evidenceReason = "the photogate never saw the pendulum move";
        else if (!evidence.some((id) => (observations.get(id) ?? Number.NEGATIVE_INFINITY) > g))
          evidenceReason = "no cited observation was taken after the apparatus was set in motion";
        let maxDev = 0;
        for (let j = 0; j < dof; j++) maxDev = Math.max(maxDev, Math.abs(lastQ[j]! - inst.startQ[j]!));
        submission = {
          t,
          answerM,
          relError,
          evidenceValid: evidenceReason === null,
          evidenceReason,
          maxJointDevRad: maxDev,
        };
        if (relError !== null && relError <= inst.toleranceRel) stages.result_within_tolerance = t;
        if (maxDev <= inst.restoreTolRad) stages.bench_restored = t;
      },
      status,
      score(): TaskScore {
        const reached = PENDULUM_STAGES.filter((s) => stages[s] !== null).length;
        const processScore = reached / PENDULUM_STAGES.length;
        return {
          progress: processScore,
          stages: { ...stages },
          processScore,
          details: {
            length_m: inst.lengthM,
            answer_m: submission?.answerM ?? null,
            rel_error: submission?.relError ?? null,
            tolerance_rel: inst.toleranceRel,
            evidence_valid: submission?.evidenceValid ?? null,
            evidence_reason: submission?.evidenceReason ?? null,
            max_joint_dev_rad: submission?.maxJointDevRad ?? null,
            photogate_events: gate.length,
            passes: completedPasses(gate).length,
            submitted: submission !== null,
          },
        };
      },
    };
  },
};
