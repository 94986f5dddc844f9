/** Shared helpers for the benchmarks. */
import { spawn, spawnSync } from "node:child_process";
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
