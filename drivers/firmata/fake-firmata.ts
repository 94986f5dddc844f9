/**
 * A fake Firmata board (STYLE §7): speaks enough of the Firmata 2.x protocol (as StandardFirmata
 * does) for firmata-io and johnny-five to bring a board up and for the contact driver to run:
 * REPORT_VERSION, QUERY_FIRMWARE, CAPABILITY_QUERY, ANALOG_MAPPING_QUERY, PIN_MODE,
 * REPORT_DIGITAL (reports the port at once, then on every change), DIGITAL_MESSAGE and
 * SET_DIGITAL_PIN_VALUE from the host (output pins), SAMPLING_INTERVAL, SYSTEM_RESET.
 * The pin map is an Arduino Uno's: D0…D13 digital, A0…A5 = pins 14…19 (also analog).
 *
 * Fault injection: `deaf` (the board ignores the host, e.g. a hung board or a wrong sketch).
 * It is a protocol peer, not a circuit model: the caller sets input levels.
 */

const REPORT_VERSION = 0xf9;
const START_SYSEX = 0xf0;
const END_SYSEX = 0xf7;
const QUERY_FIRMWARE = 0x79;
const CAPABILITY_QUERY = 0x6b;
const CAPABILITY_RESPONSE = 0x6c;
const ANALOG_MAPPING_QUERY = 0x69;
const ANALOG_MAPPING_RESPONSE = 0x6a;
const PIN_MODE = 0xf4;
const SET_DIGITAL_PIN_VALUE = 0xf5;
const DIGITAL_MESSAGE = 0x90;
const REPORT_DIGITAL = 0xd0;
const REPORT_ANALOG = 0xc0;
const SYSTEM_RESET = 0xff;

/** Firmata pin modes used here. */
export const FirmataMode = { INPUT: 0x00, OUTPUT: 0x01, ANALOG: 0x02, PWM: 0x03, PULLUP: 0x0b } as const;

/** One output change the host commanded. */
export interface FakePinWrite {
  pin: number;
  level: 0 | 1;
  /** performance.now() of the write, ms */
  atMs: number;
}

export interface FakeFirmataOptions {
  /** where the board's bytes go */
  write: (data: Uint8Array) => void;
  /** number of pins (default 20, an Uno) */
  pinCount?: number;
  /** first analog pin (default 14: A0) */
  firstAnalogPin?: number;
  /** firmware name in QUERY_FIRMWARE (default "FakeFirmata.ino") */
  firmwareName?: string;
}

export class FakeFirmata {
  private readonly write: (data: Uint8Array) => void;
  private readonly pinCount: number;
  private readonly firstAnalog: number;
  private readonly firmwareName: string;
  private readonly modes: number[];
  /** level on each pin as the board sees it: inputs from setInput, outputs from the host */
  private readonly levels: number[];
  private readonly reportPort = new Array<boolean>(16).fill(false);
  private buf: number[] = [];
  /** pins whose input level was set from outside (a pull-up does not override them) */
  private readonly touched = new Set<number>();
  /** when true the board ignores everything the host sends */
  deaf = false;
  /** every output change the host commanded, in order */
  readonly writes: FakePinWrite[] = [];
  /** every command byte sequence received (first byte), for tests */
  readonly received: number[] = [];

  constructor(opts: FakeFirmataOptions) {
    this.write = opts.write;
    this.pinCount = opts.pinCount ?? 20;
    this.firstAnalog = opts.firstAnalogPin ?? 14;
    this.firmwareName = opts.firmwareName ?? "FakeFirmata.ino";
    this.modes = new Array(this.pinCount).fill(FirmataMode.OUTPUT);
    // an unconnected input with pull-up reads high; everything else starts low
    this.levels = new Array(this.pinCount).fill(0);
  }

  /** mode the host set on `pin` */
  modeOf(pin: number): number | undefined {
    return this.modes[pin];
  }

  /** current level of `pin` (an output's level is what the host last wrote) */
  levelOf(pin: number): number {
    return this.levels[pin] ?? 0;
  }

  /** Drive an input pin from outside (the circuit). Reports the port when reporting is on. */
  setInput(pin: number, level: 0 | 1): void {
    this.touched.add(pin);
    if (this.levels[pin] === level) return;
    this.levels[pin] = level;
    const mode = this.modes[pin];
    if ((mode === FirmataMode.INPUT || mode === FirmataMode.PULLUP) && this.reportPort[pin >> 3])
      this.sendPort(pin >> 3);
  }

  /** Send the startup banner StandardFirmata sends after a reset (version + firmware). */
  banner(): void {
    this.sendVersion();
    this.sendFirmware();
  }

  /** Feed bytes the host wrote. */
  receive(data: Uint8Array): void {
    for (const b of data) this.byte(b);
  }

