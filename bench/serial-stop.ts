/**
 * Contact edge → stop() latency through the real backend.
 *
 *   npx tsx bench/serial-stop.ts [--edges N]
 *
 * A RealBackend runs against the rosbridge rig (kinematic test backend, loopback) with its
 * contact device on a socat pty pair, the board side played by the shipped fakes:
 *   - buzzbox: FakeBuzzbox writes `$C` lines (drivers/serial protocol);
 *   - firmata: FakeFirmata writes DIGITAL_MESSAGEs (firmata-io + johnny-five stack).
 * "inside gateway" = from the bytes arriving at the serial transport (before any parsing) to the
 * moment a backend `onEvent` listener issues `stop()` (what the gateway's supervisor does), and
 * "stop issued→returned" the synchronous part of stop() (goal cancel written).
 * Reference, same run, same edges: the bare contact driver's own listener (no backend in between).
 * Target: p99 ≤ 5 ms inside the gateway. Needs socat.
 */
import { cpus, loadavg } from "node:os";
import { parseRealBackendConfig } from "../drivers/real/real-bench-config.ts";
import { createRealBackend } from "../drivers/real/real-backend.ts";
import { FakeFirmata } from "../drivers/firmata/fake-firmata.ts";
import { FakeBuzzbox } from "../drivers/serial/fake-buzzbox.ts";
import { openPtyPair } from "../drivers/serial/pty-pair.ts";
import { openSerialPort } from "../drivers/serial/transport-serialport.ts";
import { FR3 } from "../robots/franka/models.ts";
import { FrankaRosbridgeRig } from "../hil-tests/rigs/rosbridge/franka-rig.ts";
import { MirrorBackend } from "../drivers/mirror/mirror-backend.ts";
import { pct, timedOpener } from "./stats.ts";

const args = process.argv.slice(2);
const i = args.indexOf("--edges");
const EDGES = i >= 0 ? Number(args[i + 1]) : 200;
const TARGET_P99_MS = 5;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const f = (x: number) => x.toFixed(3).padStart(7);

async function run(kind: "buzzbox" | "firmata", rigUrl: string): Promise<void> {
  const pair = await openPtyPair();
  const port = await openSerialPort({ path: pair.b, baudRate: kind === "buzzbox" ? 115200 : 57600 });
  let stimulus: (closed: boolean) => void;
  let stopBoard = () => {};
  if (kind === "buzzbox") {
    const board = new FakeBuzzbox({ write: (d) => port.write(d) });
    port.onData((d) => board.receive(d));
    board.startHeartbeat(100);
    stimulus = (c) => board.contact(c);
    stopBoard = () => board.stopHeartbeat();
  } else {
    const board = new FakeFirmata({ write: (d) => port.write(d) });
    port.onData((d) => board.receive(d));
    stimulus = (c) => board.setInput(2, c ? 0 : 1);
    stopBoard = () => board.dispose();
  }
  const contact =
    kind === "buzzbox"
      ? { type: "buzzbox" as const, path: pair.a }
      : {
          type: "firmata" as const,
          path: pair.a,
          contactPin: 2,
          lampPin: 9,
          buzzerPin: 8,
          reportVersionTimeoutMs: 50,
        };
  const arrived = { t: 0 };
  const real = createRealBackend(
    parseRealBackendConfig({
      type: "real",
      ros: { type: "rosbridge", url: rigUrl },
      contact,
      allowMotion: true,
    }),
    { robot: FR3, openSerial: timedOpener(openSerialPort, arrived) },
  );
  await real.configure();
  await real.activate();
  const inside: number[] = [];
  const stopSync: number[] = [];
  const bare: number[] = [];
  let got = 0;
  real.onEvent((e) => {
    if (e.type !== "contact") return;
    const issued = performance.now();
    inside.push(issued - arrived.t);
    void real.stop("contact");
    stopSync.push(performance.now() - issued);
    got++;
  });
  real.drivers.contact!.onEvent((e) => {
    if (e.type === "contact") bare.push(performance.now() - arrived.t);
  });
  let closed = false;
  for (let k = 0; k < EDGES; k++) {
    closed = !closed;
    const want = got + 1;
    stimulus(closed);
    const end = Date.now() + 2000;
    while (got < want && Date.now() < end) await sleep(1);
    if (got < want) {
      console.log(`${kind}: edge ${k} not reported within 2 s, stopping`);
      break;
    }
    await sleep(5);
  }
  console.log(
    `${kind.padEnd(8)} n=${String(inside.length).padStart(4)}  bytes→stop() issued p50 ${f(pct(inside, 50))} p99 ${f(pct(inside, 99))} max ${f(Math.max(...inside))} ms` +
      `  | reference bare driver listener p50 ${f(pct(bare, 50))} p99 ${f(pct(bare, 99))} ms` +
      `  | stop() sync part p99 ${f(pct(stopSync, 99))} ms  ${pct(inside, 99) <= TARGET_P99_MS ? "OK" : "OVER"} (target p99 ≤ ${TARGET_P99_MS} ms)`,
  );
  await real.shutdown();
  stopBoard();
  await port.close();
  await pair.kill();
}

console.log(
  `contact edge → stop() through RealBackend; ${EDGES} edges per device; ${cpus().length} CPUs, load ${loadavg()[0]!.toFixed(2)}`,
);
const rig = await FrankaRosbridgeRig.start({ backend: new MirrorBackend({ robot: FR3 }) });
try {
  await run("buzzbox", rig.url);
  await run("firmata", rig.url);
} finally {
  await rig.close();
}
process.exit(0);
