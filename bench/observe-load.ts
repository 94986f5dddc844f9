/**
 * Many concurrent observes with depth (issue 10, item 13): the gateway on the simulated
 * buzz-wire bench (recorder on) served on 127.0.0.1:0, N clients posting
 * `POST /v1/observe {depth: true}` at once over real sockets, then fetching every frame URL they
 * were given. The clients run in a child process (this file with `--clients-child`), so the
 * memory measured is the gateway's alone.
 *
 *   node --import tsx bench/observe-load.ts [--clients 200] [--rounds 2]
 *
 * Prints per round: answers by status (200, 503 RB_ERR_OVER_CAPACITY), latency p50/p99 of the
 * accepted observes, frames fetched vs 404 (404s younger than the retention time would break
 * the documented guarantee: there must be none), the gateway process's RSS (start, peak sampled
 * every 20 ms, end) and its growth beside the frame budget, and the peaks of what the frame
 * store counts, of `arrayBuffers` (Buffers and typed arrays), `external` and the V8 heap.
 * Reference (issue 10, before admission and retention): p50 2.77 s, p99 6.55 s,
 * RSS 229 → 1,531 MB with a 512 MB frame budget, early frame URLs 404.
 */
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { pct } from "./stats.ts";

const MB = 1024 * 1024;
const CHILD_FLAG = "--clients-child";
const HERE = fileURLToPath(import.meta.url);

interface RoundRequest {
  base: string;
  authorization: string;
  clients: number;
  retentionMs: number;
}

interface RoundResult {
  byStatus: [string, number][];
  ms: number[];
  urls: number;
  fetched: number;
  missing: number;
  missingYoung: number;
}

