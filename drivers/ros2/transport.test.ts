import { describe, expect, it, vi } from "vitest";
import { isDeviceError } from "../errors.ts";
import { MemoryRosGraph, MemoryRosTransport } from "./memory-transport.ts";
import { createRosTransport } from "./transport-factory.ts";
import { type ActionOutcome, GoalStatus } from "./transport.ts";

describe("MemoryRosTransport", () => {
  it("delivers topics, answers services and runs actions with feedback", async () => {
    const g = new MemoryRosGraph();
    const t = new MemoryRosTransport(g);
    await t.connect();
    const got: unknown[] = [];
    const off = t.subscribe<{ data: number }>("/a", "std_msgs/msg/Int32", (m) => got.push(m.data));
    g.publish("/a", { data: 1 });
    off();
    g.publish("/a", { data: 2 });
    expect(got).toEqual([1]);

    g.advertiseService<{ x: number }, { y: number }>("/double", (r) => ({ y: r.x * 2 }));
    expect(await t.callService<{ x: number }, { y: number }>("/double", "x/srv/D", { x: 21 })).toEqual({
      y: 42,
    });

    g.advertiseAction<{ n: number }, number, { sum: number }>("/count", async (goal, ctx) => {
      for (let i = 1; i <= goal.n; i++) ctx.feedback(i);
      return { status: GoalStatus.SUCCEEDED, values: { sum: goal.n } };
    });
    const fb: number[] = [];
    const h = t.sendActionGoal<{ n: number }, number, { sum: number }>(
      "/count",
      "x/action/C",
      { n: 3 },
      {
        onFeedback: (f) => fb.push(f),
      },
    );
    expect(await h.result).toEqual({ status: GoalStatus.SUCCEEDED, values: { sum: 3 } });
    expect(fb).toEqual([1, 2, 3]);
  });

  it("cancels a goal, and rejects pending calls when the link drops; reconnects when it returns", async () => {
    const g = new MemoryRosGraph();
    const t = new MemoryRosTransport(g);
    const events: string[] = [];
    t.onConnectionChange((e) => events.push(e.type));
    await t.connect();
    g.advertiseAction("/wait", (_goal, ctx) => {
      return new Promise<ActionOutcome<object>>((resolve) => {
        const done = () => resolve({ status: GoalStatus.CANCELED, values: {} });
        if (ctx.signal.aborted) done();
        else ctx.signal.addEventListener("abort", done);
      });
    });
    const h = t.sendActionGoal("/wait", "x/action/W", {});
    h.cancel();
    expect((await h.result).status).toBe(GoalStatus.CANCELED);

    const h2 = t.sendActionGoal("/wait", "x/action/W", {});
    g.setLinkUp(false);
    await expect(h2.result).rejects.toMatchObject({ code: "RB_ERR_ROS_CONNECTION_LOST" });
    await expect(t.callService("/x", "x/srv/X", {})).rejects.toMatchObject({
      code: "RB_ERR_ROS_NOT_CONNECTED",
    });
    publishWhileDown(t);
    expect(g.published).toHaveLength(0);
    g.setLinkUp(true);
    expect(t.connected).toBe(true);
    expect(events).toEqual(["connected", "lost", "connected"]);
    await t.close();
    expect(events.at(-1)).toBe("closed");
  });

  it("fails connect on injected failure with a coded error", async () => {
    const g = new MemoryRosGraph();
    g.failNextConnect();
    const t = new MemoryRosTransport(g);
    const e = await t.connect().catch((x: unknown) => x);
    expect(isDeviceError(e, "RB_ERR_ROS_CONNECT_TIMEOUT")).toBe(true);
    await t.connect();
    expect(t.connected).toBe(true);
  });
});

function publishWhileDown(t: MemoryRosTransport): void {
  t.publish("/cmd", "std_msgs/msg/Int32", { data: 1 });
}

describe("createRosTransport (rclnodejs)", () => {
  it("choosing rclnodejs without the package throws RB_ERR_ROS_RCLNODEJS_MISSING with install steps", async () => {
    // a shell that sourced .venv-ros2/env.sh points RCLNODEJS_PATH at a built package
    vi.stubEnv("RCLNODEJS_PATH", "");
    const e = await createRosTransport({ type: "rclnodejs" }).catch((x: unknown) => x);
    vi.unstubAllEnvs();
    expect(isDeviceError(e, "RB_ERR_ROS_RCLNODEJS_MISSING")).toBe(true);
    expect((e as Error).message).toMatch(/source .*ROS 2/i);
    expect((e as Error).message).toContain("npm install rclnodejs");
  });

  it("validates transport resources strictly", async () => {
    await expect(
      createRosTransport({ type: "rosbridge", url: "ws://x", extra: 1 } as never),
    ).rejects.toThrow();
    const t = await createRosTransport({ type: "rosbridge", url: "ws://127.0.0.1:1" });
    expect(t.endpoint).toBe("ws://127.0.0.1:1");
    expect(t.connected).toBe(false);
  });
});
