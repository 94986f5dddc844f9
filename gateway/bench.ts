/**
 * A composed bench: what the gateway drives and the rules it drives it by. Its own module so
 * that the gateway and the start strategies it calls both read it without importing each other.
 */
import type { Mat4 } from "../robots/math.ts";
import type { Backend } from "../seam/types.ts";
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
  /** checked before every episode start (e.g. the records directory takes a write); throws to refuse */
  preflight?: () => void;
}
