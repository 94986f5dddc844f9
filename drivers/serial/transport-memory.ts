/**
 * In-memory double of the transport seam, with fault injection (STYLE §7). A `MemoryLink` is
 * the "wire": the driver opens transports on it; the test plays the board through `board`.
 */
import { Listeners, type SerialTransport, type TransportOpener, type TransportTarget } from "./transport.ts";

class MemoryTransport implements SerialTransport {
  readonly data = new Listeners<[Uint8Array]>();
  private readonly closed = new Listeners<[Error | undefined]>();
  private ended = false;

  constructor(private readonly link: MemoryLink) {}

  get isOpen(): boolean {
    return !this.ended;
  }

  write(data: string | Uint8Array): void {
    if (this.ended) return;
    const s = typeof data === "string" ? data : Buffer.from(data).toString("latin1");
    this.link.hostWrote(s);
  }

  onData(listener: (chunk: Uint8Array) => void): () => void {
    return this.data.add(listener);
  }

  onClose(listener: (error?: Error) => void): () => void {
    return this.closed.add(listener);
  }

  close(): Promise<void> {
    this.end(undefined);
    return Promise.resolve();
  }

  end(err: Error | undefined): void {
    if (this.ended) return;
    this.ended = true;
    this.link.detach(this);
    this.closed.emit(err);
  }
}

/** An in-memory serial line between a driver (host) and a test (board). */
export class MemoryLink {
  private current: MemoryTransport | undefined;
  private readonly fromHost = new Listeners<[string]>();
  /** when false, open() rejects as if the device were unplugged */
  available = true;
  /** fail the next N open() calls */
  failOpens = 0;
  /** number of successful opens */
  opens = 0;
  /** every string the host wrote, in order */
  readonly written: string[] = [];

  /** The opener to hand to the driver. */
  readonly opener: TransportOpener = (target: TransportTarget) => {
    if (!this.available || this.failOpens > 0) {
      if (this.failOpens > 0) this.failOpens--;
      return Promise.reject(new Error(`cannot open ${target.path}: no such device (memory link)`));
    }
    const t = new MemoryTransport(this);
    this.current?.end(new Error("reopened"));
    this.current = t;
    this.opens++;
    return Promise.resolve(t);
  };

  get connected(): boolean {
    return this.current !== undefined;
  }

  /** Board side: send bytes to the host (delivered synchronously). */
  send(data: string): void {
    this.current?.data.emit(Buffer.from(data, "latin1"));
  }

  /** Board side: hear what the host writes. */
  onHostWrite(listener: (data: string) => void): () => void {
    return this.fromHost.add(listener);
  }

  /** Board side: the device disappears (like an unplug); the open transport closes with an error. */
  unplug(): void {
    this.available = false;
    this.current?.end(new Error("device unplugged (memory link)"));
  }

  /** Board side: the device is back. */
  plugIn(): void {
    this.available = true;
  }

  /** @internal */
  hostWrote(s: string): void {
    this.written.push(s);
    this.fromHost.emit(s);
  }

  /** @internal */
  detach(t: MemoryTransport): void {
    if (this.current === t) this.current = undefined;
  }
}
