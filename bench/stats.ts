/** Shared helpers for the benchmarks. */
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
