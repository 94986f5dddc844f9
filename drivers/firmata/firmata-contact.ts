/**
 * Driver (STYLE §1): a buzz-wire contact box on a Firmata board (an Arduino running
 * StandardFirmata). Implements the `ContactSensor` capability, so the real backend treats it
 * exactly like the buzz box.
 *
 * Stack: our serial transport seam (drivers/serial, serialport@13 at the edge) → an adapter with
 * the stream shape firmata-io expects → firmata-io (protocol) → johnny-five `Board` (lifecycle,
 * pin components) with `Pin` outputs for the lamp and the buzzer.
 *
 * The contact input does not go through johnny-five's `Button`/`Switch`/`Pin` reading: those
 * debounce with a 5–7 ms trailing timer or poll every 20 ms, which would eat the whole 5 ms
 * contact-to-stop budget. Instead the driver sets the pin to PULLUP and listens to firmata-io's
 * digital reports, so a contact event is emitted synchronously inside the serial data handler
 * (bytes in → parse → `onEvent` listeners, no timer in between). StandardFirmata reports a
 * digital port on every change (checked each loop pass), so no sampling delay is added.
 *
 * Time: Firmata carries no board clock; an edge is stamped with the host time at which its bytes
 * arrived (gateway clock, s).
 *
 * Lost port (USB unplug, pty gone): one `fault` event, then reconnects with backoff; when the
 * board is back an `instrument` event `firmata.link` {up: 1} and, if the contact changed while
 * the link was down, a `contact` event with the new state.
 *
 * Hung board (port open, firmware stopped): Firmata has no heartbeat message, but StandardFirmata
 * sends an ANALOG_MESSAGE for every reported analog channel once per sampling interval, changed
 * or not. The driver turns that into one: it sets the SAMPLING_INTERVAL (`samplingIntervalMs`,
 * default 19 ms, StandardFirmata's own) and reports the spare analog channel `heartbeatChannel`
 * (default 0 = A0, nothing may be wired to it that minds being read), then treats
 * `silenceTimeoutMs` (default 60 ms ≈ 3 intervals) without any byte from the board as a fault
 * (RB_ERR_FIRMATA_TIMEOUT in the message): the same path as a lost port — `fault` event, port
 * closed, reconnect with backoff until the board answers the handshake again. The silence is
 * checked every `silenceTimeoutMs / 6` ms on the driver's clock and accumulated over the checks
 * since the last byte; a check that itself ran late (the host stalled: bytes may be waiting
 * unread) adds one period only, so a busy host does not fault a healthy board. Detection
 * latency: silenceTimeoutMs + one check period (≈ 70 ms by default; more while the host
 * stalls; bench/stop-latency.ts measures it).
 */
import { EventEmitter } from "node:events";
import { createRequire } from "node:module";
import { LifecycleComponent, type LifecycleState } from "../../seam/lifecycle.ts";
import type { SensorEvent, SensorEventListener } from "../../seam/types.ts";
import type { ContactSensor, OutputMode } from "../serial/contact-sensor.ts";
import { Reconnector } from "../serial/reconnect.ts";
import { Listeners, type SerialTransport, type TransportOpener } from "../serial/transport.ts";
import { DeviceError } from "../errors.ts";
import type { FirmataContactResource } from "./resource.ts";

// ───────────── the parts of firmata-io and johnny-five this driver uses ─────────────
// Neither package ships typings; the shapes are declared here (like drivers/ros2's roslib adapter).

interface FirmataPin {
  supportedModes: number[];
  mode?: number;
  value: number;
}
interface FirmataBoard extends EventEmitter {
  readonly isReady: boolean;
  readonly MODES: { INPUT: number; OUTPUT: number; PULLUP: number; ANALOG: number };
  readonly pins: FirmataPin[];
  /** digital pin number of each analog channel */
  readonly analogPins: number[];
  analogRead(channel: number, cb: (value: number) => void): void;
  pinMode(pin: number, mode: number): void;
  digitalRead(pin: number, cb: (value: number) => void): void;
  reportDigitalPin(pin: number, value: 0 | 1): void;
  setSamplingInterval(ms: number): void;
}
type FirmataCtor = new (
  transport: EventEmitter,
  options: { reportVersionTimeout: number; samplingInterval?: number },
) => FirmataBoard;
interface FiveBoard extends EventEmitter {
  readonly isReady: boolean;
}
interface FivePin {
  high(): void;
  low(): void;
}
interface FiveModule {
  Board: new (opts: {
    io: FirmataBoard;
    repl: false;
    debug: false;
    sigint: false;
    timeout?: number;
  }) => FiveBoard;
  Pin: new (opts: { pin: number; board: FiveBoard; type: "digital"; mode: number }) => FivePin;
}

