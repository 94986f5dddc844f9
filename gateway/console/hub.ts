/**
 * The operator console's live view of the bench: what the arm, the cameras, the buzz box, the
 * safety supervisor and the episode are doing, built on demand for whoever watches.
 *
 * Cost when nobody watches: none in the control loop. The hub has no per-reading hook: its
 * episode observer keeps only the rare events (safety, start, end) in small rings, and its
 * backend listener the sensor events (contact edges, device faults, link changes — a few per
 * trial). Readings are sampled by the viewers' own poll (`backend.read()`, the latest measured
 * state); images are captured on a viewer's request. bench/console-cost.ts measures both claims.
 *
 * The sensor events come from the backend itself, not from the episode, so the buzz box's
 * contact and link are live between episodes too (a contact that opens while the arm is driven
 * home is seen).
 */
import { projectCameraPoint } from "../../calibration/projection.ts";
import { worldFromCamera } from "../../calibration/camera-pose.ts";
import { jacobian } from "../../robots/franka/jacobian.ts";
import { forwardKinematics } from "../../robots/franka/kinematics.ts";
import { mat4Mul, mat4Point, mat4RigidInverse, poseToMat4 } from "../../robots/math.ts";
import type { Backend, SensorEvent } from "../../seam/types.ts";
import type { TwinView } from "../bench.ts";
import type { Mat4 } from "../../robots/math.ts";
import type { EpisodeObserver } from "../episode/observer.ts";
import type { EpisodeView as Episode, SafetyEventDto } from "../episode/view.ts";
import { episodeSummary } from "../episode/summary.ts";
import type { EffectiveLimits } from "../safety/profile.ts";
import { r6 } from "../time.ts";

/** How many recent events the console keeps (sensor and safety each). */
const RING = 50;
/** How many tool positions of the current episode the overlay keeps. */
const TRACK = 4000;
/** A tool position joins the path once it is this far from the last one kept, m. */
const TRACK_STEP_M = 0.001;

export interface LiveEvent {
  /** the episode whose clock `t` is on (its id's first 8 characters); none: backend seconds */
  episode?: string;
  /** episode seconds (or backend seconds before the first episode) */
  t: number;
  kind: string;
  message: string;
}

function push<T>(ring: T[], v: T, max: number): void {
  ring.push(v);
  if (ring.length > max) ring.splice(0, ring.length - max);
}

/** What the live view reads of the gateway (the Gateway fits it). */
export interface LiveSource {
  readonly bench: {
    readonly name: string;
    readonly backend: Backend;
    /** a shadow twin beside the bench (sim and real side by side) */
    readonly twin?: TwinView;
    readonly toolFromFlange: Mat4;
    readonly limits: EffectiveLimits;
    limitsFor(seed: number): EffectiveLimits;
  };
  readonly episode: Episode | undefined;
  readonly estop: { engaged: boolean; reason?: string; since?: string };
}

export class ConsoleHub {
  private viewers = 0;
  private readonly sensor: LiveEvent[] = [];
  private readonly safety: LiveEvent[] = [];
  private contactClosed = false;
  private contactSource: string | undefined;
  /** link state per device, from `<device>.link` instrument events and device faults */
  private readonly links = new Map<string, boolean>();
  private episodeNow: () => Episode | undefined = () => undefined;
  private detach: (() => void) | undefined;
  private trackEpisode: string | undefined;
  private readonly track: number[][] = [];
  private lastTrackT = Number.NEGATIVE_INFINITY;
  /** the path projected into each world camera, as far as `track` is projected (`projected` points) */
  private readonly overlay = new Map<string, { projected: number; px: [number, number][] }>();

  /** Attached to every episode by the composition; cheap enough to run when nobody watches. */
  readonly observer: EpisodeObserver = {
    onStart: (ep) => {
      this.track.length = 0;
      this.overlay.clear();
      this.trackEpisode = ep.id;
      this.lastTrackT = Number.NEGATIVE_INFINITY;
    },
    onSafety: (ep, e: SafetyEventDto) =>
      push(this.safety, { episode: ep.id.slice(0, 8), t: e.t, kind: e.kind, message: e.message }, RING),
    onEnd: (ep) =>
      push(
        this.safety,
        {
          episode: ep.id.slice(0, 8),
          t: r6(ep.t()),
          kind: "episode_end",
          message: `${ep.endReason}${ep.endDetail ? `: ${ep.endDetail}` : ""}`,
        },
        RING,
      ),
  };

  /**
   * Listen to the bench's sensor events (contact, faults, link changes); `episode` names the
   * running or last episode, whose clock the events are shown on. Once per hub.
   */
  attach(backend: Backend, episode: () => Episode | undefined): void {
    if (this.detach) throw new Error("the console hub is already attached to a backend");
    this.episodeNow = episode;
    this.detach = backend.onEvent((e) => this.onSensor(e));
  }

  /** Stop listening (the gateway shuts down). */
  close(): void {
    this.detach?.();
    this.detach = undefined;
  }

  /** A viewer connected; returns the function that disconnects it. */
  watch(): () => void {
    this.viewers++;
    let done = false;
    return () => {
      if (!done) this.viewers--;
      done = true;
    };
  }

  get watching(): number {
    return this.viewers;
  }

