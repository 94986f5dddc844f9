/**
 * Child process for the crash test: records a mirror episode that never ends (observe with
 * advance_s in a loop) and prints `flushed <t>` after each flush; the parent SIGKILLs it.
 * Usage: node --import tsx compose/crash-child.ts <recordsDir>
 */
import { setTimeout as sleep } from "node:timers/promises";
import { recordedGateway } from "./recorded-gateway.ts";

const dir = process.argv[2];
if (!dir) throw new Error("usage: crash-child.ts <recordsDir>");
const g = await recordedGateway(dir, {
  recorder: {
    flushIntervalMs: 100,
    onFlush: ({ tS }) => process.stdout.write(`flushed ${tS}\n`),
  },
});
const ep = g.gateway.requireEpisode();
process.stdout.write(`record ${ep.recordPath}\n`);
for (;;) {
  await ep.observe({ advance_s: 0.05, depth: false, encoding: "jpeg" });
  await sleep(5);
}
