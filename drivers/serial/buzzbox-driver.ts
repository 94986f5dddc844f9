/**
 * Driver (STYLE §1) for the buzz-wire contact box (our firmware in drivers/firmware/buzzbox,
 * protocol in its PROTOCOL.md). Implements the `ContactSensor` capability over a
 * `SerialTransport`: emits `SensorEvent`s of type "contact" stamped on the gateway's clock,
 * "fault" when the link is lost, "instrument" (`buzzbox.link`, values {up: 1}) when it is back;
 * tracks sequence numbers (gaps, reordering), maps board time to host time, watches heartbeats,
 * reconnects with backoff, and sends lamp/buzzer commands.
 */
import { LifecycleComponent, type LifecycleState } from "../../seam/lifecycle.ts";
import type { SensorEvent, SensorEventListener } from "../../seam/types.ts";
import { DeviceError } from "../errors.ts";
import { ClockMap } from "./clock-map.ts";
import { Reconnector } from "./reconnect.ts";
import type { ContactSensor, OutputMode } from "./contact-sensor.ts";
import {
  type BoardMessage,
  formatCommand,
  type HostCommand,
  LineSplitter,
  PROTOCOL_VERSION,
  type ParseFailure,
  parseBoardLine,
} from "./protocol.ts";
import type { BuzzboxResource } from "./resource.ts";
import { Listeners, type SerialTransport, type TransportOpener } from "./transport.ts";

/** What the driver noticed about the link, for logs and tests (not safety decisions). */
export type BuzzboxDiagnostic =
  | { kind: "seq-gap"; expected: number; got: number; lost: number }
  | { kind: "reordered"; seq: number; expected: number }
  | { kind: "bad-line"; reason: ParseFailure | "overlong"; line?: string }
  | { kind: "state-resync"; seq: number; closed: boolean }
  | { kind: "board-dropped-edges"; count: number }
  | { kind: "board-restarted"; firmware: string }
  | { kind: "unmatched-reply"; msg: BoardMessage["kind"]; seq: number }
  | { kind: "link"; up: boolean; reason: string };

/** Counters since configure(). */
export interface BuzzboxStats {
  linesReceived: number;
  badLines: number;
  seqGaps: number;
  /** board messages lost, from sequence gaps */
  lostMessages: number;
  reordered: number;
  /** contact state corrected from a heartbeat (an edge line was lost) */
  resyncs: number;
  /** successful reconnects after a lost link */
  reconnects: number;
  /** edges the board reported dropping from its own queue */
  boardDroppedEdges: number;
  /** current board→host clock offset, s (NaN before any line) */
  clockOffsetS: number;
  /** half-width of the ping interval in use, s (Infinity before the first pong) */
  clockUncertaintyS: number;
}

export interface BuzzboxDriverOptions {
  resource: BuzzboxResource;
  /** opens the transport; the gateway passes `openSerialPort`, tests a `MemoryLink.opener` */
  open: TransportOpener;
  /** the gateway's monotonic clock, s (default: performance.now()/1000) */
  now?: () => number;
  /** device name in events (default "buzzbox") */
  source?: string;
}

type Expect = "A" | "P" | "V";

interface Pending {
  expect: Expect;
  /** command letter an ack must carry (L, B, R, D) */
  letter: string;
  /** host time the command was written, s */
  sentS: number;
  /** UART time of the command line, s */
  txS: number;
  resolve: (m: BoardMessage, lineBytes: number, recvS: number) => void;
  reject: (e: Error) => void;
  timer: ReturnType<typeof setTimeout>;
}

const LETTER: Record<HostCommand["cmd"], string> = {
  lamp: "L",
  buzzer: "B",
  ping: "P",
  "reset-seq": "R",
  version: "V",
  debounce: "D",
};

const EXPECT: Record<HostCommand["cmd"], Expect> = {
  lamp: "A",
  buzzer: "A",
  ping: "P",
  "reset-seq": "A",
  version: "V",
  debounce: "A",
};

export class BuzzboxDriver extends LifecycleComponent implements ContactSensor {
  readonly source: string;
  private readonly res: BuzzboxResource;
  private readonly open: TransportOpener;
  private readonly now: () => number;
  private readonly events = new Listeners<[SensorEvent]>();
  private readonly diags = new Listeners<[BuzzboxDiagnostic]>();
  private readonly clock = new ClockMap();
  private readonly splitter: LineSplitter;

