/**
 * The serialport adapter's I/O runs on the event loop, not in libuv's threadpool: with every
 * threadpool thread held (each blocked opening a FIFO nobody writes to yet — a stand-in for the
 * recorder's fdatasyncs on a busy disk), bytes still cross a socat pty pair both ways, and a pty
 * whose other end goes away still closes the port with an error.
 */
import { execFileSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../test-support/wait.ts";
import { openPtyPair, type PtyPair } from "./pty-pair.ts";
import type { SerialTransport } from "./transport.ts";
import { openSerialPort } from "./transport-serialport.ts";

/** Hold every threadpool thread until `release()` (each waits in open(2) on its own FIFO). */
function holdThreadpool(): { held: Promise<unknown>[]; release(): Promise<void> } {
  const dir = mkdtempSync(join(tmpdir(), "rg-pool-"));
  const threads = Number(process.env["UV_THREADPOOL_SIZE"] ?? 4);
  const fifos = Array.from({ length: threads }, (_, i) => join(dir, `f${i}`));
  execFileSync("mkfifo", fifos);
  const held = fifos.map((f) => open(f, "r"));
  return {
    held,
    release: async () => {
      // a writer on each FIFO lets its blocked reader's open return; opened here on the main
      // thread (a threadpool open would queue behind the held threads), at once: a reader waits
      for (const f of fifos) closeSync(openSync(f, "w"));
      for (const h of await Promise.all(held)) await (h as { close(): Promise<void> }).close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

let pair: PtyPair | undefined;
const ports: SerialTransport[] = [];
afterEach(async () => {
  for (const p of ports.splice(0)) await p.close();
  await pair?.kill();
  pair = undefined;
});

describe("openSerialPort: I/O on the event loop", () => {
  it("bytes cross a pty pair both ways while the threadpool is fully busy", async () => {
    pair = await openPtyPair();
    const a = await openSerialPort({ path: pair.a, baudRate: 115200 });
    const b = await openSerialPort({ path: pair.b, baudRate: 115200 });
    ports.push(a, b);
    const atA: number[] = [];
    const atB: number[] = [];
    a.onData((d) => atA.push(...d));
    b.onData((d) => atB.push(...d));
    const pool = holdThreadpool();
    let released = false;
    // the threadpool really is held: its jobs have not completed
    for (const h of pool.held) void h.then(() => expect(released).toBe(true));
    try {
      a.write("ping\n");
      await waitFor(() => atB.length === 5, "b to read a's bytes with the threadpool held");
      b.write(Uint8Array.of(0xf0, 0x79, 0xf7));
      await waitFor(() => atA.length === 3, "a to read b's bytes with the threadpool held");
    } finally {
      released = true;
      await pool.release();
    }
    expect(String.fromCharCode(...atB)).toBe("ping\n");
    expect(atA).toEqual([0xf0, 0x79, 0xf7]);
  });

  it("the other end going away closes the port with an error (EIO), as before", async () => {
    pair = await openPtyPair();
    const a = await openSerialPort({ path: pair.a, baudRate: 115200 });
    let closedWith: Error | undefined | null = null;
    a.onClose((err) => {
      closedWith = err;
    });
    a.onData(() => {});
    await pair.kill();
    pair = undefined;
    await waitFor(() => closedWith !== null, "the port to close");
    expect(closedWith).toBeInstanceOf(Error);
    expect(a.isOpen).toBe(false);
  });
});
