/** Shared helpers for the benchmarks. */
import type { SerialTransport, TransportOpener } from "../drivers/serial/transport.ts";

/**
 * The p-th percentile (0 < p ≤ 100) of a sample, nearest-rank on a sorted copy; NaN when empty.
 */
export function pct(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
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
