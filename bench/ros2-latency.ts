/**
 * Joint-state latency and goal round trips over native ROS 2 (rclnodejs, real DDS) beside
 * rosbridge (roslib), against the same rig serving a kinematic backend in real time.
 *
 *   npx tsx bench/ros2-latency.ts [--seconds 4] [--goals 40]
 *
 * Paths:
 * - rosbridge: rig → rosbridge JSON over a loopback WebSocket → roslib → driver;
 * - rclnodejs: rig → JSON line on a pipe → franka_ros2 stand-in (rclpy) → DDS (Fast DDS,
 *   UDP loopback) → rclnodejs → driver. One hop more than rosbridge: the stand-in's link.
 * Figures (one clock, performance.now()):
 * - joint state: rig publish → FrankaArmDriver reading (500 Hz stream);
 * - goal round trip: driver.errorRecovery() (an action the rig answers at once: send goal →
 *   accepted → result), sequential;
 * - service round trip: driver.gripperStop() (std_srvs/Trigger);
 * - trajectory overhead: execute() of a 0.1 s FollowJointTrajectory goal, minus 0.1 s.
 * Needs scripts/ros2-setup.sh; the bench re-runs itself with .venv-ros2's environment.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { MirrorBackend } from "../drivers/mirror/mirror-backend.ts";
import { FrankaArmDriver } from "../drivers/ros2/franka-arm.ts";
import { createRclnodejsTransport } from "../drivers/ros2/rclnodejs-transport.ts";
import { RoslibTransport } from "../drivers/ros2/roslib-transport.ts";
import type { RosTransport } from "../drivers/ros2/transport.ts";
import { holdTrajectory } from "../seam/interpolate.ts";
import { FrankaRosbridgeRig } from "../hil-tests/rigs/rosbridge/franka-rig.ts";
import {
  hasRos2EnvInProcess,
  loadRos2Env,
  Ros2LinkServer,
  ros2ForThisProcess,
} from "../hil-tests/rigs/ros2/link-server.ts";
import { FR3 } from "../robots/franka/models.ts";
import { pct } from "./stats.ts";

const env0 = loadRos2Env();
if (!env0) {
  console.log("ROS 2 env missing: run scripts/ros2-setup.sh");
  process.exit(1);
}
if (!hasRos2EnvInProcess(env0)) {
  // LD_LIBRARY_PATH is read at process start: run again with the ROS 2 environment
  const r = spawnSync(
    process.execPath,
    ["--import", "tsx", fileURLToPath(import.meta.url), ...process.argv.slice(2)],
    {
      stdio: "inherit",
      env: { ...process.env, ...env0.vars },
    },
  );
  process.exit(r.status ?? 1);
}

const { values } = parseArgs({
  options: { seconds: { type: "string", default: "4" }, goals: { type: "string", default: "40" } },
});
const seconds = Number(values.seconds);
const goals = Number(values.goals);
const env = ros2ForThisProcess();
const nowS = () => performance.now() / 1000;
const key = (stampS: number) => Math.round(stampS * 1e6);

function stats(xs: number[]): string {
  if (xs.length === 0) return "n=0";
  return `p50 ${pct(xs, 50).toFixed(2)} ms  p99 ${pct(xs, 99).toFixed(2)} ms  max ${Math.max(...xs).toFixed(2)} ms  (n=${xs.length})`;
}

interface Figures {
  jointState: number[];
  goal: number[];
  service: number[];
  trajectory: number[];
  overruns: number;
}

async function measure(kind: "rosbridge" | "rclnodejs"): Promise<Figures> {
  const backend = new MirrorBackend({ robot: FR3, cameras: [] });
  const server = kind === "rclnodejs" ? await Ros2LinkServer.start({ env }) : undefined;
  const rig = await FrankaRosbridgeRig.start({ backend, ...(server ? { server } : {}) });
  const transport: RosTransport =
    kind === "rclnodejs"
      ? await createRclnodejsTransport({ nodeName: "ros2_latency_bench" })
      : new RoslibTransport({ url: rig.url });
  const arm = new FrankaArmDriver({ transport, robot: FR3, now: nowS });
  await arm.configure();
  await arm.activate();
  // warm-up: discovery, first clients, JIT
  await arm.errorRecovery();
  await arm.gripperStop();
  await new Promise((r) => setTimeout(r, 500));

  const jointState: number[] = [];
  const off = arm.onReading((r) => {
    const p = rig.publishLog.jointState.get(key(r.stampS));
    if (p !== undefined) jointState.push(r.receivedT * 1000 - p);
  });
  await new Promise((r) => setTimeout(r, seconds * 1000));
  off();

  const goal: number[] = [];
  for (let i = 0; i < goals; i++) {
    const t = performance.now();
    await arm.errorRecovery();
    goal.push(performance.now() - t);
  }
  const service: number[] = [];
  for (let i = 0; i < goals; i++) {
    const t = performance.now();
    await arm.gripperStop();
    service.push(performance.now() - t);
  }
  const trajectory: number[] = [];
  for (let i = 0; i < Math.min(goals, 10); i++) {
    const r = arm.read();
    const traj = holdTrajectory(
      r.q,
      r.gripperWidthM,
      Math.round(0.1 / FR3.controlPeriodS),
      FR3.controlPeriodS,
    );
    const t = performance.now();
    const res = await arm.execute(traj);
    if (res.outcome !== "completed") throw new Error(`trajectory ${i}: ${res.outcome}`);
    trajectory.push(performance.now() - t - 100);
  }
  const overruns = rig.overruns;
  await arm.shutdown();
  await transport.close();
  await rig.close();
  return { jointState, goal, service, trajectory, overruns };
}

const rosbridge = await measure("rosbridge");
const rcl = await measure("rclnodejs");
console.log(`FR3 kinematic rig, real time, joint states at 500 Hz, ${seconds} s; ${goals} goals each`);
for (const [name, f] of [
  ["rosbridge (roslib, WebSocket)", rosbridge],
  ["rclnodejs (DDS, via the rclpy stand-in)", rcl],
] as const) {
  console.log(name);
  console.log(`  joint state   publish → driver reading  ${stats(f.jointState)}`);
  console.log(`  goal          ErrorRecovery round trip  ${stats(f.goal)}`);
  console.log(`  service       Trigger round trip        ${stats(f.service)}`);
  console.log(`  trajectory    0.1 s goal, overhead      ${stats(f.trajectory)}`);
  console.log(`  rig pacing overruns: ${f.overruns}`);
}
process.exit(0);
