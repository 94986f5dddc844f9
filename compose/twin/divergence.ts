/**
 * Sim-vs-real divergence: what a twin predicted against what the bench did, per chunk and per
 * trial. Pure accumulation (no backend access): joint tracking (RMS and max per joint), tool path
 * (mm), contact agreement (closing edges matched within a window; predicted-not-seen and the
 * reverse), progress along the wire, and image agreement per camera (wire and arm mask IoU).
 */
import { type Centreline, centreline } from "../../calibration/wire-geometry.ts";
import { fkWorkspace, forwardKinematicsInto } from "../../robots/franka/kinematics.ts";
import type { Mat4, Vec3 } from "../../robots/math.ts";
import type { RobotModel } from "../../robots/types.ts";
import type { Frame } from "../../seam/types.ts";

export interface ContactAgreement {
  /** closing edges on the bench ("real") side, s (backend time of the real bench) */
  real: number[];
  /** closing edges the twin predicted, s (mapped onto the real bench's clock) */
  twin: number[];
  /** pairs within the window: twin − real, s */
  matched: { real: number; twin: number; offsetS: number }[];
  /** predicted by the twin, not seen on the bench */
  predictedNotSeen: number[];
  /** seen on the bench, not predicted */
  seenNotPredicted: number[];
}

export interface ImageAgreement {
  camera: string;
  /** intersection over union of the wire masks (orange pixels); NaN when neither side has any */
  wireIoU: number;
  /** intersection over union of the arm masks (bright, unsaturated pixels) */
  armIoU: number;
  /** mean absolute RGB difference, DN */
  meanAbsRgb: number;
}

export interface DivergenceSummary {
  samples: number;
  joint: { rmsRad: number[]; maxRad: number[] };
  toolMm: { rms: number; max: number; final: number };
  contacts: ContactAgreement;
  /** progress along the wire (0…1 between the start and end marks) at the end; null without a wire */
  progress: { real: number; twin: number; diff: number } | null;
  images: ImageAgreement[];
}

export interface WireRef {
  pointsBase: readonly (readonly number[])[];
  startMarkM: number;
  endMarkM: number;
}

/** Accumulates one span (a chunk, or a whole trial when merged). */
export class DivergenceAccumulator {
  private n = 0;
  private readonly sq = new Float64Array(7);
  private readonly mx = new Float64Array(7);
  private toolSq = 0;
  private toolMax = 0;
  private toolFinal = 0;
  private readonly real: number[] = [];
  private readonly twin: number[] = [];
  private readonly images: ImageAgreement[] = [];
  private lastReal: number[] | null = null;
  private lastTwin: number[] | null = null;
  private readonly fkA = fkWorkspace();
  private readonly fkB = fkWorkspace();
  private readonly line: Centreline | null;

  constructor(
    private readonly robot: RobotModel,
    private readonly toolFromFlange: Mat4,
    private readonly wire: WireRef | null,
    private readonly contactWindowS = 0.1,
  ) {
    this.line = wire ? centreline(wire.pointsBase) : null;
  }

  /** one pair of measured joint states at the same sample (control loop: light) */
  addSample(qReal: ArrayLike<number>, qTwin: ArrayLike<number>): void {
    for (let j = 0; j < 7; j++) {
      const d = Math.abs(qReal[j]! - qTwin[j]!);
      this.sq[j] = this.sq[j]! + d * d;
      if (d > this.mx[j]!) this.mx[j] = d;
    }
    const a = forwardKinematicsInto(this.robot, qReal, this.fkA, this.toolFromFlange)[9]!;
    const b = forwardKinematicsInto(this.robot, qTwin, this.fkB, this.toolFromFlange)[9]!;
    const mm = 1000 * Math.hypot(a[3]! - b[3]!, a[7]! - b[7]!, a[11]! - b[11]!);
    this.toolSq += mm * mm;
    if (mm > this.toolMax) this.toolMax = mm;
    this.toolFinal = mm;
    this.n++;
    this.lastReal = Array.from(qReal);
    this.lastTwin = Array.from(qTwin);
  }

  contact(side: "real" | "twin", t: number): void {
    (side === "real" ? this.real : this.twin).push(t);
  }