/** The clients: one round of N concurrent observes, then every URL fetched (oldest first). */
async function clientRound(r: RoundRequest): Promise<RoundResult> {
  const headers = { authorization: r.authorization, "content-type": "application/json" };
  const results = await Promise.all(
    Array.from({ length: r.clients }, async () => {
      const t0 = performance.now();
      const res = await fetch(`${r.base}/v1/observe`, { method: "POST", headers, body: JSON.stringify({ depth: true }) });
      const body = (await res.json()) as { frames?: { rgb: string; depth?: string }[]; error?: { code: string } };
      return { status: res.status, ms: performance.now() - t0, at: performance.now(), body };
    }),
  );
  const ok = results.filter((x) => x.status === 200);
  const byStatus = new Map<string, number>();
  for (const x of results) {
    const k = x.status === 200 ? "200" : `${x.status} ${x.body.error?.code}`;
    byStatus.set(k, (byStatus.get(k) ?? 0) + 1);
  }
  const urls = ok.flatMap((x) =>
    (x.body.frames ?? []).flatMap((f) => [f.rgb, ...(f.depth ? [f.depth] : [])].map((u) => ({ u, at: x.at }))),
  );
  let fetched = 0;
  let missing = 0;
  let missingYoung = 0;
  for (const { u, at } of urls) {
    const res = await fetch(`${r.base}${u}`, { headers: { authorization: r.authorization } });
    await res.arrayBuffer();
    if (res.status === 200) fetched++;
    else {
      missing++;
      // a 404 within the retention time would break the documented guarantee
      if (performance.now() - at < r.retentionMs) missingYoung++;
    }
  }
  return { byStatus: [...byStatus], ms: ok.map((x) => x.ms), urls: urls.length, fetched, missing, missingYoung };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { clients: { type: "string", default: "200" }, rounds: { type: "string", default: "2" } },
  });
  const clients = Number(values.clients);
  const rounds = Number(values.rounds);
  const { testGateway } = await import("../compose/testing.ts");
  const { FRAME_STORE_DEFAULTS } = await import("../gateway/frames/frame-store.ts");

  const g = await testGateway({ backend: { type: "sim" }, task: { id: "buzz-wire", seed: 1 } });
  await g.app.listen({ host: "127.0.0.1", port: 0 });
  const base = `http://127.0.0.1:${(g.app.server.address() as { port: number }).port}`;
  // warm up: one observe and its frames first, so the renderer's per-camera scratch (z-buffers,
  // distortion maps) and the JIT are in the starting RSS, not counted as frame memory
  const warm = (await (
    await fetch(`${base}/v1/observe`, {
      method: "POST",
      headers: { authorization: g.agent.authorization, "content-type": "application/json" },
      body: JSON.stringify({ depth: true }),
    })
  ).json()) as { frames: { rgb: string; depth?: string }[] };
  for (const f of warm.frames)
    for (const u of [f.rgb, f.depth])
      if (u) await (await fetch(`${base}${u}`, { headers: { authorization: g.agent.authorization } })).arrayBuffer();
  const child = fork(HERE, [CHILD_FLAG], { execArgv: ["--import", "tsx"], stdio: "inherit" });
  const round = (req: RoundRequest) =>
    new Promise<RoundResult>((resolve, reject) => {
      child.once("message", (m) => resolve(m as RoundResult));
      child.once("exit", () => reject(new Error("the clients' process exited")));
      child.send(req);
    });

  // peaks sampled every 20 ms: RSS, V8 heap, memory outside the heap (Buffers, typed arrays:
  // `arrayBuffers` is the part of `external` they hold) and what the frame store counts
  let peak = 0;
  const peaks = { heapUsed: 0, external: 0, arrayBuffers: 0, store: 0 };
  const sample = () => {
    const m = process.memoryUsage();
    const u = g.gateway.frames.usage;
    peak = Math.max(peak, m.rss);
    peaks.heapUsed = Math.max(peaks.heapUsed, m.heapUsed);
    peaks.external = Math.max(peaks.external, m.external);
    peaks.arrayBuffers = Math.max(peaks.arrayBuffers, m.arrayBuffers);
    peaks.store = Math.max(peaks.store, u.bytes + u.reserved + (u.encoding ?? 0));
  };
  const sampler = setInterval(sample, 20);
  const budget = FRAME_STORE_DEFAULTS.maxBytes / MB;
  console.log(
    `${clients} concurrent observes with depth, ${rounds} rounds; frame budget ${budget} MB, ` +
      `retention ${FRAME_STORE_DEFAULTS.minRetentionMs / 1000} s; clients in a child process`,
  );
  console.log("reference (before): p50 2.77 s, p99 6.55 s, RSS 229 → 1,531 MB, early frame URLs 404");
  for (let n = 1; n <= rounds; n++) {
    const rss0 = process.memoryUsage().rss;
    peak = rss0;
    for (const k of Object.keys(peaks) as (keyof typeof peaks)[]) peaks[k] = 0;
    sample();
    const r = await round({
      base,
      authorization: g.agent.authorization,
      clients,
      retentionMs: FRAME_STORE_DEFAULTS.minRetentionMs,
    });
    sample();
    console.log(
      `round ${n}: ${r.byStatus.map(([k, c]) => `${c}× ${k}`).join(", ")}; ` +
        `accepted p50 ${(pct(r.ms, 50) / 1000).toFixed(2)} s, p99 ${(pct(r.ms, 99) / 1000).toFixed(2)} s; ` +
        `frames fetched ${r.fetched}/${r.urls} (404: ${r.missing}, of them within the retention: ${r.missingYoung}); ` +
        `RSS ${(rss0 / MB).toFixed(0)} → peak ${(peak / MB).toFixed(0)} → ${(process.memoryUsage().rss / MB).toFixed(0)} MB; ` +
        `store ${(g.gateway.frames.usage.bytes / MB).toFixed(0)} MB`,
    );
    console.log(
      `  RSS growth ${((peak - rss0) / MB).toFixed(0)} MB beside the ${budget} MB frame budget; peaks: ` +
        `store counted ${(peaks.store / MB).toFixed(0)} MB, arrayBuffers ${(peaks.arrayBuffers / MB).toFixed(0)} MB, ` +
        `external ${(peaks.external / MB).toFixed(0)} MB, heapUsed ${(peaks.heapUsed / MB).toFixed(0)} MB`,
    );
  }
  clearInterval(sampler);
  child.disconnect();
  await g.close();
}

if (process.argv[2] === CHILD_FLAG) {
  process.on("message", (req: RoundRequest) => {
    void clientRound(req).then((r) => process.send?.(r));
  });
  process.on("disconnect", () => process.exit(0));
} else {
  await main();
}
