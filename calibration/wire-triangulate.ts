/**
 * The wire seen by two calibrated fixed cameras, triangulated (issue 11, item 5's optional
 * refinement): what the colour images say about where the wire is, independent of depth, to set
 * beside the taught centreline.
 *
 * 1. In each camera's image the taught centreline (projected with the camera's calibration) says
 *    roughly where the wire is: at every few millimetres along it, the colour profile across the
 *    projected line (±`searchPx`) is searched for the wire — a narrow stripe that differs from the
 *    background on both sides (no assumption about its colour); the stripe's centre (sub-pixel)
 *    is a wire point of that image. Profiles whose two ends differ (an edge of the arm, a post) or
 *    without a narrow stripe are left out, and so is the loop's neighbourhood (it sits on the
 *    wire).
 * 2. For a pair of cameras A, B: each wire point of A and the camera centres span its epipolar
 *    plane; where B's wire points cross that plane (between two neighbours, their rays
 *    interpolated) is the same wire point seen by B. The two rays are triangulated (midpoint of
 *    their closest approach). Crossings at a grazing angle (B's wire nearly in the plane) and
 *    rays closer than 10° are left out.
 * 3. The triangulated points' distances from the taught centreline are the disagreement.
 * With no pair given, every pair of fixed cameras is tried and the one with the most points kept.
 */
import {
  type Mat4,
  mat4Column,
  mat4Mul,
  mat4Point,
  mat4RigidInverse,
  poseToMat4,
  type Vec3,
  vadd,
  vcross,
  vdot,
  vnorm,
  vscale,
  vsub,
  vunit,
} from "../robots/math.ts";
import { CodedError } from "../seam/errors.ts";
import type { BenchApi } from "./api-client.ts";
import type { ImageU8 } from "./board-detect.ts";
import { parseDistortion, undistortPoint } from "./distortion.ts";
import { intrinsicsOf, projectCameraPoint } from "./projection.ts";
import type { Calibration, CameraCalibration } from "./schema.ts";
import { centreline, pointAt, tangentAt } from "./wire-geometry.ts";
import { centrelineDistance } from "./wire-teach.ts";

export interface TriangulatedWire {
  cameras: [string, string];
  /** wire points found in each camera's image */
  detected: [number, number];
  /** wire points triangulated from both, base frame */
  pointsBase: Vec3[];
  /** their distances from the taught centreline, mm (NaN when none) */
  rmsMm: number;
  medianMm: number;
  maxMm: number;
}

export interface TriangulateOptions {
  /** the two fixed cameras (default: the pair with the most triangulated points) */
  cameras?: [string, string];
  /** how far across the projected centreline the wire is searched, px (default 10) */
  searchPx?: number;
  /** spacing of the searched profiles along the taught centreline, m (default 0.002) */
  stepM?: number;
}

/** A wire point of one image: pixel, its ray (base frame, unit) and the centreline arc length it came from. */
interface ImagePoint {
  sM: number;
  ray: Vec3;
}

interface View {
  cam: CameraCalibration;
  /** camera centre, base frame */
  centre: Vec3;
  points: ImagePoint[];
}

/** The wire triangulated from two calibrated fixed cameras' colour images, against `pointsBase` (the taught centreline). */
export async function triangulateWire(
  api: BenchApi,
  cal: Calibration,
  pointsBase: readonly Vec3[],
  opts: TriangulateOptions = {},
): Promise<TriangulatedWire> {
  const fixed = cal.cameras.filter((c) => c.extrinsics.mount === "world");
  const names = opts.cameras ?? fixed.map((c) => c.name);
  const cams = names.map((n) => {
    const c = fixed.find((x) => x.name === n);
    if (!c)
      throw new CodedError("RB_ERR_CALIB_BAD_INPUT", {
        what: "camera",
        reason: `no fixed camera "${n}" in the calibration file (have: ${fixed.map((x) => x.name).join(", ")})`,
      });
    return c;
  });
  if (cams.length < 2)
    throw new CodedError("RB_ERR_CALIB_TOO_FEW_POINTS", {
      procedure: "wire triangulation",
      got: cams.length,
      what: "fixed cameras",
      needed: 2,
    });
  const { reading, images } = await api.capture(cams.map((c) => c.name));
  const flange = poseToMat4((await api.fk(reading.q)).flange);
  const loopCentre = mat4Column(mat4Mul(flange, poseToMat4(cal.tool.loopPoseFlange)), 3);
  const keepAway = cal.tool.loopInnerRadiusM + cal.tool.handleLengthM + 0.01;
  const baseFromWorld = mat4RigidInverse(poseToMat4(cal.robotBasePoseWorld));
  const views = cams.map((cam) => {
    const ext = cam.extrinsics as Extract<CameraCalibration["extrinsics"], { mount: "world" }>;
    const baseFromCam = mat4Mul(baseFromWorld, poseToMat4(ext.poseWorld));
    const img = images.get(cam.name);
    const points = img
      ? findWire(cam, img, baseFromCam, pointsBase, {
          searchPx: opts.searchPx ?? 10,
          stepM: opts.stepM ?? 0.002,
          skip: (p) => vnorm(vsub(p, loopCentre)) < keepAway,
        })
      : [];
    return { cam, centre: mat4Column(baseFromCam, 3), points } satisfies View;
  });
  let best: TriangulatedWire | undefined;
  for (let i = 0; i < views.length; i++)
    for (let j = i + 1; j < views.length; j++) {
      const pts = triangulatePair(views[i]!, views[j]!);
      if (!best || pts.length > best.pointsBase.length)
        best = {
          cameras: [views[i]!.cam.name, views[j]!.cam.name],
          detected: [views[i]!.points.length, views[j]!.points.length],
          pointsBase: pts,
          ...disagreement(pts, pointsBase),
        };
    }
  return best!;
}

