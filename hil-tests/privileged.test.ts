/**
 * Operator-only privileged calls on the simulated bench: only in an episode started with
 * `privileged: true`, never with the agent token; snapshots restore the sim bit-identically and
 * belong to the episode that took them.
 */
import { afterEach, describe, expect, it } from "vitest";
import { type TestGateway, testGateway } from "../compose/testing.ts";
import { api } from "./buzz-wire.suite.ts";

let g: TestGateway | undefined;
afterEach(async () => {
  await g?.close();
  g = undefined;
});

describe("privileged sim calls", () => {
  it("snapshot → move → restore returns the sim to the snapshot; other episodes cannot use it", async () => {
    g = await testGateway({ robot: "fr3", backend: { type: "sim" }, task: { id: "buzz-wire", seed: 2 } });
    // not privileged: refused
    expect((await api(g, "GET", "/v1/admin/privileged/state", undefined, "operator")).body.error.code).toBe(
      "RB_ERR_PRIVILEGED_UNAVAILABLE",
    );
    expect(
      (await api(g, "POST", "/v1/admin/episodes", { seed: 2, privileged: true }, "operator")).status,
    ).toBe(200);
    // the agent token never reaches them
    expect((await api(g, "GET", "/v1/admin/privileged/state")).status).toBe(403);
    const state0 = (await api(g, "GET", "/v1/admin/privileged/state", undefined, "operator")).body;
    // ground truth an agent never sees: the wire and the loop pose
    expect(state0.seed).toBe(2);
    expect(state0.wire).toBeTypeOf("object");
    expect(state0.loop).toBeTypeOf("object");
    const snap = (await api(g, "POST", "/v1/admin/privileged/snapshot", {}, "operator")).body.snapshot_id;
    const r0 = g.gateway.bench.backend.read();
    await api(g, "POST", "/v1/observe", { advance_s: 0.5 });
    expect(g.gateway.bench.backend.read().t).toBeGreaterThan(r0.t);
    const res = await api(g, "POST", "/v1/admin/privileged/restore", { snapshot_id: snap }, "operator");
    expect(res.body).toEqual({ restored: snap });
    expect(g.gateway.bench.backend.read()).toEqual(r0);
    // a new episode starts without the old episode's snapshots
    await api(g, "POST", "/v1/admin/episodes", { seed: 2, privileged: true }, "operator");
    const again = await api(g, "POST", "/v1/admin/privileged/restore", { snapshot_id: snap }, "operator");
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe("RB_ERR_UNKNOWN_SNAPSHOT");
  });
});
