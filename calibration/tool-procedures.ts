/**
 * The tool-side calibration procedures over the gateway API (calibration/api-client.ts), each
 * returning a new calibration (with provenance and residuals) and a report; nothing here reads
 * simulator state, and the tool frame is never taken from the gateway's own FK "tool" pose
 * (that is the file being calibrated): every pose is the flange pose of the measured joints.
 *
 * - `calibrateToolFrame`: the loop centre and axis in the flange frame, from depth frames of
 *   calibrated fixed cameras at K wrist poses, or of the calibrated wrist camera (one pose is
 *   enough) (calibration/tool-frame.ts fits the ring).
 * - `teachWire`: the operator brings the loop, centred on the wire, to pose after pose; each
 *   is recorded; the centreline is fitted (calibration/wire-teach.ts).
 * - `registerBoard`: the operator touches ≥ 3 marks with the loop's tip; Kabsch fit
 *   (calibration/registration.ts).
 * The operator is an interface: the CLI prompts a person; tests pass a script.
 */
import {
  type Mat4,
  mat4Mul,
  mat4Point,
  mat4RigidInverse,
  mat4ToPose,
  poseToMat4,
  type Vec3,
  vcross,
  vdot,
  vnorm,
  vscale,
  vsub,
  vunit,
  mat4Column,
} from "../robots/math.ts";
import { CodedError } from "../seam/errors.ts";
import { ApiError, type BenchApi } from "./api-client.ts";
import { provenance } from "./calibration-file.ts";
import { parseDistortion, undistortPoint } from "./distortion.ts";
import { rigid, rotationAngle } from "./linalg.ts";
import { posesAround } from "./procedures.ts";
import { intrinsicsOf, projectCameraPoint } from "./projection.ts";
import { registerBoardPoints, type RegistrationOptions, type RegistrationResult } from "./registration.ts";
import type { Calibration, CameraCalibration } from "./schema.ts";
import { fitRingCircle, ringPointDistance } from "./tool-frame.ts";
import { centreline, pointAt } from "./wire-geometry.ts";
import { centrelineDistance, fitWire, type WireFit, type WireFitOptions } from "./wire-teach.ts";
import { type TriangulatedWire, triangulateWire } from "./wire-triangulate.ts";

/** base ← flange of the robot's measured joints now (the gateway's FK). */
async function flangeNow(api: BenchApi): Promise<{ q: number[]; flange: Mat4 }> {
  const r = await api.reading();
  return { q: r.q, flange: poseToMat4((await api.fk(r.q)).flange) };
}

// ------------------------------------------------------------------------------ tool frame

/** Largest wrist offsets around the start pose for the tool-frame views, rad (joints 1…7). */
export const TOOL_POSE_SPREAD_RAD = [0, 0, 0, 0.1, 0.45, 0.35, 0.6] as const;

export interface ToolFrameReport {
  cameras: string[];
  views: number;
  refused: Array<{ id: string; reason: string }>;
  /** ring points used / trimmed (handle, edge pixels) */
  points: number;
  trimmed: number;
  /** RMS distance of the used points from the fitted ring, mm */
  rmsMm: number;
  /** per view: RMS distance of its points from the ring, mm (a view far above the rest moved or was misread) */
  perView: Array<{ id: string; points: number; rmsMm: number }>;
  /** fitted ring radius minus the file's (inner + wire radius), mm */
  radiusErrorMm: number;
  /** how far the loop centre and axis moved from the file's values, mm and degrees */
  centreChangeMm: number;
  axisChangeDeg: number;
  elapsedS: number;
}

/**
 * The loop frame from depth cameras: the robot turns the wrist through K poses around its
 * current pose (the loop clear of the wire, in view of the cameras); at each, every depth pixel
 * near the file's loop is moved into the flange frame (a fixed camera through the FK of that
 * pose, the wrist camera through its flange mount); the ring is fitted to all of them. Default
 * cameras: every fixed depth camera. The
 * loop's x axis (towards the tip, away from the handle) keeps the file's direction, made
 * orthogonal to the fitted axis: a ring alone does not show it.
 */
