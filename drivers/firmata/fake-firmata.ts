/**
 * A fake Firmata board (STYLE §7): speaks enough of the Firmata 2.x protocol (as StandardFirmata
 * does) for firmata-io and johnny-five to bring a board up and for the contact driver to run:
 * REPORT_VERSION, QUERY_FIRMWARE, CAPABILITY_QUERY, ANALOG_MAPPING_QUERY, PIN_MODE,
 * REPORT_DIGITAL (reports the port at once, then on every change), DIGITAL_MESSAGE and
 * SET_DIGITAL_PIN_VALUE from the host (output pins), REPORT_ANALOG and analog reporting,
 * SAMPLING_INTERVAL, SYSTEM_RESET.
 * The pin map is an Arduino Uno's: D0…D13 digital, A0…A5 = pins 14…19 (also analog).
 *
 * Analog reporting as StandardFirmata 2.5 (firmata/arduino examples/StandardFirmata) does it:
 * after a reset the analog-capable pins are in ANALOG mode with reporting off; REPORT_ANALOG
 * (0xC0|channel, 1) — or PIN_MODE ANALOG on an analog pin — turns reporting on and sends the
 * value at once; then every sampling interval (default 19 ms, SAMPLING_INTERVAL sysex 0x7A,
 * minimum 1 ms) the board sends an ANALOG_MESSAGE for every reported channel whose pin is in
 * ANALOG mode, changed or not. PIN_MODE other than ANALOG on an analog pin turns its reporting
 * off. The sampling timer runs only while a channel is reported; `dispose()` stops it.
 *
 * Fault injection: `deaf` (a wrong sketch: the board ignores the host, its sampling loop still
 * runs) and `pause()`/`resume()` (a hung board, e.g. the process stopped: nothing is sent, bytes
 * from the host wait in its input buffer, input changes are reported after `resume()` as the
 * firmware's change detection would).
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
const ANALOG_MESSAGE = 0xe0;
const SAMPLING_INTERVAL = 0x7a;
const SYSTEM_RESET = 0xff;
/** StandardFirmata's default sampling interval, ms */
const DEFAULT_SAMPLING_MS = 19;

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
  /** last value sent per port (change detection, like StandardFirmata's previousPINs) */
  private readonly sentPort = new Array<number>(16).fill(-1);
  /** reported analog channels (StandardFirmata's analogInputsToReport) */
  private readonly reportAnalog = new Set<number>();
  private readonly analogValues: number[];
  private samplingMs = DEFAULT_SAMPLING_MS;
  private sampler: ReturnType<typeof setInterval> | undefined;
  private paused = false;
  private pending: number[] = [];
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
    this.modes = [];
    this.analogValues = new Array(Math.max(0, this.pinCount - this.firstAnalog)).fill(0);
    this.levels = new Array(this.pinCount).fill(0);
    this.reset();
  }

  /** the sampling interval the host set, ms */
  get samplingIntervalMs(): number {
    return this.samplingMs;
  }

  /** analog channels being reported */
  get reportedAnalogChannels(): number[] {
    return [...this.reportAnalog].sort((a, b) => a - b);
  }

  /** Set the value an analog channel reads (0…1023). */
  setAnalog(channel: number, value: number): void {
    this.analogValues[channel] = value;
  }

  /** Hang: send nothing, keep the host's bytes unprocessed until `resume()`. */
  pause(): void {
    this.paused = true;
  }

  /** Carry on after `pause()`: process the waiting bytes, report changed inputs. */
  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    const waiting = this.pending;
    this.pending = [];
    for (const b of waiting) this.byte(b);
    this.checkDigitalInputs();
  }

  /** Stop the sampling timer (the board is unplugged for good). */
  dispose(): void {
    if (this.sampler) clearInterval(this.sampler);
    this.sampler = undefined;
    this.reportAnalog.clear();
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
    this.checkDigitalInputs();
  }

  /** Send the startup banner StandardFirmata sends after a reset (version + firmware). */
  banner(): void {
    if (this.paused) return;
    this.sendVersion();
    this.sendFirmware();
  }

  /** Feed bytes the host wrote. */
  receive(data: Uint8Array): void {
    if (this.paused) {
      for (const b of data) this.pending.push(b);
      return;
    }
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
      this.reset();
      return;
    }
    if (c === START_SYSEX) {
      const id = m[1];
      if (id === QUERY_FIRMWARE) this.sendFirmware();
      else if (id === CAPABILITY_QUERY) this.sendCapabilities();
      else if (id === ANALOG_MAPPING_QUERY) this.sendAnalogMapping();
      else if (id === SAMPLING_INTERVAL && m.length >= 5) {
        this.samplingMs = Math.max(1, m[2]! | (m[3]! << 7));
        this.restartSampler();
      }
      return; // others: accepted silently
    }
    if (c === PIN_MODE) {
      this.setPinMode(m[1]!, m[2]!);
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
      if (m[1] === 1) this.sendPort(port); // StandardFirmata reports the port at once (forced)
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
    if (cmd === REPORT_ANALOG) {
      this.setAnalogReporting(port, m[1] !== 0, true);
      return;
    }
  }

  /** StandardFirmata's systemResetCallback: analog pins ANALOG, the rest OUTPUT, no reporting. */
  private reset(): void {
    for (let p = 0; p < this.pinCount; p++)
      this.modes[p] = p >= this.firstAnalog ? FirmataMode.ANALOG : FirmataMode.OUTPUT;
    this.reportPort.fill(false);
    this.sentPort.fill(-1);
    this.reportAnalog.clear();
    this.samplingMs = DEFAULT_SAMPLING_MS;
    this.restartSampler();
  }

  private setPinMode(pin: number, mode: number): void {
    if (pin >= this.pinCount) return;
    // StandardFirmata: an analog pin's reporting follows its mode (on, with an immediate value, for ANALOG)
    if (pin >= this.firstAnalog)
      this.setAnalogReporting(pin - this.firstAnalog, mode === FirmataMode.ANALOG, true);
    this.modes[pin] = mode;
    // an open input with the pull-up reads high unless the circuit drives it
    if (mode === FirmataMode.PULLUP && !this.touched.has(pin)) this.levels[pin] = 1;
  }

  private setAnalogReporting(channel: number, on: boolean, sendNow: boolean): void {
    if (channel >= this.analogValues.length) return;
    if (!on) this.reportAnalog.delete(channel);
    else {
      this.reportAnalog.add(channel);
      if (sendNow) this.sendAnalog(channel);
    }
    this.restartSampler();
  }

  /** The sampling loop runs while some channel is reported. */
  private restartSampler(): void {
    if (this.sampler) clearInterval(this.sampler);
    this.sampler = undefined;
    if (this.reportAnalog.size === 0) return;
    this.sampler = setInterval(() => this.sample(), this.samplingMs);
    this.sampler.unref?.();
  }

  private sample(): void {
    if (this.paused) return;
    for (const ch of this.reportAnalog)
      if (this.modes[this.firstAnalog + ch] === FirmataMode.ANALOG) this.sendAnalog(ch);
  }

  /** StandardFirmata's checkDigitalInputs: every reported port whose input bits changed. */
  private checkDigitalInputs(): void {
    if (this.paused) return;
    for (let port = 0; port < this.reportPort.length; port++)
      if (this.reportPort[port] && this.portValue(port) !== this.sentPort[port]) this.sendPort(port);
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

  /** a port's input bits (readPort with portConfigInputs: only INPUT / PULLUP pins count) */
  private portValue(port: number): number {
    let v = 0;
    for (let i = 0; i < 8; i++) {
      const pin = port * 8 + i;
      const mode = this.modes[pin];
      if (
        pin < this.pinCount &&
        (mode === FirmataMode.INPUT || mode === FirmataMode.PULLUP) &&
        this.levels[pin]
      )
        v |= 1 << i;
    }
    return v;
  }

  private sendPort(port: number): void {
    const v = this.portValue(port);
    this.sentPort[port] = v;
    this.write(Uint8Array.of(DIGITAL_MESSAGE | port, v & 0x7f, (v >> 7) & 0x7f));
  }

  private sendAnalog(channel: number): void {
    if (this.paused) return;
    const v = this.analogValues[channel] ?? 0;
    this.write(Uint8Array.of(ANALOG_MESSAGE | channel, v & 0x7f, (v >> 7) & 0x7f));
  }
}
