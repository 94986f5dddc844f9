/**
 * The realtime episode driver (EFE Appendix C.1) for a backend that runs steps on demand (the
 * sim): from its start, the bench advances one control step every S control periods of wall
 * clock, whatever the agent does.
 *
 * The queue is indexed by absolute control step: step k (k = 0 at the driver's start) runs the
 * queued target for k, or holds the last commanded target when the queue has none. A chunk is
 * spliced in at `start_step` (absent: right after the queue end, or at the earliest step
 * allowed when the queue is empty) and replaces every queued row from there on; a start past
 * the queue end holds the last queued target up to it. Steps handed to the backend are
 * committed: a splice must start at least `marginSteps` after the last committed step, or after
 * the step the wall clock says is due, whichever is later. On the sim the margin is 0 (the first
 * step neither committed nor due: the sim commits steps synchronously at a wake-up and a splice
 * is queued in one synchronous turn); on a real arm it covers the stream's lead.
 *
 * Wake-ups: the loop sleeps to the end of the next slot coarsely (a timer, up to ~1 ms late),
 * except to a step that starts a splice: that sleep is precise, and a splice whose first step is
 * the next to fall due wakes a coarse sleep so that it sleeps again precisely. A chunk's first
 * target so runs when its slot ends, not a timer tick later.
 *
 * Late steps: at each wake-up the due steps run back to back; a due step whose slot began more
 * than `lateToleranceS` ago could not be run on time. It is not run late in a burst: it is
 * counted late, the schedule moves on by its slot (the bench stood still for S periods) and
 * `stoodStillS` grows by that slot. Grading is unchanged.
 *
 * Command watchdog: with the queue empty and no chunk accepted for `watchdogS` of wall clock,
 * the robot holds (the empty queue) and the driver asks for a stop (the episode turns it into
 * `requestStop({ source: "watchdog" })`).
 *
 * Streamed drive (a real arm, seam RealtimeDrive `streamed`): the robot keeps its own time, so
 * the schedule never moves on: a late wake-up commits every due step at once (the controller ran
 * them from the trajectory streamed to it). The episode streams the queue from the due step on
 * (`queueFrom`) after each splice; a splice the robot got after its first step was due is late
 * by the steps it ran from the old queue instead (`countLateSplice`).
 *
 * The wall clock is injected (tests drive a fake one); a wake-up allocates no trajectory (one
 * per step count is reused: the executor may use it until its promise settles).
 */
import type { ExecuteResult, JointReading, JointTrajectory } from "../../seam/types.ts";
import type { TrajectoryStart } from "../../seam/interpolate.ts";
import { GatewayError } from "../errors.ts";
import { runtimeYoungGc, type YoungGc } from "./young-gc.ts";

/**
 * A wall clock in seconds, and a sleep on it that an abort ends early. A `precise` sleep ends as
 * close after `tS` as the process can tell (the first target of a splice waits on it); another
 * may end up to a timer tick late (about 1 ms: well inside the late tolerance).
 */
export interface WallClock {
  now(): number;
  /**
   * `wakeup`: ring() ends this sleep early too (see Wakeup). A clock must honour it: the driver's
   * nudges go through it alone (one that ignored it would cost a splice up to a period).
   */
  sleepUntil(tS: number, signal: AbortSignal, precise?: boolean, wakeup?: Wakeup): Promise<void>;
}

/** a pending sleep as a Wakeup sees it */
export interface Waking {
  wake(): void;
}

/**
 * Ends the sleep pending on it early, as an abort would, for a sleeper that is woken often and
 * lives on: the realtime loop, nudged by a splice (up to one per chunk). An abort per nudge cost
 * an event dispatch, a new AbortController and a new abort listener for the next sleep: a fifth
 * of a realtime act's synchronous slice (CPU profile of `bench/realtime.ts --bench sim`).
 */
