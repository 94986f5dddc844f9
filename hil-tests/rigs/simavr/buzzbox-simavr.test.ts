/**
 * Loopback integration: the real firmware (avr-gcc) runs in simavr; the real driver talks to it
 * through the pty with serialport. Needs gcc-avr, avr-libc, libsimavr-dev, libelf-dev.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SensorEvent } from "../../../seam/types.ts";
import { type BuzzboxDiagnostic, BuzzboxDriver } from "../../../drivers/serial/buzzbox-driver.ts";
import { parseBuzzboxResource } from "../../../drivers/serial/resource.ts";
import { openSerialPort } from "../../../drivers/serial/transport-serialport.ts";
import { buildSimavrRig, type RigPin, type SimavrRig, startSimavrRig } from "./simavr-rig.ts";
import { sleep, waitFor } from "../../../test-support/wait.ts";

describe("buzz-box firmware in simavr ↔ BuzzboxDriver over a pty", () => {
  let dir: string;
  let rig: SimavrRig;
  let driver: BuzzboxDriver;
  const events: SensorEvent[] = [];
  const diags: BuzzboxDiagnostic[] = [];
  const pins: Array<{ pin: RigPin; level: number; t: number }> = [];
  const contacts = () => events.filter((e) => e.type === "contact");
  const lamp = () => pins.filter((p) => p.pin === "lamp").at(-1)?.level;

  beforeAll(async () => {
    buildSimavrRig();
    dir = mkdtempSync(join(tmpdir(), "buzzbox-"));
    rig = await startSimavrRig({ linkPath: join(dir, "buzzbox-tty") });
    rig.onPin((pin, level, t) => pins.push({ pin, level, t }));
    driver = new BuzzboxDriver({
      resource: parseBuzzboxResource({
        type: "buzzbox",
        path: join(dir, "buzzbox-tty"),
        debounceMs: 2,
        heartbeatTimeoutMs: 300,
        pingIntervalMs: 200,
        reconnectInitialMs: 50,
        reconnectMaxMs: 200,
      }),
      open: openSerialPort,
    });
    driver.onEvent((e) => events.push(e));
    driver.onDiagnostic((d) => diags.push(d));
    await driver.configure();
    await driver.activate();
  });

  afterAll(async () => {
    await driver?.shutdown();
    await rig?.kill();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("reports contact edges in order, stamped on the host clock, and the lamp follows contact", async () => {
    await waitFor(() => driver.contactClosed === false, "initial open state");
    const before = performance.now() / 1000;
    const pinsBefore = pins.length;
    rig.setContact(true);
    await waitFor(() => contacts().length === 1, "closed edge");
    rig.setContact(false);
    await waitFor(() => contacts().length === 2, "open edge");
    const after = performance.now() / 1000;
    const [c1, c2] = contacts();
    expect(c1).toMatchObject({ closed: true, source: "buzzbox" });
    expect(c2).toMatchObject({ closed: false });
    expect(c1!.t).toBeGreaterThan(before - 0.01);
    expect(c2!.t).toBeGreaterThan(c1!.t);
    expect(c2!.t).toBeLessThan(after);
    await waitFor(() => lamp() === 0, "lamp off");
    const changes = pins.slice(pinsBefore);
    expect(changes.filter((p) => p.pin === "lamp").map((p) => p.level)).toEqual([1, 0]);
    expect(changes.filter((p) => p.pin === "buzzer").map((p) => p.level)).toEqual([1, 0]);
    expect(diags.filter((d) => d.kind === "seq-gap" || d.kind === "reordered")).toEqual([]);
  });

  it("debounce rejects a 0.5 ms glitch", async () => {
    const n = contacts().length;
    const lampChanges = pins.length;
    rig.glitch(500);
    await driver.ping(); // the rig handled the glitch before this ping's round trip
    await sleep(50); // > debounce: an accepted edge would have been reported by now
    await driver.ping();
    expect(contacts().length).toBe(n);
    expect(pins.length).toBe(lampChanges);
  });

  it("drives the lamp and buzzer by host command", async () => {
    await driver.setLamp("1");
    await waitFor(() => lamp() === 1, "lamp on");
    await driver.setBuzzer("1");
    await waitFor(() => pins.at(-1)?.pin === "buzzer" && pins.at(-1)?.level === 1, "buzzer on");
    await driver.setLamp("A");
    await driver.setBuzzer("A");
    await waitFor(() => lamp() === 0, "lamp back to automatic (contact open)");
  });

  it("maps board time with ping/pong", async () => {
    await driver.ping();
    const st = driver.stats();
    expect(Number.isFinite(st.clockOffsetS)).toBe(true);
    expect(st.clockUncertaintyS).toBeLessThan(0.05);
  });

  it("raises a fault when the board goes away and reconnects when it comes back", async () => {
    await rig.kill();
    await waitFor(() => events.some((e) => e.type === "fault"), "fault event");
    expect(driver.linkUp).toBe(false);
    rig = await startSimavrRig({ linkPath: join(dir, "buzzbox-tty") });
    await waitFor(() => driver.linkUp, "reconnect", 8000);
    expect(events.at(-1)).toMatchObject({ type: "instrument", name: "buzzbox.link" });
    const n = contacts().length;
    rig.setContact(true);
    await waitFor(() => contacts().length === n + 1, "closed edge after reconnect");
    expect(contacts().at(-1)).toMatchObject({ closed: true });
    expect(events.filter((e) => e.type === "fault")).toHaveLength(1);
  });
});
