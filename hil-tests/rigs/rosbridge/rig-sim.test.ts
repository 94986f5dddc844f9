/** The Franka driver against the rig serving the simulator (dynamics, not a mirror). */
import { afterEach, describe, expect, it } from "vitest";
import { interpolateChunk } from "../../../seam/interpolate.ts";
import { PANDA } from "../../../robots/franka/models.ts";
import { createSimBackend } from "../../../sim/sim-backend.ts";
import { FrankaArmDriver } from "../../../drivers/ros2/franka-arm.ts";
import { RoslibTransport } from "../../../drivers/ros2/roslib-transport.ts";
import { FrankaRosbridgeRig } from "./franka-rig.ts";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("Franka driver on the rig serving the simulator", () => {
  it("executes a trajectory and the simulated arm follows it", async () => {
    const sim = createSimBackend({ robot: PANDA, seed: 1 });
    cleanups.push(() => sim.shutdown());
    const rig = await FrankaRosbridgeRig.start({ backend: sim });
    cleanups.push(() => rig.close());
    const transport = new RoslibTransport({ url: rig.url });
    cleanups.push(() => transport.close());
    const arm = new FrankaArmDriver({ transport, robot: PANDA, now: () => performance.now() / 1000 });
    await arm.configure();
    await arm.activate();
    const start = arm.read();
    const target = [...start.q];
    target[0] = target[0]! + 0.1;
    target[5] = target[5]! + 0.05;
    const traj = interpolateChunk(start, [[...target, start.gripperWidthM]], 0.4, PANDA.controlPeriodS);
    const res = await arm.execute(traj);
    expect(res.outcome).toBe("completed");
    await new Promise((r) => setTimeout(r, 100));
    const q = sim.read().q;
    expect(Math.abs(q[0]! - target[0]!)).toBeLessThan(0.01);
    expect(Math.abs(q[5]! - target[5]!)).toBeLessThan(0.01);
    expect(Math.abs(arm.read().q[0]! - q[0]!)).toBeLessThan(0.005);
  });
});