export class Wakeup {
  private pending: Waking | undefined = undefined;
  /** the clock's: the sleep now pending on this */
  arm(w: Waking): void {
    this.pending = w;
  }
  /** the clock's: `w` ended by itself */
  disarm(w: Waking): void {
    if (this.pending === w) this.pending = undefined;
  }
  /** end the sleep pending on this now, if any */
  ring(): void {
    const w = this.pending;
    this.pending = undefined;
    w?.wake();
  }
}

/**
 * A precise sleep sets a timer to this long before its end (a timer fires up to about a
 * millisecond late) and then checks the clock on every turn of the event loop (setImmediate:
 * I/O is served between the checks), ms.
 */
const PRECISE_SPIN_MS = 2;

/**
 * One sleep of systemWallClock: its state in fields, its timer callbacks module functions (the
 * driver sleeps once per control period: no closures per sleep; under tsx every named inner
 * function would also cost a name descriptor).
 */
class Sleep implements Waking {
  timer: ReturnType<typeof setTimeout> | undefined = undefined;
  immediate: ReturnType<typeof setImmediate> | undefined = undefined;
  constructor(
    readonly endMs: number,
    readonly list: Sleep[],
    readonly resolve: () => void,
    readonly wakeup: Wakeup | undefined,
  ) {}
  wake(): void {
    sleepDone(this);
  }
}

/**
 * The sleeps pending on each signal, behind one abort listener per signal (not one per sleep:
 * the driver's signal lives across many sleeps, and a listener costs an allocation and a lookup
 * to add and to remove).
 */
const sleepsBySignal = new WeakMap<AbortSignal, Sleep[]>();

function sleepsOf(signal: AbortSignal): Sleep[] {
  let list = sleepsBySignal.get(signal);
  if (!list) {
    const l: Sleep[] = [];
    sleepsBySignal.set(signal, l);
    signal.addEventListener("abort", () => {
      for (const s of l.slice()) sleepDone(s);
    });
    list = l;
  }
  return list;
}

function sleepDone(s: Sleep): void {
  clearTimeout(s.timer);
  clearImmediate(s.immediate);
  const l = s.list;
  const i = l.indexOf(s);
  if (i >= 0) {
    l[i] = l[l.length - 1]!;
    l.pop();
  }
  s.wakeup?.disarm(s);
  s.resolve();
}

function sleepSpin(s: Sleep): void {
  if (performance.now() >= s.endMs) sleepDone(s);
  else s.immediate = setImmediate(sleepSpin, s);
}

export const systemWallClock: WallClock = {
  now: () => performance.now() / 1000,
  sleepUntil: (tS, signal, precise = false, wakeup) =>
    new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const list = sleepsOf(signal);
      const s = new Sleep(tS * 1000, list, resolve, wakeup);
      list.push(s);
      wakeup?.arm(s);
      const ms = s.endMs - performance.now();
      if (!precise) s.timer = setTimeout(sleepDone, Math.max(0, ms), s);
      else if (ms > PRECISE_SPIN_MS) s.timer = setTimeout(sleepSpin, ms - PRECISE_SPIN_MS, s);
      else sleepSpin(s);
    }),
};

/**
 * Committed targets kept for the tracking check, steps: a reading of a real arm arrives a few
 * control periods after the step it belongs to (0.25 s at 1 kHz: far beyond any reading that is
 * not already stale).
 */
const COMMITTED_KEPT = 256;

export interface RealtimeOptions {
  /** control period, s */
  periodS: number;
  /** S ≥ 1: one control step every S control periods of wall clock */
  slowdown: number;
  /** a splice starts at least this many steps after the committed / due step */
  marginSteps: number;
  /** a step whose slot began longer ago than this is late, s (wall) */
  lateToleranceS: number;
  /** empty queue and no accepted chunk for this long → watchdog stop, s (wall) */
  watchdogS: number;
  /** a splice may start at most this many steps after the committed step */
  horizonSteps: number;
  /** the robot keeps its own time (streamed drive): late slots are never skipped */
  streamed?: boolean;
  /**
   * young-generation collections after commits (young-gc.ts); absent: V8's gc when this process
   * has it (node --expose-gc, as the launchers start) and the drive is stepped, null: never
   */
  youngGc?: YoungGc | null;
}

