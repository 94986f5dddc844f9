/**
 * The `ContactSensor` capability (STYLE §1): what the gateway needs from any device that senses
 * the buzz-wire circuit — the buzz-box serial driver today, a Firmata board later. Events use the
 * Backend seam's `SensorEvent` so they look exactly like the simulator's.
 */
import type { LifecycleState, SensorEventListener } from "../../seam/types.ts";
import type { OutputMode } from "./protocol.ts";

export type { OutputMode };

/**
 * Lifecycle: the one table of seam/lifecycle.ts; for a contact sensor:
 * - `unconfigured`: nothing open; only configure().
 * - `inactive`: device open; contact and fault events flow; lamp/buzzer commands are refused.
 * - `active`: events and lamp/buzzer commands.
 * - `finalized`: shut down; nothing.
 * - `error`: the device cannot be used (e.g. wrong protocol version); no commands; shutdown().
 * A lost link does not change the lifecycle: it emits a `fault` event and the driver reconnects.
 */
export interface ContactSensor {
  /** device name used in events, e.g. "buzzbox" */
  readonly source: string;
  readonly lifecycle: LifecycleState;
  /** true while the device answers (heartbeats arrive) */
  readonly linkUp: boolean;
  /** latest debounced contact state (undefined before the device reported it) */
  readonly contactClosed: boolean | undefined;
  configure(): Promise<void>;
  activate(): Promise<void>;
  deactivate(): Promise<void>;
  shutdown(): Promise<void>;
  /**
   * Subscribe to `contact` (t = host seconds of the edge on the gateway clock), `fault` and
   * `instrument` events; returns an unsubscribe function. Listeners run in the receive path:
   * keep them short (e.g. trigger the stop and return).
   */
  onEvent(listener: SensorEventListener): () => void;
  /** lamp off / on / automatic (follows contact); active only; resolves on the device's ack */
  setLamp(mode: OutputMode): Promise<void>;
  /** buzzer off / on / automatic; active only; resolves on the device's ack */
  setBuzzer(mode: OutputMode): Promise<void>;
}