export async function calibrateToolFrame(
  api: BenchApi,
  cal: Calibration,
  opts: {
    cameras?: string[];
    poses?: number;
    around?: number[];
    /** peak joint speed of the moves between poses, rad/s (BenchApi.moveTo's default when absent) */
    maxJointSpeedRadS?: number;
  } = {},
): Promise<{ calibration: Calibration; report: ToolFrameReport }> {
  const t0 = performance.now();
  const cams = (
    opts.cameras ?? cal.cameras.filter((c) => c.extrinsics.mount === "world" && c.depth).map((c) => c.name)
  ).map((name) => {
    const c = cal.cameras.find((x) => x.name === name);
    if (!c)
      throw new CodedError("RB_ERR_CALIB_BAD_INPUT", {
        what: "camera",
        reason: `no camera "${name}" in the calibration file (have: ${cal.cameras.map((x) => x.name).join(", ")})`,
      });
    if (!c.depth)
      throw new CodedError("RB_ERR_CALIB_BAD_INPUT", {
        what: "camera",
        reason: `camera "${name}" delivers no depth; the tool frame is measured with calibrated RGB-D cameras (fixed, or the wrist camera)`,
      });
    return c;
  });
  if (cams.length === 0)
    throw new CodedError("RB_ERR_CALIB_BAD_INPUT", {
      what: "cameras",
      reason: "the calibration file has no fixed depth camera (calibrate one with `calibrate camera` first)",
    });
  const tool = cal.tool;
  const nominal = poseToMat4(tool.loopPoseFlange);
  const major = tool.loopInnerRadiusM + tool.loopWireRadiusM;
  const baseFromWorld = mat4RigidInverse(poseToMat4(cal.robotBasePoseWorld));
  const around = opts.around ?? (await api.reading()).q;
  const targets = [around, ...posesAround(around, (opts.poses ?? 12) - 1, TOOL_POSE_SPREAD_RAD)];
  const points: Vec3[] = [];
  const viewOf: string[] = [];
  const refused: ToolFrameReport["refused"] = [];
  for (let i = 0; i < targets.length; i++) {
    const id = `pose-${String(i + 1).padStart(2, "0")}`;
    try {
      await api.moveTo(
        targets[i]!,
        opts.maxJointSpeedRadS !== undefined ? { maxJointSpeedRadS: opts.maxJointSpeedRadS } : {},
      );
    } catch (e) {
      if (!(e instanceof ApiError) || e.code === "RB_ERR_EPISODE_ENDED") throw e;
      refused.push({ id, reason: `move refused: ${e.message}` });
      continue;
    }
    const { reading, depth } = await api.captureDepth(cams.map((c) => c.name));
    const flangeFromBase = mat4RigidInverse(poseToMat4((await api.fk(reading.q)).flange));
    for (const cam of cams) {
      const img = depth.get(cam.name);
      if (!img) continue;
      // a fixed camera through the FK of this pose; the wrist camera rides on the flange
      const ext = cam.extrinsics;
      const flangeFromCam =
        ext.mount === "world"
          ? mat4Mul(flangeFromBase, mat4Mul(baseFromWorld, poseToMat4(ext.poseWorld)))
          : poseToMat4(ext.poseFlange);
      for (const p of ringPoints(cam, img, flangeFromCam, nominal, major, tool.loopWireRadiusM)) {
        points.push(p);
        viewOf.push(`${id}/${cam.name}`);
      }
    }
  }
  const fit = fitRingCircle(points, {
    centre: mat4Column(nominal, 3),
    axis: mat4Column(nominal, 2),
    radiusM: major,
  });
  // loop frame: origin at the centre, z the axis, x the file's x made orthogonal
  const z = fit.axis;
  const x = vunit(vsub(mat4Column(nominal, 0), vscale(z, vdot(mat4Column(nominal, 0), z))));
  const y = vcross(z, x);
  const loop = rigid([x[0], y[0], z[0], x[1], y[1], z[1], x[2], y[2], z[2]], fit.centre);
  const byView = new Map<string, number[]>();
  points.forEach((p, i) => {
    const d = ringPointDistance(p, fit);
    if (d > 0.003) return;
    const v = byView.get(viewOf[i]!) ?? [];
    v.push(d);
    byView.set(viewOf[i]!, v);
  });
  const perView = [...byView].map(([id, d]) => ({
    id,
    points: d.length,
    rmsMm: Math.sqrt(d.reduce((s, x) => s + x * x, 0) / d.length) * 1000,
  }));
  const report: ToolFrameReport = {
    cameras: cams.map((c) => c.name),
    views: targets.length - refused.length,
    refused,
    points: fit.used,
    trimmed: fit.trimmed,
    rmsMm: fit.rmsM * 1000,
    perView,
    radiusErrorMm: (fit.radiusM - major) * 1000,
    centreChangeMm: vnorm(vsub(fit.centre, mat4Column(nominal, 3))) * 1000,
    axisChangeDeg: (Math.acos(Math.min(1, vdot(z, mat4Column(nominal, 2)))) * 180) / Math.PI,
    elapsedS: (performance.now() - t0) / 1000,
  };
  const residuals = {
    rmsMm: report.rmsMm,
    radiusErrorMm: report.radiusErrorMm,
    points: report.points,
    views: report.views,
    centreChangeMm: report.centreChangeMm,
    axisChangeDeg: report.axisChangeDeg,
  };
  const calibration: Calibration = {
    ...cal,
    tool: { ...cal.tool, loopPoseFlange: mat4ToPose(loop) },
    provenance: [
      ...(cal.provenance ?? []),
      provenance(
        `tool frame: loop ring from depth of ${report.cameras.join(", ")} at ${report.views} wrist poses`,
        residuals,
      ),
    ],
  };
  return { calibration, report };
}

