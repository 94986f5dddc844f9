/**
 * A gateway left running with an agent (a farm worker, `run` over many trials) keeps a bounded
 * amount per episode: the operator API's episode list, the observers the composition holds and
 * the per-seed safety limits each keep the last few, never one per episode ever run.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { EpisodeObserver } from "../gateway/episode/observer.ts";
import { EPISODES_KEPT } from "../gateway/gateway.ts";
import { type StartedGateway, startGateway } from "./start.ts";
import { scratchBenchConfig } from "./testing.ts";

let started: StartedGateway | undefined;
afterEach(async () => {
  await started?.close();
  started = undefined;
});

/** an observer whose record finishes when told (`done`, as McapRecorder's) */
function observer(): EpisodeObserver & { done: Promise<void>; finish(): void } {
  let finish = () => {};
  const done = new Promise<void>((r) => {
    finish = r;
  });
  return { done, finish };
}

describe("a gateway left running", () => {
  it(`keeps its last ${EPISODES_KEPT} episodes and their observers, and an observer still finishing`, async () => {
    const made: ReturnType<typeof observer>[] = [];
    const config = scratchBenchConfig({ backend: { type: "mirror" } });
    const g = await startGateway({
      config,
      agentToken: "agent-long",
      operatorToken: "operator-long",
      firstEpisode: false,
      observers: () => {
        const o = observer();
        made.push(o);
        return [o];
      },
    });
    started = g;
    const ids: string[] = [];
    for (let i = 0; i < EPISODES_KEPT + 5; i++) {
      ids.push((await g.gateway.startEpisode({ seed: i + 1 })).id);
      // every record but the first finishes as its episode ends (the first never does)
      if (i > 1) made[i - 1]!.finish();
      await Promise.resolve();
    }
    const headers = { authorization: "Bearer operator-long" };
    const list = await g.app.inject({ method: "GET", url: "/v1/admin/episodes", headers });
    expect(list.statusCode).toBe(200);
    const listed = (list.json() as { episodes: { id: string; status: string }[] }).episodes;
    expect(listed.map((e) => e.id)).toEqual(ids.slice(5));
    expect(listed.at(-1)!.status).toBe("running");
    // an episode older than the list: a coded 404, its record stays on disk
    const old = await g.app.inject({ method: "GET", url: `/v1/admin/episodes/${ids[2]}`, headers });
    expect(old.statusCode).toBe(404);
    expect(old.json().error.code).toBe("RB_ERR_NOT_FOUND");
    const kept = await g.app.inject({ method: "GET", url: `/v1/admin/episodes/${ids[5]}`, headers });
    expect(kept.statusCode).toBe(200);
    // the observers: those of the kept episodes, and the first one, whose record never finished
    expect(g.observers.map((o) => made.indexOf(o as ReturnType<typeof observer>))).toEqual([
      0,
      ...Array.from({ length: made.length - 5 }, (_, i) => i + 5),
    ]);
    for (const o of made) o.finish();
  });

  it("keeps the derived safety limits of the last few seeds, not of every seed", async () => {
    const config = scratchBenchConfig({ backend: { type: "sim" } });
    const g = await startGateway({ config, firstEpisode: false, observers: null });
    started = g;
    const b = g.bench;
    const first = b.limitsFor(1);
    expect(b.limitsFor(1)).toBe(first);
    for (let s = 2; s < 200; s++) b.limitsFor(s);
    // derived again, the same limits (the wire's keep-outs of seed 1)
    const again = b.limitsFor(1);
    expect(again).not.toBe(first);
    expect(again).toEqual(first);
    expect(again.keepOut.length).toBeGreaterThan(b.limits.keepOut.length);
  });
});