/**
 * Runs `n` dense samples on the backend (the episode passes its tick hook and abort signal); it
 * may answer at once (a stepped backend's runNow: no promise per wake-up) or with a promise.
 */
export type StepExecutor = (traj: JointTrajectory) => ExecuteResult | Promise<ExecuteResult>;

export interface RealtimeCounts {
  /** steps handed to the backend */
  stepsRun: number;
  /** of them, steps that held because the queue was empty */
  holdSteps: number;
  /**
   * steps that could not be run on time: stepped, late slots skipped; streamed, steps a late
   * splice's robot ran from the old queue
   */
  lateSteps: number;
  /** streamed: splices the robot got after their first step was due */
  lateSplices: number;
  /** wall seconds the bench stood still because of late steps */
  stoodStillS: number;
  /** chunks spliced in */
  splices: number;
}

export class RealtimeDriver {
  private readonly dof: number;
  /**
   * queued targets: q rows (dof each) and gripper openings; row `head` is the target of step
   * `base` (rows before `head` are committed, dropped when the queue empties or grows long)
   */
  private qQueue: number[] = [];
  private gQueue: number[] = [];
  private head = 0;
  private base = 0;
  /** the last three commanded targets (oldest first), for the commanded state at a splice */
  private readonly histQ: number[][];
  private readonly histG: number[];
  /**
   * the first steps of the splices not yet committed, ascending (a splice drops those at or after
   * its own: their rows are replaced): the loop wakes precisely for each
   */
  private firstSteps: number[] = [];
  /** ends the loop's sleep for good: halt() or the loop's signal */
  private readonly sleepCtl = new AbortController();
  /** ends the loop's current sleep: a splice that wants it precise (it sleeps again) */
  private readonly wakeup = new Wakeup();
  /** the loop sleeps now, and how */
  private sleeping: "coarse" | "precise" | null = null;
  private t0Wall = Number.NaN;
  /** slots skipped as late (the schedule moved on by them) */
  private shiftSlots = 0;
  private lastChunkWall = Number.NaN;
  private stopped = false;
  /** aborted by halt(): ends the loop's sleep at once */
  private readonly halted = new AbortController();
  private waiters: { step: number; resolve: () => void }[] = [];
  /**
   * the targets of the last COMMITTED_KEPT committed steps, step k in row k % COMMITTED_KEPT
   * (views made once): what the safety monitor judges each reading against (commandedAt)
   */
  private readonly committedRows: Float64Array[];
  /** commandedAt's row for a step due but not committed yet */
  private readonly dueRow: Float64Array;
  /** young-generation collections after commits (RealtimeOptions.youngGc) */
  private readonly youngGc: YoungGc | null;
  readonly counts: RealtimeCounts = {
    stepsRun: 0,
    holdSteps: 0,
    lateSteps: 0,
    lateSplices: 0,
    stoodStillS: 0,
    splices: 0,
  };

  constructor(
    private readonly clock: WallClock,
    private readonly opts: RealtimeOptions,
    start: { q: readonly number[]; gripperWidthM: number },
    /** the watchdog fired (the robot holds; the owner stops it) */
    private readonly onWatchdog: (detail: string) => void,
  ) {
    if (!(opts.slowdown >= 1)) throw new Error(`realtime slowdown ${opts.slowdown} < 1`);
    // not for a real arm's stream: a splice is sent the moment it arrives, not at a slot, so no
    // moment of the loop is one a splice would wait through anyway
    this.youngGc =
      opts.youngGc !== undefined
        ? opts.youngGc
        : opts.streamed
          ? null
          : runtimeYoungGc(opts.periodS * opts.slowdown);
    this.dof = start.q.length;
    this.histQ = [[...start.q], [...start.q], [...start.q]];
    this.histG = [start.gripperWidthM, start.gripperWidthM, start.gripperWidthM];
    this.dueRow = new Float64Array(this.dof);
    const kept = new Float64Array(COMMITTED_KEPT * this.dof);
    this.committedRows = Array.from({ length: COMMITTED_KEPT }, (_, i) =>
      kept.subarray(i * this.dof, (i + 1) * this.dof),
    );
  }