/**
 * Depth pixels near the nominal ring, as points of the ring wire's centreline in the flange frame:
 * each surface point is pushed one wire radius further along its ray (the camera sees the near
 * side of the wire).
 */
function ringPoints(
  cam: CameraCalibration,
  img: { width: number; height: number; mm: Uint16Array },
  flangeFromCam: Mat4,
  nominalLoop: Mat4,
  majorM: number,
  wireRadiusM: number,
): Vec3[] {
  const K = cam.intrinsics;
  const camFromFlange = mat4RigidInverse(flangeFromCam);
  const c = mat4Point(camFromFlange, mat4Column(nominalLoop, 3));
  const proj = projectCameraPoint(intrinsicsOf(cam, img), c);
  if (!proj?.inImage) return [];
  const reach = majorM + 0.012;
  const rPx = (reach * K.fxPx) / proj.depthM;
  const back = backProjector(cam, wireRadiusM);
  const out: Vec3[] = [];
  const u0 = Math.max(0, Math.floor(proj.u - rPx));
  const u1 = Math.min(img.width - 1, Math.ceil(proj.u + rPx));
  const v0 = Math.max(0, Math.floor(proj.v - rPx));
  const v1 = Math.min(img.height - 1, Math.ceil(proj.v + rPx));
  for (let v = v0; v <= v1; v++)
    for (let u = u0; u <= u1; u++) {
      const mm = img.mm[v * img.width + u]!;
      if (mm === 0 || Math.abs(mm / 1000 - proj.depthM) > reach) continue;
      const p = back(u, v, mm);
      if (!p || vnorm(vsub(p, c)) > reach) continue;
      out.push(mat4Point(flangeFromCam, p));
    }
  return out;
}

/**
 * Depth pixel → the centreline point of the thin round part it shows, camera optical frame: the
 * surface point (pixel ray at the z-depth, lens undistorted) pushed `radiusM` further along the
 * ray (the camera sees the near side). Null when the pixel cannot be undistorted.
 */
function backProjector(
  cam: CameraCalibration,
  radiusM: number,
): (u: number, v: number, mm: number) => Vec3 | null {
  const K = cam.intrinsics;
  const dist = parseDistortion(K.distortion);
  return (u, v, mm) => {
    const zM = mm / 1000;
    let xn = (u - K.cxPx) / K.fxPx;
    let yn = (v - K.cyPx) / K.fyPx;
    if (dist) {
      const un = undistortPoint(dist, xn, yn, 1e-7);
      if (!un) return null;
      [xn, yn] = un;
    }
    const ray = vunit([xn, yn, 1]);
    return [xn * zM + ray[0] * radiusM, yn * zM + ray[1] * radiusM, zM + ray[2] * radiusM];
  };
}

/** What one camera's depth shows of the taught wire. */
export interface SeenWire {
  camera: string;
  /** depth pixels of the wire found near the taught centreline */
  points: number;
  /** their distances from the taught centreline, mm */
  rmsMm: number;
  medianMm: number;
}

