/**
 * Many concurrent observes with depth (issue 10, item 13): the gateway on the simulated
 * buzz-wire bench served on 127.0.0.1:0, N clients posting `POST /v1/observe {depth: true}` at
 * once over real sockets, then fetching every frame URL they were given.
 *
 *   npx tsx bench/observe-load.ts [--clients 200] [--rounds 2]
 *
 * Prints per round: answers by status (200, 503 RB_ERR_OVER_CAPACITY), latency p50/p99 of the
 * accepted observes, frames fetched vs 404 (404s younger than the retention time would break
 * the documented guarantee: there must be none), and the process RSS (start, peak sampled every
 * 20 ms, end) beside the frame budget. Reference (issue 10, before admission and retention):
 * p50 2.77 s, p99 6.55 s, RSS 229 → 1,531 MB with a 512 MB frame budget, early frame URLs 404.
 */
import { parseArgs } from "node:util";
import { testGateway } from "../compose/testing.ts";
import { FRAME_STORE_DEFAULTS } from "../gateway/frames/frame-store.ts";
import { pct } from "./stats.ts";

const { values } = parseArgs({
  options: { clients: { type: "string", default: "200" }, rounds: { type: "string", default: "2" } },
});
const clients = Number(values.clients);
const rounds = Number(values.rounds);
const MB = 1024 * 1024;

const g = await testGateway({ backend: { type: "sim" }, task: { id: "buzz-wire", seed: 1 } });
await g.app.listen({ host: "127.0.0.1", port: 0 });
const base = `http://127.0.0.1:${(g.app.server.address() as { port: number }).port}`;
const headers = { authorization: g.agent.authorization, "content-type": "application/json" };

let peak = 0;
const sampler = setInterval(() => {
  peak = Math.max(peak, process.memoryUsage().rss);
}, 20);

console.log(
  `${clients} concurrent observes with depth, ${rounds} rounds; frame budget ${FRAME_STORE_DEFAULTS.maxBytes / MB} MB, ` +
    `retention ${FRAME_STORE_DEFAULTS.minRetentionMs / 1000} s`,
);
console.log("reference (before): p50 2.77 s, p99 6.55 s, RSS 229 → 1,531 MB, early frame URLs 404");
for (let round = 1; round <= rounds; round++) {
  const rss0 = process.memoryUsage().rss;
  peak = rss0;
  const results = await Promise.all(
    Array.from({ length: clients }, async () => {
      const t0 = performance.now();
      const res = await fetch(`${base}/v1/observe`, {
        method: "POST",
        headers,
        body: JSON.stringify({ depth: true }),
      });
      const body = (await res.json()) as {
        frames?: { rgb: string; depth?: string }[];
        error?: { code: string };
      };
      return { status: res.status, ms: performance.now() - t0, at: performance.now(), body };
    }),
  );
  const ok = results.filter((r) => r.status === 200);
  const byStatus = new Map<string, number>();
  for (const r of results) {
    const k = r.status === 200 ? "200" : `${r.status} ${r.body.error?.code}`;
    byStatus.set(k, (byStatus.get(k) ?? 0) + 1);
  }
  // every URL handed out, fetched after the storm (oldest first)
  const urls = ok.flatMap((r) =>
    (r.body.frames ?? []).flatMap((f) =>
      [f.rgb, ...(f.depth ? [f.depth] : [])].map((u) => ({ u, at: r.at })),
    ),
  );
  let fetched = 0;
  let missing = 0;
  let missingYoung = 0;
  for (const { u, at } of urls) {
    const res = await fetch(`${base}${u}`, { headers: { authorization: g.agent.authorization } });
    await res.arrayBuffer();
    if (res.status === 200) fetched++;
    else {
      missing++;
      // a 404 within the retention time would break the documented guarantee
      if (performance.now() - at < FRAME_STORE_DEFAULTS.minRetentionMs) missingYoung++;
    }
  }
  const ms = ok.map((r) => r.ms);
  console.log(
    `round ${round}: ${[...byStatus].map(([k, n]) => `${n}× ${k}`).join(", ")}; ` +
      `accepted p50 ${(pct(ms, 50) / 1000).toFixed(2)} s, p99 ${(pct(ms, 99) / 1000).toFixed(2)} s; ` +
      `frames fetched ${fetched}/${urls.length} (404: ${missing}, of them within the retention: ${missingYoung}); ` +
      `RSS ${(rss0 / MB).toFixed(0)} → peak ${(peak / MB).toFixed(0)} → ${(process.memoryUsage().rss / MB).toFixed(0)} MB; ` +
      `store ${(g.gateway.frames.usage.bytes / MB).toFixed(0)} MB`,
  );
}
clearInterval(sampler);
await g.close();
