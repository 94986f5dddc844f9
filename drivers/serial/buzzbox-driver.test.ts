import { afterEach, describe, expect, it } from "vitest";
import { LifecycleError, type SensorEvent } from "../../seam/types.ts";
import { type BuzzboxDiagnostic, BuzzboxDriver } from "./buzzbox-driver.ts";
import { FakeBuzzbox } from "./fake-buzzbox.ts";
import { PROTOCOL_VERSION } from "./protocol.ts";
import { parseBuzzboxResource } from "./resource.ts";
import { MemoryLink } from "./transport-memory.ts";
import { waitFor } from "../../test-support/wait.ts";

const BOARD_AHEAD_S = 100; // board clock = host clock + 100 s, so the offset is −100 s

function rig(extra: Record<string, unknown> = {}) {
  const link = new MemoryLink();
  const now = () => performance.now() / 1000;
  const board = new FakeBuzzbox({
    write: (d) => link.send(d),
    clockUs: () => Math.round((now() + BOARD_AHEAD_S) * 1e6),
  });
  link.onHostWrite((d) => board.receive(d));
  board.startHeartbeat(20);
  const driver = new BuzzboxDriver({
    resource: parseBuzzboxResource({
      type: "buzzbox",
      path: "/dev/memory0",
      heartbeatTimeoutMs: 150,
      reconnectInitialMs: 20,
      reconnectMaxMs: 80,
      helloTimeoutMs: 500,
      ...extra,
    }),
    open: link.opener,
    now,
  });
  const events: SensorEvent[] = [];
  const diags: BuzzboxDiagnostic[] = [];
  driver.onEvent((e) => events.push(e));
  driver.onDiagnostic((d) => diags.push(d));
  cleanups.push(async () => {
    board.stopHeartbeat();
    if (driver.lifecycle !== "finalized") await driver.shutdown();
  });
  return { link, board, driver, events, diags, now };
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

const contacts = (ev: SensorEvent[]) => ev.filter((e) => e.type === "contact");

describe("BuzzboxDriver over an in-memory link", () => {
  it("configures, applies debounce, emits contact edges on the host clock, and guards commands by lifecycle", async () => {
    const { board, driver, events, now } = rig({ debounceMs: 3 });
    expect(driver.lifecycle).toBe("unconfigured");
    await driver.configure();
    expect(driver.lifecycle).toBe("inactive");
    expect(board.commands).toEqual(["version", "debounce"]);
    expect(board.debounceUs).toBe(3000);

    await expect(driver.setLamp("1")).rejects.toBeInstanceOf(LifecycleError);
    const edgeHostS = now() - 0.004; // the edge happened 4 ms before the line is sent
    board.contact(true, Math.round((edgeHostS + BOARD_AHEAD_S) * 1e6));
    const c = contacts(events);
    expect(c).toHaveLength(1);
    expect(c[0]).toMatchObject({ type: "contact", closed: true, source: "buzzbox" });
    expect(Math.abs(c[0]!.t - edgeHostS)).toBeLessThan(0.001);
    expect(driver.contactClosed).toBe(true);

    await driver.activate();
    await driver.setLamp("1");
    await driver.setBuzzer("0");
    expect(board.lamp).toBe("1");
    expect(board.buzzer).toBe("0");
    await driver.deactivate();
    expect(board.lamp).toBe("A");
    await driver.shutdown();
    expect(driver.lifecycle).toBe("finalized");
    await expect(driver.activate()).rejects.toThrow(/finalized/);
  });

  it("maps board time with ping/pong", async () => {
    const { driver } = rig();
    await driver.configure();
    await driver.ping();
    const st = driver.stats();
    expect(Math.abs(st.clockOffsetS + BOARD_AHEAD_S)).toBeLessThan(0.002);
    expect(Number.isFinite(st.clockUncertaintyS)).toBe(true);
  });

  it("reports sequence gaps and reordered lines, and drops a stale contact edge", async () => {
    const { board, driver, events, diags } = rig();
    await driver.configure();
    await waitFor(() => driver.contactClosed === false, "initial state from heartbeat");
    board.skipSeq(2);
    board.heartbeat();
    expect(diags).toContainEqual(expect.objectContaining({ kind: "seq-gap", lost: 2 }));
    board.holdForReorder();
    board.contact(true);
    board.contact(false);
    board.release(); // the "open" line arrives before the "closed" line
    expect(diags.filter((d) => d.kind === "reordered")).toHaveLength(1);
    expect(contacts(events)).toHaveLength(0); // the stale "closed" edge is not replayed
    expect(driver.contactClosed).toBe(false);
    expect(driver.stats()).toMatchObject({ seqGaps: 2, lostMessages: 3, reordered: 1 });
  });

  it("resynchronises the contact state from a heartbeat when an edge line is lost", async () => {
    const { board, driver, events, diags } = rig();
    await driver.configure();
    await waitFor(() => driver.contactClosed === false, "initial state from heartbeat");
    board.closed = true; // the board saw contact…
    board.skipSeq(1); // …but its $C line was lost
    board.heartbeat();
    expect(diags).toContainEqual(expect.objectContaining({ kind: "state-resync", closed: true }));
    expect(contacts(events).at(-1)).toMatchObject({ closed: true });
    expect(driver.stats().resyncs).toBe(1);
  });

  it("counts garbage and bad checksums, and joins a line split across reads", async () => {
    const { board, driver, events, diags } = rig();
    await driver.configure();
    await waitFor(() => driver.contactClosed === false, "initial state from heartbeat");
    board.sendRaw("\u0000\u00ffnoise\n$C,999,1,1*00\n");
    expect(diags.filter((d) => d.kind === "bad-line").map((d) => d.kind === "bad-line" && d.reason)).toEqual([
      "framing",
      "checksum",
    ]);
    expect(contacts(events)).toHaveLength(0);
    board.splitNextLineAt = 5;
    board.contact(true);
    expect(contacts(events)).toHaveLength(1);
    expect(driver.stats().badLines).toBe(2);
  });

  it("emits one fault when the device goes away and reconnects when it returns", async () => {
    const { link, board, driver, events, diags } = rig();
    await driver.configure();
    await driver.activate();
    await driver.setLamp("1");
    link.unplug();
    const faults = () => events.filter((e) => e.type === "fault");
    expect(faults()).toHaveLength(1);
    expect(faults()[0]).toMatchObject({ device: "buzzbox", message: expect.stringMatching(/closed/) });
    expect(driver.linkUp).toBe(false);
    await expect(driver.setLamp("0")).rejects.toMatchObject({
      code: "RB_ERR_BUZZBOX_LINK_DOWN",
      details: { device: "buzzbox", path: "/dev/memory0", operation: "send lamp" },
      message: expect.stringMatching(/link down/),
    });
    await new Promise((r) => setTimeout(r, 150)); // a few failed reconnect attempts
    expect(faults()).toHaveLength(1);
    board.restart(); // the board rebooted meanwhile: lamp back to automatic
    link.plugIn();
    await waitFor(() => driver.linkUp, "reconnect");
    expect(events.at(-1)).toMatchObject({ type: "instrument", name: "buzzbox.link", values: { up: 1 } });
    expect(board.lamp).toBe("1"); // re-applied
    expect(driver.stats().reconnects).toBe(1);
    expect(diags).toContainEqual(expect.objectContaining({ kind: "link", up: true }));
  });

  it("raises a fault on heartbeat timeout", async () => {
    const { board, driver, events } = rig();
    await driver.configure();
    board.stopHeartbeat();
    board.deaf = true;
    await waitFor(() => events.some((e) => e.type === "fault"), "heartbeat fault");
    expect(events.find((e) => e.type === "fault")).toMatchObject({
      message: expect.stringMatching(/heartbeat timeout; last good line \d+ ms ago; since then no byte\)/),
    });
  });

  it("a heartbeat fault says when bytes came that made no good line (noise, a cut line)", async () => {
    const { board, driver, events } = rig();
    await driver.configure();
    board.stopHeartbeat();
    board.deaf = true;
    const noise = setInterval(() => board.sendRaw("$H,12,34*00\n"), 10);
    try {
      await waitFor(() => events.some((e) => e.type === "fault"), "heartbeat fault");
    } finally {
      clearInterval(noise);
    }
    expect(events.find((e) => e.type === "fault")!.message).toMatch(
      /heartbeat timeout; last good line \d+ ms ago; since then bytes \(the last \d+ ms ago\) but [1-9]\d* malformed line\(s\), the last: (checksum|framing)\)/,
    );
  });

  it("refuses a board that speaks another protocol version", async () => {
    const link = new MemoryLink();
    const board = new FakeBuzzbox({ write: (d) => link.send(d) });
    link.onHostWrite((d) => {
      if (d.startsWith("!V"))
        board.send({ kind: "hello", device: "buzzbox", firmware: "9", protocol: "2", debounceUs: 2000 });
    });
    board.startHeartbeat(20);
    const driver = new BuzzboxDriver({
      resource: parseBuzzboxResource({ type: "buzzbox", path: "/dev/memory0", helloTimeoutMs: 500 }),
      open: link.opener,
    });
    cleanups.push(async () => board.stopHeartbeat());
    await expect(driver.configure()).rejects.toMatchObject({
      code: "RB_ERR_BUZZBOX_PROTOCOL",
      details: { protocol: "2", expected: PROTOCOL_VERSION },
      message: expect.stringMatching(/protocol 2/),
    });
    expect(driver.lifecycle).toBe("error");
    // the lifecycle error names the fault that put the driver there
    await expect(driver.setLamp("1")).rejects.toMatchObject({
      code: "RB_ERR_LIFECYCLE",
      found: "error",
      fault: { device: "buzzbox", message: expect.stringMatching(/protocol 2/) },
    });
    await driver.shutdown();
  });

  it("fails configure when the device does not exist", async () => {
    const link = new MemoryLink();
    link.available = false;
    const driver = new BuzzboxDriver({
      resource: parseBuzzboxResource({ type: "buzzbox", path: "/dev/nothing" }),
      open: link.opener,
    });
    await expect(driver.configure()).rejects.toMatchObject({
      code: "RB_ERR_BUZZBOX_NOT_READY",
      message: expect.stringMatching(/no such device/),
    });
    expect(driver.lifecycle).toBe("unconfigured");
  });

  it("validates the resource strictly", () => {
    expect(() => parseBuzzboxResource({ type: "buzzbox", path: "/dev/x", baud: 9600 })).toThrow();
    expect(() => parseBuzzboxResource({ type: "buzzbox", path: "" })).toThrow();
    const r = parseBuzzboxResource({ type: "buzzbox", path: "/dev/x" });
    expect(r.baudRate).toBe(115200);
    expect(Object.isFrozen(r)).toBe(true);
  });
});
