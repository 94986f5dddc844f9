/**
 * The runtime safety monitor: fed every measured reading and every sensor event while the
 * robot moves or holds, it answers "ok" or a stop verdict with its cause. The same class runs
 * for sim and real; it sees only readings, events, the commanded trajectory and the resolved
 * limits.
 *
 * Control-loop methods (`tick`, `checkTime`, `noteCommand`): allocation-free while the answer is
 * "ok" (FK and clearance buffers are preallocated; a verdict object is made only when stopping).
 * Setup methods (`constructor`, `begin`) may allocate and throw.
 *
 * A stop latches: once a verdict is returned, every further call returns the same verdict until
 * `begin()` arms the monitor again.
 *
 * Velocity is judged from positions, not from the velocity a driver reports: a peer that
 * publishes a finite difference over late timer ticks reports spikes (1.365 rad/s seen while the
 * arm moved at ≤ 0.148 rad/s) that one sample at a time cannot tell from a real overspeed. The
 * monitor keeps the last readings in a ring and takes each joint's velocity as the position
 * difference to the newest reading at least `monitorVelocityWindowS` older (the oldest kept one,
 * if at least half a window older, when the ring holds less; the ring spans chunks). It stops
 * when that velocity is beyond the
 * limit — whatever the driver reports, so a driver reporting 0 cannot hide an overspeed either.
 * A reported velocity beyond the limit that the positions do not confirm is ignored (counted in
 * `spuriousVelocity`). The commanded trajectory is within the limits by the pre-check and the
 * positions are tied to it by the tracking-error bound, so positions are the one truth checked.
 * Cost of the window: a sudden overspeed is seen within about half a window (10 ms by default).
 */
import { type Mat4, mat4Identity } from "../../robots/math.ts";
import { type FkWorkspace, fkWorkspace, forwardKinematicsInto } from "../../robots/franka/kinematics.ts";
import type { RobotModel } from "../../robots/types.ts";
import type { JointReading, JointTrajectory, SensorEvent } from "../../seam/types.ts";
import {
  allowedFloor,
  type CompiledGeometry,
  compileGeometry,
  evalClearances,
  type GeometryScratch,
  geometryScratch,
} from "./geometry.ts";
import type { EffectiveLimits } from "./profile.ts";

/** Why the monitor stopped the robot. Times are backend seconds. */
export type StopCause =
  /** measured position beyond the published limit, rad */
  | { kind: "position"; t: number; joint: string; value: number; limit: number }
  /**
   * measured velocity beyond the monitor's limit, rad/s: `value` from position differences over
   * `windowS`, `reported` what the driver said
   */
  | {
      kind: "velocity";
      t: number;
      joint: string;
      value: number;
      limit: number;
      reported: number;
      windowS: number;
    }
  /**
   * |measured − commanded| beyond the bound, rad; `sampleIndex`: the chunk's sample (the realtime
   * setting: the control step)
   */
  | { kind: "tracking_error"; t: number; joint: string; sampleIndex: number; value: number; limit: number }
  /** a body left the workspace or entered a keep-out: clearance vs its floor, m */
  | { kind: "workspace" | "keep_out"; t: number; link: string; volume: string; value: number; limit: number }
  /** no reading for `gapMs` (backend time) */
  | { kind: "stale_reading"; t: number; gapMs: number; limitMs: number }
  /** realtime: no command to the drives for `gapMs` */
  | { kind: "command_watchdog"; t: number; gapMs: number; limitMs: number }
  /** a task event listed in the profile's stopOnEvents */
  | { kind: "task_event"; t: number; event: "contact" | "collision"; source: string; detail: string }
  /** a device failed (ROS connection, serial port, camera) */
  | { kind: "device_fault"; t: number; device: string; message: string };

export type EndReason = "safety_stop" | "task_failed" | "fault";

/** readings kept for the position-difference velocity (a 20 ms window at up to ~3 kHz) */
const RING = 64;

export interface StopVerdict {
  stop: true;
  cause: StopCause;
  /**
   * how the episode ends: limit breaches and collisions are safety stops, a closed contact a task
   * failure, stale readings, a late command watchdog and lost devices faults
   */
  endReason: EndReason;
}

export type MonitorVerdict = "ok" | StopVerdict;

export class SafetyMonitor {
  private readonly geo: CompiledGeometry;
  private readonly fk: FkWorkspace = fkWorkspace();
  private readonly scratch: GeometryScratch = geometryScratch();
  private readonly clear: Float64Array;
  private readonly floor: Float64Array;
  private readonly tcp: Mat4;
  private readonly qBuf: Float64Array;
  private traj: JointTrajectory | null = null;
  private lastReadingT = Number.NaN;
  private lastCommandT = Number.NaN;
  private watchdogArmed = false;
  private ticksSinceFk = 0;
  private latched: StopVerdict | null = null;
  /** ring of recent readings for the position-difference velocity: times and q rows */
  private readonly ringT: Float64Array;
  private readonly ringQ: Float64Array;
  private ringHead = -1;
  private ringCount = 0;
  /** readings whose reported velocity was beyond the limit while the positions said it was not */
  spuriousVelocity = 0;

