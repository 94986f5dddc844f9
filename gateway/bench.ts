/**
 * A composed bench: what the gateway drives and the rules it drives it by. Its own module so
 * that the gateway and the start strategies it calls both read it without importing each other.
 */
import type { Mat4 } from "../robots/math.ts";
import type { Backend, Frame } from "../seam/types.ts";
import type { IkPort } from "./episode/actions.ts";
import type { Provenance } from "./recorder/provenance.ts";
import type { EffectiveLimits } from "./safety/profile.ts";

/** A composed bench: what the gateway drives and the rules it drives it by. */
export interface Bench {
  name: string;
  backend: Backend;
  /** the profile's limits (without calibration-derived volumes) */
  limits: EffectiveLimits;
  /** the limits an episode with this seed runs under (adds the bench's table and board volumes) */
  limitsFor: (seed: number) => EffectiveLimits;
  toolFromFlange: Mat4;
  ik: IkPort;
  maxDtS: number;
  /** bench geometry for tasks (e.g. wire centreline), per episode seed */
  taskBench: (seed: number) => Record<string, unknown>;
  /** default task, level, seed */
  defaults: { task: string; level?: string; seed: number };
  /** is the backend a simulator (privileged calls possible)? */
  simulated: boolean;
  /** false on a real bench started without the allow-motion switch: every motion call is refused */
  motionAllowed: boolean;
  /** bench name, software version and config hashes for records and result.json */
  provenance?: Provenance;
  /**
   * checked before every episode start (e.g. the records directory takes a write); throws or
   * rejects to refuse. Asynchronous: a running episode's motion is still moving meanwhile, so
   * nothing here may block the event loop (a stop must be able to run).
   */
  preflight?: () => void | Promise<void>;
  /** a client that disconnects mid-act: stop the motion, or let the chunk finish and be recorded (default) */
  onClientDisconnect?: "finish" | "stop";
  /** a shadow twin runs beside the backend (compose/twin): what the operator console shows of it */
  twin?: TwinView;
}

/**
 * Divergence figures of one span (a chunk or the trial so far) between the bench and its twin,
 * JSON-safe (NaN is null). Joint figures are per joint.
 */
export interface TwinDivergenceFigures {
  samples: number;
  joint_rms_rad: number[];
  joint_max_rad: number[];
  /** tool-point distance between bench and twin, mm */
  tool_mm: { rms: number; max: number; final: number };
  /** closing contact edges on each side and how they pair up within the window */
  contacts: {
    real: number;
    twin: number;
    matched: number;
    predicted_not_seen: number;
    seen_not_predicted: number;
  };
  /** progress along the wire at the span's end (0…1), null without a wire */
  progress: { real: number; twin: number; diff: number } | null;
  /** per camera, the mean over the span's compared frames (null when no frame had a mask) */
  images: {
    camera: string;
    frames: number;
    wire_iou: number | null;
    arm_iou: number | null;
    mean_abs_rgb: number | null;
  }[];
}

/**
 * What the operator console reads of a shadow twin: the twin's own view of the cameras and the
 * divergence so far. Viewing never enters what is measured: `captureBench` is the bench's capture
 * without the twin's comparison, `captureTwin` renders the twin where the lockstep left it.
 */
export interface TwinView {
  /** the bench's frames, not compared with the twin (the console's live view) */
  captureBench(cameras: readonly string[], opts: { depth: boolean }): Promise<Frame[]>;
  /** the twin's render of these cameras at its current state */
  captureTwin(cameras: readonly string[]): Frame[];
  /** the last chunk's divergence (null before the first) and the trial's, since the last reset */
  divergence(): {
    chunks: number;
    chunk: (TwinDivergenceFigures & { chunk: number; kind: string }) | null;
    trial: TwinDivergenceFigures;
  };
}
