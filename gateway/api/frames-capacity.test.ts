/**
 * Frame memory over real sockets (issue 10, item 13): concurrent observes with depth on the
 * simulated buzz-wire bench, the recorder on, a frame budget that holds two observes. Calls that
 * do not fit answer 503 RB_ERR_OVER_CAPACITY with Retry-After before anything is captured, the
 * store never counts more than its budget, and every frame URL a 200 handed out is fetchable
 * while its retention lasts (nothing acknowledged is evicted to make room).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestGateway, testGateway } from "../../compose/testing.ts";
import { waitFor } from "../../test-support/wait.ts";
import { frameBytes } from "./capacity.ts";

let g: TestGateway;
let base: string;
let perObserve: number;
let maxBytes: number;

beforeAll(async () => {
  // the budget is fixed before the gateway starts: size it from the bench's cameras
  const probe = await testGateway({ backend: { type: "sim" }, task: { id: "buzz-wire", seed: 1 } }, { recorder: false });
  perObserve = probe.gateway.bench.backend.describe().cameras.reduce((s, c) => s + frameBytes(c, true), 0);
  await probe.close();
  // captures may use 3/4 of the budget (the rest: encode headroom, garbage slack): room for two observes
  maxBytes = Math.ceil((perObserve * 2.5 * 4) / 3);
  g = await testGateway(
    { backend: { type: "sim" }, task: { id: "buzz-wire", seed: 1 } },
    // a retention far longer than this test, so a loaded machine cannot age a frame out
    { frameStore: { maxBytes, minRetentionMs: 600_000 } },
  );
  await g.app.listen({ host: "127.0.0.1", port: 0 });
  base = `http://127.0.0.1:${(g.app.server.address() as { port: number }).port}`;
}, 60_000);

afterAll(async () => {
  await g?.close();
});

describe("frame memory over HTTP", () => {
  it("6 concurrent observes with depth: 2 fit the budget, the rest are 503 RB_ERR_OVER_CAPACITY with Retry-After; every URL handed out is fetchable", async () => {
    const headers = { authorization: g.agent.authorization, "content-type": "application/json" };
    let peak = 0;
    const sample = () => {
      const u = g.gateway.frames.usage;
      peak = Math.max(peak, u.bytes + u.reserved + u.encoding);
    };
    const sampler = setInterval(sample, 1);
    const answers = await Promise.all(
      Array.from({ length: 6 }, async () => {
        const res = await fetch(`${base}/v1/observe`, {
          method: "POST",
          headers,
          body: JSON.stringify({ depth: true }),
        });
        sample();
        return {
          status: res.status,
          retryAfter: res.headers.get("retry-after"),
          body: (await res.json()) as {
            frames?: { rgb: string; depth?: string }[];
            error?: { code: string; details: { resource: string; retry_after_s: number } };
          },
        };
      }),
    );
    const ok = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status !== 200);
    expect(ok.length).toBe(2);
    expect(refused.length).toBe(4);
    for (const r of refused) {
      expect(r.status).toBe(503);
      expect(r.body.error?.code).toBe("RB_ERR_OVER_CAPACITY");
      expect(r.body.error?.details.resource).toBe("frame memory");
      expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    // every URL of the accepted calls: all served, in the format the call asked for
    const urls = ok.flatMap((a) => (a.body.frames ?? []).flatMap((f) => [f.rgb, ...(f.depth ? [f.depth] : [])]));
    expect(urls.length).toBeGreaterThan(2);
    const fetched = await Promise.all(
      urls.map(async (u) => {
        const res = await fetch(`${base}${u}`, { headers: { authorization: g.agent.authorization } });
        const body = Buffer.from(await res.arrayBuffer());
        sample();
        return { status: res.status, type: res.headers.get("content-type"), magic: body.subarray(0, 4) };
      }),
    );
    for (const f of fetched) {
      expect(f.status).toBe(200);
      expect(f.type).toMatch(/^image\/(jpeg|png)$/);
    }
    clearInterval(sampler);
    expect(peak).toBeGreaterThan(perObserve); // the sampler saw the frames
    expect(peak).toBeLessThanOrEqual(maxBytes);
    // fetched frames are held encoded: once the recorder has written its copies, the store has
    // shrunk and another observe fits again
    await waitFor(() => g.gateway.frames.usage.bytes + perObserve <= (maxBytes * 3) / 4, "the recorder's copies written");
    const again = await fetch(`${base}/v1/observe`, { method: "POST", headers, body: JSON.stringify({ depth: true }) });
    expect(again.status).toBe(200);
    await again.arrayBuffer();
    const u = g.gateway.frames.usage;
    expect(u.bytes + u.reserved + u.encoding).toBeLessThanOrEqual(maxBytes);
  }, 60_000);
});