function disagreement(pts: readonly Vec3[], line: readonly Vec3[]) {
  if (pts.length === 0) return { rmsMm: Number.NaN, medianMm: Number.NaN, maxMm: Number.NaN };
  const d = pts.map((p) => centrelineDistance([p], line).maxM * 1000).sort((a, b) => a - b);
  return {
    rmsMm: Math.sqrt(d.reduce((s, x) => s + x * x, 0) / d.length),
    medianMm: d[Math.floor(d.length / 2)]!,
    maxMm: d[d.length - 1]!,
  };
}

/** Wire points of one image, searched across the projected centreline. */
function findWire(
  cam: CameraCalibration,
  img: ImageU8,
  baseFromCam: Mat4,
  pointsBase: readonly Vec3[],
  o: { searchPx: number; stepM: number; skip: (p: Vec3) => boolean },
): ImagePoint[] {
  const intr = intrinsicsOf(cam, img);
  const camFromBase = mat4RigidInverse(baseFromCam);
  const dist = parseDistortion(intr.distortion);
  const line = centreline(pointsBase);
  const out: ImagePoint[] = [];
  const n = Math.max(2, Math.ceil(line.lengthM / o.stepM));
  const half = 0.5; // profile sample spacing, px
  const R = Math.round(o.searchPx / half);
  for (let k = 0; k <= n; k++) {
    const s = (line.lengthM * k) / n;
    const p = pointAt(line, s);
    if (o.skip(p)) continue;
    const a = projectCameraPoint(intr, mat4Point(camFromBase, p));
    const b = projectCameraPoint(intr, mat4Point(camFromBase, vadd(p, vscale(tangentAt(line, s), 0.002))));
    if (!a?.inImage || !b) continue;
    const du = b.u - a.u;
    const dv = b.v - a.v;
    const len = Math.hypot(du, dv);
    if (len < 1e-6) continue; // the wire points at the camera here
    const nu = -dv / len;
    const nv = du / len;
    const prof: number[][] = [];
    for (let i = -R; i <= R; i++) {
      const c = bilinear(img, a.u + i * half * nu, a.v + i * half * nv);
      if (!c) break;
      prof.push(c);
    }
    if (prof.length !== 2 * R + 1) continue;
    const off = stripeCentre(prof);
    if (off === null) continue;
    const u = a.u + (off - R) * half * nu;
    const v = a.v + (off - R) * half * nv;
    let xn = (u - intr.cx) / intr.fx;
    let yn = (v - intr.cy) / intr.fy;
    if (dist) {
      const un = undistortPoint(dist, xn, yn, 1e-7);
      if (!un) continue;
      [xn, yn] = un;
    }
    const rc = vunit([xn, yn, 1]);
    out.push({ sM: s, ray: vunit(vsub(mat4Point(baseFromCam, rc), mat4Column(baseFromCam, 3))) });
  }
  return out;
}

/**
 * The centre (profile index, sub-sample) of a narrow stripe unlike the background at both ends,
 * or null: the ends (first and last 4 samples) must agree, the most different sample must stand
 * out from them by 40 (RGB distance, 0…441), and the part that stands out by half of that must be
 * narrower than a third of the profile and one piece.
 */
