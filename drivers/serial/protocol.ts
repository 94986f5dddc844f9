/**
 * Buzz-box line protocol v1 (see drivers/firmware/buzzbox/PROTOCOL.md): pure parsing and
 * formatting of board lines (`$…`) and host commands (`!…`), plus a line splitter for byte streams.
 * No I/O here; the driver and the fake board both use it.
 */

/** Protocol version this code speaks (the `<proto>` field of `$V`). */
export const PROTOCOL_VERSION = "1";
/** Longest board line the host accepts, bytes without the newline. */
export const MAX_BOARD_LINE = 80;
/** Longest host command the board accepts, bytes without the newline. */
export const MAX_HOST_LINE = 40;

/** Lamp/buzzer mode: off, on, or automatic (follows the debounced contact). */
export type OutputMode = "0" | "1" | "A";

interface Stamped {
  /** board sequence number (shared by every board message) */
  seq: number;
  /** board time, µs since the firmware started */
  tUs: number;
}

/** A parsed board → host message, by `kind`. */
export type BoardMessage =
  | (Stamped & {
      kind: "hello";
      device: string;
      firmware: string;
      protocol: string;
      /** debounce time in force, µs */
      debounceUs: number;
    })
  | (Stamped & { kind: "contact"; closed: boolean })
  | (Stamped & {
      kind: "heartbeat";
      closed: boolean;
      lamp: OutputMode;
      buzzer: OutputMode;
      /** contact edges the board dropped since the last heartbeat (its queue was full) */
      droppedEdges: number;
    })
  | (Stamped & { kind: "ack"; command: string; value?: string })
  | (Stamped & { kind: "nack"; code: string })
  | (Stamped & { kind: "pong" });

export type BoardMessageKind = BoardMessage["kind"];

/** Why a line was rejected. */
export type ParseFailure = "framing" | "checksum" | "type" | "fields";

export type ParseResult = { ok: true; msg: BoardMessage } | { ok: false; reason: ParseFailure };

/** A host → board command. */
export type HostCommand =
  | { cmd: "lamp"; mode: OutputMode }
  | { cmd: "buzzer"; mode: OutputMode }
  | { cmd: "ping" }
  | { cmd: "reset-seq" }
  | { cmd: "version" }
  | { cmd: "debounce" /** debounce time, µs (100 … 1 000 000) */; us: number };

/** XOR of the char codes of `s` (NMEA style checksum). */
export function checksum(s: string): number {
  let cs = 0;
  for (let i = 0; i < s.length; i++) cs ^= s.charCodeAt(i) & 0xff;
  return cs;
}

function hex2(n: number): string {
  return n.toString(16).toUpperCase().padStart(2, "0");
}

/** Frame a body as `<lead><body>*<CS>\n`. */
function frame(lead: "$" | "!", body: string): string {
  return lead + body + "*" + hex2(checksum(body)) + "\n";
}

/**
 * Check framing and checksum of one line (without `\n`, a trailing `\r` allowed) and return the
 * body between the lead character and `*`, or the failure.
 */
function unframe(
  line: string,
  lead: "$" | "!",
): { ok: true; body: string } | { ok: false; reason: ParseFailure } {
  let end = line.length;
  if (end > 0 && line.charCodeAt(end - 1) === 13) end--;
  const star = line.lastIndexOf("*", end - 1);
  if (line[0] !== lead || star < 1 || star + 3 !== end) return { ok: false, reason: "framing" };
  const cs = Number.parseInt(line.slice(star + 1, end), 16);
  if (!/^[0-9a-fA-F]{2}$/.test(line.slice(star + 1, end))) return { ok: false, reason: "framing" };
  const body = line.slice(1, star);
  if (checksum(body) !== cs) return { ok: false, reason: "checksum" };
  return { ok: true, body };
}

const UINT = /^[0-9]{1,16}$/;

function uint(s: string | undefined): number | undefined {
  if (s === undefined || !UINT.test(s)) return undefined;
  const n = Number(s);
  return Number.isSafeInteger(n) ? n : undefined;
}

function bit(s: string | undefined): boolean | undefined {
  return s === "1" ? true : s === "0" ? false : undefined;
}

function mode(s: string | undefined): OutputMode | undefined {
  return s === "0" || s === "1" || s === "A" ? s : undefined;
}

const FAIL_FIELDS: ParseResult = { ok: false, reason: "fields" };

