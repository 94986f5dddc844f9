/**
 * Resource (STYLE §1, §9): the plain, validated, frozen data that names a buzz box. No I/O.
 */
import { z } from "zod";

export const BuzzboxResourceSchema = z.strictObject({
  type: z.literal("buzzbox"),
  /** serial device path (or a symlink to one), e.g. /dev/ttyACM0 */
  path: z.string().min(1),
  /** line rate, bit/s (the firmware uses 115200) */
  baudRate: z.number().int().positive().default(115200),
  /** debounce time sent to the board on configure, ms (0.1 … 1000); absent = keep the board's */
  debounceMs: z.number().min(0.1).max(1000).optional(),
  /** no line for this long → fault, ms (the board sends a heartbeat every 100 ms) */
  heartbeatTimeoutMs: z.number().int().min(150).default(350),
  /** clock-mapping ping period, ms */
  pingIntervalMs: z.number().int().min(50).default(1000),
  /** time to wait for the board's `$V` hello after opening, ms (an Arduino bootloader takes ~1.5 s) */
  helloTimeoutMs: z.number().int().min(50).default(2500),
  /** time to wait for a command's ack, ms */
  commandTimeoutMs: z.number().int().min(10).default(500),
  /** first reconnect delay, ms; doubles per failed attempt up to reconnectMaxMs */
  reconnectInitialMs: z.number().int().min(10).default(100),
  /** longest reconnect delay, ms */
  reconnectMaxMs: z.number().int().min(10).default(2000),
});

/** Input form (defaults optional). */
export type BuzzboxResourceInput = z.input<typeof BuzzboxResourceSchema>;
export type BuzzboxResource = Readonly<z.output<typeof BuzzboxResourceSchema>>;

/** Validate strictly (unknown keys are errors; all problems at once) and freeze. */
export function parseBuzzboxResource(input: unknown): BuzzboxResource {
  return Object.freeze(BuzzboxResourceSchema.parse(input));
}