  constructor(
    private readonly robot: RobotModel,
    private readonly limits: EffectiveLimits,
    tcp?: Mat4,
  ) {
    this.tcp = tcp ?? mat4Identity();
    this.geo = compileGeometry(robot, limits, tcp);
    const n = this.geo.bodies.length * this.geo.stride;
    this.clear = new Float64Array(n);
    this.floor = new Float64Array(n).fill(-1e-9);
    this.qBuf = new Float64Array(limits.jointNames.length);
    this.ringT = new Float64Array(RING);
    this.ringQ = new Float64Array(RING * limits.jointNames.length);
  }

  /**
   * Arm the monitor for a motion (or a hold when `traj` is null) from the measured `start`.
   * Keep-out floors come from the start configuration: a robot that already intrudes may
   * leave, but not go deeper. Clears a latched stop. Setup: allocates nothing per tick later.
   * @param opts.realtime arm the command watchdog (realtime setting)
   */
  begin(start: JointReading, traj: JointTrajectory | null, opts: { realtime?: boolean } = {}): void {
    this.traj = traj;
    this.latched = null;
    this.lastReadingT = start.t;
    this.lastCommandT = start.t;
    this.watchdogArmed = opts.realtime === true;
    this.ticksSinceFk = 0;
    // the ring spans chunks (readings continue across them); a clock that went back starts it anew
    if (this.ringCount > 0 && start.t < this.ringT[this.ringHead]!) this.ringCount = 0;
    this.spuriousVelocity = 0;
    this.remember(start);
    evalClearances(this.geo, this.fkOf(start.q), this.scratch, this.clear);
    allowedFloor(this.clear, this.floor);
  }

  /** The latched stop verdict, if any. */
  get stopped(): StopVerdict | null {
    return this.latched;
  }

  /**
   * Judge one measured reading. Control loop: allocation-free while "ok".
   * @param sampleIndex index of the commanded sample this reading belongs to (−1 or omitted: none)
   * @param commanded the commanded joint target this reading is judged against instead of the
   *   trajectory's sample (the realtime setting: the target of the control step the reading
   *   belongs to, that step as `sampleIndex`)
   */
  tick(reading: JointReading, sampleIndex = -1, commanded?: ArrayLike<number>): MonitorVerdict {
    if (this.latched) return this.latched;
    const L = this.limits;
    const t = reading.t;
    if (!Number.isNaN(this.lastReadingT)) {
      const gapMs = (t - this.lastReadingT) * 1000;
      if (gapMs > L.staleReadingTimeoutMs)
        return this.stop({ kind: "stale_reading", t, gapMs, limitMs: L.staleReadingTimeoutMs }, "fault");
    }
    this.lastReadingT = t;
    const q = reading.q;
    const dq = reading.dq;
    const dof = L.jointNames.length;
    const ref = this.velocityReference(t);
    this.remember(reading);
    let spurious = false;
    for (let j = 0; j < dof; j++) {
      const qj = q[j]!;
      if (qj < L.hardLowerRad[j]! || qj > L.hardUpperRad[j]!) {
        const limit = qj < L.hardLowerRad[j]! ? L.hardLowerRad[j]! : L.hardUpperRad[j]!;
        return this.stop({ kind: "position", t, joint: L.jointNames[j]!, value: qj, limit }, "safety_stop");
      }
      const limit = L.monitorMaxVelocityRadps[j]!;
      if (ref >= 0) {
        const spanS = t - this.ringT[ref]!;
        const v = (qj - this.ringQ[ref * dof + j]!) / spanS;
        if (Math.abs(v) > limit)
          return this.stop(
            {
              kind: "velocity",
              t,
              joint: L.jointNames[j]!,
              value: v,
              limit,
              reported: dq[j]!,
              windowS: spanS,
            },
            "safety_stop",
          );
      }
      if (Math.abs(dq[j]!) > limit) spurious = true;
    }
    if (spurious) this.spuriousVelocity++;
    const traj = this.traj;
    const target = commanded ?? (traj && sampleIndex >= 0 && sampleIndex < traj.count ? traj.q : undefined);
    if (target) {
      const base = commanded ? 0 : sampleIndex * dof;
      for (let j = 0; j < dof; j++) {
        const e = q[j]! - target[base + j]!;
        if (Math.abs(e) > L.trackingErrorBoundRad)
          return this.stop(
            {
              kind: "tracking_error",
              t,
              joint: L.jointNames[j]!,
              sampleIndex,
              value: e,
              limit: L.trackingErrorBoundRad,
            },
            "safety_stop",
          );
      }
    }
    if (++this.ticksSinceFk >= L.monitorFkEveryTicks) {
      this.ticksSinceFk = 0;
      // with the floors given, pairs whose cheap lower bound already clears them skip the exact
      // distance: the verdict is the same, the cost lower
      evalClearances(this.geo, this.fkOf(q), this.scratch, this.clear, this.floor);
      const n = this.clear.length;
      for (let p = 0; p < n; p++) {
        const c = this.clear[p]!;
        if (c < this.floor[p]!) {
          const body = this.geo.bodies[Math.floor(p / this.geo.stride)]!;
          const slot = p % this.geo.stride;
          const inWs = slot === 0;
          return this.stop(
            {
              kind: inWs ? "workspace" : "keep_out",
              t,
              link: body.link,
              volume: inWs ? "workspace" : this.geo.volumes[slot - 1]!.name,
              value: c,
              limit: this.floor[p]!,
            },
            "safety_stop",
          );
        }
      }
    }
    return "ok";
  }

