import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseBenchConfig } from "../../compose/bench-config.ts";
import { composeBench } from "../../compose/compose.ts";
import { scratchBenchConfig } from "../../compose/testing.ts";
import { GatewayError } from "../errors.ts";
import { type Bench, Gateway } from "../gateway.ts";
import { interpolateChunk } from "../../seam/interpolate.ts";
import { EStopLatch } from "../safety/estop.ts";
import { precheckChunk } from "../safety/precheck.ts";
import { minJerkRows } from "../safety/testing.ts";
import { homeForEpisode } from "./episode-start.ts";
import { HomeError } from "./home.ts";
import { startPoseFor } from "./start-pose.ts";

let bench: Bench | undefined;
afterEach(async () => {
  await bench?.backend.shutdown();
  bench = undefined;
});

/** The sim bench dressed as a real one: no reset(), so it must be driven to the start pose. */
async function benchWithoutReset(seed: number): Promise<Bench> {
  const config = parseBenchConfig(
    {
      version: 1,
      name: "no-reset",
      robot: "fr3",
      backend: { type: "sim" },
      task: { id: "buzz-wire", seed },
      // the loop leaves the wire sideways on the way out; this test is about the move, not contacts
      safety: { stopOnEvents: [] },
      recordsDir: mkdtempSync(join(tmpdir(), "rg-home-")),
    },
    "test",
  );
  const b = await composeBench(config);
  (b.backend as { reset?: unknown }).reset = undefined;
  bench = b;
  return b;
}

async function driveAway(b: Bench, seed: number): Promise<void> {
  const backend = b.backend;
  const robot = backend.describe().robot;
  const start = backend.read();
  const away = start.q.map((v, j) => v + [0.25, -0.15, 0.1, 0.2, 0, 0.15, 0][j]!);
  const rows = minJerkRows(start.q, away, 30, start.gripperWidthM);
  const traj = interpolateChunk(start, rows, 0.06, robot.controlPeriodS);
  const limits = b.limitsFor(seed);
  expect(precheckChunk({ robot, limits, start, trajectory: traj, tcp: b.toolFromFlange }).ok).toBe(true);
  expect((await backend.execute(traj)).outcome).toBe("completed");
}

describe("homeForEpisode (a bench without reset)", () => {
  it("drives the arm to the episode's start pose under the bench's limits", async () => {
    const b = await benchWithoutReset(1);
    await driveAway(b, 1);
    const target = startPoseFor(b.backend.describe().robot, b.taskBench(1)).targetQ;
    const res = await homeForEpisode(b, 1);
    expect(res).not.toBeNull();
    expect(res!.errorRad).toBeLessThan(0.01);
    const q = b.backend.read().q;
    for (let j = 0; j < 7; j++) expect(Math.abs(q[j]! - target[j]!)).toBeLessThan(0.01);
  });

  it("does not move a bench that may not move", async () => {
    const b = await benchWithoutReset(1);
    await driveAway(b, 1);
    const before = b.backend.read().q;
    expect(await homeForEpisode({ ...b, motionAllowed: false }, 1)).toBeNull();
    expect(b.backend.read().q).toEqual(before);
  });

  it("refuses to move while the e-stop is engaged, and aborts when it is engaged mid-move", async () => {
    const b = await benchWithoutReset(1);
    await driveAway(b, 1);
    const latch = new EStopLatch();
    latch.engage("test", "operator");
    await expect(homeForEpisode(b, 1, latch)).rejects.toThrow(/e-stop is engaged \(test\)/);
    latch.release("operator");
    // engage after 100 ms of backend time
    const t0 = b.backend.now();
    const timer = setInterval(() => {
      if (b.backend.now() - t0 > 0.1) latch.engage("mid-move", "operator");
    }, 1);
    try {
      const err = await homeForEpisode(b, 1, latch).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(HomeError);
      expect((err as HomeError).message).toMatch(/ended early \(aborted: e-stop: mid-move\)/);
    } finally {
      clearInterval(timer);
    }
  });
});

describe("Gateway.startEpisode on a bench without reset", () => {
  it("a homing that fails in any way answers RB_ERR_HOMING, and the next start succeeds", async () => {
    const config = scratchBenchConfig({ name: "no-reset-mirror", backend: { type: "mirror" } });
    const b = await composeBench(config);
    bench = b;
    (b.backend as { reset?: unknown }).reset = undefined;
    // away from the start pose, so homing has to move
    const start = b.backend.read();
    const away = start.q.map((v, j) => v + (j === 0 ? 0.2 : 0));
    const rows = minJerkRows(start.q, away, 20, start.gripperWidthM);
    await b.backend.execute(interpolateChunk(start, rows, 0.05, b.backend.describe().controlPeriodS));
    const execute = b.backend.execute.bind(b.backend);
    b.backend.execute = () => Promise.reject(new Error("driver lost its socket"));
    const gw = new Gateway(b);
    const err = await gw.startEpisode().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ code: "RB_ERR_HOMING", details: { kind: "backend" } });
    expect((err as Error).message).toMatch(/driver lost its socket/);
    b.backend.execute = execute;
    const ep = await gw.startEpisode();
    expect(ep.isEnded).toBe(false);
  });
});