  addImages(real: readonly Frame[], twin: readonly Frame[]): void {
    for (const f of real) {
      const g = twin.find((x) => x.camera === f.camera);
      if (g) this.images.push(imageAgreement(f, g));
    }
  }

  summary(): DivergenceSummary {
    const n = Math.max(1, this.n);
    return {
      samples: this.n,
      joint: {
        rmsRad: Array.from(this.sq, (s) => Math.sqrt(s / n)),
        maxRad: Array.from(this.mx),
      },
      toolMm: { rms: Math.sqrt(this.toolSq / n), max: this.toolMax, final: this.toolFinal },
      contacts: matchContacts(this.real, this.twin, this.contactWindowS),
      progress:
        this.line && this.wire && this.lastReal && this.lastTwin
          ? (() => {
              const real = this.progressOf(this.lastReal);
              const twin = this.progressOf(this.lastTwin);
              return { real, twin, diff: twin - real };
            })()
          : null,
      images: [...this.images],
    };
  }

  /** fold another span into this one (chunks → trial) */
  merge(o: DivergenceAccumulator): void {
    for (let j = 0; j < 7; j++) {
      this.sq[j] = this.sq[j]! + o.sq[j]!;
      this.mx[j] = Math.max(this.mx[j]!, o.mx[j]!);
    }
    this.toolSq += o.toolSq;
    this.toolMax = Math.max(this.toolMax, o.toolMax);
    if (o.n > 0) {
      this.toolFinal = o.toolFinal;
      this.lastReal = o.lastReal;
      this.lastTwin = o.lastTwin;
    }
    this.n += o.n;
    this.real.push(...o.real);
    this.twin.push(...o.twin);
    this.images.push(...o.images);
  }

  private progressOf(q: readonly number[]): number {
    const tool = forwardKinematicsInto(this.robot, q, this.fkA, this.toolFromFlange)[9]!;
    const p: Vec3 = [tool[3]!, tool[7]!, tool[11]!];
    const c = this.line!;
    let best = Number.POSITIVE_INFINITY;
    let bestS = 0;
    for (let i = 0; i + 1 < c.points.length; i++) {
      const a = c.points[i]!;
      const b = c.points[i + 1]!;
      const ab = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
      const l2 = ab[0]! ** 2 + ab[1]! ** 2 + ab[2]! ** 2;
      const u =
        l2 > 0
          ? Math.min(
              1,
              Math.max(0, ((p[0] - a[0]) * ab[0]! + (p[1] - a[1]) * ab[1]! + (p[2] - a[2]) * ab[2]!) / l2),
            )
          : 0;
      const d = Math.hypot(p[0] - a[0] - u * ab[0]!, p[1] - a[1] - u * ab[1]!, p[2] - a[2] - u * ab[2]!);
      if (d < best) {
        best = d;
        bestS = c.arcM[i]! + u * Math.sqrt(l2);
      }
    }
    const w = this.wire!;
    const span = w.endMarkM - w.startMarkM;
    return span > 0 ? Math.min(1, Math.max(0, (bestS - w.startMarkM) / span)) : 0;
  }
}

/** Greedy in time order: each real closing edge takes the nearest unmatched twin edge within the window. */
export function matchContacts(
  real: readonly number[],
  twin: readonly number[],
  windowS: number,
): ContactAgreement {
  const used = new Set<number>();
  const matched: ContactAgreement["matched"] = [];
  const seenNotPredicted: number[] = [];
  for (const r of [...real].sort((a, b) => a - b)) {
    let best = -1;
    for (let k = 0; k < twin.length; k++) {
      if (used.has(k) || Math.abs(twin[k]! - r) > windowS) continue;
      if (best < 0 || Math.abs(twin[k]! - r) < Math.abs(twin[best]! - r)) best = k;
    }
    if (best < 0) seenNotPredicted.push(r);
    else {
      used.add(best);
      matched.push({ real: r, twin: twin[best]!, offsetS: twin[best]! - r });
    }
  }
  const predictedNotSeen = twin.filter((_, k) => !used.has(k));
  return { real: [...real], twin: [...twin], matched, predictedNotSeen, seenNotPredicted };
}