  /** Realtime: a command went to the drives at backend time `t` (feeds the watchdog). Control loop. */
  noteCommand(t: number): void {
    this.lastCommandT = t;
  }

  /**
   * Time-driven checks, for a timer on the backend clock (a missing reading never calls tick):
   * stale readings and, when armed, the command watchdog. Control loop: allocation-free while "ok".
   */
  checkTime(nowS: number): MonitorVerdict {
    if (this.latched) return this.latched;
    const L = this.limits;
    if (!Number.isNaN(this.lastReadingT)) {
      const gapMs = (nowS - this.lastReadingT) * 1000;
      if (gapMs > L.staleReadingTimeoutMs)
        return this.stop(
          { kind: "stale_reading", t: nowS, gapMs, limitMs: L.staleReadingTimeoutMs },
          "fault",
        );
    }
    if (this.watchdogArmed && !Number.isNaN(this.lastCommandT)) {
      const gapMs = (nowS - this.lastCommandT) * 1000;
      if (gapMs > L.commandWatchdogMs)
        return this.stop({ kind: "command_watchdog", t: nowS, gapMs, limitMs: L.commandWatchdogMs }, "fault");
    }
    return "ok";
  }

  /**
   * Judge a sensor event. A device fault always stops (end reason "fault"); a closed contact
   * or a collision stops when listed in the profile's stopOnEvents; anything else is "ok".
   */
  onEvent(e: SensorEvent): MonitorVerdict {
    if (this.latched) return this.latched;
    switch (e.type) {
      case "fault":
        return this.stop({ kind: "device_fault", t: e.t, device: e.device, message: e.message }, "fault");
      case "contact":
        if (e.closed && this.limits.stopOnEvents.includes("contact"))
          return this.stop(
            { kind: "task_event", t: e.t, event: "contact", source: e.source, detail: "circuit closed" },
            "task_failed",
          );
        return "ok";
      case "collision":
        if (this.limits.stopOnEvents.includes("collision"))
          return this.stop(
            {
              kind: "task_event",
              t: e.t,
              event: "collision",
              source: e.source,
              detail: `${e.link} hit ${e.other}`,
            },
            "safety_stop",
          );
        return "ok";
      case "instrument":
        return "ok";
    }
  }

  /** Keep a reading in the ring (allocation-free); one not newer than the newest is skipped. */
  private remember(r: JointReading): void {
    if (this.ringCount > 0 && r.t <= this.ringT[this.ringHead]!) return;
    const dof = this.limits.jointNames.length;
    const h = (this.ringHead + 1) % RING;
    this.ringHead = h;
    if (this.ringCount < RING) this.ringCount++;
    this.ringT[h] = r.t;
    for (let j = 0; j < dof; j++) this.ringQ[h * dof + j] = r.q[j]!;
  }

  /**
   * Ring slot of the newest remembered reading at least the window older than `t` (else the
   * oldest one, if it is at least half a window older); −1 when there is none: too short a span
   * would turn timestamp jitter into velocity.
   */
  private velocityReference(t: number): number {
    const w = this.limits.monitorVelocityWindowS;
    let best = -1;
    for (let k = 0; k < this.ringCount; k++) {
      const slot = (this.ringHead - k + RING) % RING;
      const age = t - this.ringT[slot]!;
      if (age >= w / 2) best = slot;
      if (age >= w) break;
    }
    return best;
  }

  private stop(cause: StopCause, endReason: EndReason): StopVerdict {
    this.latched = { stop: true, cause, endReason };
    return this.latched;
  }

  private fkOf(q: readonly number[]): Mat4[] {
    for (let j = 0; j < this.qBuf.length; j++) this.qBuf[j] = q[j]!;
    return forwardKinematicsInto(this.robot, this.qBuf, this.fk, this.tcp);
  }
}