  private transport: SerialTransport | undefined;
  private unsub: Array<() => void> = [];
  private up = false;
  private faultReported = false;
  private connecting = false;
  private lastRxS = 0;
  /** badLines when the last good line came, and the last malformed line's reason (the heartbeat fault says them) */
  private badLinesAtLastRx = 0;
  private lastBadReason: string | undefined;
  private rxS = 0;
  private expectedSeq: number | undefined;
  private lastContactSeq = -1;
  private closed: boolean | undefined;
  private helloSeen = false;
  /** a valid line arrived on the current transport */
  private heardOnThisTransport = false;
  private pending: Pending[] = [];
  private lineWaiters: Array<() => void> = [];
  private desiredLamp: OutputMode = "A";
  private desiredBuzzer: OutputMode = "A";
  private watchdog: ReturnType<typeof setInterval> | undefined;
  private pinger: ReturnType<typeof setInterval> | undefined;
  private readonly reconnect: Reconnector;
  private readonly counters = {
    linesReceived: 0,
    badLines: 0,
    seqGaps: 0,
    lostMessages: 0,
    reordered: 0,
    resyncs: 0,
    reconnects: 0,
    boardDroppedEdges: 0,
  };

  constructor(opts: BuzzboxDriverOptions) {
    super();
    this.res = opts.resource;
    this.open = opts.open;
    this.now = opts.now ?? (() => performance.now() / 1000);
    this.source = opts.source ?? "buzzbox";
    this.reconnect = new Reconnector({
      initialMs: this.res.reconnectInitialMs,
      maxMs: this.res.reconnectMaxMs,
      allowed: () => this.lifecycle === "inactive" || this.lifecycle === "active",
      attempt: async () => {
        this.connecting = true;
        try {
          await this.bringUp();
        } finally {
          this.connecting = false;
        }
      },
      onUp: () => {
        this.counters.reconnects++;
        this.diag({ kind: "link", up: true, reason: "reconnected" });
        this.emit({
          type: "instrument",
          t: this.now(),
          name: `${this.source}.link`,
          values: { up: 1 },
          source: this.source,
        });
      },
      onFailure: () => {
        this.up = false;
        void this.dropTransport();
      },
    });
    this.splitter = new LineSplitter((line) => this.onLine(line));
  }

  get linkUp(): boolean {
    return this.up;
  }

  get contactClosed(): boolean | undefined {
    return this.closed;
  }

  /** Board µs → gateway seconds with the current clock estimate (NaN before any line). */
  boardToHostS(boardUs: number): number {
    return this.clock.toHostS(boardUs);
  }

  stats(): BuzzboxStats {
    return {
      ...this.counters,
      clockOffsetS: this.clock.offsetS(),
      clockUncertaintyS: this.clock.uncertaintyS(),
    };
  }

  onEvent(listener: SensorEventListener): () => void {
    return this.events.add(listener);
  }

  onDiagnostic(listener: (d: BuzzboxDiagnostic) => void): () => void {
    return this.diags.add(listener);
  }

  // ------------------------------------------------------------------ lifecycle

  /** Open the port, wait for the board, check its protocol, apply the debounce time. Throws on failure. */
  protected override async onConfigure(): Promise<void> {
    this.connecting = true;
    try {
      await this.bringUp();
    } catch (e) {
      await this.dropTransport();
      throw e;
    } finally {
      this.connecting = false;
    }
    this.startTimers();
  }

  /** Back to inactive; lamp and buzzer return to automatic (best effort). */
  protected override async onDeactivate(): Promise<void> {
    const reset: Promise<unknown>[] = [];
    if (this.desiredLamp !== "A") reset.push(this.command({ cmd: "lamp", mode: "A" }));
    if (this.desiredBuzzer !== "A") reset.push(this.command({ cmd: "buzzer", mode: "A" }));
    this.desiredLamp = this.desiredBuzzer = "A";
    await Promise.allSettled(reset);
  }

  protected override async onShutdown(_from: LifecycleState): Promise<void> {
    this.stopTimers();
    this.reconnect.cancel();
    this.up = false;
    await this.dropTransport();
    this.events.clear();
    this.diags.clear();
  }

  async setLamp(mode: OutputMode): Promise<void> {
    this.guard("setLamp");
    if (!this.up) throw this.linkDown("send lamp");
    this.desiredLamp = mode;
    await this.command({ cmd: "lamp", mode });
  }

  async setBuzzer(mode: OutputMode): Promise<void> {
    this.guard("setBuzzer");
    if (!this.up) throw this.linkDown("send buzzer");
    this.desiredBuzzer = mode;
    await this.command({ cmd: "buzzer", mode });
  }