/**
 * Taught against seen: every fixed depth camera's pixels within `tubeM` of the taught centreline
 * (less the loop's surroundings: it sits on the wire), moved to the wire's centreline, and their
 * distance from the taught one. A disagreement well above the depth noise says the teaching (or
 * the camera calibration) is off.
 */
export async function seeWire(
  api: BenchApi,
  cal: Calibration,
  pointsBase: readonly Vec3[],
  opts: { cameras?: string[]; tubeM?: number } = {},
): Promise<SeenWire[]> {
  const tube = opts.tubeM ?? 0.005;
  const cams = cal.cameras.filter(
    (c) => c.extrinsics.mount === "world" && c.depth && (!opts.cameras || opts.cameras.includes(c.name)),
  );
  if (cams.length === 0) return [];
  const { reading, depth } = await api.captureDepth(cams.map((c) => c.name));
  const flange = poseToMat4((await api.fk(reading.q)).flange);
  const loopCentre = mat4Column(mat4Mul(flange, poseToMat4(cal.tool.loopPoseFlange)), 3);
  const keepAway = cal.tool.loopInnerRadiusM + cal.tool.handleLengthM + 0.01;
  const line = centreline(pointsBase);
  const samples = [...Array(Math.max(2, Math.ceil(line.lengthM / 0.002)) + 1).keys()].map((i, _, a) =>
    pointAt(line, (line.lengthM * i) / (a.length - 1)),
  );
  const baseFromWorld = mat4RigidInverse(poseToMat4(cal.robotBasePoseWorld));
  const out: SeenWire[] = [];
  for (const cam of cams) {
    const img = depth.get(cam.name);
    if (!img) continue;
    const ext = cam.extrinsics as Extract<CameraCalibration["extrinsics"], { mount: "world" }>;
    const baseFromCam = mat4Mul(baseFromWorld, poseToMat4(ext.poseWorld));
    const camFromBase = mat4RigidInverse(baseFromCam);
    const intr = intrinsicsOf(cam, img);
    const back = backProjector(cam, cal.wire.wireRadiusM);
    const seen = new Set<number>();
    const d: number[] = [];
    for (const s of samples) {
      if (vnorm(vsub(s, loopCentre)) < keepAway) continue;
      const pc = mat4Point(camFromBase, s);
      const pr = projectCameraPoint(intr, pc);
      if (!pr?.inImage) continue;
      const r = Math.ceil((tube * intr.fx) / pr.depthM);
      for (
        let v = Math.max(0, Math.round(pr.v) - r);
        v <= Math.min(img.height - 1, Math.round(pr.v) + r);
        v++
      )
        for (
          let u = Math.max(0, Math.round(pr.u) - r);
          u <= Math.min(img.width - 1, Math.round(pr.u) + r);
          u++
        ) {
          const k = v * img.width + u;
          if (seen.has(k)) continue;
          seen.add(k);
          const mm = img.mm[k]!;
          if (mm === 0) continue;
          const p = back(u, v, mm);
          if (!p) continue;
          const pb = mat4Point(baseFromCam, p);
          if (vnorm(vsub(pb, loopCentre)) < keepAway) continue;
          const dist = centrelineDistance([pb], pointsBase).maxM;
          if (dist < tube) d.push(dist * 1000);
        }
    }
    if (d.length === 0) {
      out.push({ camera: cam.name, points: 0, rmsMm: Number.NaN, medianMm: Number.NaN });
      continue;
    }
    d.sort((a, b) => a - b);
    out.push({
      camera: cam.name,
      points: d.length,
      rmsMm: Math.sqrt(d.reduce((a, x) => a + x * x, 0) / d.length),
      medianMm: d[Math.floor(d.length / 2)]!,
    });
  }
  return out;
}

// ------------------------------------------------------------------------------ wire teaching

/** What the operator did before handing back: a pose to record (optionally a mark), or done. */
export type TeachStep = "record" | "start" | "end" | "done";

export interface TeachOperator {
  /**
   * Bring the loop to the next pose along the wire, centred on it, then answer "record" (or
   * "start"/"end" to record it as the start or end mark); "done" ends the teaching.
   * @param taught poses recorded so far
   */
  next(taught: number): Promise<TeachStep>;
}

