/**
 * `robot-gateway devices`: what the real bench would find — serial ports (buzz box, Firmata
 * boards) and, when asked, whether a rosbridge server answers and the arm's joint states flow.
 * Opens no serial port and moves nothing.
 */
import { listSerialPorts, type DiscoveryResult } from "../drivers/serial/discovery.ts";
import { createRoslibTransport } from "../drivers/ros2/roslib-transport.ts";
import type { JointStateMsg } from "../drivers/ros2/messages.ts";

export interface DevicesOptions {
  /** rosbridge URL to probe, e.g. ws://127.0.0.1:9090 (absent: no ROS probe) */
  rosbridge?: string;
  /** joint state topic to wait for on the rosbridge (default franka_ros2's /franka/joint_states) */
  jointStatesTopic?: string;
  /** how long the ROS probe waits for the connection and for a joint state, ms (default 3000) */
  timeoutMs?: number;
  /** print JSON instead of text */
  json?: boolean;
  /** output sink (default console.log) */
  print?: (line: string) => void;
  /** serial discovery: directory to scan / PATH to search for udevadm (tests) */
  devDir?: string;
  searchPath?: string;
}

export interface RosProbe {
  url: string;
  reachable: boolean;
  /** time to connect, ms */
  connectMs?: number;
  jointStates?: { topic: string; received: boolean; joints?: string[] };
  error?: string;
}

export interface DevicesReport {
  serial: DiscoveryResult;
  ros?: RosProbe;
}

/** Probe a rosbridge server: connect, then wait for one joint state message. */
export async function probeRosbridge(url: string, topic: string, timeoutMs: number): Promise<RosProbe> {
  const transport = createRoslibTransport({ url, connectTimeoutMs: timeoutMs });
  const t0 = performance.now();
  try {
    await transport.connect();
  } catch (e) {
    await transport.close().catch(() => {});
    return { url, reachable: false, error: (e as Error).message };
  }
  const connectMs = performance.now() - t0;
  const msg = await new Promise<JointStateMsg | undefined>((resolve) => {
    const timer = setTimeout(() => {
      off();
      resolve(undefined);
    }, timeoutMs);
    const off = transport.subscribe<JointStateMsg>(topic, "sensor_msgs/msg/JointState", (m) => {
      clearTimeout(timer);
      off();
      resolve(m);
    });
  });
  await transport.close().catch(() => {});
  return {
    url,
    reachable: true,
    connectMs: Math.round(connectMs * 10) / 10,
    jointStates: { topic, received: msg !== undefined, ...(msg ? { joints: [...msg.name] } : {}) },
  };
}

/** List serial ports and optionally probe a rosbridge URL; prints and returns the report. */
export async function devices(opts: DevicesOptions = {}): Promise<DevicesReport> {
  const print = opts.print ?? ((l: string) => console.log(l));
  const serial = await listSerialPorts({
    ...(opts.devDir ? { devDir: opts.devDir } : {}),
    ...(opts.searchPath ? { searchPath: opts.searchPath } : {}),
  });
  const report: DevicesReport = { serial };
  if (opts.rosbridge) {
    report.ros = await probeRosbridge(
      opts.rosbridge,
      opts.jointStatesTopic ?? "/franka/joint_states",
      opts.timeoutMs ?? 3000,
    );
  }
  if (opts.json) {
    print(JSON.stringify(report, null, 2));
    return report;
  }
  print(`serial ports (${serial.method}${serial.note ? `: ${serial.note}` : ""}):`);
  if (serial.ports.length === 0) print("  none found");
  for (const p of serial.ports) {
    const info = [
      p.manufacturer,
      p.vendorId && p.productId ? `${p.vendorId}:${p.productId}` : undefined,
      p.serialNumber,
    ]
      .filter(Boolean)
      .join("  ");
    print(`  ${p.path}${info ? `  ${info}` : ""}`);
  }
  const r = report.ros;
  if (r) {
    if (!r.reachable) print(`rosbridge ${r.url}: not reachable (${r.error})`);
    else {
      print(`rosbridge ${r.url}: connected in ${r.connectMs} ms`);
      const js = r.jointStates!;
      print(
        js.received
          ? `  ${js.topic}: joint states flow (${js.joints!.join(", ")})`
          : `  ${js.topic}: no joint state within ${opts.timeoutMs ?? 3000} ms`,
      );
    }
  }
  return report;
}
