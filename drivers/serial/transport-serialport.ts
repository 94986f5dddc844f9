/**
 * serialport@13 adapter for the transport seam. Works with USB serial devices and with ptys
 * (socat, simavr's uart_pty). A read error (e.g. EIO when a pty's other end goes away, or a USB
 * unplug) closes the port and reaches `onClose` with the error.
 */
import { SerialPort } from "serialport";
import { Listeners, type SerialTransport, type TransportOpener, type TransportTarget } from "./transport.ts";

class SerialPortTransport implements SerialTransport {
  private readonly data = new Listeners<[Uint8Array]>();
  private readonly closed = new Listeners<[Error | undefined]>();
  private ended = false;
  private closing = false;

  constructor(private readonly port: SerialPort) {
    port.on("data", (chunk: Buffer) => this.data.emit(chunk));
    port.on("close", (err?: Error | null) =>
      this.end(this.closing ? undefined : (err ?? new Error("port closed"))),
    );
    port.on("error", (err: Error) => {
      if (port.isOpen) port.close(() => {});
      this.end(err);
    });
  }

  get isOpen(): boolean {
    return !this.ended && this.port.isOpen;
  }

  write(data: string | Uint8Array): void {
    if (this.ended) return;
    this.port.write(typeof data === "string" ? Buffer.from(data, "latin1") : data);
  }

  onData(listener: (chunk: Uint8Array) => void): () => void {
    return this.data.add(listener);
  }

  onClose(listener: (error?: Error) => void): () => void {
    return this.closed.add(listener);
  }

  close(): Promise<void> {
    if (this.ended || !this.port.isOpen) {
      this.end(undefined);
      return Promise.resolve();
    }
    this.closing = true;
    return new Promise((resolve) => {
      this.port.close(() => {
        this.end(undefined);
        resolve();
      });
    });
  }

  private end(err: Error | undefined): void {
    if (this.ended) return;
    this.ended = true;
    this.closed.emit(err);
    this.data.clear();
    this.closed.clear();
  }
}

/** Open a serial device or pty with serialport (8N1, no flow control). */
export const openSerialPort: TransportOpener = (target: TransportTarget) =>
  new Promise((resolve, reject) => {
    const port = new SerialPort({ path: target.path, baudRate: target.baudRate, autoOpen: false });
    port.open((err) => {
      if (err) reject(new Error(`cannot open ${target.path}: ${err.message}`));
      else resolve(new SerialPortTransport(port));
    });
  });
