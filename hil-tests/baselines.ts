/**
 * HIL baselines: figures measured on a composed bench (any bench file; the sim by default) and
 * compared with the ones stored for that bench, so a lab can see a regression in its own CI.
 *
 * - tracking_max_rad: largest |measured − commanded| joint angle while following the wire's
 *   reference path (first 2 s)
 * - stop_settle_ms: from a stop verdict in the control loop to the arm at rest (|dq| < 1e-3 rad/s)
 * - frame_latency_ms: now − exposure time of the frames of one capture (the largest)
 * A figure regresses when it exceeds its baseline × (1 + tolerance) + slack (slack absorbs 0-valued
 * baselines: 1e-5 rad, 1 ms, 1 ms).
 */
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { calibrationSchema } from "../calibration/schema.ts";
import type { BenchConfig } from "../compose/bench-config.ts";
import { composeBench } from "../compose/compose.ts";
import { interpolateChunk } from "../seam/interpolate.ts";
import { wireReferencePath } from "../sim/buzzwire/reference-path.ts";

export const BASELINE_FORMAT = "robot-gateway/hil-baselines@1";

export interface HilFigures {
  tracking_max_rad: number;
  stop_settle_ms: number;
  frame_latency_ms: number;
}
const SLACK: HilFigures = { tracking_max_rad: 1e-5, stop_settle_ms: 1, frame_latency_ms: 1 };

export async function measureFigures(config: BenchConfig, baseDir?: string): Promise<HilFigures> {
  const bench = await composeBench(config, baseDir);
  const b = bench.backend;
  try {
    const seed = config.task.seed;
    await b.reset?.({ seed });
    const cal = calibrationSchema.parse(bench.taskBench(seed));
    const robot = b.describe().robot;
    const dt = b.describe().controlPeriodS;
    const path = () => {
      const r = b.read();
      const ref = wireReferencePath(robot, cal, {
        gripperWidthM: r.gripperWidthM,
        seedQ: r.q,
        speedMps: 0.03,
        spacingM: 0.006,
      });
      const rows = ref.rows.slice(0, Math.max(1, Math.floor(2 / ref.dtS)));
      return interpolateChunk({ q: r.q, dq: r.dq, gripperWidthM: r.gripperWidthM }, rows, ref.dtS, dt);
    };
    // tracking
    const t1 = path();
    let tracking = 0;
    await b.execute(t1, {
      onTick: (r, i) => {
        for (let j = 0; j < 7; j++) tracking = Math.max(tracking, Math.abs(r.q[j]! - t1.q[i * 7 + j]!));
        return "ok";
      },
    });
    // stop: a stop verdict half-way, then hold until still
    await b.reset?.({ seed });
    const t2 = path();
    const half = Math.floor(t2.count / 2);
    const stopped = await b.execute(t2, { onTick: (_r, i) => (i >= half ? "stop" : "ok") });
    const tStop = stopped.final.t;
    let settled = Number.NaN;
    await b.hold(0.5, {
      onTick: (r) => {
        if (Number.isNaN(settled) && r.dq.every((v) => Math.abs(v) < 1e-3)) settled = r.t;
        return "ok";
      },
    });
    if (Number.isNaN(settled) && stopped.final.dq.every((v) => Math.abs(v) < 1e-3)) settled = tStop;
    // frames
    const frames = await b.capture([], { depth: false });
    const now = b.now();
    const frameLatency = Math.max(0, ...frames.map((f) => now - f.t));
    return {
      tracking_max_rad: tracking,
      stop_settle_ms: Number.isNaN(settled) ? Number.POSITIVE_INFINITY : (settled - tStop) * 1000,
      frame_latency_ms: frameLatency * 1000,
    };
  } finally {
    await b.shutdown();
  }
}

export interface Regression {
  figure: keyof HilFigures;
  measured: number;
  baseline: number;
  limit: number;
}

export function compareFigures(measured: HilFigures, baseline: HilFigures, tolerance: number): Regression[] {
  const out: Regression[] = [];
  for (const k of Object.keys(SLACK) as (keyof HilFigures)[]) {
    const limit = baseline[k] * (1 + tolerance) + SLACK[k];
    if (!(measured[k] <= limit)) out.push({ figure: k, measured: measured[k], baseline: baseline[k], limit });
  }
  return out;
}

export function readBaselines(path: string): Record<string, HilFigures> {
  if (!existsSync(path)) return {};
  const j = JSON.parse(readFileSync(path, "utf8")) as {
    format?: string;
    benches?: Record<string, HilFigures>;
  };
  if (j.format !== BASELINE_FORMAT) throw new Error(`${path}: not a HIL baselines file (${BASELINE_FORMAT})`);
  return j.benches ?? {};
}

export function writeBaselines(path: string, benches: Record<string, HilFigures>): void {
  writeFileSync(path, `${JSON.stringify({ format: BASELINE_FORMAT, benches }, null, 2)}\n`);
}
