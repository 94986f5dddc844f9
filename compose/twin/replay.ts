/**
 * Open-loop replay of a recorded episode on another bench: the record's accepted commands are sent,
 * in order, to a gateway on the target bench (same task, level and seed), so they pass the same
 * pre-check, IK, interpolation and safety supervisor as live commands; the target's readings and
 * contacts are then compared with the recorded ones (aligned by episode time) — the same divergence
 * report as the shadow twin, minus images (the record's frames are encoded, the replay's are not
 * kept). Real → twin shows what the sim predicts; sim → real is a hardware regression and needs
 * `allowMotion`.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { poseToMat4 } from "../../robots/math.ts";
import { ROBOTS } from "../../robots/franka/models.ts";
import type { EpisodeObserver } from "../../gateway/episode/observer.ts";
import {
  type CommandMessage,
  decodeJointBatch,
  type EventMessage,
  type JointBatchMessage,
  type MetaMessage,
  TOPICS,
} from "../../gateway/recorder/record-format.ts";
import { readRecord } from "../../gateway/recorder/replay.ts";
import { CodedError } from "../../seam/errors.ts";
import type { BenchConfig } from "../bench-config.ts";
import { defaultObservers, type StartedGateway, startGateway } from "../start.ts";
import {
  DivergenceAccumulator,
  type DivergenceSummary,
  divergenceJson,
  formatDivergence,
} from "./divergence.ts";

/** A recorded episode as replay and sysid read it. */
export interface RecordedEpisode {
  path: string;
  meta: MetaMessage;
  /** accepted commands, in order */
  commands: CommandMessage[];
  /** readings: episode seconds, joint positions (7 per sample) */
  t: number[];
  q: number[][];
  /** joint velocities (7 per sample), rad/s, and gripper openings, m, of the same readings */
  dq: number[][];
  gripper: number[];
  /** contact closing edges, episode seconds */
  contacts: number[];
}

export async function loadRecordedEpisode(path: string): Promise<RecordedEpisode> {
  const rec = await readRecord(path);
  let meta: MetaMessage | undefined;
  const commands: CommandMessage[] = [];
  const t: number[] = [];
  const q: number[][] = [];
  const dq: number[][] = [];
  const gripper: number[] = [];
  const contacts: number[] = [];
  for (const m of rec.messages) {
    if (m.topic === TOPICS.meta) meta = m.data as MetaMessage;
    else if (m.topic === TOPICS.commands) {
      const c = m.data as CommandMessage;
      if (c.accepted) commands.push(c);
    } else if (m.topic === TOPICS.jointStates) {
      const b = decodeJointBatch(m.data as JointBatchMessage);
      for (let i = 0; i < b.n; i++) {
        t.push(b.t[i]!);
        q.push(Array.from(b.q.subarray(i * b.dof, i * b.dof + 7)));
        dq.push(Array.from(b.dq.subarray(i * b.dof, i * b.dof + 7)));
        gripper.push(b.gripperWidthM[i]!);
      }
    } else if (m.topic === TOPICS.events) {
      const e = m.data as EventMessage;
      if (e.type === "contact" && e.data.closed === true) contacts.push(e.t);
    }
  }
  if (!meta)
    throw new CodedError("RB_ERR_TWIN_INPUT", { tool: "replay", path, reason: "no /episode/meta message" });
  return { path, meta, commands, t, q, dq, gripper, contacts };
}

export interface ReplayOutcome {
  /** backend seconds at the replay episode's t = 0 */
  t0S: number;
  divergence: DivergenceSummary;
  /** commands sent / answered 200 */
  sent: number;
  executed: number;
  /** why the replay stopped early, when it did */
  stoppedEarly?: string;
  /** the replay episode's own record folder */
  replayRecord?: string;
}

/**
 * Replay `rec` on the bench `config` (composed and started in-process; its records go where the
 * bench file says). A real bench moves only with `allowMotion`.
 */