  /** Ping now (normally done every pingIntervalMs); resolves with the round trip, s. */
  async ping(): Promise<number> {
    this.guard("ping");
    const s = this.now();
    await this.command({ cmd: "ping" });
    return this.now() - s;
  }

  // ------------------------------------------------------------------ link

  private linkDown(operation: string): DeviceError<"RB_ERR_BUZZBOX_LINK_DOWN"> {
    return new DeviceError("RB_ERR_BUZZBOX_LINK_DOWN", {
      device: this.source,
      path: this.res.path,
      operation,
    });
  }

  private notReady(reason: string): DeviceError<"RB_ERR_BUZZBOX_NOT_READY"> {
    return new DeviceError("RB_ERR_BUZZBOX_NOT_READY", { device: this.source, path: this.res.path, reason });
  }

  /** Open, attach, wait for a first line, check hello, apply settings. Throws on any failure. */
  private async bringUp(): Promise<void> {
    let t: SerialTransport;
    try {
      t = await this.open({ path: this.res.path, baudRate: this.res.baudRate });
    } catch (e) {
      throw this.notReady(e instanceof Error ? e.message : String(e));
    }
    if (this.lifecycle === "finalized") {
      await t.close();
      throw this.linkDown("connect (the driver was shut down)");
    }
    this.attach(t);
    await this.waitForLine(this.res.helloTimeoutMs);
    const hello = await this.command({ cmd: "version" });
    if (hello.kind !== "hello") throw this.notReady(`expected $V, got ${hello.kind}`);
    if (hello.protocol !== PROTOCOL_VERSION) {
      const e = new DeviceError("RB_ERR_BUZZBOX_PROTOCOL", {
        device: this.source,
        path: this.res.path,
        protocol: hello.protocol,
        expected: PROTOCOL_VERSION,
      });
      this.enterError({ device: this.source, message: e.message });
      throw e;
    }
    await this.applySettings(hello.debounceUs);
    this.up = true;
    this.faultReported = false;
    this.lastRxS = this.now();
    this.badLinesAtLastRx = this.counters.badLines;
  }

  private async applySettings(boardDebounceUs: number): Promise<void> {
    const want = this.res.debounceMs === undefined ? undefined : Math.round(this.res.debounceMs * 1000);
    if (want !== undefined && want !== boardDebounceUs) await this.command({ cmd: "debounce", us: want });
    if (this.desiredLamp !== "A") await this.command({ cmd: "lamp", mode: this.desiredLamp });
    if (this.desiredBuzzer !== "A") await this.command({ cmd: "buzzer", mode: this.desiredBuzzer });
  }

  private attach(t: SerialTransport): void {
    this.transport = t;
    this.splitter.reset();
    this.expectedSeq = undefined;
    this.heardOnThisTransport = false;
    this.clock.reset(); // possibly a different (restarted) board: its clock starts anew
    this.lastContactSeq = -1;
    this.unsub.push(
      t.onData((chunk) => {
        this.rxS = this.now();
        this.splitter.push(chunk);
      }),
      t.onClose((err) => {
        if (this.transport === t)
          this.linkLost(`serial port ${this.res.path} closed: ${err?.message ?? "closed"}`);
      }),
    );
  }

  private async dropTransport(): Promise<void> {
    const t = this.transport;
    this.transport = undefined;
    for (const u of this.unsub) u();
    this.unsub = [];
    this.failPending(this.linkDown("wait for a reply"));
    if (t) await t.close();
  }

  private failPending(e: Error): void {
    const p = this.pending;
    this.pending = [];
    for (const x of p) {
      clearTimeout(x.timer);
      x.reject(e);
    }
    const w = this.lineWaiters;
    this.lineWaiters = [];
    for (const fn of w) fn();
  }

