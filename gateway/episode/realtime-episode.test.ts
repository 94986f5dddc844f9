/**
 * The realtime episode on the sim with a FAKE wall clock: the sim steps only when the test moves
 * the clock, so splices, the pre-check from the commanded state and the watchdog are exact.
 */
import { afterEach, describe, expect, it } from "vitest";
import { parseBenchConfig } from "../../compose/bench-config.ts";
import { type StartedGateway, startGateway } from "../../compose/start.ts";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GatewayError } from "../errors.ts";
import { McapRecorder } from "../recorder/mcap-recorder.ts";
import { gradeRecord, readRecord } from "../recorder/replay.ts";
import type { Episode } from "./episode.ts";
import { FakeClock as SteppedClock } from "../../test-support/fake-clock.ts";

/** the tests' clock, starting at 1000 s */
class FakeClock extends SteppedClock {
  constructor() {
    super(1000);
  }
}

let g: StartedGateway | undefined;
afterEach(async () => {
  await g?.close();
  g = undefined;
});

async function realtimeEpisode(
  clock: FakeClock,
  commandGapS = 5,
  recorded = false,
  bench: Record<string, unknown> = {},
): Promise<Episode> {
  const recordsDir = mkdtempSync(join(tmpdir(), "rg-rt-"));
  const config = parseBenchConfig(
    {
      version: 1,
      name: "rt",
      backend: { type: "sim" },
      task: { id: "free-motion", seed: 1 },
      recordsDir,
      ...bench,
    },
    "test",
  );
  g = await startGateway({
    config,
    ...(recorded ? {} : { observers: null }),
    realtime: { slowdown: 1, clock, commandGapS, lateToleranceS: 1 },
    firstEpisode: { task: "free-motion", setting: "realtime", seed: 1 },
  });
  return g.gateway.requireEpisode();
}

/** rows moving joint 0 from `q` by `step` per row (gripper as read) */
function rows(q: readonly number[], grip: number, step: number, n: number): number[][] {
  return Array.from({ length: n }, (_, i) => {
    const r = [...q];
    r[0] = q[0]! + step * (i + 1);
    return [...r, grip];
  });
}

