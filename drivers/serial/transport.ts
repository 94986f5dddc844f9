/**
 * The serial transport seam (STYLE §6): the few methods the buzz-box driver needs from a byte
 * stream. The core never imports serialport; adapters live in `transport-serialport.ts` (real
 * ports and ptys) and `transport-memory.ts` (in-memory double for unit tests).
 */

/** Where and how to open a byte stream. */
export interface TransportTarget {
  /** device path, e.g. /dev/ttyACM0, or a pty / symlink to one */
  path: string;
  /** line rate, bit/s */
  baudRate: number;
}

/** An open byte stream. After `onClose` listeners ran, the transport is dead; open a new one. */
export interface SerialTransport {
  readonly isOpen: boolean;
  /** Queue bytes for sending. Errors surface as a close. */
  write(data: string | Uint8Array): void;
  /** Subscribe to received bytes; returns an unsubscribe function. */
  onData(listener: (chunk: Uint8Array) => void): () => void;
  /** Subscribe to the end of the stream (`error` set when it was not our own close()). */
  onClose(listener: (error?: Error) => void): () => void;
  /** Close; resolves when closed. Safe to call twice. */
  close(): Promise<void>;
}

/** Opens a transport; rejects when the device cannot be opened (missing, busy, no permission). */
export type TransportOpener = (target: TransportTarget) => Promise<SerialTransport>;

/** Small listener set used by transports. */
export class Listeners<A extends unknown[]> {
  private readonly set = new Set<(...args: A) => void>();
  add(fn: (...args: A) => void): () => void {
    this.set.add(fn);
    return () => this.set.delete(fn);
  }
  emit(...args: A): void {
    for (const fn of this.set) fn(...args);
  }
  clear(): void {
    this.set.clear();
  }
}
