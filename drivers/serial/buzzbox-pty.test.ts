/**
 * Loopback integration over a real pty pair (socat): the driver with the serialport adapter on
 * one end, the TS fake board on the other, speaking protocol v1 through the kernel tty layer.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SensorEvent } from "../../seam/types.ts";
import { type BuzzboxDiagnostic, BuzzboxDriver } from "./buzzbox-driver.ts";
import { FakeBuzzbox } from "./fake-buzzbox.ts";
import { openPtyPair, type PtyPair } from "./pty-pair.ts";
import { parseBuzzboxResource } from "./resource.ts";
import type { SerialTransport } from "./transport.ts";
import { openSerialPort } from "./transport-serialport.ts";
import { waitFor } from "../../test-support/wait.ts";

describe("BuzzboxDriver ↔ fake board over a socat pty pair", () => {
  let pair: PtyPair;
  let boardPort: SerialTransport;
  let board: FakeBuzzbox;
  let driver: BuzzboxDriver;
  const events: SensorEvent[] = [];
  const diags: BuzzboxDiagnostic[] = [];
  const contacts = () => events.filter((e) => e.type === "contact");

  beforeAll(async () => {
    pair = await openPtyPair();
    boardPort = await openSerialPort({ path: pair.b, baudRate: 115200 });
    board = new FakeBuzzbox({ write: (d) => boardPort.write(d) });
    boardPort.onData((d) => board.receive(d));
    board.startHeartbeat(50);
    driver = new BuzzboxDriver({
      resource: parseBuzzboxResource({
        type: "buzzbox",
        path: pair.a,
        heartbeatTimeoutMs: 300,
        helloTimeoutMs: 1000,
      }),
      open: openSerialPort,
    });
    driver.onEvent((e) => events.push(e));
    driver.onDiagnostic((d) => diags.push(d));
    await driver.configure();
    await driver.activate();
    await waitFor(() => driver.contactClosed === false, "initial state");
  });

  afterAll(async () => {
    board?.stopHeartbeat();
    await driver?.shutdown();
    await boardPort?.close();
    await pair?.kill();
  });

  it("delivers contact edges in order", async () => {
    board.contact(true);
    board.contact(false);
    board.contact(true);
    await waitFor(() => contacts().length === 3, "three edges");
    expect(contacts().map((e) => e.type === "contact" && e.closed)).toEqual([true, false, true]);
    expect(diags.filter((d) => d.kind === "seq-gap" || d.kind === "reordered")).toEqual([]);
  });

  it("detects a sequence gap and a reordered pair", async () => {
    board.skipSeq(3);
    board.contact(false);
    await waitFor(() => contacts().length === 4, "edge after gap");
    expect(diags).toContainEqual(expect.objectContaining({ kind: "seq-gap", lost: 3 }));
    board.holdForReorder();
    board.heartbeat();
    board.heartbeat();
    board.release();
    await waitFor(() => diags.some((d) => d.kind === "reordered"), "reorder report");
    // the later line arrives first: it counts as a gap of 1, then the earlier one as reordered
    expect(driver.stats()).toMatchObject({ seqGaps: 2, lostMessages: 4, reordered: 1 });
  });

  it("acks lamp commands through the tty", async () => {
    await driver.setLamp("1");
    expect(board.lamp).toBe("1");
    await driver.setLamp("A");
  });

  it("raises a fault when the pty pair disappears", async () => {
    board.stopHeartbeat();
    await pair.kill();
    await waitFor(() => events.some((e) => e.type === "fault"), "fault");
    expect(driver.linkUp).toBe(false);
  });
});