const require = createRequire(import.meta.url);
let cached: { Firmata: FirmataCtor; five: FiveModule } | undefined;
/** Load firmata-io and johnny-five on first use (a sim-only gateway never loads them). */
function libs(): { Firmata: FirmataCtor; five: FiveModule } {
  if (!cached) {
    const bind = require("firmata-io") as { Firmata: FirmataCtor };
    cached = { Firmata: bind.Firmata, five: require("johnny-five") as FiveModule };
  }
  return cached;
}

/**
 * The stream shape firmata-io expects from a transport (`on("data"|"close"|"error"|"open")`,
 * `write(buf, cb)`), over our `SerialTransport`.
 */
class FirmataStream extends EventEmitter {
  private readonly unsubs: (() => void)[];
  constructor(
    readonly serial: SerialTransport,
    onBytes: () => void,
  ) {
    super();
    this.unsubs = [
      serial.onData((chunk) => {
        onBytes();
        this.emit("data", chunk);
      }),
      serial.onClose((err) => this.emit("close", err ? { disconnect: true, disconnected: true } : undefined)),
    ];
    queueMicrotask(() => this.emit("open"));
  }
  get isOpen(): boolean {
    return this.serial.isOpen;
  }
  write(data: Uint8Array, cb?: () => void): void {
    if (!this.serial.isOpen) return;
    this.serial.write(data);
    cb?.();
  }
  detach(): void {
    for (const u of this.unsubs.splice(0)) u();
    this.removeAllListeners();
  }
}

export interface FirmataContactOptions {
  resource: FirmataContactResource;
  /** opens the serial port; the gateway passes `openSerialPort`, tests may pass a MemoryLink opener */
  open: TransportOpener;
  /** the gateway's monotonic clock, s (default performance.now()/1000) */
  now?: () => number;
  /** device name in events (default "firmata") */
  source?: string;
}

interface Link {
  stream: FirmataStream;
  io: FirmataBoard;
  board: FiveBoard;
  lamp: FivePin;
  buzzer: FivePin;
}

export class FirmataContact extends LifecycleComponent implements ContactSensor {
  readonly source: string;
  private readonly res: FirmataContactResource;
  private readonly open: TransportOpener;
  private readonly now: () => number;
  private readonly events = new Listeners<[SensorEvent]>();
  private link: Link | undefined;
  private up = false;
  private closed: boolean | undefined;
  private rxS = 0;
  /** the silence watchdog's timer and its previous check (driver clock, s) */
  private watchdog: ReturnType<typeof setInterval> | undefined;
  private lastCheckS = 0;
  /** chunks received (the watchdog compares it between checks) and the count at the last check */
  private rxCount = 0;
  private rxSeen = 0;
  /** silence accumulated over checks while the host was responsive, ms */
  private silentMs = 0;
  private lampMode: OutputMode = "A";
  private buzzerMode: OutputMode = "A";
  private readonly reconnect: Reconnector;
  /** successful reconnects after a lost link */
  reconnects = 0;

  constructor(opts: FirmataContactOptions) {
    super();
    this.res = opts.resource;
    this.open = opts.open;
    this.now = opts.now ?? (() => performance.now() / 1000);
    this.source = opts.source ?? "firmata";
    this.reconnect = new Reconnector({
      initialMs: this.res.reconnectInitialMs,
      maxMs: this.res.reconnectMaxMs,
      allowed: () => this.lifecycle === "inactive" || this.lifecycle === "active",
      attempt: () => this.bringUp(),
      onUp: () => {
        this.reconnects++;
        this.events.emit({
          type: "instrument",
          t: this.now(),
          name: `${this.source}.link`,
          values: { up: 1 },
          source: this.source,
        });
      },
    });
    if (!this.res.outputsFollowContact) this.lampMode = this.buzzerMode = "0";
  }

  get linkUp(): boolean {
    return this.up;
  }

  get contactClosed(): boolean | undefined {
    return this.closed;
  }

  onEvent(listener: SensorEventListener): () => void {
    return this.events.add(listener);
  }

  // ───────────── lifecycle ─────────────

  /** Open the port, wait for the board (version, firmware, capabilities), set the pins. Throws on failure. */
  protected override async onConfigure(): Promise<void> {
    await this.bringUp();
  }

  /** Back to inactive; lamp and buzzer return to their configured default. */
  protected override async onDeactivate(): Promise<void> {
    const auto: OutputMode = this.res.outputsFollowContact ? "A" : "0";
    this.lampMode = this.buzzerMode = auto;
    this.applyOutputs();
  }

