/**
 * FirmataContact (johnny-five + firmata-io over serialport) against the fake Firmata board on the
 * other end of a socat pty pair: bring-up handshake, contact edges → events, lamp/buzzer writes
 * on contact, port loss → fault, and reconnect when the port returns; a hung board (port open,
 * firmware stopped) → fault from the heartbeat watchdog, and recovery once it runs again.
 * Needs socat.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SensorEvent } from "../../seam/types.ts";
import type { SerialTransport } from "../serial/transport.ts";
import { openSerialPort } from "../serial/transport-serialport.ts";
import { FakeFirmata, FirmataMode } from "./fake-firmata.ts";
import { FirmataContact } from "./firmata-contact.ts";
import { parseFirmataContactResource } from "./resource.ts";
import { waitFor } from "../../test-support/wait.ts";

const CONTACT = 2;
const LAMP = 9;
const BUZZER = 8;
const SILENCE_MS = 400;

/** A socat pty pair with stable symlinks, so the "device" can come back under the same path. */
class LinkedPtyPair {
  private child: ChildProcess | undefined;
  constructor(
    readonly host: string,
    readonly board: string,
  ) {}
  async start(): Promise<void> {
    const child = spawn(
      "socat",
      ["-d", "-d", `pty,raw,echo=0,link=${this.host}`, `pty,raw,echo=0,link=${this.board}`],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    this.child = child;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("socat did not start")), 5000);
      child.stderr!.on("data", (d: Buffer) => {
        if (/starting data transfer loop/.test(d.toString())) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once("error", reject);
    });
  }
  async kill(): Promise<void> {
    const c = this.child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once("exit", r));
    c.kill("SIGTERM");
    await exited;
  }
}

/** The fake board on the board end of the pair. */
async function attachFake(path: string): Promise<{ fake: FakeFirmata; port: SerialTransport }> {
  const port = await openSerialPort({ path, baudRate: 57600 });
  const fake = new FakeFirmata({ write: (d) => port.write(d) });
  port.onData((d) => fake.receive(d));
  return { fake, port };
}