  get started(): boolean {
    return !Number.isNaN(this.t0Wall);
  }

  /** steps committed to the backend (the next step to run) */
  get committedStep(): number {
    return this.base;
  }

  /** rows queued after the committed step */
  get queueRows(): number {
    return this.gQueue.length - this.head;
  }

  /**
   * The joint target of step `k`, for the tracking check of the reading measured while it ran (a
   * view the next call or commit overwrites: use it at once): a committed step's, or a due one's
   * that the loop has not committed yet (a real arm runs it already; its row can no longer
   * change: a splice starts after the due step). Undefined for a step not due yet, before the
   * start, or more than COMMITTED_KEPT steps back.
   */
  commandedAt(k: number): Float64Array | undefined {
    if (!(k >= 0 && this.base - k <= COMMITTED_KEPT)) return undefined;
    if (k < this.base) return this.committedRows[k % COMMITTED_KEPT];
    if (k >= this.dueStep()) return undefined;
    const row = this.dueRow;
    const i = this.queueIndexOf(k);
    if (i < 0) {
      const last = this.histQ[2]!;
      for (let j = 0; j < this.dof; j++) row[j] = last[j]!;
    } else for (let j = 0; j < this.dof; j++) row[j] = this.qQueue[i * this.dof + j]!;
    return row;
  }

  /**
   * Streamed drive: the step whose target the controller commands at wall time `tS` (the last one
   * due by then: it reaches step k's target when the step falls due, dueWall(k)); −1 before.
   */
  stepAtWall(tS: number): number {
    if (!this.started) return -1;
    return Math.floor((tS - this.t0Wall) / this.slotS + 1e-6) - this.shiftSlots - 1;
  }

  /** wall seconds of one slot */
  get slotS(): number {
    return this.opts.slowdown * this.opts.periodS;
  }

  /** steps the wall clock says are due by now (0 before the start) */
  dueStep(): number {
    if (!this.started) return 0;
    return Math.max(0, Math.floor((this.clock.now() - this.t0Wall) / this.slotS + 1e-6) - this.shiftSlots);
  }

  /** Start the schedule now (the first accepted chunk, or the first observe that advances time). */
  start(): void {
    if (this.started) return;
    this.t0Wall = this.clock.now();
    this.lastChunkWall = this.t0Wall;
  }

  /**
   * The step a chunk starts at: `requested`, or right after the queue end (the earliest allowed
   * step when the queue is empty). Throws the coded refusal.
   */
  spliceStep(requested: number | undefined): number {
    const committed = this.base;
    const earliest = Math.max(committed, this.dueStep()) + this.opts.marginSteps;
    if (requested === undefined) return Math.max(earliest, committed + this.queueRows);
    if (requested < committed) {
      throw new GatewayError("RB_ERR_SPLICE_PAST", { start_step: requested, committed_step: committed });
    }
    if (requested < earliest) {
      throw new GatewayError("RB_ERR_SPLICE_MARGIN", {
        start_step: requested,
        earliest,
        margin_steps: this.opts.marginSteps,
      });
    }
    if (requested > committed + this.opts.horizonSteps) {
      throw new GatewayError("RB_ERR_SPLICE_AHEAD", {
        start_step: requested,
        latest: committed + this.opts.horizonSteps,
      });
    }
    return requested;
  }