export async function replayOnBench(
  rec: RecordedEpisode,
  config: BenchConfig,
  opts: {
    baseDir?: string;
    allowMotion?: boolean;
    onStarted?: (g: StartedGateway) => void;
    /** false: no record of the replay episode (sysid's internal replays) */
    record?: boolean;
  } = {},
): Promise<ReplayOutcome> {
  if (config.backend.type === "real" && !opts.allowMotion && !config.backend.allowMotion)
    throw new CodedError("RB_ERR_MOTION_DISABLED", { operation: "a replay (pass --allow-motion)" });
  const bench: BenchConfig =
    config.backend.type === "real" && opts.allowMotion
      ? ({ ...config, backend: { ...config.backend, allowMotion: true } } as BenchConfig)
      : config;
  const readings: { t: number; q: number[] }[] = [];
  const contacts: number[] = [];
  let recordDir: string | undefined;
  let t0S = 0;
  const collector: EpisodeObserver = {
    onStart(ep) {
      recordDir = join(resolve(bench.recordsDir), ep.id);
      t0S = ep.t0S;
    },
    onReading(ep, r) {
      readings.push({ t: r.t - ep.t0S, q: [...r.q] });
    },
    onEvent(ep, e) {
      if (e.type === "contact" && e.closed) contacts.push(e.t - ep.t0S);
    },
  };
  const defaults = defaultObservers(bench);
  const g = await startGateway({
    config: bench,
    ...(opts.baseDir ? { baseDir: opts.baseDir } : {}),
    observers: (e, b) => [...(opts.record === false ? [] : defaults(e, b)), collector],
    firstEpisode: { task: rec.meta.task, level: rec.meta.level, seed: rec.meta.seed },
  });
  opts.onStarted?.(g);
  let sent = 0;
  let executed = 0;
  let stoppedEarly: string | undefined;
  try {
    for (const c of rec.commands) {
      sent++;
      const res = await g.app.inject({
        method: "POST",
        url: "/v1/act",
        headers: { authorization: `Bearer ${g.agentToken}` },
        payload: c.request as object,
      });
      if (res.statusCode !== 200) {
        stoppedEarly = `command ${sent} answered ${res.statusCode}: ${res.body.slice(0, 200)}`;
        break;
      }
      executed++;
      const body = res.json() as { episode?: { status?: string } };
      if (body.episode?.status && body.episode.status !== "running") {
        if (sent < rec.commands.length)
          stoppedEarly = `the replay episode ended (${body.episode.status}) after command ${sent}`;
        break;
      }
    }
  } finally {
    await g.close({ source: "operator", detail: "replay finished" });
  }
  const robot = ROBOTS[bench.robot];
  const desc = g.bench.toolFromFlange;
  const wire = wireOf(rec.meta.task_bench);
  const acc = new DivergenceAccumulator(
    robot,
    desc ?? poseToMat4({ xyz: [0, 0, 0], quat_xyzw: [0, 0, 0, 1] }),
    wire,
  );
  alignByTime(rec, readings, (a, b) => acc.addSample(a, b));
  for (const t of rec.contacts) acc.contact("real", t);
  for (const t of contacts) acc.contact("twin", t);
  return {
    t0S,
    divergence: acc.summary(),
    sent,
    executed,
    ...(stoppedEarly ? { stoppedEarly } : {}),
    ...(recordDir ? { replayRecord: recordDir } : {}),
  };
}

/** Pair each replay reading with the recorded reading nearest in episode time (recorded first). */
export function alignByTime(
  rec: { t: number[]; q: number[][] },
  replay: readonly { t: number; q: number[] }[],
  pair: (recorded: number[], replayed: number[]) => void,
): void {
  let k = 0;
  for (const r of replay) {
    while (k + 1 < rec.t.length && Math.abs(rec.t[k + 1]! - r.t) <= Math.abs(rec.t[k]! - r.t)) k++;
    if (rec.t.length === 0) return;
    if (Math.abs(rec.t[k]! - r.t) > 0.0015) continue;
    pair(rec.q[k]!, r.q);
  }
}

export function wireOf(
  taskBench: Record<string, unknown>,
): { pointsBase: number[][]; startMarkM: number; endMarkM: number } | null {
  const w = (taskBench as { wire?: { pointsBase?: number[][]; startMarkM?: number; endMarkM?: number } })
    .wire;
  if (!w?.pointsBase || w.startMarkM === undefined || w.endMarkM === undefined) return null;
  return { pointsBase: w.pointsBase, startMarkM: w.startMarkM, endMarkM: w.endMarkM };
}

/** Write the replay report: divergence.json and report.md in `outDir`. */
export function writeReplayReport(
  outDir: string,
  rec: RecordedEpisode,
  benchName: string,
  o: ReplayOutcome,
): string {
  mkdirSync(outDir, { recursive: true });
  const text = formatDivergence(
    `replay of ${rec.path} on ${benchName} (recorded = "real", replay = "twin")`,
    o.divergence,
  );
  writeFileSync(
    join(outDir, "divergence.json"),
    `${JSON.stringify(
      {
        record: rec.path,
        bench: benchName,
        sent: o.sent,
        executed: o.executed,
        stopped_early: o.stoppedEarly ?? null,
        replay_record: o.replayRecord ?? null,
        divergence: divergenceJson(o.divergence),
      },
      null,
      1,
    )}\n`,
  );
  writeFileSync(
    join(outDir, "report.md"),
    `# Replay divergence\n\n${o.executed}/${o.sent} commands executed${o.stoppedEarly ? ` — stopped early: ${o.stoppedEarly}` : ""}\n\n\`\`\`\n${text}\n\`\`\`\n`,
  );
  return text;
}
