/**
 * A crash-tolerant MCAP writer built from @mcap/core's record and chunk builders.
 *
 * Why not `McapWriter`: it closes a chunk only when the chunk exceeds its size, with no way to
 * flush on a timer, so a slow channel could sit in memory for a whole episode. Here the owner
 * decides when a chunk goes to disk (`flushChunk()`, e.g. once a second); everything written before
 * the last flush is a complete chunk in the file and a streaming reader recovers it after a crash.
 * Schemas and channels are written to the data section as they are registered (outside chunks) and
 * repeated in the summary, so both streaming and indexed readers (and Foxglove) read the file.
 *
 * Calls must not overlap (await each); the recorder serialises them.
 */
import {
  type IWritable,
  LIBRARY_IDENTIFIER,
  McapChunkBuilder,
  McapRecordBuilder,
  Opcode,
  type McapTypes,
} from "@mcap/core";
import { crc32 } from "@foxglove/crc";

type Channel = McapTypes.Channel;
type Schema = McapTypes.Schema;
type Message = McapTypes.Message;
type ChunkIndex = McapTypes.ChunkIndex;
type SummaryOffset = McapTypes.SummaryOffset;

export class McapStreamWriter {
  private readonly records = new McapRecordBuilder();
  private readonly chunk = new McapChunkBuilder({ useMessageIndex: true });
  private readonly schemas: Schema[] = [];
  private readonly channels: Channel[] = [];
  private readonly chunkIndexes: ChunkIndex[] = [];
  private readonly channelCounts = new Map<number, bigint>();
  private messageCount = 0n;
  private startTime = 0n;
  private endTime = 0n;
  private nextSchemaId = 1;
  private nextChannelId = 0;

  constructor(
    private readonly out: IWritable,
    /** a chunk larger than this is flushed at once, bytes */
    private readonly maxChunkBytes = 4 * 1024 * 1024,
  ) {}

  async start(profile = ""): Promise<void> {
    this.records.writeMagic();
    this.records.writeHeader({ profile, library: LIBRARY_IDENTIFIER });
    await this.writeRecords();
  }

  /**
   * Register a schema; its record goes to the file with the next chunk (before it), in the same
   * write: a new episode's channels came one write each while its first chunk ran, every write a
   * threadpool job the main thread hands over (#10).
   */
  async registerSchema(info: Omit<Schema, "id">): Promise<number> {
    const schema = { ...info, id: this.nextSchemaId++ };
    this.schemas.push(schema);
    this.records.writeSchema(schema);
    return schema.id;
  }

  /** Register a channel; written with the next chunk, like a schema. */
  async registerChannel(info: Omit<Channel, "id">): Promise<number> {
    const channel = { ...info, id: this.nextChannelId++ };
    this.channels.push(channel);
    this.records.writeChannel(channel);
    return channel.id;
  }

  /** Add a message to the open chunk (in memory until the next flush). */
  async addMessage(m: Message): Promise<void> {
    if (this.messageCount === 0n || m.logTime < this.startTime) this.startTime = m.logTime;
    if (this.messageCount === 0n || m.logTime > this.endTime) this.endTime = m.logTime;
    this.messageCount++;
    this.channelCounts.set(m.channelId, (this.channelCounts.get(m.channelId) ?? 0n) + 1n);
    this.chunk.addMessage(m);
    if (this.chunk.byteLength > this.maxChunkBytes) await this.flushChunk();
  }

  /** bytes waiting in the open chunk */
  get pendingBytes(): number {
    return this.chunk.byteLength;
  }

  /** Write the schemas and channels registered since, the open chunk and its message indexes to the file. */
  async flushChunk(): Promise<void> {
    if (this.chunk.numMessages === 0) return this.writeRecords();
    const data = this.chunk.buffer;
    // after the schema and channel records still in the builder
    const chunkStartOffset = this.out.position() + BigInt(this.records.length);
    const chunkLength = this.records.writeChunk({
      messageStartTime: this.chunk.messageStartTime,
      messageEndTime: this.chunk.messageEndTime,
      uncompressedSize: BigInt(data.byteLength),
      uncompressedCrc: crc32(data), // CRC-32 (IEEE 802.3) of the chunk records
      compression: "",
      records: data,
    });
    const messageIndexStart = chunkStartOffset + chunkLength;
    const messageIndexOffsets = new Map<number, bigint>();
    let messageIndexLength = 0n;
    for (const idx of this.chunk.indices) {
      if (idx.records.length === 0) continue;
      messageIndexOffsets.set(idx.channelId, messageIndexStart + messageIndexLength);
      messageIndexLength += this.records.writeMessageIndex(idx);
    }
    this.chunkIndexes.push({
      messageStartTime: this.chunk.messageStartTime,
      messageEndTime: this.chunk.messageEndTime,
      chunkStartOffset,
      chunkLength,
      messageIndexOffsets,
      messageIndexLength,
      compression: "",
      compressedSize: BigInt(data.byteLength),
      uncompressedSize: BigInt(data.byteLength),
    });
    this.chunk.reset();
    await this.writeRecords();
  }

  /** Flush, then write data end, summary (schemas, channels, statistics, chunk indexes) and footer. */
  async end(): Promise<void> {
    await this.flushChunk();
    this.records.writeDataEnd({ dataSectionCrc: 0 });
    await this.writeRecords();
    const summaryStart = this.out.position();
    const offsets: SummaryOffset[] = [];
    const group = async (groupOpcode: Opcode, write: () => void) => {
      const groupStart = this.out.position();
      write();
      const groupLength = BigInt(this.records.length);
      await this.writeRecords();
      if (groupLength > 0n) offsets.push({ groupOpcode, groupStart, groupLength });
    };
    await group(Opcode.SCHEMA, () => {
      for (const s of this.schemas) this.records.writeSchema(s);
    });
    await group(Opcode.CHANNEL, () => {
      for (const c of this.channels) this.records.writeChannel(c);
    });
    await group(Opcode.STATISTICS, () => {
      this.records.writeStatistics({
        messageCount: this.messageCount,
        schemaCount: this.schemas.length,
        channelCount: this.channels.length,
        attachmentCount: 0,
        metadataCount: 0,
        chunkCount: this.chunkIndexes.length,
        messageStartTime: this.startTime,
        messageEndTime: this.endTime,
        channelMessageCounts: this.channelCounts,
      });
    });
    await group(Opcode.CHUNK_INDEX, () => {
      for (const c of this.chunkIndexes) this.records.writeChunkIndex(c);
    });
    const summaryOffsetStart = this.out.position();
    for (const o of offsets) this.records.writeSummaryOffset(o);
    this.records.writeFooter({ summaryStart, summaryOffsetStart, summaryCrc: 0 });
    this.records.writeMagic();
    await this.writeRecords();
  }

  private async writeRecords(): Promise<void> {
    if (this.records.length === 0) return;
    // the builder reuses its buffer after reset(): hand the writable a copy
    const bytes = this.records.buffer.slice();
    this.records.reset();
    await this.out.write(bytes);
  }
}