/** Parse one board line (without the `\n`). Pure; never throws. */
export function parseBoardLine(line: string): ParseResult {
  if (line.length > MAX_BOARD_LINE + 1) return { ok: false, reason: "framing" };
  const u = unframe(line, "$");
  if (!u.ok) return u;
  const f = u.body.split(",");
  const type = f[0];
  const seq = uint(f[1]);
  const tUs = uint(f[2]);
  if (type === undefined || type.length !== 1) return { ok: false, reason: "type" };
  if (seq === undefined || tUs === undefined || seq > 0xffffffff) return FAIL_FIELDS;
  switch (type) {
    case "V": {
      const debounceUs = uint(f[6]);
      if (f.length !== 7 || !f[3] || !f[4] || !f[5] || debounceUs === undefined) return FAIL_FIELDS;
      return {
        ok: true,
        msg: { kind: "hello", seq, tUs, device: f[3], firmware: f[4], protocol: f[5], debounceUs },
      };
    }
    case "C": {
      const closed = bit(f[3]);
      if (f.length !== 4 || closed === undefined) return FAIL_FIELDS;
      return { ok: true, msg: { kind: "contact", seq, tUs, closed } };
    }
    case "H": {
      const closed = bit(f[3]);
      const lamp = mode(f[4]);
      const buzzer = mode(f[5]);
      const droppedEdges = uint(f[6]);
      if (f.length !== 7 || closed === undefined || !lamp || !buzzer || droppedEdges === undefined)
        return FAIL_FIELDS;
      return { ok: true, msg: { kind: "heartbeat", seq, tUs, closed, lamp, buzzer, droppedEdges } };
    }
    case "A": {
      const command = f[3];
      if (f.length < 4 || f.length > 5 || !command) return FAIL_FIELDS;
      const value = f[4];
      return value === undefined
        ? { ok: true, msg: { kind: "ack", seq, tUs, command } }
        : { ok: true, msg: { kind: "ack", seq, tUs, command, value } };
    }
    case "N": {
      const code = f[3];
      if (f.length !== 4 || !code) return FAIL_FIELDS;
      return { ok: true, msg: { kind: "nack", seq, tUs, code } };
    }
    case "P":
      if (f.length !== 3) return FAIL_FIELDS;
      return { ok: true, msg: { kind: "pong", seq, tUs } };
    default:
      return { ok: false, reason: "type" };
  }
}

/** Format a board message as the board sends it (used by fake boards and tests). */
export function formatBoardLine(m: BoardMessage): string {
  const head = `${m.seq},${m.tUs}`;
  switch (m.kind) {
    case "hello":
      return frame("$", `V,${head},${m.device},${m.firmware},${m.protocol},${m.debounceUs}`);
    case "contact":
      return frame("$", `C,${head},${m.closed ? 1 : 0}`);
    case "heartbeat":
      return frame("$", `H,${head},${m.closed ? 1 : 0},${m.lamp},${m.buzzer},${m.droppedEdges}`);
    case "ack":
      return frame("$", `A,${head},${m.command}${m.value === undefined ? "" : "," + m.value}`);
    case "nack":
      return frame("$", `N,${head},${m.code}`);
    case "pong":
      return frame("$", `P,${head}`);
  }
}

/** Format a host command line, newline included. */
export function formatCommand(c: HostCommand): string {
  switch (c.cmd) {
    case "lamp":
      return frame("!", `L,${c.mode}`);
    case "buzzer":
      return frame("!", `B,${c.mode}`);
    case "ping":
      return frame("!", "P");
    case "reset-seq":
      return frame("!", "R");
    case "version":
      return frame("!", "V");
    case "debounce":
      if (!Number.isInteger(c.us) || c.us < 100 || c.us > 1_000_000)
        throw new RangeError(`debounce must be an integer 100…1000000 µs, got ${c.us}`);
      return frame("!", `D,${c.us}`);
  }
}

/** Parse a host command line (for fake boards). Returns the command or the nack code the board would send. */
export function parseCommandLine(line: string): { ok: true; cmd: HostCommand } | { ok: false; code: string } {
  if (line.length > MAX_HOST_LINE) return { ok: false, code: "LEN" };
  const u = unframe(line, "!");
  if (!u.ok) return { ok: false, code: "CS" };
  const [c, arg, extra] = u.body.split(",");
  if (extra !== undefined) return { ok: false, code: "ARG" };
  switch (c) {
    case "L":
    case "B": {
      const m = mode(arg);
      if (!m) return { ok: false, code: "ARG" };
      return { ok: true, cmd: { cmd: c === "L" ? "lamp" : "buzzer", mode: m } };
    }
    case "P":
    case "R":
    case "V":
      if (arg !== undefined) return { ok: false, code: "ARG" };
      return { ok: true, cmd: { cmd: c === "P" ? "ping" : c === "R" ? "reset-seq" : "version" } };
    case "D": {
      const us = uint(arg);
      if (us === undefined || us < 100 || us > 1_000_000) return { ok: false, code: "ARG" };
      return { ok: true, cmd: { cmd: "debounce", us } };
    }
    default:
      return { ok: false, code: "CMD" };
  }
}

/**
 * Splits a byte stream into lines. Bytes are taken as latin1 (the protocol is ASCII).
 * Lines longer than `maxLen` are dropped whole (counted in `overlong`). Runs in the receive
 * path: one string per line, no other allocation.
 */
export class LineSplitter {
  private buf = "";
  private skipping = false;
  /** lines dropped because they exceeded maxLen */
  overlong = 0;

  constructor(
    private readonly onLine: (line: string) => void,
    private readonly maxLen = MAX_BOARD_LINE + 1,
  ) {}

  /** Feed received bytes; calls onLine for every complete line (without `\n`). */
  push(chunk: Uint8Array | string): void {
    const s =
      typeof chunk === "string"
        ? chunk
        : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString("latin1");
    let start = 0;
    for (;;) {
      const nl = s.indexOf("\n", start);
      if (nl < 0) break;
      const piece = s.slice(start, nl);
      start = nl + 1;
      if (this.skipping || this.buf.length + piece.length > this.maxLen) {
        this.overlong++;
        this.skipping = false;
        this.buf = "";
        continue;
      }
      const line = this.buf.length ? this.buf + piece : piece;
      this.buf = "";
      this.onLine(line);
    }
    if (start < s.length) {
      if (this.skipping) return;
      this.buf += s.slice(start);
      if (this.buf.length > this.maxLen) {
        this.buf = "";
        this.skipping = true;
      }
    }
  }

  /** Forget a partial line (e.g. after a reconnect). */
  reset(): void {
    this.buf = "";
    this.skipping = false;
  }
}
