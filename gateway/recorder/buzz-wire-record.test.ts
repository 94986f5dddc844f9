/**
 * Record and grade a real task: buzz wire on the sim bench, a touch half-way (readings, a contact
 * event, the wire geometry from the bench context). The offline grade in a separate process must
 * reproduce the live progress exactly.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { actRows, api, referenceRows, sidewaysRows } from "../../hil-tests/buzz-wire.suite.ts";
import { sampleBenchCalibration } from "../../sim/buzzwire/bench.ts";
import { deterministicView } from "./result.ts";
import { recordedGateway } from "../../compose/recorded-gateway.ts";

const ROOT = resolve(import.meta.dirname, "../..");
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "rg-buzz-record-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

it("a buzz-wire touch half-way: live result and offline grade agree", async () => {
  const g = await recordedGateway(dir, {
    bench: { robot: "fr3", backend: { type: "sim" }, task: { id: "buzz-wire", seed: 3 } },
  });
  try {
    const ctx = { g, calibration: sampleBenchCalibration(g.gateway.bench.backend.describe().robot, 3) };
    const r0 = g.gateway.bench.backend.read();
    const { rows, dtS } = referenceRows(ctx, r0.q, r0.gripperWidthM, 0.5);
    await actRows(g, rows, dtS);
    const rHalf = g.gateway.bench.backend.read();
    const sweep = sidewaysRows(g, rHalf.q, rHalf.gripperWidthM, 0.03, 2);
    const res = (await api(g, "POST", "/v1/act", { type: "joint_position", dt: sweep.dtS, rows: sweep.rows }))
      .body;
    expect(res.episode.reason).toBe("task_failed");
    const { recordPath, result, error } = await g.recorders[0]!.done;
    expect(error).toBeUndefined();
    expect(result!.outcome).toBe("failed");
    expect(result!.progress).toBeGreaterThan(0.45);
    expect(result!.progress).toBeLessThan(0.55);

    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", "cli/grade.ts", recordPath],
      { cwd: ROOT },
    );
    expect(stderr).toContain("agrees");
    expect(deterministicView(JSON.parse(stdout))).toEqual(deterministicView(result!));
  } finally {
    await g.close();
  }
});
