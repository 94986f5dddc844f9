import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type BenchConfig, parseBenchConfig } from "../bench-config.ts";
import { startGateway } from "../start.ts";
import { loadRecordedEpisode, replayOnBench } from "./replay.ts";

const dir = mkdtempSync(join(tmpdir(), "twin-replay-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const bench = (name: string, backend: Record<string, unknown>): BenchConfig =>
  parseBenchConfig({
    version: 1,
    name,
    robot: "fr3",
    backend: { type: "sim", scene: "pendulum", ...backend },
    task: { id: "free-motion", seed: 7 },
    recordsDir: join(dir, name),
  });

/** Record an episode of three joint chunks on `config`; returns its record path. */
async function record(config: BenchConfig): Promise<string> {
  const g = await startGateway({ config });
  const auth = { authorization: `Bearer ${g.agentToken}` };
  const q0 = g.bench.backend.read().q;
  for (const [k, d] of [0.04, -0.03, 0.02].entries()) {
    const rows = [[...q0.map((v, j) => v + (j === k || j === 3 ? d : 0)), 0.02]];
    const r = await g.app.inject({
      method: "POST",
      url: "/v1/act",
      headers: auth,
      payload: { type: "joint_position", dt: 0.5, rows },
    });
    expect(r.statusCode, r.body).toBe(200);
  }
  const id = g.gateway.episode!.id;
  await g.close();
  return join(config.recordsDir, id, "record.mcap");
}

describe("replay", () => {
  it("replays a record's accepted commands: 0 divergence on the same bench, > 0 on a perturbed one", async () => {
    const path = await record(bench("nominal", {}));
    const rec = await loadRecordedEpisode(path);
    expect(rec.commands.length).toBe(3);
    const same = await replayOnBench(rec, bench("same", {}));
    expect(same.executed).toBe(3);
    expect(same.divergence.samples).toBeGreaterThan(1000);
    expect(Math.max(...same.divergence.joint.maxRad)).toBe(0);
    const other = await replayOnBench(
      rec,
      bench("perturbed", { servo: { delayTicks: 5, kpPerJoint: [60, 60, 60, 60, 60, 60, 60] } }),
    );
    expect(other.executed).toBe(3);
    expect(Math.max(...other.divergence.joint.maxRad)).toBeGreaterThan(1e-3);
  });

  it("refuses to move a real bench without --allow-motion", async () => {
    const path = await record(bench("nominal2", {}));
    const rec = await loadRecordedEpisode(path);
    const real = {
      ...bench("r", {}),
      backend: { type: "real", allowMotion: false },
    } as unknown as BenchConfig;
    await expect(replayOnBench(rec, real)).rejects.toMatchObject({ code: "RB_ERR_MOTION_DISABLED" });
  });
});
