/**
 * Young-generation collections at moments the realtime loop chooses.
 *
 * V8 collects the young generation (a scavenge, 0.4–1 ms on the loop thread with the launchers'
 * `--single-threaded-gc --max-semi-space-size=2`) whenever an allocation finds it full: at any
 * point of the loop's turn. In the realtime setting that point is often the worst one, between a
 * chunk's arrival and the commit of its first target, or inside the precise sleep to that
 * commit. bench/realtime.ts --diag, 60 s at S = 1 (1,501 WebSocket splices): 19 splices over
 * 2 control periods, 17 of them with a scavenge inside.
 *
 * A scavenge's length hardly depends on how full the young generation is (0.46 ms p50 when
 * forced every 50 control steps against 0.6–0.7 ms when V8 chose), so collecting a little early
 * costs little, and it can be put where it seldom delays a commit: right after the loop committed
 * a step, with at least half a slot left to the next (a long scavenge, up to ~1 ms, can still
 * reach into it). A splice that arrives during it was going to wait for that slot anyway (the
 * stepped drive: the sim; a real arm's stream sends a splice the moment it arrives, so there the
 * loop leaves collections to V8). `YoungGcPlacement` does that once the young generation is
 * `threshold` full (read every `checkEvery` commits: `v8.getHeapSpaceStatistics` costs ~2 µs and
 * a small array, the one allocation here), so V8's own trigger is rarely reached. It needs V8's
 * `gc` function, which node exposes with `--expose-gc` (the launchers pass it: cli/scheduling.ts
 * LATENCY_NODE_ARGS); without it the loop runs as before.
 */
import { getHeapSpaceStatistics } from "node:v8";

/** The realtime loop's hook (control-loop code): called after each commit with the time left to the next slot. */
export interface YoungGc {
  /** collect now when due and `spareS` (s to the next slot) allows; whether it did */
  afterCommit(spareS: number): boolean;
}

export interface YoungGcOptions {
  /** one young-generation collection (V8: gc({ type: "minor" })) */
  collect: () => void;
  /** how full the young generation is, 0–1 */
  fill: () => number;
  /** collect once it is this full (default 0.6) */
  threshold?: number;
  /** read `fill` every this many commits (default 4) */
  checkEvery?: number;
  /** collect only with at least this long to the next slot, s */
  minSpareS: number;
}

export class YoungGcPlacement implements YoungGc {
  private sinceCheck = 0;
  /** collections made, for benches and tests */
  collections = 0;
  private readonly threshold: number;
  private readonly checkEvery: number;

  constructor(private readonly o: YoungGcOptions) {
    this.threshold = o.threshold ?? 0.6;
    this.checkEvery = o.checkEvery ?? 4;
  }

  afterCommit(spareS: number): boolean {
    if (spareS < this.o.minSpareS) return false;
    if (++this.sinceCheck < this.checkEvery) return false;
    this.sinceCheck = 0;
    if (this.o.fill() < this.threshold) return false;
    this.o.collect();
    this.collections++;
    return true;
  }
}

/** the young generation's fill, 0–1 (V8's new space: used / (used + available)) */
export function newSpaceFill(): number {
  for (const s of getHeapSpaceStatistics()) {
    if (s.space_name === "new_space") {
      return s.space_used_size / Math.max(1, s.space_used_size + s.space_available_size);
    }
  }
  return 0;
}

/**
 * V8's `gc` function (node --expose-gc): without options a full collection; `{ type: "minor" }`
 * the young generation alone (Node 20's V8 also reads `{ type: "major" }` as a scavenge: a full
 * collection is the call without options)
 */
export type V8Gc = (options?: { type: "minor" }) => void;

/** V8's `gc` when this process has it (node --expose-gc: the launchers pass it), else null */
export function exposedGc(): V8Gc | null {
  const gc = (globalThis as { gc?: V8Gc }).gc;
  return typeof gc === "function" ? gc : null;
}

/**
 * The placement for a loop whose slots are `slotS` long, when this process has V8's `gc`
 * (node --expose-gc); null otherwise.
 */
export function runtimeYoungGc(slotS: number): YoungGcPlacement | null {
  const gc = exposedGc();
  if (!gc) return null;
  return new YoungGcPlacement({
    collect: () => gc({ type: "minor" }),
    fill: newSpaceFill,
    // a scavenge is ~0.5 ms: not when less than half the slot is left
    minSpareS: slotS / 2,
  });
}
