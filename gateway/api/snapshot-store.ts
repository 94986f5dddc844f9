/**
 * Simulator snapshots taken through the privileged API. A snapshot belongs to the episode that
 * took it: taking one in a new episode drops the older episode's, and restoring one from another
 * episode is refused as unknown.
 */
import { randomUUID } from "node:crypto";

export class SnapshotStore {
  private readonly byId = new Map<string, { episode: string; data: Uint8Array }>();

  /** Keep `data` for `episode`; returns the new snapshot id. */
  put(episode: string, data: Uint8Array): string {
    for (const [k, v] of this.byId) if (v.episode !== episode) this.byId.delete(k);
    const id = randomUUID();
    this.byId.set(id, { episode, data });
    return id;
  }

  /** The snapshot's data when it exists and belongs to `episode`. */
  get(id: string, episode: string): Uint8Array | undefined {
    const s = this.byId.get(id);
    return s && s.episode === episode ? s.data : undefined;
  }
}