  protected override async onShutdown(_from: LifecycleState): Promise<void> {
    this.reconnect.cancel();
    if (this.up && this.link) {
      this.link.lamp.low();
      this.link.buzzer.low();
    }
    this.up = false;
    await this.dropLink();
    this.events.clear();
  }

  /** lamp off / on / automatic (follows contact); active only; resolves once the command is written */
  async setLamp(mode: OutputMode): Promise<void> {
    this.guard("setLamp");
    this.requireLink("set the lamp");
    this.lampMode = mode;
    this.applyOutputs();
  }

  /** buzzer off / on / automatic; active only; resolves once the command is written */
  async setBuzzer(mode: OutputMode): Promise<void> {
    this.guard("setBuzzer");
    this.requireLink("set the buzzer");
    this.buzzerMode = mode;
    this.applyOutputs();
  }

  // ───────────── link ─────────────

  private requireLink(operation: string): void {
    if (!this.up) throw new DeviceError("RB_ERR_FIRMATA_LINK_DOWN", { path: this.res.path, operation });
  }

  private async bringUp(): Promise<void> {
    const serial = await this.open({ path: this.res.path, baudRate: this.res.baudRate });
    if (this.lifecycle === "finalized") {
      await serial.close();
      throw new Error("driver shut down while connecting");
    }
    const stream = new FirmataStream(serial, () => {
      this.rxS = this.now();
      this.rxCount++;
    });
    const { Firmata, five } = libs();
    let io: FirmataBoard | undefined;
    try {
      io = new Firmata(stream, {
        reportVersionTimeout: this.res.reportVersionTimeoutMs,
        samplingInterval: this.res.samplingIntervalMs,
      });
      await this.waitReady(io, serial);
      const board = new five.Board({ io, repl: false, debug: false, sigint: false });
      await new Promise<void>((resolve) =>
        board.isReady ? resolve() : board.once("ready", () => resolve()),
      );
      this.checkPin(io, this.res.contactPin, io.MODES.PULLUP, "PULLUP");
      this.checkPin(io, this.res.lampPin, io.MODES.OUTPUT, "OUTPUT");
      this.checkPin(io, this.res.buzzerPin, io.MODES.OUTPUT, "OUTPUT");
      const heartbeatPin = io.analogPins[this.res.heartbeatChannel];
      if (
        heartbeatPin === undefined ||
        [this.res.contactPin, this.res.lampPin, this.res.buzzerPin].includes(heartbeatPin)
      )
        throw new DeviceError("RB_ERR_FIRMATA_PIN", {
          path: this.res.path,
          pin: `A${this.res.heartbeatChannel}${heartbeatPin === undefined ? "" : ` (pin ${heartbeatPin}, also wired as contact/lamp/buzzer)`}`,
          mode: "ANALOG (heartbeat)",
        });
      this.checkPin(io, heartbeatPin, io.MODES.ANALOG, "ANALOG (heartbeat)");
      const lamp = new five.Pin({ pin: this.res.lampPin, board, type: "digital", mode: io.MODES.OUTPUT });
      const buzzer = new five.Pin({ pin: this.res.buzzerPin, board, type: "digital", mode: io.MODES.OUTPUT });
      this.link = { stream, io, board, lamp, buzzer };
      serial.onClose((err) => {
        if (this.link?.stream === stream)
          this.linkLost(`serial port ${this.res.path} closed: ${err?.message ?? "closed"}`);
      });
      io.on("error", (e: Error) => {
        if (this.link?.stream === stream) this.linkLost(`Firmata on ${this.res.path}: ${e.message}`);
      });
      // contact: PULLUP input, low = closed; firmata-io reports every digital message of the port
      io.pinMode(this.res.contactPin, io.MODES.PULLUP);
      const first = new Promise<void>((resolve) => {
        io!.digitalRead(this.res.contactPin, (v) => {
          this.onContactLevel(v);
          resolve();
        });
      });
      await withTimeout(
        first,
        this.res.readyTimeoutMs,
        () =>
          new DeviceError("RB_ERR_FIRMATA_NOT_READY", {
            path: this.res.path,
            timeoutMs: this.res.readyTimeoutMs,
            reason: "no digital report for the contact pin",
          }),
      );
      this.startHeartbeat(io, stream, heartbeatPin);
      this.up = true;
      this.applyOutputs();
      this.startWatchdog(stream);
    } catch (e) {
      this.link = undefined;
      stream.detach();
      io?.removeAllListeners();
      await serial.close();
      throw e;
    }
  }

