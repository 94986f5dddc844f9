import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type BoardMessage,
  checksum,
  formatBoardLine,
  formatCommand,
  LineSplitter,
  parseBoardLine,
  parseCommandLine,
} from "./protocol.ts";

describe("checksum and framing", () => {
  it("matches the documented examples", () => {
    expect(formatCommand({ cmd: "lamp", mode: "1" })).toBe("!L,1*51\n");
    expect(parseBoardLine("$V,0,8,buzzbox,1.0.0,1,2000*3E")).toEqual({
      ok: true,
      msg: {
        kind: "hello",
        seq: 0,
        tUs: 8,
        device: "buzzbox",
        firmware: "1.0.0",
        protocol: "1",
        debounceUs: 2000,
      },
    });
    expect(parseBoardLine("$H,1,100018,0,A,A,0*71")).toMatchObject({
      ok: true,
      msg: { kind: "heartbeat", seq: 1 },
    });
    expect(checksum("L,1")).toBe(0x51);
  });

  it("parses every message kind it formats (round trip)", () => {
    const msgs: BoardMessage[] = [
      { kind: "contact", seq: 16, tUs: 1501958, closed: true },
      { kind: "heartbeat", seq: 2, tUs: 5, closed: false, lamp: "1", buzzer: "A", droppedEdges: 3 },
      { kind: "ack", seq: 3, tUs: 9, command: "L", value: "0" },
      { kind: "ack", seq: 0, tUs: 9, command: "R" },
      { kind: "nack", seq: 4, tUs: 10, code: "CS" },
      { kind: "pong", seq: 5, tUs: 12345678901 },
    ];
    for (const m of msgs) expect(parseBoardLine(formatBoardLine(m).trimEnd())).toEqual({ ok: true, msg: m });
  });

  it("accepts a trailing CR and a lower-case checksum", () => {
    expect(parseBoardLine("$C,16,1501958,1*68\r").ok).toBe(true);
    expect(parseBoardLine("$H,18,1700018,1,A,A,0*7f").ok).toBe(true);
  });

  it("rejects bad checksums, garbage and malformed fields", () => {
    expect(parseBoardLine("$C,16,1501958,1*69")).toEqual({ ok: false, reason: "checksum" });
    expect(parseBoardLine("$C,16,1501958,1")).toEqual({ ok: false, reason: "framing" });
    expect(parseBoardLine("C,16,1501958,1*68")).toEqual({ ok: false, reason: "framing" });
    expect(parseBoardLine("\u0000\u00ff$#@!")).toEqual({ ok: false, reason: "framing" });
    expect(parseBoardLine("$C,16,1501958,1*6G")).toEqual({ ok: false, reason: "framing" });
    const body = "C,16,15x1958,1";
    expect(parseBoardLine(`$${body}*${checksum(body).toString(16).padStart(2, "0")}`)).toEqual({
      ok: false,
      reason: "fields",
    });
    const wrong = "C,16,1,2";
    expect(parseBoardLine(`$${wrong}*${checksum(wrong).toString(16).padStart(2, "0")}`).ok).toBe(false);
    const unknown = "Z,1,2";
    expect(parseBoardLine(`$${unknown}*${checksum(unknown).toString(16).padStart(2, "0")}`)).toEqual({
      ok: false,
      reason: "type",
    });
  });

  it("never throws on arbitrary input", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 120 }), (s) => {
        const r = parseBoardLine(s);
        expect(typeof r.ok).toBe("boolean");
      }),
    );
  });

  it("detects any single corrupted byte in a contact line", () => {
    const line = formatBoardLine({ kind: "contact", seq: 7, tUs: 123456, closed: true }).trimEnd();
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: line.length - 4 }),
        fc.integer({ min: 32, max: 126 }),
        (i, code) => {
          if (line.charCodeAt(i) === code) return;
          const bad = line.slice(0, i) + String.fromCharCode(code) + line.slice(i + 1);
          expect(parseBoardLine(bad).ok).toBe(false);
        },
      ),
    );
  });
});

describe("host commands", () => {
  it("round-trips every command and refuses bad ones like the board", () => {
    for (const c of [
      { cmd: "lamp", mode: "A" },
      { cmd: "buzzer", mode: "1" },
      { cmd: "ping" },
      { cmd: "reset-seq" },
      { cmd: "version" },
      { cmd: "debounce", us: 3000 },
    ] as const)
      expect(parseCommandLine(formatCommand(c).trimEnd())).toEqual({ ok: true, cmd: c });
    expect(parseCommandLine("!L,1*1E")).toEqual({ ok: false, code: "CS" });
    expect(parseCommandLine(`!X*${checksum("X").toString(16)}`)).toEqual({ ok: false, code: "CMD" });
    expect(parseCommandLine(`!L,7*${checksum("L,7").toString(16)}`)).toEqual({ ok: false, code: "ARG" });
    expect(() => formatCommand({ cmd: "debounce", us: 5 })).toThrow(RangeError);
  });
});

describe("LineSplitter", () => {
  it("joins lines split across chunks and drops overlong junk", () => {
    const lines: string[] = [];
    const sp = new LineSplitter((l) => lines.push(l), 10);
    sp.push("ab");
    sp.push("c\nde");
    sp.push(Buffer.from("f\n"));
    sp.push("x".repeat(25));
    sp.push("yy\nok\n");
    expect(lines).toEqual(["abc", "def", "ok"]);
    expect(sp.overlong).toBe(1);
  });

  it("splits any chunking of a stream the same way", () => {
    const text = "$a\n$bb\n\n$ccc\n$dddd\n";
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: text.length }), { maxLength: 6 }), (cuts) => {
        const out: string[] = [];
        const sp = new LineSplitter((l) => out.push(l));
        const pts = [0, ...[...cuts].sort((a, b) => a - b), text.length];
        for (let i = 1; i < pts.length; i++) sp.push(text.slice(pts[i - 1], pts[i]));
        expect(out).toEqual(["$a", "$bb", "", "$ccc", "$dddd"]);
      }),
    );
  });
});
