/**
 * serialport@13 adapter for the transport seam. Works with USB serial devices and with ptys
 * (socat, simavr's uart_pty). A read error (e.g. EIO when a pty's other end goes away, or a USB
 * unplug) closes the port and reaches `onClose` with the error.
 *
 * Reads and writes run on the event loop, not on libuv's threadpool. serialport's Linux/macOS
 * binding reads with `fs.read` (a threadpool job) after its poller says the fd is readable; the
 * threadpool has 4 threads and is shared with the recorder's writes and fdatasyncs, so on a busy
 * disk a contact edge waited in the threadpool queue behind file I/O — 10–30 ms with the event
 * loop idle (bench/stop-latency.ts attributes it: "threadpool job waited"). The fd is opened
 * O_NONBLOCK by the binding, so a read when the poller says readable is a non-blocking system
 * call of a few µs: `loopIo` does it synchronously (EAGAIN → wait for the poller again, like the
 * binding's own read), the same for writes. Other platforms' bindings (no poller) are left as
 * they are. A read of 0 bytes (end of file: the line hung up) closes the port with an error.
 */
import { readSync, writeSync } from "node:fs";
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

type Binding = typeof SerialPort.binding;
type BindingPort = Awaited<ReturnType<Binding["open"]>>;
/** what the Unix bindings (LinuxPortBinding, DarwinPortBinding) have besides the interface */
interface UnixPort {
  fd: number | null;
  poller?: { once(event: "readable" | "writable", cb: (err: Error | null) => void): unknown };
}

const RETRY = new Set(["EAGAIN", "EWOULDBLOCK", "EINTR"]);
/** the binding's own list of errors that mean the device went away */
const DISCONNECT = new Set(["EBADF", "ENXIO", "UNKNOWN"]);

function notOpen(): Error {
  // `canceled`: the stream ignores it (the port was closed under a pending read, as the binding does)
  return Object.assign(new Error("Port is not open"), { canceled: true });
}

function waitFor(p: UnixPort, event: "readable" | "writable"): Promise<void> {
  return new Promise((resolve, reject) => p.poller!.once(event, (err) => (err ? reject(err) : resolve())));
}

function ioError(e: unknown): unknown {
  const err = e as NodeJS.ErrnoException & { disconnect?: boolean };
  if (DISCONNECT.has(err.code ?? "") || err.errno === -1) err.disconnect = true;
  return err;
}

async function readOnLoop(p: UnixPort, buffer: Buffer, offset: number, length: number) {
  for (;;) {
    if (p.fd === null) throw notOpen();
    let bytesRead: number;
    try {
      bytesRead = readSync(p.fd, buffer, offset, length, null);
    } catch (e) {
      if (!RETRY.has((e as NodeJS.ErrnoException).code ?? "")) throw ioError(e);
      await waitFor(p, "readable");
      continue;
    }
    if (bytesRead > 0) return { bytesRead, buffer };
    // 0 from a non-blocking raw tty (VMIN 1) is end of file: the line hung up (a pty whose
    // other end closed, a device gone). The binding's own read retried 0 at once, forever.
    throw Object.assign(new Error("serial line hung up (end of file)"), { code: "EOF", disconnect: true });
  }
}

async function writeOnLoop(p: UnixPort, buffer: Buffer): Promise<void> {
  let offset = 0;
  while (offset < buffer.length) {
    if (p.fd === null) throw new Error("Port is not open");
    try {
      offset += writeSync(p.fd, buffer, offset, buffer.length - offset);
      continue;
    } catch (e) {
      if (!RETRY.has((e as NodeJS.ErrnoException).code ?? "")) throw ioError(e);
    }
    await waitFor(p, "writable");
  }
}

/** serialport's detected binding with reads and writes on the event loop (see the file comment) */
export const loopIo: Binding = {
  ...SerialPort.binding,
  list: () => SerialPort.binding.list(),
  async open(options: Parameters<Binding["open"]>[0]): Promise<BindingPort> {
    const port = await SerialPort.binding.open(options as never);
    const unix = port as unknown as UnixPort;
    if (!unix.poller || typeof unix.fd !== "number") return port;
    // anything else than the stream's well-formed calls goes to the binding (its own checks and errors)
    const read = port.read.bind(port);
    const write = port.write.bind(port);
    port.read = (buffer, offset, length) =>
      Buffer.isBuffer(buffer) && buffer.length >= offset + length
        ? readOnLoop(unix, buffer, offset, length)
        : read(buffer, offset, length);
    port.write = (buffer) =>
      Buffer.isBuffer(buffer) && buffer.length > 0 ? writeOnLoop(unix, buffer) : write(buffer);
    return port;
  },
} as Binding;

/** Open a serial device or pty with serialport (8N1, no flow control), I/O on the event loop. */
export const openSerialPort: TransportOpener = (target: TransportTarget) =>
  new Promise((resolve, reject) => {
    const port = new SerialPort({
      path: target.path,
      baudRate: target.baudRate,
      autoOpen: false,
      binding: loopIo,
    } as ConstructorParameters<typeof SerialPort>[0]);
    port.open((err) => {
      if (err) reject(new Error(`cannot open ${target.path}: ${err.message}`));
      else resolve(new SerialPortTransport(port));
    });
  });