  /**
   * Hot path: one digital report of the contact pin's port (inside the serial data handler).
   * Emits on a change only, then drives the automatic outputs.
   */
  private onContactLevel(level: number): void {
    const closed = level === 0;
    if (closed === this.closed) return;
    const initial = this.closed === undefined;
    this.closed = closed;
    // the very first report is the initial state: an event only when the circuit is closed
    if (!initial || closed) this.events.emit({ type: "contact", t: this.rxS, closed, source: this.source });
    this.applyOutputs();
  }

  private applyOutputs(): void {
    const l = this.link;
    if (!l || !this.up) return;
    const level = (m: OutputMode) => (m === "A" ? this.closed === true : m === "1");
    if (level(this.lampMode)) l.lamp.high();
    else l.lamp.low();
    if (level(this.buzzerMode)) l.buzzer.high();
    else l.buzzer.low();
  }

  private checkPin(io: FirmataBoard, pin: number, mode: number, modeName: string): void {
    const p = io.pins[pin];
    if (!p || (p.supportedModes.length > 0 && !p.supportedModes.includes(mode)))
      throw new DeviceError("RB_ERR_FIRMATA_PIN", { path: this.res.path, pin, mode: modeName });
  }

  private waitReady(io: FirmataBoard, serial: SerialTransport): Promise<void> {
    return withTimeout(
      new Promise<void>((resolve, reject) => {
        if (io.isReady) return resolve();
        io.once("ready", () => resolve());
        serial.onClose((err) =>
          reject(new Error(`port closed while waiting for the board: ${err?.message ?? "closed"}`)),
        );
      }),
      this.res.readyTimeoutMs,
      () =>
        new DeviceError("RB_ERR_FIRMATA_NOT_READY", {
          path: this.res.path,
          timeoutMs: this.res.readyTimeoutMs,
          reason: "no version/firmware/capability answer",
        }),
    );
  }

  /**
   * Periodic reports of the heartbeat channel. firmata-io's pinMode() does not send PIN_MODE for
   * ANALOG, so it is written here: a pin left in another mode by an earlier session would
   * otherwise stay silent (StandardFirmata samples only pins in ANALOG mode).
   */
  private startHeartbeat(io: FirmataBoard, stream: FirmataStream, pin: number): void {
    stream.write(Uint8Array.of(PIN_MODE, pin, io.MODES.ANALOG));
    io.analogRead(this.res.heartbeatChannel, () => {}); // REPORT_ANALOG | channel, 1
  }

  /** A fault when the board has sent nothing for silenceTimeoutMs (see the file comment). */
  private startWatchdog(stream: FirmataStream): void {
    this.stopWatchdog();
    const limitMs = this.res.silenceTimeoutMs;
    const everyMs = Math.max(1, Math.round(limitMs / 6));
    this.lastCheckS = this.now();
    this.rxSeen = this.rxCount;
    this.silentMs = 0;
    this.watchdog = setInterval(() => {
      const now = this.now();
      const sinceCheckMs = (now - this.lastCheckS) * 1000;
      this.lastCheckS = now;
      if (this.rxCount !== this.rxSeen) {
        this.rxSeen = this.rxCount;
        this.silentMs = 0;
        return;
      }
      // a check that ran late (the host stalled: the board's bytes may wait unread in the
      // kernel) counts as one period only, so a busy host does not fault a healthy board
      this.silentMs += sinceCheckMs > 3 * everyMs ? everyMs : sinceCheckMs;
      if (this.silentMs <= limitMs || this.link?.stream !== stream) return;
      const silentMs = (now - this.rxS) * 1000;
      const err = new DeviceError("RB_ERR_FIRMATA_TIMEOUT", {
        path: this.res.path,
        silentMs: Math.round(silentMs),
        limitMs,
        channel: `A${this.res.heartbeatChannel}`,
        samplingMs: this.res.samplingIntervalMs,
      });
      this.linkLost(`${err.code}: ${err.message}`);
    }, everyMs);
    this.watchdog.unref?.();
  }

  private stopWatchdog(): void {
    if (this.watchdog) clearInterval(this.watchdog);
    this.watchdog = undefined;
  }

  private linkLost(message: string): void {
    const wasUp = this.up;
    this.up = false;
    if (wasUp) this.events.emit({ type: "fault", t: this.now(), device: this.source, message });
    void this.dropLink();
    this.reconnect.schedule();
  }

  private async dropLink(): Promise<void> {
    this.stopWatchdog();
    const l = this.link;
    this.link = undefined;
    if (!l) return;
    l.stream.detach();
    l.io.removeAllListeners();
    await l.stream.serial.close();
  }
}

const PIN_MODE = 0xf4;

function withTimeout<T>(p: Promise<T>, ms: number, err: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(err()), ms);
    p.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}