/** the wire: orange (red dominant, green well above blue), as the example agent segments it */
function isWire(r: number, g: number, b: number): boolean {
  return r > 60 && r * 10 > g * 13 && g * 10 > r * 3.5 && g > 2 * b + 8;
}
/** the arm: bright and unsaturated */
function isArm(r: number, g: number, b: number): boolean {
  return r > 200 && g > 200 && b > 200 && Math.max(r, g, b) - Math.min(r, g, b) < 25;
}

/** Mask overlap and mean absolute difference of two raw frames of one camera. */
export function imageAgreement(real: Frame, twin: Frame): ImageAgreement {
  const a = real.rgb;
  const b = twin.rgb;
  if (a.kind !== "raw" || b.kind !== "raw" || a.width !== b.width || a.height !== b.height)
    return { camera: real.camera, wireIoU: Number.NaN, armIoU: Number.NaN, meanAbsRgb: Number.NaN };
  let wi = 0;
  let wu = 0;
  let ai = 0;
  let au = 0;
  let abs = 0;
  const x = a.data;
  const y = b.data;
  for (let i = 0; i < x.length; i += 3) {
    const r0 = x[i]!;
    const g0 = x[i + 1]!;
    const b0 = x[i + 2]!;
    const r1 = y[i]!;
    const g1 = y[i + 1]!;
    const b1 = y[i + 2]!;
    abs += Math.abs(r0 - r1) + Math.abs(g0 - g1) + Math.abs(b0 - b1);
    const w0 = isWire(r0, g0, b0);
    const w1 = isWire(r1, g1, b1);
    if (w0 && w1) wi++;
    if (w0 || w1) wu++;
    const m0 = isArm(r0, g0, b0);
    const m1 = isArm(r1, g1, b1);
    if (m0 && m1) ai++;
    if (m0 || m1) au++;
  }
  return {
    camera: real.camera,
    wireIoU: wu > 0 ? wi / wu : Number.NaN,
    armIoU: au > 0 ? ai / au : Number.NaN,
    meanAbsRgb: abs / x.length,
  };
}

/** A short text table of a summary (reports, CLI). */
export function formatDivergence(label: string, s: DivergenceSummary): string {
  const f = (v: number, d = 2) => (Number.isFinite(v) ? v.toFixed(d) : "n/a");
  const lines = [
    `${label}: ${s.samples} samples`,
    `  joint RMS mrad  ${s.joint.rmsRad.map((v) => f(v * 1000)).join(" ")}`,
    `  joint max mrad  ${s.joint.maxRad.map((v) => f(v * 1000)).join(" ")}`,
    `  tool path mm    rms ${f(s.toolMm.rms)}  max ${f(s.toolMm.max)}  final ${f(s.toolMm.final)}`,
    `  contacts        real ${s.contacts.real.length}  twin ${s.contacts.twin.length}  matched ${s.contacts.matched.length}` +
      ` (mean offset ${f(mean(s.contacts.matched.map((m) => m.offsetS)) * 1000, 1)} ms)` +
      `  predicted-not-seen ${s.contacts.predictedNotSeen.length}  seen-not-predicted ${s.contacts.seenNotPredicted.length}`,
  ];
  if (s.progress)
    lines.push(
      `  progress        real ${f(s.progress.real, 3)}  twin ${f(s.progress.twin, 3)}  diff ${f(s.progress.diff, 3)}`,
    );
  const cams = [...new Set(s.images.map((i) => i.camera))];
  for (const c of cams) {
    const im = s.images.filter((i) => i.camera === c);
    lines.push(
      `  image ${c.padEnd(10)} wire IoU ${f(nanMean(im.map((i) => i.wireIoU)), 3)}  arm IoU ${f(nanMean(im.map((i) => i.armIoU)), 3)}  |ΔRGB| ${f(nanMean(im.map((i) => i.meanAbsRgb)), 1)} (${im.length} frames)`,
    );
  }
  return lines.join("\n");
}

function mean(v: readonly number[]): number {
  return v.length ? v.reduce((a, b) => a + b, 0) / v.length : Number.NaN;
}
function nanMean(v: readonly number[]): number {
  return mean(v.filter((x) => Number.isFinite(x)));
}

/** JSON-safe copy (NaN → null) for result files and records. */
export function divergenceJson(s: DivergenceSummary): unknown {
  return JSON.parse(JSON.stringify(s, (_k, v) => (typeof v === "number" && !Number.isFinite(v) ? null : v)));
}