  // ───────────── parser ─────────────

  private byte(b: number): void {
    const buf = this.buf;
    if (buf.length === 0) {
      if (b === REPORT_VERSION || b === SYSTEM_RESET) {
        this.command([b]);
        return;
      }
      if (b < 0x80) return; // stray data byte
      buf.push(b);
      return;
    }
    if (buf[0] === START_SYSEX) {
      if (b === END_SYSEX) {
        this.buf = [];
        this.command([...buf, b]);
      } else buf.push(b);
      return;
    }
    if (b >= 0x80) {
      // a new command starts before the previous one was complete: resync
      this.buf = [];
      this.byte(b);
      return;
    }
    buf.push(b);
    const kind = buf[0]! & 0xf0;
    const length = kind === REPORT_DIGITAL || kind === REPORT_ANALOG ? 2 : 3;
    if (buf.length === length) {
      this.buf = [];
      this.command(buf);
    }
  }

  private command(m: number[]): void {
    if (this.deaf) return;
    const c = m[0]!;
    this.received.push(c);
    if (c === REPORT_VERSION) {
      this.sendVersion();
      return;
    }
    if (c === SYSTEM_RESET) {
      this.reportPort.fill(false);
      return;
    }
    if (c === START_SYSEX) {
      const id = m[1];
      if (id === QUERY_FIRMWARE) this.sendFirmware();
      else if (id === CAPABILITY_QUERY) this.sendCapabilities();
      else if (id === ANALOG_MAPPING_QUERY) this.sendAnalogMapping();
      return; // SAMPLING_INTERVAL and others: accepted silently
    }
    if (c === PIN_MODE) {
      const pin = m[1]!;
      if (pin < this.pinCount) {
        this.modes[pin] = m[2]!;
        // an open input with the pull-up reads high unless the circuit drives it
        if (m[2] === FirmataMode.PULLUP && !this.touched.has(pin)) this.levels[pin] = 1;
      }
      return;
    }
    if (c === SET_DIGITAL_PIN_VALUE) {
      this.output(m[1]!, m[2] ? 1 : 0);
      return;
    }
    const cmd = c & 0xf0;
    const port = c & 0x0f;
    if (cmd === REPORT_DIGITAL) {
      this.reportPort[port] = m[1] === 1;
      if (m[1] === 1) this.sendPort(port); // StandardFirmata reports the port at once
      return;
    }
    if (cmd === DIGITAL_MESSAGE) {
      const value = m[1]! | (m[2]! << 7);
      for (let i = 0; i < 8; i++) {
        const pin = port * 8 + i;
        if (pin < this.pinCount && this.modes[pin] === FirmataMode.OUTPUT)
          this.output(pin, (value >> i) & 1 ? 1 : 0);
      }
      return;
    }
    if (cmd === REPORT_ANALOG) return;
  }

  private output(pin: number, level: 0 | 1): void {
    if (pin >= this.pinCount || this.levels[pin] === level) return;
    this.levels[pin] = level;
    this.writes.push({ pin, level, atMs: performance.now() });
  }

  // ───────────── replies ─────────────

  private sendVersion(): void {
    this.write(Uint8Array.of(REPORT_VERSION, 2, 5));
  }

  private sendFirmware(): void {
    const out = [START_SYSEX, QUERY_FIRMWARE, 2, 5];
    for (const ch of Buffer.from(this.firmwareName, "latin1")) out.push(ch & 0x7f, ch >> 7);
    out.push(END_SYSEX);
    this.write(Uint8Array.from(out));
  }

  private sendCapabilities(): void {
    const out = [START_SYSEX, CAPABILITY_RESPONSE];
    for (let p = 0; p < this.pinCount; p++) {
      out.push(FirmataMode.INPUT, 1, FirmataMode.OUTPUT, 1, FirmataMode.PULLUP, 1);
      if (p >= this.firstAnalog) out.push(FirmataMode.ANALOG, 10);
      out.push(0x7f);
    }
    out.push(END_SYSEX);
    this.write(Uint8Array.from(out));
  }

  private sendAnalogMapping(): void {
    const out = [START_SYSEX, ANALOG_MAPPING_RESPONSE];
    for (let p = 0; p < this.pinCount; p++) out.push(p >= this.firstAnalog ? p - this.firstAnalog : 0x7f);
    out.push(END_SYSEX);
    this.write(Uint8Array.from(out));
  }

  private sendPort(port: number): void {
    let v = 0;
    for (let i = 0; i < 8; i++) {
      const pin = port * 8 + i;
      if (pin < this.pinCount && this.levels[pin]) v |= 1 << i;
    }
    this.write(Uint8Array.of(DIGITAL_MESSAGE | port, v & 0x7f, (v >> 7) & 0x7f));
  }
}
