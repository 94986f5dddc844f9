/**
 * A fake buzz box (STYLE §7): speaks protocol v1 like the firmware, over any byte sink, with
 * fault injection (skipped sequence numbers, reordered or corrupted lines, silence, restarts).
 * Used by unit tests (over a MemoryLink), by the pty-pair integration test and the latency bench
 * (over a socat pty). It is not a physics model: contact timing comes from the caller.
 */
import {
  type BoardMessage,
  formatBoardLine,
  LineSplitter,
  MAX_HOST_LINE,
  type OutputMode,
  PROTOCOL_VERSION,
  parseCommandLine,
} from "./protocol.ts";

type WithoutStamp<M> = M extends BoardMessage ? Omit<M, "seq" | "tUs"> : never;

export interface FakeBuzzboxOptions {
  /** where the board's bytes go */
  write: (data: string) => void;
  /** board clock, µs (default: µs since construction, from performance.now()) */
  clockUs?: () => number;
  /** debounce reported in $V, µs */
  debounceUs?: number;
}

export class FakeBuzzbox {
  private seq = 0;
  private readonly write: (data: string) => void;
  private readonly clockUs: () => number;
  private readonly splitter: LineSplitter;
  private heartbeatTimer: ReturnType<typeof setInterval> | undefined;
  private held: string[] | undefined;
  closed = false;
  lamp: OutputMode = "A";
  buzzer: OutputMode = "A";
  debounceUs: number;
  /** when true the board ignores host commands (a hung board) */
  deaf = false;
  /** when set, the next line is written in two pieces, split at this byte */
  splitNextLineAt: number | undefined;
  /** host commands received, as parsed */
  readonly commands: string[] = [];

  constructor(opts: FakeBuzzboxOptions) {
    this.write = opts.write;
    const t0 = performance.now();
    this.clockUs = opts.clockUs ?? (() => Math.floor((performance.now() - t0) * 1000));
    this.debounceUs = opts.debounceUs ?? 2000;
    this.splitter = new LineSplitter((l) => this.onHostLine(l), MAX_HOST_LINE + 1);
  }

  /** Feed bytes the host wrote. */
  receive(data: string | Uint8Array): void {
    this.splitter.push(data);
  }

  /** Send one message with the next sequence number (and the board time unless given). */
  send(m: WithoutStamp<BoardMessage>, tUs = this.clockUs()): BoardMessage {
    const msg = { ...m, seq: this.seq++, tUs } as BoardMessage;
    this.emitLine(formatBoardLine(msg));
    return msg;
  }

  /** Send raw bytes (garbage, split lines, bad checksums). */
  sendRaw(data: string): void {
    this.write(data);
  }

  hello(): void {
    this.send({
      kind: "hello",
      device: "buzzbox",
      firmware: "fake-1",
      protocol: PROTOCOL_VERSION,
      debounceUs: this.debounceUs,
    });
  }

  /** A debounced contact edge at board time tUs (default now). */
  contact(closed: boolean, tUs = this.clockUs()): BoardMessage {
    this.closed = closed;
    return this.send({ kind: "contact", closed }, tUs);
  }

  heartbeat(): void {
    this.send({
      kind: "heartbeat",
      closed: this.closed,
      lamp: this.lamp,
      buzzer: this.buzzer,
      droppedEdges: 0,
    });
  }

  /** Lose the next `n` sequence numbers (as if those lines were corrupted on the wire). */
  skipSeq(n: number): void {
    this.seq += n;
  }

  /** Hold back lines until `release()`, which sends them in reverse order. */
  holdForReorder(): void {
    this.held = [];
  }

  release(): void {
    const h = this.held ?? [];
    this.held = undefined;
    for (const l of h.reverse()) this.write(l);
  }

  /** Board restart: sequence back to 0, hello. */
  restart(): void {
    this.seq = 0;
    this.lamp = this.buzzer = "A";
    this.hello();
  }

  /** Heartbeat every `ms` (the firmware: 100 ms). */
  startHeartbeat(ms = 100): void {
    this.stopHeartbeat();
    this.heartbeatTimer = setInterval(() => this.heartbeat(), ms);
  }

  stopHeartbeat(): void {
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = undefined;
  }

  private emitLine(line: string): void {
    if (this.held) this.held.push(line);
    else if (this.splitNextLineAt !== undefined) {
      const at = this.splitNextLineAt;
      this.splitNextLineAt = undefined;
      this.write(line.slice(0, at));
      this.write(line.slice(at));
    } else this.write(line);
  }

  private onHostLine(line: string): void {
    if (this.deaf || !line.startsWith("!")) return;
    const r = parseCommandLine(line);
    if (!r.ok) {
      this.send({ kind: "nack", code: r.code });
      return;
    }
    const c = r.cmd;
    this.commands.push(c.cmd);
    switch (c.cmd) {
      case "lamp":
        this.lamp = c.mode;
        this.send({ kind: "ack", command: "L", value: c.mode });
        return;
      case "buzzer":
        this.buzzer = c.mode;
        this.send({ kind: "ack", command: "B", value: c.mode });
        return;
      case "ping":
        this.send({ kind: "pong" });
        return;
      case "reset-seq":
        this.seq = 0;
        this.send({ kind: "ack", command: "R" });
        return;
      case "version":
        this.hello();
        return;
      case "debounce":
        this.debounceUs = c.us;
        this.send({ kind: "ack", command: "D", value: String(c.us) });
        return;
    }
  }
}
