/**
 * Provenance of a result: which software and which configuration produced it. Computed once per
 * bench (never in the control loop) and written into every record and result.json, so a grader can
 * tell whether two results came from the same bench setup.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";

/** Software name, version and configuration hashes of the bench that ran an episode. */
export interface Provenance {
  /** bench name from the bench file */
  bench: string;
  software: { name: string; version: string };
  /** sha256 (hex) of canonical JSON: the validated bench config and the resolved safety limits */
  configHashes: { benchSha256: string; safetyLimitsSha256: string };
}

let cachedSoftware: { name: string; version: string } | undefined;

/** name and version from the repository's package.json */
export function softwareVersion(): { name: string; version: string } {
  if (!cachedSoftware) {
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
      name?: string;
      version?: string;
    };
    cachedSoftware = { name: pkg.name ?? "robot-gateway", version: pkg.version ?? "0.0.0" };
  }
  return cachedSoftware;
}

/**
 * JSON with object keys sorted at every level, typed arrays as plain arrays, so equal data
 * always hashes equally regardless of key order.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(canonicalise(value));
}

function canonicalise(v: unknown): unknown {
  if (ArrayBuffer.isView(v) && !(v instanceof DataView)) {
    return Array.from(v as unknown as ArrayLike<number>);
  }
  if (Array.isArray(v)) return v.map(canonicalise);
  if (v && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) out[k] = canonicalise((v as Record<string, unknown>)[k]);
    return out;
  }
  return v;
}

export function sha256Json(value: unknown): string {
  return createHash("sha256").update(canonicalJson(value)).digest("hex");
}

/** Provenance of a bench: its name, this software's version and the hashes of its configuration. */
export function provenanceOf(benchName: string, benchConfig: unknown, safetyLimits: unknown): Provenance {
  return {
    bench: benchName,
    software: softwareVersion(),
    configHashes: { benchSha256: sha256Json(benchConfig), safetyLimitsSha256: sha256Json(safetyLimits) },
  };
}