describe("FirmataContact ↔ fake Firmata board over a socat pty pair", () => {
  let dir: string;
  let pair: LinkedPtyPair;
  let board: { fake: FakeFirmata; port: SerialTransport };
  let driver: FirmataContact;
  const events: SensorEvent[] = [];
  const contacts = () => events.filter((e) => e.type === "contact");

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "firmata-"));
    pair = new LinkedPtyPair(join(dir, "host"), join(dir, "board"));
    await pair.start();
    board = await attachFake(pair.board);
    driver = new FirmataContact({
      resource: parseFirmataContactResource({
        type: "firmata",
        path: pair.host,
        contactPin: CONTACT,
        lampPin: LAMP,
        buzzerPin: BUZZER,
        reportVersionTimeoutMs: 50,
        readyTimeoutMs: 3000,
        reconnectInitialMs: 50,
        reconnectMaxMs: 200,
        // generous for a loaded test machine; the default (60 ms) and its latency: bench/stop-latency.ts
        silenceTimeoutMs: SILENCE_MS,
      }),
      open: openSerialPort,
    });
    driver.onEvent((e) => events.push(e));
    await driver.configure();
    await driver.activate();
  });

  afterAll(async () => {
    await driver?.shutdown();
    board?.fake.dispose();
    await board?.port.close();
    await pair?.kill();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("brings the board up: contact pin as PULLUP input, reporting, open circuit, outputs low", () => {
    expect(driver.lifecycle).toBe("active");
    expect(driver.linkUp).toBe(true);
    expect(board.fake.modeOf(CONTACT)).toBe(FirmataMode.PULLUP);
    expect(board.fake.modeOf(LAMP)).toBe(FirmataMode.OUTPUT);
    expect(driver.contactClosed).toBe(false);
    expect(board.fake.levelOf(LAMP)).toBe(0);
    expect(board.fake.levelOf(BUZZER)).toBe(0);
    expect(contacts()).toEqual([]);
  });

  it("turns on StandardFirmata's periodic report of the heartbeat channel (A0) at the sampling interval", async () => {
    await waitFor(() => board.fake.reportedAnalogChannels.length > 0, "analog reporting on");
    expect(board.fake.reportedAnalogChannels).toEqual([0]);
    expect(board.fake.samplingIntervalMs).toBe(19);
    expect(board.fake.modeOf(14)).toBe(FirmataMode.ANALOG);
    // reports keep coming: no fault while the board runs
    await new Promise((r) => setTimeout(r, 3 * SILENCE_MS));
    expect(events.filter((e) => e.type === "fault")).toEqual([]);
    expect(driver.linkUp).toBe(true);
  });

  it("turns contact edges into timestamped events and drives lamp and buzzer on contact", async () => {
    const before = performance.now() / 1000;
    board.fake.setInput(CONTACT, 0); // the loop pulls the pin low
    await waitFor(() => contacts().length === 1, "closed edge");
    await waitFor(
      () => board.fake.levelOf(LAMP) === 1 && board.fake.levelOf(BUZZER) === 1,
      "lamp and buzzer on",
    );
    board.fake.setInput(CONTACT, 1);
    await waitFor(() => contacts().length === 2, "open edge");
    await waitFor(() => board.fake.levelOf(LAMP) === 0, "lamp off");
    const after = performance.now() / 1000;
    const [c1, c2] = contacts();
    expect(c1).toMatchObject({ type: "contact", closed: true, source: "firmata" });
    expect(c2).toMatchObject({ type: "contact", closed: false, source: "firmata" });
    expect(c1!.t).toBeGreaterThanOrEqual(before);
    expect(c2!.t).toBeGreaterThan(c1!.t);
    expect(c2!.t).toBeLessThanOrEqual(after);
    const lampWrites = board.fake.writes.filter((w) => w.pin === LAMP).map((w) => w.level);
    expect(lampWrites).toEqual([1, 0]);
  });

  it("obeys manual lamp/buzzer modes and returns to automatic", async () => {
    await driver.setLamp("1");
    await waitFor(() => board.fake.levelOf(LAMP) === 1, "lamp forced on");
    expect(board.fake.levelOf(BUZZER)).toBe(0);
    await driver.setLamp("A");
    await waitFor(() => board.fake.levelOf(LAMP) === 0, "lamp automatic (open → off)");
  });

  it("reports a lost port as one fault, reconnects when the device returns, and reports a changed state", async () => {
    const faultsBefore = events.filter((e) => e.type === "fault").length;
    await board.port.close();
    await pair.kill();
    await waitFor(() => events.filter((e) => e.type === "fault").length === faultsBefore + 1, "fault event");
    const fault = events.filter((e) => e.type === "fault").at(-1);
    expect(fault).toMatchObject({ type: "fault", device: "firmata" });
    expect(driver.linkUp).toBe(false);
    await expect(driver.setLamp("1")).rejects.toThrow(/RB_ERR_FIRMATA_LINK_DOWN|link down/);
    // the device comes back under the same path, with the contact closed meanwhile
    await new Promise((r) => setTimeout(r, 100));
    expect(existsSync(pair.host)).toBe(false);
    await pair.start();
    board = await attachFake(pair.board);
    board.fake.setInput(CONTACT, 0);
    const n = contacts().length;
    await waitFor(
      () => events.some((e) => e.type === "instrument" && e.name === "firmata.link"),
      "link back",
      8000,
    );
    expect(driver.linkUp).toBe(true);
    await waitFor(() => contacts().length === n + 1, "state after reconnect");
    expect(contacts().at(-1)).toMatchObject({ closed: true });
    await waitFor(() => board.fake.levelOf(LAMP) === 1, "lamp follows after reconnect");
    board.fake.setInput(CONTACT, 1);
    await waitFor(() => contacts().length === n + 2, "edge after reconnect");
    expect(events.filter((e) => e.type === "fault").length).toBe(faultsBefore + 1);
  });

  it("faults on a hung board (port open, firmware stopped) and recovers when it runs again", async () => {
    await waitFor(() => driver.linkUp && board.fake.reportedAnalogChannels.length === 1, "heartbeat on");
    const faultsBefore = events.filter((e) => e.type === "fault").length;
    const linksBefore = events.filter((e) => e.type === "instrument").length;
    const pausedAt = performance.now() / 1000; // the driver's clock (default performance.now())
    board.fake.pause();
    await waitFor(() => events.filter((e) => e.type === "fault").length === faultsBefore + 1, "hang fault");
    const fault = events.filter((e) => e.type === "fault").at(-1)!;
    expect(fault).toMatchObject({ type: "fault", device: "firmata" });
    expect(fault.type === "fault" && fault.message).toMatch(
      /^RB_ERR_FIRMATA_TIMEOUT: .*limit 400 ms; heartbeat A0 every 19 ms/,
    );
    // detected only after the board had been silent for the stated limit, never earlier
    expect((fault.t - pausedAt) * 1000).toBeGreaterThanOrEqual(SILENCE_MS);
    const silent = Number(/sent nothing for (\d+) ms/.exec(fault.type === "fault" ? fault.message : "")?.[1]);
    expect(silent).toBeGreaterThan(SILENCE_MS);
    expect(driver.linkUp).toBe(false);
    await expect(driver.setLamp("1")).rejects.toThrow(/link down/);
    // the contact closes while the board hangs; it runs again later
    board.fake.setInput(CONTACT, 0);
    const n = contacts().length;
    await new Promise((r) => setTimeout(r, 300));
    expect(contacts().length).toBe(n);
    board.fake.resume();
    await waitFor(
      () => events.filter((e) => e.type === "instrument").length === linksBefore + 1,
      "link back after the hang",
      15_000,
    );
    expect(driver.linkUp).toBe(true);
    await waitFor(() => contacts().length === n + 1, "contact state after the hang");
    expect(contacts().at(-1)).toMatchObject({ closed: true });
    expect(events.filter((e) => e.type === "fault").length).toBe(faultsBefore + 1);
  }, 30_000);
});