  /** commanded target at absolute step k (k ≥ committed − 3) */
  private targetAt(k: number): { q: readonly number[]; g: number } {
    const rel = k - this.base;
    if (rel < 0) {
      const h = 3 + rel;
      return { q: this.histQ[Math.max(0, h)]!, g: this.histG[Math.max(0, h)]! };
    }
    const i = this.queueIndexOf(k);
    if (i < 0) return { q: this.histQ[2]!, g: this.histG[2]! };
    return { q: this.qQueue.slice(i * this.dof, (i + 1) * this.dof), g: this.gQueue[i]! };
  }

  /**
   * The queue row that step `k` (not committed yet) will run: a step past the queue end holds the
   * last queued target; −1 when the queue is empty (the last committed target holds).
   */
  private queueIndexOf(k: number): number {
    const n = this.queueRows;
    if (n === 0) return -1;
    return this.head + Math.min(k - this.base, n - 1);
  }

  /**
   * The commanded state the spliced chunk starts from at `step`: the target of step − 1, its
   * velocity and acceleration by backward differences (as the pre-check differentiates), so the
   * pre-check judges continuity up to the jerk at the join.
   */
  commandedState(step: number): TrajectoryStart & { ddq: number[] } {
    const T = this.opts.periodS;
    const a = this.targetAt(step - 3);
    const b = this.targetAt(step - 2);
    const c = this.targetAt(step - 1);
    const dq: number[] = [];
    const ddq: number[] = [];
    for (let j = 0; j < this.dof; j++) {
      const v1 = (b.q[j]! - a.q[j]!) / T;
      const v2 = (c.q[j]! - b.q[j]!) / T;
      dq.push(v2);
      ddq.push((v2 - v1) / T);
    }
    return { q: [...c.q], dq, ddq, gripperWidthM: c.g };
  }

  /** Replace the queue from `step` on with the dense samples of `traj` (already pre-checked). */
  splice(traj: JointTrajectory, step: number): void {
    const dof = this.dof;
    const keep = step - this.base;
    if (keep < 0) throw new Error(`splice at ${step} before the committed step ${this.base}`);
    if (keep > this.queueRows) {
      // hold the last queued (or commanded) target up to the start
      const last = this.targetAt(this.base + this.queueRows - 1);
      while (this.queueRows < keep) {
        this.qQueue.push(...last.q);
        this.gQueue.push(last.g);
      }
    }
    this.qQueue.length = (this.head + keep) * dof;
    this.gQueue.length = this.head + keep;
    for (let i = 0; i < traj.count * dof; i++) this.qQueue.push(traj.q[i]!);
    for (let i = 0; i < traj.count; i++) this.gQueue.push(traj.gripperWidthM[i]!);
    this.counts.splices++;
    this.lastChunkWall = this.clock.now();
    const firsts = this.firstSteps;
    while (firsts.length > 0 && firsts[firsts.length - 1]! >= step) firsts.pop();
    firsts.push(step);
    // the loop sleeps coarsely and this chunk's first target is the next step to fall due: wake
    // it (it runs any step already due) so that it sleeps to that step again, precisely
    if (this.sleeping === "coarse" && step <= Math.max(this.base, this.dueStep())) this.nudge();
  }

  /** end the loop's current sleep (it sleeps again as the queue now needs) */
  private nudge(): void {
    this.wakeup.ring();
  }

  /** wall time at which the target of step `k` is due (the end of its slot) */
  dueWall(k: number): number {
    return this.t0Wall + (k + this.shiftSlots + 1) * this.slotS;
  }

