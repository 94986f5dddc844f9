/**
 * Resource (STYLE §1, §9): a Firmata board (e.g. an Arduino running StandardFirmata) wired as a
 * buzz-wire contact box. Plain, validated, frozen data; no I/O.
 *
 * Wiring: the wire goes to `contactPin` (digital input with the internal pull-up), the loop to
 * GND, so a contact pulls the pin low. The lamp and the buzzer hang on two digital outputs
 * (active high).
 */
import { z } from "zod";

const pin = z.number().int().min(0).max(127);

export const FirmataContactResourceSchema = z
  .strictObject({
    type: z.literal("firmata"),
    /** serial device path (or a symlink to one), e.g. /dev/ttyACM0 */
    path: z.string().min(1),
    /** line rate, bit/s (StandardFirmata: 57600) */
    baudRate: z.number().int().positive().default(57600),
    /** digital input with pull-up; low = loop touches the wire */
    contactPin: pin,
    /** digital output driving the lamp (high = lit) */
    lampPin: pin,
    /** digital output driving the buzzer (high = sounding) */
    buzzerPin: pin,
    /** lamp and buzzer follow the contact (driven by the host on each edge) until set otherwise */
    outputsFollowContact: z.boolean().default(true),
    /** Firmata asks the board for its version after this long without one, ms (firmata-io's reportVersionTimeout) */
    reportVersionTimeoutMs: z.number().int().min(10).default(2000),
    /** configure() gives up when the board is not ready (version, firmware, capabilities) after this long, ms */
    readyTimeoutMs: z.number().int().min(50).default(10_000),
    /**
     * Firmata sampling interval sent to the board, ms (StandardFirmata's default 19 ms; firmata-io
     * sends at least 10): the heartbeat channel is reported once per interval
     */
    samplingIntervalMs: z.number().int().min(10).max(16383).default(19),
    /**
     * spare analog channel the board reports every sampling interval as a heartbeat (0 = A0, the
     * one every Arduino has); its value is ignored, only its arrival counts
     */
    heartbeatChannel: z.number().int().min(0).max(15).default(0),
    /** no byte from the board for this long = hung board, a fault, ms (≥ 2 sampling intervals) */
    silenceTimeoutMs: z.number().int().min(20).default(60),
    /** first reconnect delay after a lost port, ms; doubles per failed attempt up to reconnectMaxMs */
    reconnectInitialMs: z.number().int().min(10).default(200),
    /** longest reconnect delay, ms */
    reconnectMaxMs: z.number().int().min(10).default(3000),
  })
  .superRefine((r, ctx) => {
    if (r.silenceTimeoutMs < 2 * r.samplingIntervalMs)
      ctx.addIssue({
        code: "custom",
        message: "silenceTimeoutMs must be at least two sampling intervals (samplingIntervalMs)",
        path: ["silenceTimeoutMs"],
      });
    const pins = [r.contactPin, r.lampPin, r.buzzerPin];
    if (new Set(pins).size !== pins.length)
      ctx.addIssue({
        code: "custom",
        message: "contactPin, lampPin and buzzerPin must differ",
        path: ["contactPin"],
      });
  });

export type FirmataContactResourceInput = z.input<typeof FirmataContactResourceSchema>;
export type FirmataContactResource = Readonly<z.output<typeof FirmataContactResourceSchema>>;

/** Validate strictly and freeze. */
export function parseFirmataContactResource(input: unknown): FirmataContactResource {
  return Object.freeze(FirmataContactResourceSchema.parse(input));
}
