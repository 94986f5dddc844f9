/** Shared helpers for the benchmarks. */
import { spawn, spawnSync } from "node:child_process";
import { allowedCpus, onCpus } from "../cli/scheduling.ts";
import type { SerialTransport, TransportOpener } from "../drivers/serial/transport.ts";

/**
 * The p-th percentile (0 < p ≤ 100) of a sample, nearest rank on a sorted copy: the value of rank
 * ⌈p/100 · n⌉ (of 100 samples, p99 is the 99th: the second largest; p100 the largest); NaN when
 * empty. (Until round 7 it took rank ⌊p/100 · n⌋ + 1, one rank too high whenever p/100 · n is a
 * whole number: of 100 samples its p99 was the largest.)
 */
export function pct(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * s.length - 1e-9);
  return s[Math.min(s.length - 1, Math.max(0, rank - 1))] ?? Number.NaN;
}

/**
 * Wrap a serial opener so the time the last chunk of bytes arrived is known (before the driver
 * sees it): the start of the "inside the gateway" latency.
 */
export function timedOpener(open: TransportOpener, arrived: { t: number }): TransportOpener {
  return async (target) => {
    const t = await open(target);
    const wrapped: SerialTransport = {
      get isOpen() {
        return t.isOpen;
      },
      write: (d) => t.write(d),
      onData: (l) =>
        t.onData((chunk) => {
          arrived.t = performance.now();
          l(chunk);
        }),
      onClose: (l) => t.onClose(l),
      close: () => t.close(),
    };
    return wrapped;
  };
}

/**
 * The machine's own wake-up latency over a bench run: rt-tests' `cyclictest`
 * (Debian package rt-tests) on every CPU, a SCHED_FIFO 80 thread waking every 1 ms, its latency
 * histogram read at the end. It is the floor under any latency a real-time process can show on
 * this machine in the same minutes (a VM's host can hold a vCPU for milliseconds): printed beside
 * the bench's figures as their reference. Undefined when cyclictest is not installed or may not run.
 */
export function machineWakeReference(): { stop(): Promise<string> } | undefined {
  const probe = spawnSync("cyclictest", ["--help"], { encoding: "utf8" });
  if (probe.error) return undefined;
  const child = spawn("cyclictest", ["-m", "-p", "80", "-S", "-i", "1000", "-q", "-h", "20000"], {
    stdio: ["ignore", "pipe", "ignore"],
  });
  let out = "";
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
  });
  // "close": its stdout read to the end (the histogram is written as it exits)
  const exited = new Promise<void>((r) => child.once("close", () => r()));
  return {
    async stop() {
      child.kill("SIGINT");
      await exited;
      // histogram rows: "<µs> <count cpu0> <count cpu1> …"; all CPUs together
      const rows: [number, number][] = [];
      for (const line of out.split("\n")) {
        if (!/^\d/.test(line)) continue;
        const [us, ...counts] = line.trim().split(/\s+/).map(Number);
        const n = counts.reduce((a, b) => a + b, 0);
        if (n > 0) rows.push([us!, n]);
      }
      const total = rows.reduce((a, [, n]) => a + n, 0);
      if (total === 0) return "machine reference: cyclictest gave no samples";
      const q = (f: number) => {
        let acc = 0;
        for (const [us, n] of rows) if ((acc += n) >= f * total) return us / 1000;
        return rows.at(-1)![0] / 1000;
      };
      const over = /# Histogram Overflows: (.*)/.exec(out)?.[1]?.trim().split(/\s+/).map(Number) ?? [];
      const max = /# Max Latencies: (.*)/.exec(out)?.[1]?.trim().split(/\s+/).map(Number) ?? [];
      return (
        `machine reference (cyclictest, SCHED_FIFO 80, a 1 ms timer per CPU, ${total} wake-ups over the run): ` +
        `wake-up latency p50 ${q(0.5).toFixed(3)} p99 ${q(0.99).toFixed(3)} p99.9 ${q(0.999).toFixed(3)} ` +
        `max ${(Math.max(0, ...max) / 1000).toFixed(3)} ms${over.some((x) => x > 0) ? " (some over 20 ms)" : ""}`
      );
    },
  };
}

/** the echo side of crossProcessReference: one byte back per message */
const ECHO_JS = `const s = require("node:net").createServer((c) => { c.setNoDelay(true); c.on("data", () => c.write("k")); });
s.listen(0, "127.0.0.1", () => console.log(s.address().port));`;

/**
 * the writing side: N 100-byte messages ~4 ms apart (a timer, then a spin, as the benches'
 * agents send), the first 50 not kept
 */
const WRITER_JS = `const [port, n] = process.argv.slice(1).map(Number);
const c = require("node:net").connect(port, "127.0.0.1", async () => {
  c.setNoDelay(true);
  const msg = Buffer.alloc(100, 120), write = [], trip = [];
  let answered = () => {};
  c.on("data", () => answered());
  for (let i = 0; i < n; i++) {
    const at = performance.now() + 4;
    await new Promise((r) => setTimeout(r, 3));
    while (performance.now() < at) {}
    const got = new Promise((r) => (answered = r));
    const t0 = performance.now();
    c.write(msg);
    const t1 = performance.now();
    await got;
    // the first ones warm both processes' code up: not kept
    if (i >= 50) {
      write.push(t1 - t0);
      trip.push(performance.now() - t0);
    }
  }
  console.log(JSON.stringify({ write, trip }));
  c.destroy();
});`;

/**
 * The machine's cost of one message between two processes: a 100-byte write on a loopback TCP
 * socket to a process waiting on another CPU (where there are two), as an agent's chunk or an
 * operator's e-stop reaches the gateway. Printed beside the latency benches' figures: the
 * writer's own call (it wakes the reader: on a VM whose guest sends each wake-up through its
 * host, that alone can be ~0.1 ms) and the round trip. Run before a bench's measurements, in two
 * child processes of their own (the bench's process and CPUs stay as they are); ~2 s.
 */
export async function crossProcessReference(samples = 300): Promise<string> {
  const cpus = allowedCpus();
  const [a, b] = cpus.length > 1 ? [[cpus[0]!], [cpus.at(-1)!]] : [undefined, undefined];
  const echoArgv = onCpus(b, [process.execPath, "-e", ECHO_JS]);
  const echo = spawn(echoArgv[0]!, echoArgv.slice(1), { stdio: ["ignore", "pipe", "ignore"] });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      echo.stdout.once("data", (d: Buffer) => resolve(Number(d.toString().trim())));
      echo.once("exit", () => reject(new Error("the echo process exited")));
    });
    const w = onCpus(a, [process.execPath, "-e", WRITER_JS, String(port), String(samples + 50)]);
    const r = spawnSync(w[0]!, w.slice(1), { encoding: "utf8", timeout: 60_000 });
    const out = JSON.parse(r.stdout.trim()) as { write: number[]; trip: number[] };
    const where = a ? `CPU ${a[0]} → CPU ${b![0]}` : "one CPU";
    return (
      `machine reference (a 100-byte loopback TCP message to a waiting process, ${where}, ${samples} messages): ` +
      `writer's call p50 ${pct(out.write, 50).toFixed(3)} p99 ${pct(out.write, 99).toFixed(3)} ms, ` +
      `round trip p50 ${pct(out.trip, 50).toFixed(3)} p99 ${pct(out.trip, 99).toFixed(3)} ms`
    );
  } catch (e) {
    return `machine reference (cross-process message): unavailable (${(e as Error).message})`;
  } finally {
    echo.kill("SIGKILL");
  }
}