export interface WireTeachReport {
  poses: number;
  lengthM: number;
  /** per taught pose: distance of its loop centre from the fitted centreline, mm */
  residualsMm: number[];
  rmsResidualMm: number;
  worstResidualMm: number;
  /** clearance of the loop around the wire, mm (inner radius − wire radius) */
  clearanceMm: number;
  /** largest amount by which a taught pose's loop centre lies further from the fit than the clearance, mm (0: none) */
  largestClearanceViolationMm: number;
  startMarkM: number;
  endMarkM: number;
  /** arc lengths of the scoring checkpoints, m */
  checkpointsM: number[];
  maxCurvaturePerM: number;
  /** taught against seen by each fixed depth camera (only with `see`) */
  seen?: SeenWire[];
  /**
   * taught against the wire triangulated from two fixed cameras' colour images (only with
   * `triangulate`; the points themselves left out)
   */
  triangulated?: Omit<TriangulatedWire, "pointsBase"> & { points: number };
  elapsedS: number;
}

/**
 * Teach the wire: record the loop centre (flange · the file's loop frame) at every pose the
 * operator brings the loop to, then fit the centreline. Start and end marks default to the first
 * and last taught poses.
 */
export async function teachWire(
  api: BenchApi,
  cal: Calibration,
  operator: TeachOperator,
  opts: WireFitOptions & {
    maxPoses?: number;
    /** compare the taught centreline with what the fixed depth cameras see (seeWire) */
    see?: boolean;
    /** compare the taught centreline with the wire triangulated from two fixed cameras (wire-triangulate.ts) */
    triangulate?: boolean;
  } = {},
): Promise<{ calibration: Calibration; report: WireTeachReport; fit: WireFit; taught: Vec3[] }> {
  const t0 = performance.now();
  const loop = poseToMat4(cal.tool.loopPoseFlange);
  const taught: Vec3[] = [];
  let startI: number | null = null;
  let endI: number | null = null;
  for (let i = 0; i < (opts.maxPoses ?? 10_000); i++) {
    const step = await operator.next(taught.length);
    if (step === "done") break;
    const { flange } = await flangeNow(api);
    taught.push(mat4Column(mat4Mul(flange, loop), 3));
    if (step === "start") startI = taught.length - 1;
    if (step === "end") endI = taught.length - 1;
  }
  const fit = fitWire(taught, opts);
  const startMarkM = fit.taughtArcM[startI ?? 0]!;
  const endMarkM = fit.taughtArcM[endI ?? taught.length - 1]!;
  if (!(endMarkM > startMarkM))
    throw new CodedError("RB_ERR_CALIB_BAD_INPUT", {
      what: "marks",
      reason: `the end mark (${endMarkM.toFixed(3)} m) is not past the start mark (${startMarkM.toFixed(3)} m) along the taught wire; teach from the start towards the end`,
    });
  const clearanceM = cal.tool.loopInnerRadiusM - cal.wire.wireRadiusM;
  const n = cal.wire.checkpointCount;
  const report: WireTeachReport = {
    poses: taught.length,
    lengthM: fit.lengthM,
    residualsMm: fit.residualsMm,
    rmsResidualMm: fit.rmsResidualMm,
    worstResidualMm: fit.worstResidualMm,
    clearanceMm: clearanceM * 1000,
    largestClearanceViolationMm: Math.max(0, fit.worstResidualMm - clearanceM * 1000),
    startMarkM,
    endMarkM,
    checkpointsM: [...Array(n).keys()].map((k) => startMarkM + ((endMarkM - startMarkM) * (k + 1)) / n),
    maxCurvaturePerM: fit.maxCurvaturePerM,
    ...(opts.see ? { seen: await seeWire(api, cal, fit.points) } : {}),
    ...(opts.triangulate ? { triangulated: summary(await triangulateWire(api, cal, fit.points)) } : {}),
    elapsedS: (performance.now() - t0) / 1000,
  };
  const seenRms = (report.seen ?? []).filter((x) => x.points > 0).map((x) => x.rmsMm);
  const calibration: Calibration = {
    ...cal,
    wire: { ...cal.wire, pointsBase: fit.points, startMarkM, endMarkM },
    provenance: [
      ...(cal.provenance ?? []),
      provenance(`wire teaching: ${taught.length} taught loop poses, smoothing spline`, {
        poses: taught.length,
        lengthM: fit.lengthM,
        rmsResidualMm: fit.rmsResidualMm,
        worstResidualMm: fit.worstResidualMm,
        largestClearanceViolationMm: report.largestClearanceViolationMm,
        maxCurvaturePerM: fit.maxCurvaturePerM,
        ...(seenRms.length ? { seenWorstCameraRmsMm: Math.max(...seenRms) } : {}),
        ...(report.triangulated && report.triangulated.points > 0
          ? { triangulatedRmsMm: report.triangulated.rmsMm }
          : {}),
      }),
    ],
  };
  return { calibration, report, fit, taught };
}

