/**
 * Calibration files on disk: read and validate, write a new version (never overwrite one:
 * `calibration.json` → `calibration.v2.json` → `calibration.v3.json` …), record provenance, and
 * compare two files (`calibrate diff`).
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, extname, join } from "node:path";
import { parse as parseYaml } from "yaml";
import { mat4RigidInverse, mat4Mul, poseToMat4 } from "../robots/math.ts";
import { CodedError } from "../seam/errors.ts";
import { rotationAngle } from "./linalg.ts";
import { type Calibration, calibrationSchema, type Provenance } from "./schema.ts";

/** Read and validate a calibration file (JSON or YAML); a coded error lists every problem. */
export function readCalibration(path: string): Calibration {
  let raw: unknown;
  try {
    // YAML is a superset of JSON: both kinds of calibration file read alike
    raw = parseYaml(readFileSync(path, "utf8"));
  } catch (e) {
    throw new CodedError("RB_ERR_CALIB_BAD_INPUT", { what: path, reason: (e as Error).message });
  }
  const r = calibrationSchema.safeParse(raw);
  if (!r.success)
    throw new CodedError("RB_ERR_CALIB_BAD_INPUT", {
      what: path,
      reason: r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; "),
    });
  return r.data;
}

/** The first free versioned name after `path`: a.json → a.v2.json (or a.v3.json if v2 exists …). */
export function nextVersionPath(path: string): string {
  const ext = extname(path) || ".json";
  const stem = basename(path, ext).replace(/\.v\d+$/, "");
  const m = /\.v(\d+)$/.exec(basename(path, ext));
  for (let v = m ? Number(m[1]) + 1 : 2; ; v++) {
    const p = join(dirname(path), `${stem}.v${v}${ext}`);
    if (!existsSync(p)) return p;
  }
}

/** Write a calibration (validated) to `path`; refuses to overwrite an existing file. */
export function writeCalibration(path: string, cal: Calibration): void {
  if (existsSync(path)) throw new CodedError("RB_ERR_CALIB_FILE_EXISTS", { path });
  const parsed = calibrationSchema.parse(cal);
  writeFileSync(path, `${JSON.stringify(parsed, null, 2)}\n`, { flag: "wx" });
}

/** The software version stamped into provenance. */
export function softwareVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    name: string;
    version: string;
  };
  return `${pkg.name} ${pkg.version}`;
}

/** A provenance entry for a procedure run now. */
export function provenance(
  procedure: string,
  residuals: Record<string, number>,
  date = new Date(),
): Provenance {
  return { date: date.toISOString(), procedure, software: softwareVersion(), residuals };
}

/** One difference between two calibration files. */
export interface CalibrationDifference {
  path: string;
  a: unknown;
  b: unknown;
  /** size of the change where it has one: px, %, mm or degrees (named in `unit`) */
  delta?: number;
  unit?: string;
}

/** Compare two calibrations: camera intrinsics and extrinsics, base pose, tool, wire and boards. */
export function diffCalibrations(a: Calibration, b: Calibration): CalibrationDifference[] {
  const out: CalibrationDifference[] = [];
  const poseDiff = (
    path: string,
    pa: Calibration["robotBasePoseWorld"],
    pb: Calibration["robotBasePoseWorld"],
  ) => {
    const ma = poseToMat4(pa);
    const mb = poseToMat4(pb);
    const mm = Math.hypot(ma[3]! - mb[3]!, ma[7]! - mb[7]!, ma[11]! - mb[11]!) * 1000;
    const deg = (rotationAngle(ma, mb) * 180) / Math.PI;
    if (mm > 1e-6) out.push({ path: `${path}.position`, a: pa.xyz, b: pb.xyz, delta: mm, unit: "mm" });
    // acos near 1 is noisy: identical rotations read up to ~1e-6°
    if (deg > 1e-4)
      out.push({ path: `${path}.orientation`, a: pa.quat_xyzw, b: pb.quat_xyzw, delta: deg, unit: "deg" });
  };
  poseDiff("robotBasePoseWorld", a.robotBasePoseWorld, b.robotBasePoseWorld);
  const names = new Set([...a.cameras.map((c) => c.name), ...b.cameras.map((c) => c.name)]);
  for (const name of names) {
    const ca = a.cameras.find((c) => c.name === name);
    const cb = b.cameras.find((c) => c.name === name);
    if (!ca || !cb) {
      out.push({ path: `cameras.${name}`, a: ca ? "present" : "absent", b: cb ? "present" : "absent" });
      continue;
    }
    for (const k of ["widthPx", "heightPx", "fxPx", "fyPx", "cxPx", "cyPx"] as const) {
      const va = ca.intrinsics[k];
      const vb = cb.intrinsics[k];
      if (va !== vb)
        out.push({ path: `cameras.${name}.intrinsics.${k}`, a: va, b: vb, delta: vb - va, unit: "px" });
    }
    ca.intrinsics.distortion.forEach((v, i) => {
      const w = cb.intrinsics.distortion[i]!;
      if (v !== w)
        out.push({ path: `cameras.${name}.intrinsics.distortion[${i}]`, a: v, b: w, delta: w - v, unit: "" });
    });
    if (ca.extrinsics.mount !== cb.extrinsics.mount)
      out.push({ path: `cameras.${name}.extrinsics.mount`, a: ca.extrinsics.mount, b: cb.extrinsics.mount });
    else if (ca.extrinsics.mount === "world" && cb.extrinsics.mount === "world")
      poseDiff(`cameras.${name}.extrinsics.poseWorld`, ca.extrinsics.poseWorld, cb.extrinsics.poseWorld);
    else if (ca.extrinsics.mount === "tool" && cb.extrinsics.mount === "tool")
      poseDiff(`cameras.${name}.extrinsics.poseFlange`, ca.extrinsics.poseFlange, cb.extrinsics.poseFlange);
  }
  poseDiff("tool.loopPoseFlange", a.tool.loopPoseFlange, b.tool.loopPoseFlange);
  poseDiff("board.poseWorld", a.board.poseWorld, b.board.poseWorld);
  if (JSON.stringify(a.wire) !== JSON.stringify(b.wire)) {
    const n = Math.min(a.wire.pointsBase.length, b.wire.pointsBase.length);
    let worst = 0;
    for (let i = 0; i < n; i++) {
      const p = a.wire.pointsBase[i]!;
      const q = b.wire.pointsBase[i]!;
      worst = Math.max(worst, Math.hypot(p[0] - q[0], p[1] - q[1], p[2] - q[2]) * 1000);
    }
    out.push({
      path: "wire",
      a: `${a.wire.pointsBase.length} points`,
      b: `${b.wire.pointsBase.length} points`,
      delta: worst,
      unit: "mm (largest point move)",
    });
  }
  return out;
}

/** world ← camera of a world camera after a hand-eye solve: world ← base · (cam ← base)⁻¹. */
export function worldFromCameraSolved(cal: Calibration, camFromBase: Float64Array): Float64Array {
  return mat4Mul(poseToMat4(cal.robotBasePoseWorld), mat4RigidInverse(camFromBase));
}
