/**
 * Contact-edge → stop latency of the serial buzz-box path.
 *
 *   npx tsx bench/serial-latency.ts [--edges N] [--no-simavr]
 *
 * "inside gateway" = from the bytes of the `$C` line arriving at the transport to the stop
 * callback (split, parse, sequence check, clock mapping, event dispatch). Target: p99 ≤ 5 ms.
 * "end to end" = from the contact stimulus to the stop callback:
 *   - pty: the fake board writes the `$C` line into a socat pty pair (kernel tty + serialport);
 *   - simavr: the rig closes the contact pin; includes the firmware's 2 ms debounce, the 250 µs
 *     sampling, UART time at 115200 baud and the pty;
 *   - memory: the same driver over the in-memory link (no kernel), the reference for the parse cost.
 * Needs socat (and gcc-avr, avr-libc, libsimavr-dev, libelf-dev for the simavr row).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { BuzzboxDriver } from "../drivers/serial/buzzbox-driver.ts";
import { FakeBuzzbox } from "../drivers/serial/fake-buzzbox.ts";
import { openPtyPair } from "../drivers/serial/pty-pair.ts";
import { parseBuzzboxResource } from "../drivers/serial/resource.ts";
import { MemoryLink } from "../drivers/serial/transport-memory.ts";
import { openSerialPort } from "../drivers/serial/transport-serialport.ts";
import { startSimavrRig } from "../hil-tests/rigs/simavr/simavr-rig.ts";
import { pct, timedOpener } from "./stats.ts";

const args = process.argv.slice(2);
const edgesArg = args.indexOf("--edges");
const EDGES = edgesArg >= 0 ? Number(args[edgesArg + 1]) : 200;
const WITH_SIMAVR = !args.includes("--no-simavr");
const TARGET_P99_MS = 5;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function row(name: string, inside: number[], e2e: number[]): void {
  const f = (x: number) => x.toFixed(3).padStart(8);
  console.log(
    `${name.padEnd(10)} n=${String(inside.length).padStart(4)}  inside gateway p50 ${f(pct(inside, 50))} p99 ${f(pct(inside, 99))} max ${f(Math.max(...inside))} ms` +
      `   end-to-end p50 ${f(pct(e2e, 50))} p90 ${f(pct(e2e, 90))} p99 ${f(pct(e2e, 99))} ms   ${pct(inside, 99) <= TARGET_P99_MS ? "OK" : "OVER"} (target p99 ≤ ${TARGET_P99_MS} ms inside)`,
  );
}

interface Harness {
  driver: BuzzboxDriver;
  stimulus: (closed: boolean) => void;
  cleanup: () => Promise<void>;
}

async function measure(name: string, h: Harness, edges: number, gapMs: number): Promise<void> {
  const arrived = (h as Harness & { arrived: { t: number } }).arrived;
  const inside: number[] = [];
  const e2e: number[] = [];
  let stimAt = 0;
  let got = 0;
  // the "stop" callback: what the gateway would do first on a contact event
  h.driver.onEvent((e) => {
    if (e.type !== "contact") return;
    const stopAt = performance.now();
    inside.push(stopAt - arrived.t);
    e2e.push(stopAt - stimAt);
    got++;
  });
  let closed = h.driver.contactClosed ?? false;
  for (let i = 0; i < edges; i++) {
    closed = !closed;
    const want = got + 1;
    stimAt = performance.now();
    h.stimulus(closed);
    const end = Date.now() + 2000;
    while (got < want && Date.now() < end) await sleep(1);
    if (got < want) {
      console.log(`${name}: edge ${i} not reported within 2 s, stopping`);
      break;
    }
    await sleep(gapMs);
  }
  row(name, inside, e2e);
  await h.cleanup();
}

async function memoryHarness(): Promise<Harness & { arrived: { t: number } }> {
  const link = new MemoryLink();
  const board = new FakeBuzzbox({ write: (d) => link.send(d) });
  link.onHostWrite((d) => board.receive(d));
  board.startHeartbeat(100);
  const arrived = { t: 0 };
  const driver = new BuzzboxDriver({
    resource: parseBuzzboxResource({ type: "buzzbox", path: "/dev/memory0" }),
    open: timedOpener(link.opener, arrived),
  });
  await driver.configure();
  await driver.activate();
  return {
    driver,
    arrived,
    stimulus: (c) => board.contact(c),
    cleanup: async () => {
      board.stopHeartbeat();
      await driver.shutdown();
    },
  };
}

async function ptyHarness(): Promise<Harness & { arrived: { t: number } }> {
  const pair = await openPtyPair();
  const port = await openSerialPort({ path: pair.b, baudRate: 115200 });
  const board = new FakeBuzzbox({ write: (d) => port.write(d) });
  port.onData((d) => board.receive(d));
  board.startHeartbeat(100);
  const arrived = { t: 0 };
  const driver = new BuzzboxDriver({
    resource: parseBuzzboxResource({ type: "buzzbox", path: pair.a }),
    open: timedOpener(openSerialPort, arrived),
  });
  await driver.configure();
  await driver.activate();
  return {
    driver,
    arrived,
    stimulus: (c) => board.contact(c),
    cleanup: async () => {
      board.stopHeartbeat();
      await driver.shutdown();
      await port.close();
      await pair.kill();
    },
  };
}

async function simavrHarness(): Promise<Harness & { arrived: { t: number } }> {
  const dir = mkdtempSync(join(tmpdir(), "buzzbox-bench-"));
  const rig = await startSimavrRig({ linkPath: join(dir, "tty") });
  const arrived = { t: 0 };
  const driver = new BuzzboxDriver({
    resource: parseBuzzboxResource({ type: "buzzbox", path: join(dir, "tty"), debounceMs: 2 }),
    open: timedOpener(openSerialPort, arrived),
  });
  await driver.configure();
  await driver.activate();
  return {
    driver,
    arrived,
    stimulus: (c) => rig.setContact(c),
    cleanup: async () => {
      await driver.shutdown();
      await rig.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

console.log(
  `serial contact-edge → stop latency, ${EDGES} edges per row (times in ms); load average ${loadavg()[0]?.toFixed(1)} on ${cpus().length} cores`,
);
await measure("memory", await memoryHarness(), EDGES, 2);
await measure("pty", await ptyHarness(), EDGES, 5);
if (WITH_SIMAVR) await measure("simavr", await simavrHarness(), Math.min(EDGES, 60), 10);
