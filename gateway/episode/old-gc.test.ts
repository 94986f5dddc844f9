import { describe, expect, it } from "vitest";
import { parseBenchConfig } from "../../compose/bench-config.ts";
import { composeBench } from "../../compose/compose.ts";
import { childJson } from "../../test-support/child-json.ts";
import { Gateway } from "../gateway.ts";
import { collectBeforeEpisode } from "./old-gc.ts";

describe("the old-generation collection before an episode", () => {
  it("one full collection (gc without options) when V8's gc is exposed, nothing without it", () => {
    const calls: unknown[][] = [];
    const ms = collectBeforeEpisode((...a: unknown[]) => {
      calls.push(a);
    });
    expect(calls).toEqual([[]]);
    expect(ms).toBeGreaterThanOrEqual(0);
    expect(collectBeforeEpisode(null)).toBeNull();
  });

  it("in V8 it is a mark-compact (Node 20 reads gc({ type: 'major' }) as a scavenge)", () => {
    // a child with --expose-gc (the launchers' option): the kinds of the GCs the call made
    const r = childJson<{ ms: number | null; major: number }>(
      `import { PerformanceObserver, constants } from "node:perf_hooks";
         import { collectBeforeEpisode } from "./gateway/episode/old-gc.ts";
         const kinds = [];
         const obs = new PerformanceObserver((l) => { for (const e of l.getEntries()) kinds.push(e.detail.kind); });
         obs.observe({ entryTypes: ["gc"] });
         const ms = collectBeforeEpisode();
         await new Promise((r) => setTimeout(r, 50));
         console.log(JSON.stringify({ ms, major: kinds.filter((k) => k === constants.NODE_PERFORMANCE_GC_MAJOR).length }));`,
      ["--expose-gc"],
    );
    expect(r.ms).not.toBeNull();
    expect(r.major).toBe(1);
  }, 60_000);

  it("runs once per episode start, after the previous episode ended and before the new one exists; not when the start is refused", async () => {
    const config = parseBenchConfig({ version: 1, name: "old-gc", backend: { type: "mirror" } }, "test");
    const bench = await composeBench(config);
    const seen: { previousEnded: boolean | undefined }[] = [];
    const gateway: Gateway = new Gateway(bench, {
      collectBeforeEpisode: () => {
        const prev = gateway.episode;
        seen.push({ previousEnded: prev?.isEnded });
      },
    });
    try {
      const first = await gateway.startEpisode();
      expect(seen).toEqual([{ previousEnded: undefined }]);
      // a new start while one runs: that one is ended first, then collected, then the new one made
      const second = await gateway.startEpisode();
      expect(second).not.toBe(first);
      expect(seen).toEqual([{ previousEnded: undefined }, { previousEnded: true }]);
      // refused (a latched e-stop): no episode, no collection
      await gateway.engageEstop("test");
      await expect(gateway.startEpisode()).rejects.toMatchObject({ code: "RB_ERR_ESTOP" });
      expect(seen).toHaveLength(2);
    } finally {
      await gateway.shutdown().catch(() => {});
    }
  });
});
