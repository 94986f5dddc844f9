/**
 * The real backend's realtime drive (seam RealtimeDrive): streamed over either transport (goal
 * replacement, the lead from the bench file; the native transport's franka_ros2 stand-in answers
 * goal replacement as joint_trajectory_controller does, hil-tests/ros2/stand-in-replace.test.ts).
 * Pure: answered from the configuration before anything is connected.
 */
import { describe, expect, it } from "vitest";
import { FR3 } from "../../robots/franka/models.ts";
import { createRealBackend } from "./real-backend.ts";
import { parseRealBackendConfig } from "./real-bench-config.ts";

describe("real backend realtime drive", () => {
  it("over rosbridge: streamed, with the bench file's stream lead", () => {
    const b = createRealBackend(
      parseRealBackendConfig({
        type: "real",
        ros: { type: "rosbridge", url: "ws://127.0.0.1:1" },
        franka: { streamLeadS: 0.2 },
      }),
      { robot: FR3 },
    );
    const d = b.realtimeDrive();
    expect(d.kind).toBe("streamed");
    if (d.kind !== "streamed") return;
    expect(d.motion.leadS).toBe(0.2);
    // nothing is connected: streaming is refused by the lifecycle, naming the state
    const traj = {
      periodS: 0.001,
      count: 1,
      q: new Float64Array(7),
      gripperWidthM: new Float64Array(1),
      rowEndIndex: [0],
    };
    return expect(d.motion.replace(traj, 0, new Array(7).fill(0))).rejects.toMatchObject({
      name: "LifecycleError",
      message: expect.stringMatching(/unconfigured/),
    });
  });

  it("on the native transport: streamed too, with the default lead", () => {
    const b = createRealBackend(parseRealBackendConfig({ type: "real", ros: { type: "rclnodejs" } }), {
      robot: FR3,
    });
    const d = b.realtimeDrive();
    expect(d.kind).toBe("streamed");
    if (d.kind === "streamed") expect(d.motion.leadS).toBe(0.1);
  });

  it("a stream lead outside (0, 1] s is a bench-file error", () => {
    for (const streamLeadS of [0, -0.1, 2]) {
      expect(() =>
        parseRealBackendConfig({ type: "real", ros: { type: "rclnodejs" }, franka: { streamLeadS } }),
      ).toThrow(/streamLeadS/);
    }
  });
});