  /**
   * Streamed drive: the queue from step `from` (≥ the committed step) to its end, as dense
   * samples (at least one: the held target when the queue ends before `from`), and the target
   * of step `from − 1` (the sample before, for the derivatives at the join).
   */
  queueFrom(from: number): { traj: JointTrajectory; before: number[] } {
    const dof = this.dof;
    const skip = from - this.base;
    if (skip < 0) throw new Error(`queueFrom(${from}) before the committed step ${this.base}`);
    const n = Math.max(1, this.queueRows - skip);
    const q = new Float64Array(n * dof);
    const g = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      const t = this.targetAt(from + i);
      for (let j = 0; j < dof; j++) q[i * dof + j] = t.q[j]!;
      g[i] = t.g;
    }
    const before = [...this.targetAt(from - 1).q];
    return {
      traj: { periodS: this.opts.periodS, count: n, q, gripperWidthM: g, rowEndIndex: [n - 1] },
      before,
    };
  }

  /** Streamed drive: a splice the robot got `steps` steps after its first step was due. */
  countLateSplice(steps: number): void {
    if (!(steps > 0)) return;
    this.counts.lateSplices++;
    this.counts.lateSteps += steps;
  }

  /** aborts when the driver halts */
  get haltSignal(): AbortSignal {
    return this.halted.signal;
  }

  /** Resolves once step `step` has been committed (or the driver has stopped). */
  waitForStep(step: number): Promise<void> {
    if (this.base >= step || this.stopped) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ step, resolve }));
  }

  /**
   * One wake-up: count and skip late slots, then run every due step as one trajectory.
   * @returns the backend's result, or null when nothing was due
   */
  wake(run: StepExecutor): ExecuteResult | Promise<ExecuteResult> | null {
    const slot = this.slotS;
    const now = this.clock.now();
    // the next step is due at the end of its slot, t0 + (base + shift + 1)·slot; late ones are skipped
    let next = this.t0Wall + (this.base + this.shiftSlots + 1) * slot;
    while (!this.opts.streamed && now - next > this.opts.lateToleranceS + 1e-9) {
      this.shiftSlots++;
      this.counts.lateSteps++;
      this.counts.stoodStillS += slot;
      next += slot;
    }
    const n = this.dueStep() - this.base;
    if (this.queueRows === 0 && now - this.lastChunkWall > this.opts.watchdogS + 1e-9 && !this.stopped) {
      this.onWatchdog(
        `no queued rows and no chunk for ${((now - this.lastChunkWall) * 1000).toFixed(0)} ms (limit ${(this.opts.watchdogS * 1000).toFixed(0)} ms)`,
      );
    }
    if (n <= 0) return null;
    const traj = this.take(n);
    return run(traj);
  }

  /**
   * The trajectories handed to the executor, by step count (made once each): a wake-up runs
   * 1–20 steps, so it allocates none. Valid until the executor's promise settles (the loop
   * takes the next steps only after that).
   */
  private readonly scratch: JointTrajectory[] = [];

  private trajectoryOf(n: number): JointTrajectory {
    const reuse = n <= 64;
    const had = reuse ? this.scratch[n] : undefined;
    if (had) return had;
    const traj: JointTrajectory = {
      periodS: this.opts.periodS,
      count: n,
      q: new Float64Array(n * this.dof),
      gripperWidthM: new Float64Array(n),
      rowEndIndex: [n - 1],
    };
    if (reuse) this.scratch[n] = traj;
    return traj;
  }

  /** Commit the next `n` steps: queued rows, then holds of the last target. */
  private take(n: number): JointTrajectory {
    const dof = this.dof;
    const traj = this.trajectoryOf(n);
    const q = traj.q;
    const g = traj.gripperWidthM;
    const fromQueue = Math.min(n, this.queueRows);
    const h = this.head;
    for (let i = 0; i < fromQueue * dof; i++) q[i] = this.qQueue[h * dof + i]!;
    for (let i = 0; i < fromQueue; i++) g[i] = this.gQueue[h + i]!;
    if (fromQueue < n) {
      // hold the last target taken, or the last committed one
      const lastQ = fromQueue > 0 ? q.subarray((fromQueue - 1) * dof, fromQueue * dof) : this.histQ[2]!;
      const lastG = fromQueue > 0 ? g[fromQueue - 1]! : this.histG[2]!;
      for (let i = fromQueue; i < n; i++) {
        for (let j = 0; j < dof; j++) q[i * dof + j] = lastQ[j]!;
        g[i] = lastG;
      }
    }
    for (let i = 0; i < n; i++) {
      const row = this.committedRows[(this.base + i) % COMMITTED_KEPT]!;
      for (let j = 0; j < dof; j++) row[j] = q[i * dof + j]!;
    }
    // history: the last three committed targets (the oldest row is reused for the newest)
    for (let i = Math.max(0, n - 3); i < n; i++) {
      const row = this.histQ.shift()!;
      for (let j = 0; j < dof; j++) row[j] = q[i * dof + j]!;
      this.histQ.push(row);
      this.histG.shift();
      this.histG.push(g[i]!);
    }
    this.dropCommitted(fromQueue);
    this.base += n;
    this.counts.stepsRun += n;
    this.counts.holdSteps += n - fromQueue;
    const firsts = this.firstSteps;
    while (firsts.length > 0 && firsts[0]! < this.base) firsts.shift();
    if (this.waiters.length > 0) {
      for (const w of this.waiters.filter((w) => w.step <= this.base)) w.resolve();
      this.waiters = this.waiters.filter((w) => w.step > this.base);
    }
    return traj;
  }

  /**
   * Drop `rows` committed rows from the queue's head: by moving the head, the arrays emptied when
   * the queue is (no copy, no allocation per step), compacted in place when the head is long.
   */
  private dropCommitted(rows: number): void {
    this.head += rows;
    const left = this.gQueue.length - this.head;
    if (left === 0) {
      this.qQueue.length = 0;
      this.gQueue.length = 0;
      this.head = 0;
    } else if (this.head >= 4096 && this.head >= left) {
      const dof = this.dof;
      this.qQueue.copyWithin(0, this.head * dof);
      this.qQueue.length = left * dof;
      this.gQueue.copyWithin(0, this.head);
      this.gQueue.length = left;
      this.head = 0;
    }
  }

  /**
   * The loop: sleep to the next slot, wake, until `signal` aborts or a step is refused. The sleep
   * to a step that starts a splice is precise (the chunk's first target runs when it falls due,
   * not a timer tick later); a splice that makes the coming slot such a step wakes the loop from a
   * coarse sleep to sleep again precisely.
   */
  async run(signal: AbortSignal, exec: StepExecutor): Promise<void> {
    this.start();
    const onAbort = () => this.sleepCtl.abort();
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      while (!signal.aborted && !this.stopped) {
        const nextSlot = this.t0Wall + (this.base + this.shiftSlots + 1) * this.slotS;
        const precise = !this.opts.streamed && this.firstSteps[0] === this.base;
        this.sleeping = precise ? "precise" : "coarse";
        await this.clock.sleepUntil(nextSlot, this.sleepCtl.signal, precise, this.wakeup);
        this.sleeping = null;
        if (signal.aborted || this.stopped) break;
        const woke = this.wake(exec);
        const res = woke instanceof Promise ? await woke : woke;
        if (res && res.outcome !== "completed") break;
        // right after a commit (not after a splice's nudge, which commits nothing: the chunk's
        // first commit is still to come), the young generation collected when due
        if (res) this.youngGc?.afterCommit(this.dueWall(this.base) - this.clock.now());
      }
    } finally {
      signal.removeEventListener("abort", onAbort);
      this.halt();
    }
  }

  /** Stop the loop (idempotent); waiters resolve. */
  halt(): void {
    this.stopped = true;
    this.halted.abort();
    this.sleepCtl.abort();
    for (const w of this.waiters) w.resolve();
    this.waiters = [];
  }

  get isHalted(): boolean {
    return this.stopped;
  }
}

/** A reading that stands for the commanded state (the planner's start for a splice). */
export function commandedReading(s: TrajectoryStart, t: number): JointReading {
  return { t, q: [...s.q], dq: [...s.dq], gripperWidthM: s.gripperWidthM };
}
