/**
 * The roslib transport's own socket (rosbridge-socket.ts) against a bare WebSocket server on port
 * 0 that keeps every frame it receives: a prepared goal goes out as one text frame whose bytes are
 * JSON.stringify of the rosbridge v2 send_action_goal message (goals of 1 to 300 points, with -0,
 * subnormal and huge numbers), nothing of it before send(); an unprepared goal and other ops are
 * stringified as roslib does; answers come back through roslib's decoding.
 */
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { FR3 } from "../../robots/franka/models.ts";
import { interpolateChunk } from "../../seam/interpolate.ts";
import { runSteps } from "../../seam/steps.ts";
import { waitFor } from "../../test-support/wait.ts";
import { RoslibTransport } from "./roslib-transport.ts";
import { buildFollowJointTrajectoryGoal } from "./trajectory-goal.ts";
import { GoalStatus } from "./transport.ts";

interface ServerSocket {
  send(data: string): void;
  on(event: "message", cb: (data: Buffer, isBinary: boolean) => void): void;
}
interface Server {
  address(): AddressInfo;
  on(event: "connection", cb: (ws: ServerSocket) => void): void;
  on(event: "listening", cb: () => void): void;
  close(cb: () => void): void;
}
const ws = createRequire(import.meta.url)("ws") as {
  WebSocketServer: new (opts: { host: string; port: number }) => Server;
};

const ACTION = "/fr3_arm_controller/follow_joint_trajectory";
const TYPE = "control_msgs/action/FollowJointTrajectory";
const names = FR3.joints.map((j) => j.name);
const start = { q: [...FR3.homeQ], dq: new Array(7).fill(0), gripperWidthM: 0.08 };

function goal(rows: number) {
  const out = Array.from({ length: rows }, (_, r) => [
    ...FR3.homeQ.map((v, j) => v + 0.02 * Math.sin(r / 30 + j)),
    0.08,
  ]);
  return buildFollowJointTrajectoryGoal(interpolateChunk(start, out, 0.01, 0.001), start, names, 0.01);
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** a server that keeps every text frame and answers each goal with a SUCCEEDED result */
async function setup() {
  const server = new ws.WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((r) => server.on("listening", r));
  cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
  const frames: { text: string; binary: boolean }[] = [];
  server.on("connection", (sock) =>
    sock.on("message", (data, binary) => {
      const text = data.toString("utf8");
      frames.push({ text, binary });
      const m = JSON.parse(text) as { op: string; id?: string; action?: string };
      if (m.op === "send_action_goal") {
        sock.send(
          JSON.stringify({
            op: "action_result",
            id: m.id,
            action: m.action,
            status: GoalStatus.SUCCEEDED,
            result: true,
            values: { error_code: 0, error_string: "" },
          }),
        );
      }
    }),
  );
  const transport = new RoslibTransport({ url: `ws://127.0.0.1:${server.address().port}` });
  cleanups.push(() => transport.close());
  await transport.connect();
  /** the frames up to a marker published after them (the socket keeps its order) */
  const sync = async () => {
    const marker = `m${frames.length}:${Math.random()}`;
    transport.publish("/marker", "std_msgs/msg/String", { data: marker });
    await waitFor(() => frames.some((f) => f.text.includes(marker)));
  };
  return { transport, frames, sync };
}

const goalFrames = <F extends { text: string }>(frames: F[]) =>
  frames.filter((f) => f.text.includes('"send_action_goal"'));

describe("the rosbridge socket under roslib", () => {
  it("sends a prepared goal as its JSON text, byte for byte JSON.stringify of send_action_goal, and nothing before send()", async () => {
    const { transport, frames, sync } = await setup();
    const specials = goal(20);
    specials.trajectory.points[3]!.positions[2] = -0;
    specials.trajectory.points[4]!.velocities[5] = 5e-324;
    specials.trajectory.points[5]!.accelerations[0] = 1.7976931348623157e308;
    specials.trajectory.points[6]!.accelerations[1] = -1e-300;
    for (const g of [goal(1), goal(12), goal(100), goal(300), specials]) {
      const before = goalFrames(frames).length;
      const prepared = runSteps(transport.prepareActionGoal<typeof g, unknown, unknown>(ACTION, TYPE, g));
      await sync();
      expect(goalFrames(frames)).toHaveLength(before);
      const out = await prepared.send().result;
      expect(out.status).toBe(GoalStatus.SUCCEEDED);
      const sent = goalFrames(frames);
      expect(sent).toHaveLength(before + 1);
      const frame = sent.at(-1)!;
      expect(frame.binary).toBe(false);
      const id = (JSON.parse(frame.text) as { id: string }).id;
      const message = {
        op: "send_action_goal",
        id,
        action: ACTION,
        action_type: TYPE,
        args: g,
        feedback: true,
      };
      expect(frame.text).toBe(JSON.stringify(message));
    }
    expect(goalFrames(frames).at(-1)!.text).toContain('"positions":[');
    expect(frames.some((f) => f.text.includes("5e-324") && f.text.includes("1.7976931348623157e+308"))).toBe(
      true,
    );
  });

  it("the text sent is the one prepared, not the goal stringified again in the send's turn", async () => {
    const { transport, frames } = await setup();
    const g = goal(100);
    const prepared = runSteps(transport.prepareActionGoal(ACTION, TYPE, g));
    const asPrepared = JSON.stringify(g);
    // a test-only breach of the contract (the goal must not change before send()) makes the two tell apart
    g.trajectory.header.frame_id = "changed after the preparation";
    await prepared.send().result;
    const frame = goalFrames(frames).at(-1)!;
    expect(frame.text).not.toContain("changed after the preparation");
    expect(JSON.stringify((JSON.parse(frame.text) as { args: unknown }).args)).toBe(asPrepared);
  });

  it("stringifies an unprepared goal and every other op as roslib does", async () => {
    const { transport, frames, sync } = await setup();
    const g = goal(12);
    const out = await transport.sendActionGoal(ACTION, TYPE, g).result;
    expect(out).toMatchObject({ status: GoalStatus.SUCCEEDED, values: { error_code: 0 } });
    const frame = goalFrames(frames).at(-1)!;
    const id = (JSON.parse(frame.text) as { id: string }).id;
    expect(frame.text).toBe(
      JSON.stringify({
        op: "send_action_goal",
        id,
        action: ACTION,
        action_type: TYPE,
        args: g,
        feedback: true,
      }),
    );
    await sync();
    const ops = frames.map((f) => (JSON.parse(f.text) as { op: string }).op);
    expect(ops).toEqual(expect.arrayContaining(["send_action_goal", "advertise", "publish"]));
  });

  it("a prepared goal sent while disconnected rejects at once and sends nothing", async () => {
    const { transport, frames } = await setup();
    const prepared = runSteps(transport.prepareActionGoal(ACTION, TYPE, goal(12)));
    await transport.close();
    await expect(prepared.send().result).rejects.toMatchObject({ code: "RB_ERR_ROS_NOT_CONNECTED" });
    expect(goalFrames(frames)).toHaveLength(0);
  });
});
