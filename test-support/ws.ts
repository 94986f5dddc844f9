/**
 * A WebSocket client for tests of `/v1/stream`: every message parsed and kept, `next(type)`
 * resolves with the first message of that type not taken yet (waiting for it if need be).
 */
import { WebSocket } from "ws";

// biome-ignore lint/suspicious/noExplicitAny: JSON messages as tests read them
export type WsMsg = Record<string, any>;

export interface WsInbox {
  ws: WebSocket;
  /** messages received and not taken by `next` */
  inbox: WsMsg[];
  next(type: string): Promise<WsMsg>;
}

/** Open `url` with the bearer `token`; rejects when the socket cannot be opened. */
export function wsInbox(url: string, token: string): Promise<WsInbox> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
    const inbox: WsMsg[] = [];
    const waiting: { type: string; resolve: (m: WsMsg) => void }[] = [];
    ws.on("message", (d) => {
      const m = JSON.parse(String(d)) as WsMsg;
      const w = waiting.findIndex((x) => x.type === m["type"]);
      if (w >= 0) waiting.splice(w, 1)[0]!.resolve(m);
      else inbox.push(m);
    });
    const next = (type: string) =>
      new Promise<WsMsg>((res) => {
        const i = inbox.findIndex((m) => m["type"] === type);
        if (i >= 0) res(inbox.splice(i, 1)[0]!);
        else waiting.push({ type, resolve: res });
      });
    ws.on("open", () => resolve({ ws, inbox, next }));
    ws.on("error", reject);
  });
}
