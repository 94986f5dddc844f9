/**
 * The subset of the `ws` package (a dependency, without bundled types) that gateway/api/stream.ts
 * and its test use, as documented at https://github.com/websockets/ws/blob/master/doc/ws.md.
 */
declare module "ws" {
  import type { EventEmitter } from "node:events";
  import type { IncomingMessage } from "node:http";
  import type { Duplex } from "node:stream";

  export class WebSocket extends EventEmitter {
    constructor(address: string, options?: { headers?: Record<string, string> });
    readonly OPEN: number;
    readonly readyState: number;
    send(data: string): void;
    close(code?: number): void;
    terminate(): void;
    on(event: "message", listener: (data: Buffer) => void): this;
    on(event: "close", listener: (code: number) => void): this;
    on(event: "open", listener: () => void): this;
    on(event: "error", listener: (err: Error) => void): this;
    on(event: "unexpected-response", listener: (req: unknown, res: IncomingMessage) => void): this;
  }

  export class WebSocketServer extends EventEmitter {
    constructor(options: { noServer: true; maxPayload?: number });
    readonly clients: Set<WebSocket>;
    handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, cb: (ws: WebSocket) => void): void;
    close(): void;
  }

  export default WebSocket;
}