describe("realtime episode (sim, fake wall clock)", () => {
  it("the spliced chunk is judged from the commanded state at its start step, not the measured one", async () => {
    const clock = new FakeClock();
    const ep = await realtimeEpisode(clock);
    const r0 = ep.config.backend.read();
    // A: 0.004 rad/row at 100 ms rows = 0.04 rad/s on joint 0, 10 rows, from step 0 (the sim's
    // margin is 0: the first step not yet committed nor due)
    const a = await ep.act({
      type: "joint_position",
      dt: 0.1,
      rows: rows(r0.q, r0.gripperWidthM, 0.004, 10),
    });
    expect(a.start_step).toBe(0);
    // B goes back to the start in one 50 ms row. From the commanded state half-way through A
    // (0.01 rad out, moving at 0.04 rad/s) that is refused...
    const back = [[...r0.q, r0.gripperWidthM]];
    const refused = await ep
      .act({ type: "joint_position", dt: 0.05, rows: back, start_step: 250 })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(GatewayError);
    expect((refused as GatewayError).code).toBe("RB_ERR_UNSAFE_CHUNK");
    expect((refused as GatewayError).details["start_step"]).toBe(250);
    // ...while the robot has not moved at all (the measured state is the start, at rest), and
    // the same rows spliced where the commanded state is the start are accepted
    expect(ep.config.backend.read().q).toEqual(r0.q);
    const ok = await ep.act({ type: "joint_position", dt: 0.05, rows: back, start_step: 0 });
    expect(ok.start_step).toBe(0);
    expect(ep.counters.refusals).toBe(1);
    // the queue now holds B only (50 steps from step 0): it runs as the clock moves
    await clock.advance(0.02);
    expect(ep.realtimeStatus()).toMatchObject({ committed_step: 20, queue_rows: 30, late_steps: 0 });
    // refusals at the join: a step already run, a step the clock says is due (not yet run)
    const past = await ep
      .act({ type: "joint_position", dt: 0.05, rows: back, start_step: 19 })
      .catch((e: unknown) => e);
    expect((past as GatewayError).code).toBe("RB_ERR_SPLICE_PAST");
    // the wall clock runs on by 1.5 ms before the loop wakes: step 20 is due, not yet run
    clock.t += 0.0015;
    const due = await ep
      .act({ type: "joint_position", dt: 0.05, rows: back, start_step: 20 })
      .catch((e: unknown) => e);
    expect((due as GatewayError).code).toBe("RB_ERR_SPLICE_MARGIN");
    expect((due as GatewayError).details).toMatchObject({ start_step: 20, earliest: 21, margin_steps: 0 });
    await clock.advance(0.1);
    expect(ep.realtimeStatus()).toMatchObject({ committed_step: 121, queue_rows: 0 });
    // B held the start: the arm never went anywhere
    const q = ep.config.backend.read().q;
    expect(Math.abs(q[0]! - r0.q[0]!)).toBeLessThan(1e-4);
    expect(ep.isEnded).toBe(false);
  });

  it("the schedule starts with the first accepted chunk, not with a refused one", async () => {
    const clock = new FakeClock();
    const ep = await realtimeEpisode(clock);
    const r0 = ep.config.backend.read();
    const far = rows(r0.q, r0.gripperWidthM, 0.5, 1);
    const refused = await ep.act({ type: "joint_position", dt: 0.01, rows: far }).catch((e: unknown) => e);
    expect((refused as GatewayError).code).toBe("RB_ERR_UNSAFE_CHUNK");
    await clock.advance(0.01);
    expect(ep.realtimeStatus()).toMatchObject({ committed_step: 0, queue_rows: 0 });
    const ok = await ep.act({ type: "joint_position", dt: 0.01, rows: [[...r0.q, r0.gripperWidthM]] });
    expect(ok.start_step).toBe(0);
    await clock.advance(0.01);
    expect(ep.realtimeStatus()).toMatchObject({ committed_step: 10, late_steps: 0 });
  });

  it("advance_s waits for exactly its steps; observe without it does not block", async () => {
    const clock = new FakeClock();
    const ep = await realtimeEpisode(clock);
    const none = await ep.observe({ advance_s: 0, cameras: [], encoding: "jpeg", depth: false });
    expect(none.readings[0]!.t).toBe(0);
    let done = false;
    const waiting = ep.observe({ advance_s: 0.03, cameras: [], encoding: "jpeg", depth: false }).then((o) => {
      done = true;
      return o;
    });
    await clock.advance(0.02);
    expect(done).toBe(false);
    await clock.advance(0.015);
    const o = await waiting;
    expect(o.readings[0]!.t).toBeCloseTo(0.03, 9);
    expect(ep.realtimeStatus()?.committed_step).toBeGreaterThanOrEqual(30);
  });

  it("the command watchdog: empty queue and no chunk for the gap → hold, then a watchdog stop", async () => {
    const clock = new FakeClock();
    const ep = await realtimeEpisode(clock, 0.05);
    const r0 = ep.config.backend.read();
    await ep.act({ type: "joint_position", dt: 0.01, rows: [[...r0.q, r0.gripperWidthM]] });
    await clock.advance(0.04);
    expect(ep.isEnded).toBe(false);
    await clock.advance(0.03);
    // settles once the loop has returned
    for (let i = 0; i < 10 && !ep.isEnded; i++) await new Promise((r) => setImmediate(r));
    expect(ep.isEnded).toBe(true);
    expect(ep.endReason).toBe("fault");
    expect(ep.endDetail).toMatch(/no queued rows and no chunk/);
  });

  it("the record carries S and the late-step counts, and grades as the live episode", async () => {
    const clock = new FakeClock();
    const ep = await realtimeEpisode(clock, 5, true);
    const r0 = ep.config.backend.read();
    await ep.act({ type: "joint_position", dt: 0.01, rows: [[...r0.q, r0.gripperWidthM]] });
    await clock.advance(0.05);
    await ep.finish();
    const rec = g!.observers.find((o) => o instanceof McapRecorder) as McapRecorder;
    const { recordPath } = await rec.done;
    expect(recordPath).toBeDefined();
    const contents = await readRecord(recordPath!);
    const meta = contents.messages.find((m) => m.topic.endsWith("meta"))?.data as Record<string, unknown>;
    const end = contents.messages.find((m) => m.topic.endsWith("end"))?.data as Record<string, unknown>;
    expect(meta["setting"]).toBe("realtime");
    expect(meta["realtime"]).toMatchObject({ slowdown: 1, margin_steps: 0, command_gap_s: 5 });
    expect(end["realtime"]).toMatchObject({ slowdown: 1, committed_step: 50, queue_rows: 0, late_steps: 0 });
    const report = await gradeRecord(recordPath!);
    expect(report.agree, JSON.stringify(report.differences)).toBe(true);
  });

  it("every reading is judged against its step's commanded target: an arm that lags beyond the tracking bound stops", async () => {
    // joint 0 at 0.04 rad/s; the bound 5 mrad. The nominal servo lags ~0.2 mrad at that speed;
    // one with a 200-step (0.2 s) command delay lags 8 mrad: only it stops, at a step of the chunk
    const ended: (string | undefined)[] = [];
    for (const delayTicks of [0, 200]) {
      const clock = new FakeClock();
      const ep = await realtimeEpisode(clock, 5, false, {
        backend: { type: "sim", servo: { delayTicks } },
        safety: { trackingErrorBoundRad: 0.005 },
      });
      const safety: { kind: string; details: Record<string, unknown> }[] = [];
      g!.gateway.onAgentEvent((e) => {
        if (e.kind === "safety") safety.push(e.event as (typeof safety)[number]);
      });
      const r0 = ep.config.backend.read();
      await ep.act({ type: "joint_position", dt: 0.1, rows: rows(r0.q, r0.gripperWidthM, 0.004, 10) });
      for (let i = 0; i < 11 && !ep.isEnded; i++) await clock.advance(0.1);
      for (let i = 0; i < 10 && !ep.isEnded; i++) await new Promise((r) => setImmediate(r));
      ended.push(ep.isEnded ? `${ep.endReason}: ${ep.endDetail}` : undefined);
      if (delayTicks > 0) {
        const stop = safety.find((e) => e.kind === "tracking_error");
        expect(stop, JSON.stringify(ended)).toBeDefined();
        // the control step it belongs to: where the commanded target is 5 mrad out while the
        // delayed arm has not moved yet (~125 ms into the chunk)
        const d = stop!.details as { joint: string; sampleIndex: number; value: number };
        expect(d.joint).toBe("fr3_joint1");
        expect(d.sampleIndex).toBeGreaterThan(100);
        expect(d.sampleIndex).toBeLessThan(200);
        expect(d.value).toBeLessThan(-0.005);
      }
      await g?.close();
      g = undefined;
    }
    expect(ended[0]).toBeUndefined();
    expect(ended[1]).toMatch(/^safety_stop/);
    expect(ended[1]).toMatch(/tracking/);
  });
});
