import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readRecord } from "../../gateway/recorder/replay.ts";
import { TOPICS, type TwinDivergenceMessage } from "../../gateway/recorder/record-format.ts";
import { PERTURBATION } from "../../test-support/perturbed-real-sim.ts";
import { parseBenchConfig } from "../bench-config.ts";
import { startGateway } from "../start.ts";

const dir = mkdtempSync(join(tmpdir(), "twin-observer-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the shadow twin's divergence in the record", () => {
  it("goes on /twin/divergence per chunk and per trial and into result.json, and never into an agent response", async () => {
    const config = parseBenchConfig({
      version: 1,
      name: "shadow-two-sims",
      robot: "fr3",
      backend: {
        type: "sim",
        scene: "pendulum",
        servo: { kpPerJoint: PERTURBATION.kpPerJoint, delayTicks: PERTURBATION.delayTicks },
      },
      shadow: { type: "sim", scene: "pendulum" },
      task: { id: "free-motion", seed: 2 },
      recordsDir: join(dir, "records"),
    });
    const g = await startGateway({ config });
    const auth = { authorization: `Bearer ${g.agentToken}` };
    const q0 = g.bench.backend.read();
    const bodies: string[] = [];
    for (const s of [1, -1, 0.5]) {
      const rows = [[...q0.q.map((v, j) => v + s * 0.01 * (j % 2 ? -1 : 1)), q0.gripperWidthM]];
      const r = await g.app.inject({
        method: "POST",
        url: "/v1/act",
        headers: auth,
        payload: { type: "joint_position", dt: 0.3, rows },
      });
      expect(r.statusCode, r.body).toBe(200);
      bodies.push(r.body);
    }
    const obs = await g.app.inject({
      method: "POST",
      url: "/v1/observe",
      headers: auth,
      payload: { advance_s: 0.05 },
    });
    bodies.push(obs.body);
    // isolation: no agent response carries the twin's figures
    for (const b of bodies) expect(b).not.toMatch(/twin|divergence/);
    const id = g.gateway.episode!.id;
    await g.close();

    const recDir = join(config.recordsDir, id);
    const rec = await readRecord(join(recDir, "record.mcap"));
    const msgs = rec.messages
      .filter((m) => m.topic === TOPICS.twinDivergence)
      .map((m) => m.data as TwinDivergenceMessage);
    const chunks = msgs.filter((m) => m.scope === "chunk");
    // three chunks and one advancing observe (a hold)
    expect(chunks.map((m) => m.chunk)).toEqual([0, 1, 2, 3]);
    expect(chunks.map((m) => m.kind)).toEqual(["execute", "execute", "execute", "hold"]);
    const trial = msgs.filter((m) => m.scope === "trial");
    expect(trial).toHaveLength(1);
    // the trial comes last on the channel; the delayed servo of the "real" side diverges
    expect(msgs.at(-1)!.scope).toBe("trial");
    const d = trial[0]!.divergence as { samples: number; joint: { rmsRad: number[] } };
    expect(d.samples).toBe(chunks.reduce((s, m) => s + (m.divergence as { samples: number }).samples, 0));
    expect(Math.max(...d.joint.rmsRad)).toBeGreaterThan(0);
    const result = JSON.parse(readFileSync(join(recDir, "result.json"), "utf8")) as {
      twin_divergence?: Record<string, number | null>;
    };
    expect(result.twin_divergence?.samples).toBe(d.samples);
    expect(result.twin_divergence?.joint_rms_max_rad).toBeCloseTo(Math.max(...d.joint.rmsRad), 12);
    // the same result on the record's /result channel
    const recorded = rec.messages.find((m) => m.topic === TOPICS.result)!.data as typeof result;
    expect(recorded.twin_divergence).toEqual(result.twin_divergence);
  }, 120_000);
});