function summary(t: TriangulatedWire): NonNullable<WireTeachReport["triangulated"]> {
  const { pointsBase, ...rest } = t;
  return { ...rest, points: pointsBase.length };
}

// ------------------------------------------------------------------------------ board registration

/** A mark on the board, in the board frame (origin at the top face's centre), m. */
export interface BoardMark {
  name: string;
  boardM: Vec3;
}

/** Four marks 20 mm in from the corners of the board's top face. */
export function defaultBoardMarks(cal: Calibration, insetM = 0.02): BoardMark[] {
  const [sx, sy] = cal.board.sizeM;
  const x = sx / 2 - insetM;
  const y = sy / 2 - insetM;
  return [
    { name: "A", boardM: [-x, -y, 0] },
    { name: "B", boardM: [x, -y, 0] },
    { name: "C", boardM: [x, y, 0] },
    { name: "D", boardM: [-x, y, 0] },
  ];
}

/** The loop's tip in the loop frame: the outer rim point away from the handle (+x), m. */
export function loopTipLocal(cal: Calibration): Vec3 {
  return [cal.tool.loopInnerRadiusM + 2 * cal.tool.loopWireRadiusM, 0, 0];
}

export interface TouchOperator {
  /** Touch `mark` with the loop's tip (loopTipLocal), hold still, then resolve. */
  touch(mark: BoardMark): Promise<void>;
}

export interface BoardRegistrationReport {
  marks: number;
  residuals: RegistrationResult["residuals"];
  rmsMm: number;
  worstMm: number;
  scale: number;
  /** how far the board moved from the file's pose, mm and degrees */
  changeMm: number;
  changeDeg: number;
  elapsedS: number;
}

/** Register the board: the operator touches each mark; the tip positions are fitted to the marks. */
export async function registerBoard(
  api: BenchApi,
  cal: Calibration,
  marks: readonly BoardMark[],
  operator: TouchOperator,
  opts: RegistrationOptions = {},
): Promise<{ calibration: Calibration; report: BoardRegistrationReport }> {
  const t0 = performance.now();
  if (marks.length < 3)
    throw new CodedError("RB_ERR_CALIB_TOO_FEW_POINTS", {
      procedure: "board registration",
      got: marks.length,
      what: "marks",
      needed: 3,
    });
  const tipLocal = loopTipLocal(cal);
  const loop = poseToMat4(cal.tool.loopPoseFlange);
  const pairs = [];
  for (const mark of marks) {
    await operator.touch(mark);
    const { flange } = await flangeNow(api);
    pairs.push({ name: mark.name, board: mark.boardM, base: mat4Point(mat4Mul(flange, loop), tipLocal) });
  }
  const r = registerBoardPoints(pairs, opts);
  const worldFromBoard = mat4Mul(poseToMat4(cal.robotBasePoseWorld), r.baseFromBoard);
  const before = poseToMat4(cal.board.poseWorld);
  const report: BoardRegistrationReport = {
    marks: marks.length,
    residuals: r.residuals,
    rmsMm: r.rmsMm,
    worstMm: r.worstMm,
    scale: r.scale,
    changeMm: vnorm(vsub(mat4Column(worldFromBoard, 3), mat4Column(before, 3))) * 1000,
    changeDeg: (rotationAngle(worldFromBoard, before) * 180) / Math.PI,
    elapsedS: (performance.now() - t0) / 1000,
  };
  const calibration: Calibration = {
    ...cal,
    board: { ...cal.board, poseWorld: mat4ToPose(worldFromBoard) },
    provenance: [
      ...(cal.provenance ?? []),
      provenance(`board registration: ${marks.length} touched marks, Kabsch`, {
        marks: marks.length,
        rmsMm: r.rmsMm,
        worstMm: r.worstMm,
        scale: r.scale,
      }),
    ],
  };
  return { calibration, report };
}
