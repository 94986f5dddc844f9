/**
 * McapStreamWriter: schemas and channels go to the file with the next chunk, in its write (a new
 * episode's first chunk registered its channels one write each, a threadpool job each, while the
 * robot moved: #10); the file stays a valid MCAP that both a streaming and an indexed reader read.
 */
import { describe, expect, it } from "vitest";
import { type IWritable, McapIndexedReader, McapStreamReader } from "@mcap/core";
import { McapStreamWriter } from "./mcap-stream-writer.ts";

/** an in-memory file that counts its writes */
class MemoryFile implements IWritable {
  parts: Uint8Array[] = [];
  private pos = 0n;
  position(): bigint {
    return this.pos;
  }
  async write(buffer: Uint8Array): Promise<void> {
    this.parts.push(buffer.slice());
    this.pos += BigInt(buffer.byteLength);
  }
  bytes(): Uint8Array {
    return Buffer.concat(this.parts);
  }
}

const message = (channelId: number, t: number) => ({
  channelId,
  sequence: t,
  logTime: BigInt(t),
  publishTime: BigInt(t),
  data: new TextEncoder().encode(JSON.stringify({ t })),
});

describe("McapStreamWriter", () => {
  it("writes schemas and channels with the next chunk: one write per flush, none before", async () => {
    const file = new MemoryFile();
    const w = new McapStreamWriter(file);
    await w.start("test");
    expect(file.parts).toHaveLength(1); // magic + header
    const s = await w.registerSchema({ name: "s", encoding: "jsonschema", data: new Uint8Array() });
    const a = await w.registerChannel({
      topic: "/a",
      schemaId: s,
      messageEncoding: "json",
      metadata: new Map(),
    });
    await w.addMessage(message(a, 1));
    const b = await w.registerChannel({
      topic: "/b",
      schemaId: s,
      messageEncoding: "json",
      metadata: new Map(),
    });
    await w.addMessage(message(b, 2));
    expect(file.parts).toHaveLength(1);
    await w.flushChunk();
    expect(file.parts).toHaveLength(2);
    // a channel registered with no message after it still reaches the file on a flush
    await w.registerChannel({ topic: "/c", schemaId: s, messageEncoding: "json", metadata: new Map() });
    await w.flushChunk();
    expect(file.parts).toHaveLength(3);
    await w.addMessage(message(a, 3));
    await w.flushChunk();

    // a streaming reader of the file as flushed so far (a crashed record) sees every channel
    // before its messages
    const stream = new McapStreamReader({ validateCrcs: true });
    stream.append(file.bytes());
    const seen: string[] = [];
    for (let r = stream.nextRecord(); r; r = stream.nextRecord()) {
      if (r.type === "Channel") seen.push(`channel ${r.topic}`);
      if (r.type === "Message") seen.push(`message ${r.channelId}@${r.logTime}`);
    }
    expect(seen).toEqual([
      "channel /a",
      "channel /b",
      `message ${a}@1`,
      `message ${b}@2`,
      "channel /c",
      `message ${a}@3`,
    ]);

    // the finished file: the chunk indexes point at the chunks (offsets after the channel records)
    await w.end();
    const bytes = file.bytes();
    const indexed = await McapIndexedReader.Initialize({
      readable: {
        size: async () => BigInt(bytes.byteLength),
        read: async (offset: bigint, length: bigint) => bytes.slice(Number(offset), Number(offset + length)),
      },
    });
    const times: bigint[] = [];
    for await (const m of indexed.readMessages()) times.push(m.logTime);
    expect(times).toEqual([1n, 2n, 3n]);
    expect([...indexed.channelsById.values()].map((c) => c.topic)).toEqual(["/a", "/b", "/c"]);
  });
});
