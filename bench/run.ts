/**
 * `npm run bench`: every benchmark, one after the other in its own process, each printing its
 * figures side by side with its reference. Pass names to run a subset: `npm run bench -- render`.
 * Every bench process starts as the gateway's launchers start it (cli/scheduling.ts
 * LATENCY_NODE_ARGS); run one alone as `node --single-threaded-gc --max-semi-space-size=2 --expose-gc --import tsx bench/X.ts` for the
 * same figures.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { LATENCY_NODE_ARGS } from "../cli/scheduling.ts";

const BENCHES: Record<string, { file: string; args?: string[] }> = {
  gateway: { file: "gateway-overhead.ts", args: ["1000"] },
  safety: { file: "safety.ts" },
  physics: { file: "physics.ts" },
  "sim-abort-poll": { file: "sim-abort-poll.ts" },
  render: { file: "render.ts" },
  ik: { file: "ik.ts" },
  recorder: { file: "recorder.ts" },
  "serial-latency": { file: "serial-latency.ts" },
  "ros-frames": { file: "ros-frames.ts" },
  "ros-http-frames": { file: "ros-http-frames.ts" },
  "event-stop": { file: "event-stop.ts" },
  "py-client": { file: "py-client.ts", args: ["100"] },
  clients: { file: "clients.ts", args: ["200"] },
  records: { file: "records-isolation.ts" },
  "stop-latency": { file: "stop-latency.ts", args: ["--samples", "30"] },
  "act-turns": { file: "act-turns.ts", args: ["--acts", "100"] },
  "ros2-latency": { file: "ros2-latency.ts" },
  "observe-load": { file: "observe-load.ts" },
  farm: { file: "farm.ts", args: ["12"] },
  calibration: { file: "calibration.ts", args: ["30"] },
  "calibration-tool": { file: "calibration-tool.ts" },
  "sensor-realism": { file: "sensor-realism.ts" },
  shadow: { file: "shadow.ts" },
  realtime: { file: "realtime.ts" },
  // the same with the gateway on a CPU of its own and the agent on the others (`--cpu-affinity`)
  "realtime-pinned": { file: "realtime.ts", args: ["--bench", "sim", "--cpu-affinity", "last"] },
  // under load: two busy processes on the 2-CPU reference machine
  "realtime-load": { file: "realtime.ts", args: ["--bench", "sim", "--load", "2"] },
  "console-cost": { file: "console-cost.ts" },
  video: { file: "video.ts", args: ["25", "5"] },
};

const only = process.argv.slice(2);
let failed = 0;
for (const [name, b] of Object.entries(BENCHES)) {
  if (only.length && !only.includes(name)) continue;
  const path = fileURLToPath(new URL(b.file, import.meta.url));
  console.log(`\n=== ${name} (bench/${b.file}) ===`);
  // each bench process runs as the gateway's launchers start it (bin/robot-gateway.mjs)
  const r = spawnSync(process.execPath, [...LATENCY_NODE_ARGS, "--import", "tsx", path, ...(b.args ?? [])], {
    stdio: "inherit",
  });
  if (r.status !== 0) {
    failed++;
    console.log(`(bench ${name} exited with ${r.status ?? r.signal})`);
  }
}
process.exitCode = failed ? 1 : 0;