  private onSensor(e: SensorEvent): void {
    // episode seconds of the running or last episode; backend seconds before the first
    const ep = this.episodeNow();
    const at = ep ? { episode: ep.id.slice(0, 8), t: r6(e.t - ep.t0S) } : { t: r6(e.t) };
    switch (e.type) {
      case "contact":
        this.contactClosed = e.closed;
        this.contactSource = e.source;
        push(
          this.sensor,
          { ...at, kind: "contact", message: `${e.closed ? "closed" : "open"} (${e.source})` },
          RING,
        );
        return;
      case "collision":
        push(this.sensor, { ...at, kind: "collision", message: `${e.link} × ${e.other}` }, RING);
        return;
      case "fault":
        this.links.set(e.device, false);
        push(this.sensor, { ...at, kind: "fault", message: `${e.device}: ${e.message}` }, RING);
        return;
      case "instrument": {
        if (!e.name.endsWith(".link")) return;
        const up = e.values.up === 1;
        this.links.set(e.name.slice(0, -".link".length), up);
        push(this.sensor, { ...at, kind: "link", message: `${e.name} ${up ? "up" : "down"}` }, RING);
        return;
      }
    }
  }

  /**
   * The live state for the operator: measured joints against their limits, tool position and
   * speed, safety state and events, buzz box, episode status and time left, and (operator only)
   * the live progress and the tool path projected into every world-fixed camera.
   */
  snapshot(gw: LiveSource) {
    const bench = gw.bench;
    const desc = bench.backend.describe();
    const robot = desc.robot;
    const reading = bench.backend.read();
    const toolFromFlange = bench.toolFromFlange;
    const fk = forwardKinematics(robot, reading.q, toolFromFlange);
    const base = poseToMat4(desc.basePose);
    const toolBase: number[] = [...fk.tool.xyz];
    const J = jacobian(robot, reading.q, toolFromFlange);
    let vx = 0;
    let vy = 0;
    let vz = 0;
    for (let c = 0; c < 7; c++) {
      const d = reading.dq[c] ?? 0;
      vx += J[c]! * d;
      vy += J[7 + c]! * d;
      vz += J[14 + c]! * d;
    }
    const ep = gw.episode;
    const limits = ep ? bench.limitsFor(ep.config.seed) : bench.limits;
    if (ep && !ep.isEnded && ep.id === this.trackEpisode) {
      const t = ep.t();
      const last = this.track.at(-1);
      const far =
        !last ||
        Math.hypot(toolBase[0]! - last[0]!, toolBase[1]! - last[1]!, toolBase[2]! - last[2]!) >= TRACK_STEP_M;
      if (t > this.lastTrackT + 1e-3 && far) {
        if (this.track.length >= TRACK) {
          // full: keep every other point (the path stays whole, at half the density)
          const kept = this.track.filter((_, i) => i % 2 === 0);
          this.track.length = 0;
          this.track.push(...kept);
          this.overlay.clear();
        }
        this.track.push(toolBase);
        this.lastTrackT = t;
      }
    }
    const toolWorld = mat4Point(base, toolBase);
    // project only the points added since the last snapshot
    const overlays: Record<string, [number, number][]> = {};
    for (const cam of desc.cameras) {
      if (cam.frame !== "world") continue;
      let o = this.overlay.get(cam.name);
      if (!o) this.overlay.set(cam.name, (o = { projected: 0, px: [] }));
      if (o.projected < this.track.length) {
        const cameraFromBase = mat4Mul(mat4RigidInverse(worldFromCamera(cam, null)), base);
        for (let i = o.projected; i < this.track.length; i++) {
          const pr = projectCameraPoint(cam, mat4Point(cameraFromBase, this.track[i]!));
          if (pr?.inImage) o.px.push([Math.round(pr.u * 10) / 10, Math.round(pr.v * 10) / 10]);
        }
        o.projected = this.track.length;
      }
      overlays[cam.name] = o.px;
    }
    const score = ep ? ep.config.judge.score() : undefined;
    return {
      bench: bench.name,
      backend: { kind: bench.backend.kind, lifecycle: bench.backend.lifecycle },
      control_period_s: desc.controlPeriodS,
      estop: gw.estop,
      joints: robot.joints.map((j, i) => ({
        name: j.name,
        q: r6(reading.q[i] ?? 0),
        dq: r6(reading.dq[i] ?? 0),
        lower: limits.lowerRad[i] ?? j.lower,
        upper: limits.upperRad[i] ?? j.upper,
        max_velocity: limits.maxVelocityRadps[i] ?? j.maxVelocity,
      })),
      gripper_width_m: r6(reading.gripperWidthM),
      tool: {
        xyz_world: toolWorld.map(r6),
        speed_mps: r6(Math.hypot(vx, vy, vz)),
        max_speed_mps: limits.maxToolSpeedMps,
      },
      buzzbox: {
        contact: this.contactClosed,
        ...(this.contactSource ? { source: this.contactSource } : {}),
        // lamp and buzzer follow the contact in the box's automatic mode
        lamp: this.contactClosed,
        /** devices whose link was reported: false after a fault until the link is back */
        links: Object.fromEntries(this.links),
      },
      sensor_events: this.sensor.slice(-20),
      safety_events: this.safety.slice(-20),
      episode: ep
        ? {
            ...episodeSummary(ep),
            time_left_s: r6(ep.timeLeftS()),
            progress: score
              ? {
                  progress: r6(score.progress),
                  ...(score.progressQuantised !== undefined
                    ? { quantised: r6(score.progressQuantised) }
                    : {}),
                  stages: score.stages,
                }
              : null,
          }
        : null,
      cameras: desc.cameras.map((c) => ({ name: c.name, width: c.width, height: c.height, depth: c.depth })),
      tool_path_px: overlays,
      twin: bench.twin ? bench.twin.divergence() : null,
      viewers: this.viewers,
    };
  }
}

export type LiveState = ReturnType<ConsoleHub["snapshot"]>;
