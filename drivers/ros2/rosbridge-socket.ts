/**
 * The socket under roslib's `Ros` (roslib@2's transport: its public `transportFactory` option and
 * `AbstractTransport` base class), over the `ws` package as roslib's own `WsWebSocketTransport`,
 * with one difference: a message that carries its JSON text (`JSON_TEXT`, made beforehand, e.g. in
 * slices by `stringifySteps`) is sent as that text instead of being stringified again in the
 * turn that sends it. Every other message is sent as `JSON.stringify(message)`, as roslib does.
 * Receiving is roslib's (AbstractTransport.handleRawMessage: JSON, fragments, PNG, CBOR, BSON).
 *
 * Used by RoslibTransport (roslib-transport.ts), whatever the Node version: roslib's default
 * factory takes a global `WebSocket` when there is one (Node ≥ 22), whose frames are not the
 * `ws` + `bufferutil` path measured here.
 */
import { createRequire } from "node:module";
import * as roslibModule from "roslib";

/**
 * A message property holding the message's JSON text: JSON.stringify of the message (a symbol
 * key, so the text is the same with or without it). The sender guarantees the equality.
 */
export const JSON_TEXT: unique symbol = Symbol("rosbridge message JSON text");

/** a rosbridge message, maybe with its JSON text */
export type RosbridgeMessage = object & { readonly [JSON_TEXT]?: string };

/** The parts of a `ws` client socket used here (the package ships no typings). */
interface WsClient {
  readonly readyState: number;
  binaryType: string;
  send(data: string): void;
  close(): void;
  onopen: ((e: unknown) => void) | null;
  onclose: ((e: unknown) => void) | null;
  onerror: ((e: unknown) => void) | null;
  onmessage: ((e: { data: unknown }) => void) | null;
}
interface WsModule {
  WebSocket: {
    new (url: string): WsClient;
    readonly CONNECTING: number;
    readonly OPEN: number;
    readonly CLOSING: number;
    readonly CLOSED: number;
  };
}
const { WebSocket } = createRequire(import.meta.url)("ws") as WsModule;

/** roslib's AbstractTransport as used here (its bundled typings do not resolve under NodeNext) */
interface RoslibAbstractTransport {
  emit(event: "open" | "close" | "error", e: unknown): boolean;
  /** decodes a received frame and emits "message" (roslib's own decoding) */
  handleRawMessage(data: unknown): void;
}
const { AbstractTransport } = roslibModule as unknown as {
  AbstractTransport: abstract new () => RoslibAbstractTransport;
};

/** roslib's transport (ITransport) over one `ws` socket. */
export class RosbridgeSocket extends AbstractTransport {
  private readonly socket: WsClient;

  constructor(socket: WsClient) {
    super();
    this.socket = socket;
    socket.onopen = (e) => this.emit("open", e);
    socket.onclose = (e) => this.emit("close", e);
    socket.onerror = (e) => this.emit("error", e);
    socket.onmessage = (e) => this.handleRawMessage(e.data);
  }

  /** the message's JSON text when it carries one, else JSON.stringify(message) */
  send(message: RosbridgeMessage): void {
    this.socket.send(message[JSON_TEXT] ?? JSON.stringify(message));
  }

  close(): void {
    this.socket.close();
  }

  isConnecting(): boolean {
    return this.socket.readyState === WebSocket.CONNECTING;
  }

  isOpen(): boolean {
    return this.socket.readyState === WebSocket.OPEN;
  }

  isClosing(): boolean {
    return this.socket.readyState === WebSocket.CLOSING;
  }

  isClosed(): boolean {
    return this.socket.readyState === WebSocket.CLOSED;
  }
}

/** roslib's `transportFactory`: a new socket to `url` (each connect and reconnect) */
export async function rosbridgeSocket(url: string): Promise<RosbridgeSocket> {
  const socket = new WebSocket(url);
  // as roslib's factory: binary frames (CBOR) arrive as ArrayBuffers
  socket.binaryType = "arraybuffer";
  return new RosbridgeSocket(socket);
}
