/**
 * A client that disconnects mid-act (issue 10, item 12): the bench file chooses. "finish"
 * (default) runs the accepted chunk to its end, so the record holds what the robot did; "stop"
 * stops the motion at once. Real sockets against the simulator (which yields to I/O every 1,000
 * ticks, so the chunk is long enough for the close to be seen mid-chunk).
 */
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { type TestGateway, testGateway } from "../../compose/testing.ts";
import { api } from "../../test-support/api.ts";
import { sleep, waitFor } from "../../test-support/wait.ts";

let g: TestGateway | undefined;
afterEach(async () => {
  await g?.close();
  g = undefined;
});

/** Send an 8 s chunk (holding still), drop the connection once it runs; answer the sim time it ran. */
async function actThenDisconnect(policy: "finish" | "stop"): Promise<number> {
  g = await testGateway({ backend: { type: "sim" }, onClientDisconnect: policy });
  await g.app.listen({ host: "127.0.0.1", port: 0 });
  const port = (g.app.server.address() as { port: number }).port;
  const b = g.gateway.bench.backend;
  const { q, gripperWidthM } = b.read();
  const rows = Array.from({ length: 160 }, () => [...q, gripperWidthM]);
  const body = JSON.stringify({ type: "joint_position", dt: 0.05, rows });
  const ep = g.gateway.requireEpisode();
  const steps = ep.counters.steps;
  const t0 = b.now();
  const s = connect(port, "127.0.0.1");
  s.on("error", () => {});
  s.write(
    `POST /v1/act HTTP/1.1\r\nHost: x\r\nAuthorization: ${g.agent.authorization}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  await waitFor(() => ep.counters.steps > steps, "the chunk to start");
  s.destroy();
  // the motion call holds the episode: another act is BUSY until it has ended (this probe's dt
  // is refused once it is not, so the probe itself never moves)
  for (;;) {
    const res = await api(g, "POST", "/v1/act", {
      type: "joint_position",
      dt: 0.0105,
      rows: [[...q, gripperWidthM]],
    });
    if (res.body?.error?.code !== "RB_ERR_BUSY") break;
    await sleep(10);
  }
  return b.now() - t0;
}

describe("client disconnect mid-act", () => {
  it('"finish" (default) runs the accepted chunk to its end', async () => {
    expect(await actThenDisconnect("finish")).toBeGreaterThanOrEqual(8 - 1e-6);
    expect(g!.gateway.requireEpisode().isEnded).toBe(false);
  });

  it('"stop" stops the motion when the client goes, through the one stop path: the episode ends aborted', async () => {
    expect(await actThenDisconnect("stop")).toBeLessThan(8);
    const ep = g!.gateway.requireEpisode();
    expect(ep.endReason).toBe("aborted");
    expect(ep.endDetail).toMatch(/client disconnected/);
  });
});