function stripeCentre(prof: readonly number[][]): number | null {
  const m = prof.length;
  const mean = (xs: readonly number[][]) =>
    [0, 1, 2].map((c) => xs.reduce((s, x) => s + x[c]!, 0) / xs.length);
  const left = mean(prof.slice(0, 4));
  const right = mean(prof.slice(m - 4));
  const diff = (x: readonly number[], y: readonly number[]) =>
    Math.hypot(x[0]! - y[0]!, x[1]! - y[1]!, x[2]! - y[2]!);
  if (diff(left, right) > 25) return null;
  const bg = left.map((v, c) => (v + right[c]!) / 2);
  const d = prof.map((x) => diff(x, bg));
  let k = 0;
  for (let i = 1; i < m; i++) if (d[i]! > d[k]!) k = i;
  if (d[k]! < 40 || k === 0 || k === m - 1) return null;
  const halfMax = d[k]! / 2;
  let lo = k;
  while (lo > 0 && d[lo - 1]! >= halfMax) lo--;
  let hi = k;
  while (hi < m - 1 && d[hi + 1]! >= halfMax) hi++;
  if (hi - lo + 1 > m / 3) return null;
  for (let i = 0; i < m; i++) if ((i < lo || i > hi) && d[i]! >= halfMax) return null;
  // centroid of what stands out (the stripe's centre, sub-sample)
  let w = 0;
  let c = 0;
  for (let i = lo; i <= hi; i++) {
    w += d[i]!;
    c += d[i]! * i;
  }
  return c / w;
}

/** RGB at a sub-pixel position (pixel centres at integers), or null outside the image. */
function bilinear(img: ImageU8, u: number, v: number): number[] | null {
  const x0 = Math.floor(u);
  const y0 = Math.floor(v);
  if (x0 < 0 || y0 < 0 || x0 + 1 >= img.width || y0 + 1 >= img.height) return null;
  const fx = u - x0;
  const fy = v - y0;
  const ch = img.channels;
  const at = (x: number, y: number, c: number) => img.data[(y * img.width + x) * ch + (ch === 1 ? 0 : c)]!;
  return [0, 1, 2].map(
    (c) =>
      at(x0, y0, c) * (1 - fx) * (1 - fy) +
      at(x0 + 1, y0, c) * fx * (1 - fy) +
      at(x0, y0 + 1, c) * (1 - fx) * fy +
      at(x0 + 1, y0 + 1, c) * fx * fy,
  );
}

const MIN_RAY_ANGLE = (10 * Math.PI) / 180;
const MIN_CROSSING_SIN = Math.sin((20 * Math.PI) / 180);

/** Triangulated wire points of views A and B (epipolar crossings of A's points with B's wire). */
function triangulatePair(A: View, B: View): Vec3[] {
  const base = vsub(B.centre, A.centre);
  const out: Vec3[] = [];
  for (const a of A.points) {
    const nE = vcross(base, a.ray);
    const nn = vnorm(nE);
    if (nn < 1e-9) continue;
    const ne = vscale(nE, 1 / nn);
    for (let j = 0; j + 1 < B.points.length; j++) {
      const b0 = B.points[j]!;
      const b1 = B.points[j + 1]!;
      // neighbours along the wire only (a gap in B's points is no crossing), near A's point
      if (b1.sM - b0.sM > 0.006 || Math.abs(b0.sM - a.sM) > 0.03) continue;
      const s0 = vdot(b0.ray, ne);
      const s1 = vdot(b1.ray, ne);
      if (s0 === s1 || Math.sign(s0) === Math.sign(s1)) continue;
      const step = vsub(b1.ray, b0.ray);
      if (Math.abs(s1 - s0) / vnorm(step) < MIN_CROSSING_SIN) continue; // B's wire grazes the plane
      const t = s0 / (s0 - s1);
      const rb = vunit(vadd(b0.ray, vscale(step, t)));
      const p = midpoint(A.centre, a.ray, B.centre, rb);
      if (p) out.push(p);
      break;
    }
  }
  return out;
}

/** Midpoint of the closest approach of two rays (origin, unit direction), null when too parallel or behind. */
function midpoint(ca: Vec3, ra: Vec3, cb: Vec3, rb: Vec3): Vec3 | null {
  const c = vdot(ra, rb);
  if (Math.acos(Math.min(1, Math.abs(c))) < MIN_RAY_ANGLE) return null;
  const w = vsub(ca, cb);
  const d = vdot(ra, w);
  const e = vdot(rb, w);
  const den = 1 - c * c;
  const ta = (c * e - d) / den;
  const tb = (e - c * d) / den;
  if (!(ta > 0 && tb > 0)) return null;
  return vscale(vadd(vadd(ca, vscale(ra, ta)), vadd(cb, vscale(rb, tb))), 0.5);
}