  private waitForLine(timeoutMs: number): Promise<void> {
    if (this.heardOnThisTransport) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.lineWaiters = this.lineWaiters.filter((w) => w !== done);
        reject(this.notReady(`no line from the board within ${timeoutMs} ms`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        if (this.transport?.isOpen) resolve();
        else reject(this.notReady("port closed while waiting for the board"));
      };
      this.lineWaiters.push(done);
    });
  }

  /** The link is gone (port closed or heartbeat timeout): one fault event, then reconnect. */
  private linkLost(message: string): void {
    const wasUp = this.up;
    this.up = false;
    if (wasUp && !this.faultReported) {
      this.faultReported = true;
      this.emit({ type: "fault", t: this.now(), device: this.source, message });
      this.diag({ kind: "link", up: false, reason: message });
    }
    void this.dropTransport();
    if (!this.connecting) this.reconnect.schedule();
  }

  private startTimers(): void {
    const every = Math.max(10, Math.floor(this.res.heartbeatTimeoutMs / 5));
    let lastCheckS = this.now();
    this.watchdog = setInterval(() => {
      // After an event-loop stall (a long synchronous computation elsewhere in the process) the
      // timers run before the poll phase has read the lines that arrived meanwhile: the silence is
      // the host's, not the board's. Judge again at the next check, after pending input was read.
      const nowS = this.now();
      const stalled = nowS - lastCheckS > (2 * every) / 1000;
      lastCheckS = nowS;
      if (stalled) return;
      if (this.up && !this.connecting && nowS - this.lastRxS > this.res.heartbeatTimeoutMs / 1000)
        this.linkLost(
          `no line from ${this.source} for ${this.res.heartbeatTimeoutMs} ms (heartbeat timeout; ${this.silenceText(nowS)})`,
        );
    }, every);
    this.pinger = setInterval(() => {
      if (this.up && !this.connecting) this.command({ cmd: "ping" }).catch(() => {});
    }, this.res.pingIntervalMs);
    this.watchdog.unref?.();
    this.pinger.unref?.();
  }

  /**
   * What came from the port since the last good line, for the heartbeat fault's message: nothing
   * at all (the board, its cable or the port), or bytes that made no good line (noise, a baud
   * mismatch, a cut line)
   */
  private silenceText(nowS: number): string {
    const ms = (s: number) => Math.round((nowS - s) * 1000);
    const bad = this.counters.badLines - this.badLinesAtLastRx;
    return (
      `last good line ${ms(this.lastRxS)} ms ago; since then ` +
      (this.rxS > this.lastRxS
        ? `bytes (the last ${ms(this.rxS)} ms ago) but ${bad} malformed line(s)${bad > 0 ? `, the last: ${this.lastBadReason}` : ""}`
        : "no byte")
    );
  }

  private stopTimers(): void {
    if (this.watchdog) clearInterval(this.watchdog);
    if (this.pinger) clearInterval(this.pinger);
    this.watchdog = this.pinger = undefined;
  }

  /** Send a command; resolves with its reply ($A, $P or $V), rejects on $N, timeout or link loss. */
  private command(c: HostCommand): Promise<BoardMessage> {
    const t = this.transport;
    if (!t?.isOpen) return Promise.reject(this.linkDown(`send ${c.cmd}`));
    const line = formatCommand(c);
    return new Promise((resolve, reject) => {
      const p: Pending = {
        expect: EXPECT[c.cmd],
        letter: LETTER[c.cmd],
        sentS: this.now(),
        txS: (line.length * 10) / this.res.baudRate,
        resolve: (m, bytes, recvS) => {
          if (m.kind === "pong")
            this.clock.addPong(p.sentS, recvS, m.tUs, p.txS, (bytes * 10) / this.res.baudRate);
          resolve(m);
        },
        reject,
        timer: setTimeout(() => {
          this.pending = this.pending.filter((x) => x !== p);
          reject(
            new DeviceError("RB_ERR_BUZZBOX_NO_REPLY", {
              device: this.source,
              path: this.res.path,
              command: line.trim(),
              timeoutMs: this.res.commandTimeoutMs,
            }),
          );
        }, this.res.commandTimeoutMs),
      };
      this.pending.push(p);
      t.write(line);
    });
  }

  // ------------------------------------------------------------------ receive path (hot)

  private emit(e: SensorEvent): void {
    this.events.emit(e);
  }

  private diag(d: BuzzboxDiagnostic): void {
    this.diags.emit(d);
  }

  /** One received line. Runs in the receive path: no timers, no awaits. */
  private onLine(line: string): void {
    const recvS = this.rxS;
    const r = parseBoardLine(line);
    if (!r.ok) {
      this.counters.badLines++;
      this.lastBadReason = r.reason;
      this.diag({ kind: "bad-line", reason: r.reason, line });
      return;
    }
    const m = r.msg;
    this.counters.linesReceived++;
    this.lastRxS = recvS;
    this.badLinesAtLastRx = this.counters.badLines;
    this.heardOnThisTransport = true;

    // sequence tracking
    let stale = false;
    if (m.kind === "hello" && this.expectedSeq !== undefined && m.seq === 0) {
      this.expectedSeq = 1; // board restarted
    } else if (m.kind === "ack" && m.command === "R") {
      this.expectedSeq = m.seq + 1;
    } else if (this.expectedSeq === undefined) {
      this.expectedSeq = m.seq + 1;
    } else if (m.seq === this.expectedSeq) {
      this.expectedSeq++;
    } else if (m.seq > this.expectedSeq) {
      const lost = m.seq - this.expectedSeq;
      this.counters.seqGaps++;
      this.counters.lostMessages += lost;
      this.diag({ kind: "seq-gap", expected: this.expectedSeq, got: m.seq, lost });
      this.expectedSeq = m.seq + 1;
    } else {
      stale = true;
      this.counters.reordered++;
      this.diag({ kind: "reordered", seq: m.seq, expected: this.expectedSeq });
    }

    if (m.kind === "hello" && m.seq === 0) {
      this.clock.reset();
      this.lastContactSeq = -1;
    }
    if (!stale) this.clock.addReceived(recvS, m.tUs);

    switch (m.kind) {
      case "contact":
        if (stale || m.seq <= this.lastContactSeq) break;
        this.lastContactSeq = m.seq;
        if (m.closed !== this.closed) {
          this.closed = m.closed;
          this.emit({
            type: "contact",
            t: this.edgeTimeS(m.tUs, recvS),
            closed: m.closed,
            source: this.source,
          });
        }
        break;
      case "heartbeat":
        if (m.droppedEdges > 0) {
          this.counters.boardDroppedEdges += m.droppedEdges;
          this.diag({ kind: "board-dropped-edges", count: m.droppedEdges });
        }
        if (stale) break;
        if (this.closed === undefined) {
          this.closed = m.closed;
          if (m.closed)
            this.emit({
              type: "contact",
              t: this.edgeTimeS(m.tUs, recvS),
              closed: true,
              source: this.source,
            });
        } else if (m.closed !== this.closed) {
          this.closed = m.closed;
          this.counters.resyncs++;
          this.diag({ kind: "state-resync", seq: m.seq, closed: m.closed });
          this.emit({
            type: "contact",
            t: this.edgeTimeS(m.tUs, recvS),
            closed: m.closed,
            source: this.source,
          });
        }
        break;
      case "hello":
        if (!this.takeReply("V", "", m, line.length + 1, recvS)) {
          if (this.helloSeen) this.onBoardRestart(m);
        }
        this.helloSeen = true;
        break;
      case "pong":
        if (!this.takeReply("P", "", m, line.length + 1, recvS)) this.unmatched(m);
        break;
      case "ack":
        if (!this.takeReply("A", m.command, m, line.length + 1, recvS)) this.unmatched(m);
        break;
      case "nack": {
        const p = this.pending.shift();
        if (!p) this.unmatched(m);
        else {
          clearTimeout(p.timer);
          p.reject(
            new DeviceError("RB_ERR_BUZZBOX_REFUSED", {
              device: this.source,
              path: this.res.path,
              command: p.letter,
              reason: m.code,
            }),
          );
        }
        break;
      }
    }

    if (this.lineWaiters.length) {
      const w = this.lineWaiters;
      this.lineWaiters = [];
      for (const fn of w) fn();
    }
  }

  /** Edge time on the gateway clock; never later than the moment its line arrived. */
  private edgeTimeS(boardUs: number, recvS: number): number {
    const t = this.clock.toHostS(boardUs);
    return Number.isFinite(t) ? Math.min(t, recvS) : recvS;
  }

  private takeReply(expect: Expect, letter: string, m: BoardMessage, bytes: number, recvS: number): boolean {
    const i = this.pending.findIndex((p) => p.expect === expect && (expect !== "A" || p.letter === letter));
    if (i < 0) return false;
    const p = this.pending[i]!;
    this.pending.splice(i, 1);
    clearTimeout(p.timer);
    p.resolve(m, bytes, recvS);
    return true;
  }

  private unmatched(m: BoardMessage): void {
    this.diag({ kind: "unmatched-reply", msg: m.kind, seq: m.seq });
  }

  /** An unsolicited $V: the board rebooted; its settings are back to defaults. */
  private onBoardRestart(m: Extract<BoardMessage, { kind: "hello" }>): void {
    this.diag({ kind: "board-restarted", firmware: m.firmware });
    if (!this.connecting && this.up) this.applySettings(m.debounceUs).catch(() => {});
  }
}
