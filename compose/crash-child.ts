/**
 * Child process for the crash test: a recorded mirror gateway on 127.0.0.1:0 with the recorder's
 * wall-clock flush timer switched off, so only the episode's flush before each acknowledgement
 * puts the record on disk. Prints
 * `url <address>` and `record <path>`; the parent drives acts over HTTP and SIGKILLs it.
 * Usage: node --import tsx compose/crash-child.ts <recordsDir>
 */
import { recordedGateway } from "./recorded-gateway.ts";

const dir = process.argv[2];
if (!dir) throw new Error("usage: crash-child.ts <recordsDir>");
const g = await recordedGateway(dir, {
  recorder: { flushIntervalMs: 2 ** 31 - 1 },
});
const ep = g.gateway.requireEpisode();
const url = await g.app.listen({ host: "127.0.0.1", port: 0 });
process.stdout.write(`url ${url}\nrecord ${ep.recordPath}\n`);
