/**
 * The planner in slices (runSliced over planChunkSteps): the same plan as the synchronous
 * planChunk, cut at the documented pause points (an IK row, ~256 interpolated samples, a
 * pre-check window), and given up cleanly when the caller says so between two slices.
 */
import { afterEach, describe, expect, it } from "vitest";
import { parseBenchConfig } from "../../compose/bench-config.ts";
import { composeBench } from "../../compose/compose.ts";
import type { JointReading } from "../../seam/types.ts";
import { GatewayError } from "../errors.ts";
import { Gateway } from "../gateway.ts";
import { runSliced } from "../../seam/steps.ts";
import { checkChunk, type PlanContext, planChunk, planChunkSteps } from "./planner.ts";

let gateway: Gateway | undefined;
afterEach(async () => {
  await gateway?.shutdown().catch(() => {});
  gateway = undefined;
});

/** A mirror bench at the ee_pose level: its plan context and measured start. */
async function setup(): Promise<{ ctx: PlanContext; start: JointReading; g: Gateway }> {
  const config = parseBenchConfig({ version: 1, name: "planner", backend: { type: "mirror" } }, "test");
  const g = (gateway = new Gateway(await composeBench(config)));
  const ep = await g.startEpisode({ level: "ee_pose" });
  const c = ep.config;
  const ctx: PlanContext = {
    task: c.task,
    level: c.level,
    actions: c.actions,
    budgets: c.budgets,
    limits: c.limits,
    maxDtS: c.maxDtS,
    toolFromFlange: c.toolFromFlange,
    desc: c.backend.describe(),
  };
  return { ctx, start: c.backend.read(), g };
}

/** `n` tool-pose rows 0.1 s apart: a slow 2 cm move along x from the current tool pose. */
function eeRows(g: Gateway, start: JointReading, n: number): number[][] {
  const tool = g.fk(start.q).tool;
  return Array.from({ length: n }, (_, k) => [
    tool.xyz[0] + (0.02 * (k + 1)) / n,
    tool.xyz[1],
    tool.xyz[2],
    ...tool.quat_xyzw,
    start.gripperWidthM,
  ]);
}

describe("planner: an act's chunk planned in slices", () => {
  it("gives the synchronous plan, pausing after every IK row and pre-check window", async () => {
    const { ctx, start, g } = await setup();
    const n = 40;
    const chunk = checkChunk(ctx, { type: "ee_pose", dt: 0.1, rows: eeRows(g, start, n) });
    const sync = planChunk(ctx, chunk, start);
    expect(sync.precheck.ok).toBe(true);
    let turns = 0;
    const sliced = await runSliced(planChunkSteps(ctx, chunk, start), {
      sliceMs: 0,
      pause: async () => {
        turns++;
      },
    });
    expect(sliced.value.trajectory).toEqual(sync.trajectory);
    expect(sliced.value.precheck).toEqual(sync.precheck);
    expect(sliced.value.clipped).toEqual(sync.clipped);
    // one pause after each IK row but the last, one before interpolating, one before the first
    // segment starting ≥ 256 samples after the last pause (rows of 100 samples: every 3rd row),
    // one per pre-check window (32 samples) and per 1,024 samples of its first pass
    const samples = n * 100;
    const pauses = n - 1 + 1 + Math.floor((n - 1) / 3) + samples / 32 + Math.ceil(samples / 1024) - 1;
    expect(sliced.slices).toBe(pauses + 1);
    expect(turns).toBe(pauses);
  });

  it("pauseAround: a turn before the first slice and after the last, `resume` asked after each", async () => {
    const { ctx, start, g } = await setup();
    const chunk = checkChunk(ctx, { type: "ee_pose", dt: 0.1, rows: eeRows(g, start, 10) });
    const plain = await runSliced(planChunkSteps(ctx, chunk, start), { sliceMs: 0, pause: async () => {} });
    let turns = 0;
    let resumes = 0;
    const around = await runSliced(planChunkSteps(ctx, chunk, start), {
      sliceMs: 0,
      pauseAround: true,
      pause: async () => {
        turns++;
      },
      resume: () => {
        resumes++;
      },
    });
    expect(around.slices).toBe(plain.slices);
    expect(turns).toBe(plain.slices + 1);
    expect(resumes).toBe(turns);
    // a stop in the turn after the last slice still gives the work up: no plan is returned
    const stopped = new GatewayError("RB_ERR_ESTOP", { reason: "test" });
    let n = 0;
    const err = await runSliced(planChunkSteps(ctx, chunk, start), {
      sliceMs: 0,
      pauseAround: true,
      pause: async () => {},
      resume: () => {
        if (++n === turns) throw stopped;
      },
    }).catch((e: unknown) => e);
    expect(err).toBe(stopped);
  });

  it("slices by the clock: a slice runs until sliceMs have passed", async () => {
    const { ctx, start, g } = await setup();
    const chunk = checkChunk(ctx, { type: "ee_pose", dt: 0.1, rows: eeRows(g, start, 40) });
    let t = 0;
    // a fake clock that advances 0.1 ms per reading: a 1 ms slice is ~10 pause points
    const clocked = await runSliced(planChunkSteps(ctx, chunk, start), {
      sliceMs: 1,
      now: () => (t += 0.1),
      pause: async () => {},
    });
    const every = await runSliced(planChunkSteps(ctx, chunk, start), { sliceMs: 0, pause: async () => {} });
    expect(clocked.slices).toBeGreaterThan(1);
    expect(clocked.slices).toBeLessThan(every.slices / 5);
    expect(clocked.value.trajectory).toEqual(every.value.trajectory);
  });

  it("gives up between two slices when `resume` throws, and stops working", async () => {
    const { ctx, start, g } = await setup();
    const chunk = checkChunk(ctx, { type: "ee_pose", dt: 0.1, rows: eeRows(g, start, 40) });
    let solves = 0;
    const ik = chunk.action.toJointRows.bind(chunk.action);
    // count the IK rows the planner still works through
    const action = {
      ...chunk.action,
      toJointRows: function* (rows: number[][], s: JointReading) {
        const work = ik(rows, s);
        for (;;) {
          const r = work.next();
          solves++;
          if (r.done) return r.value;
          yield;
        }
      },
    };
    let pauses = 0;
    const refused = new GatewayError("RB_ERR_ESTOP", { reason: "test" });
    const err = await runSliced(planChunkSteps(ctx, { ...chunk, action }, start), {
      sliceMs: 0,
      pause: async () => {
        pauses++;
      },
      resume: () => {
        if (pauses === 3) throw refused;
      },
    }).catch((e: unknown) => e);
    expect(err).toBe(refused);
    // three IK rows solved (one per slice), none after the refusal
    expect(solves).toBe(3);
  });
});
