/**
 * The hung-board watchdog on the driver's own clock (fake timers, an in-memory serial line, the
 * fake StandardFirmata board): a board that stops sending is a fault once the silence passes the
 * limit, never before; a host that stalls (its timers fire late while the board's bytes wait
 * unread) does not fault a healthy board.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { SensorEvent } from "../../seam/types.ts";
import { MemoryLink } from "../serial/transport-memory.ts";
import { FakeFirmata } from "./fake-firmata.ts";
import { FirmataContact } from "./firmata-contact.ts";
import { parseFirmataContactResource } from "./resource.ts";

const LIMIT_MS = 60;

describe("FirmataContact heartbeat watchdog (fake timers)", () => {
  let link: MemoryLink;
  let board: FakeFirmata;
  /** the board's bytes wait here until `flush()` (the kernel's buffer, the USB link) */
  let wire: Uint8Array[];
  /** fake time of the board's last byte, s */
  let lastByteS = 0;
  let driver: FirmataContact;
  const events: SensorEvent[] = [];
  const faults = () => events.filter((e) => e.type === "fault");
  const nowS = () => Date.now() / 1000;
  const flush = () => {
    for (const d of wire.splice(0)) link.send(Buffer.from(d).toString("latin1"));
  };
  /** advance fake time in 1 ms steps, delivering the board's bytes at once */
  const run = async (ms: number, deliver = true) => {
    for (let i = 0; i < ms; i++) {
      await vi.advanceTimersByTimeAsync(1);
      if (deliver) flush();
    }
  };

  beforeEach(async () => {
    vi.useFakeTimers({
      toFake: [
        "setTimeout",
        "clearTimeout",
        "setInterval",
        "clearInterval",
        "setImmediate",
        "clearImmediate",
        "Date",
      ],
    });
    events.length = 0;
    wire = [];
    link = new MemoryLink();
    board = new FakeFirmata({
      write: (d) => {
        wire.push(d);
        lastByteS = nowS();
      },
    });
    link.onHostWrite((s) => board.receive(Buffer.from(s, "latin1")));
    driver = new FirmataContact({
      resource: parseFirmataContactResource({
        type: "firmata",
        path: "/dev/memory",
        contactPin: 2,
        lampPin: 9,
        buzzerPin: 8,
        reportVersionTimeoutMs: 10,
        readyTimeoutMs: 2000,
        silenceTimeoutMs: LIMIT_MS,
      }),
      open: link.opener,
      now: nowS,
    });
    driver.onEvent((e) => events.push(e));
    const up = driver.configure();
    let done = false;
    up.then(
      () => (done = true),
      () => (done = true),
    );
    for (let i = 0; i < 2000 && !done; i++) await run(1);
    await up;
    await driver.activate();
    await run(100);
  });

  afterEach(async () => {
    await driver.shutdown();
    board.dispose();
    vi.useRealTimers();
  });

  it("reports the heartbeat channel every sampling interval and stays up", async () => {
    expect(board.reportedAnalogChannels).toEqual([0]);
    await run(1000);
    expect(faults()).toEqual([]);
    expect(driver.linkUp).toBe(true);
  });

  it("a board that stops sending is a fault after the limit of silence, not before", async () => {
    board.pause();
    await run(LIMIT_MS - 20);
    expect(faults()).toEqual([]);
    await run(100);
    expect(faults()).toHaveLength(1);
    const f = faults()[0]!;
    expect(f.type === "fault" && f.message).toMatch(/^RB_ERR_FIRMATA_TIMEOUT/);
    // silence counted from the board's last byte: beyond the limit, within two check periods of it
    const silentMs = (f.t - lastByteS) * 1000;
    expect(silentMs).toBeGreaterThan(LIMIT_MS);
    expect(silentMs).toBeLessThanOrEqual(LIMIT_MS + 2 * 10);
    expect(driver.linkUp).toBe(false);
  });

  it("a host stall (timers late by 500 ms, the board's bytes read later still) does not fault", async () => {
    for (let k = 0; k < 5; k++) {
      vi.setSystemTime(Date.now() + 500); // the host froze; the board kept sending into the buffer
      await run(25, false); // timers run late; the bytes are not read for two more checks
      flush();
      await run(50);
    }
    expect(faults()).toEqual([]);
    expect(driver.linkUp).toBe(true);
  });
});

describe("FirmataContact heartbeat channel", () => {
  it("refuses a heartbeat channel whose pin is wired as the contact (RB_ERR_FIRMATA_PIN)", async () => {
    const link = new MemoryLink();
    const board = new FakeFirmata({ write: (d) => link.send(Buffer.from(d).toString("latin1")) });
    link.onHostWrite((s) => board.receive(Buffer.from(s, "latin1")));
    const driver = new FirmataContact({
      resource: parseFirmataContactResource({
        type: "firmata",
        path: "/dev/memory",
        contactPin: 14, // A0 on an Uno
        lampPin: 9,
        buzzerPin: 8,
        heartbeatChannel: 0,
        reportVersionTimeoutMs: 10,
        readyTimeoutMs: 2000,
      }),
      open: link.opener,
    });
    await expect(driver.configure()).rejects.toMatchObject({
      code: "RB_ERR_FIRMATA_PIN",
      details: { mode: "ANALOG (heartbeat)" },
    });
    await driver.shutdown();
    board.dispose();
  });

  it("refuses a silence limit shorter than two sampling intervals", () => {
    expect(() =>
      parseFirmataContactResource({
        type: "firmata",
        path: "/dev/x",
        contactPin: 2,
        lampPin: 9,
        buzzerPin: 8,
        samplingIntervalMs: 50,
        silenceTimeoutMs: 60,
      }),
    ).toThrow(/silenceTimeoutMs must be at least two sampling intervals/);
  });
});
