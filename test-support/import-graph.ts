/**
 * The project's import picture, read from the sources: every relative import of every
 * production file (tests and test support are consumers on top, so they are left out).
 * Used by the layering test and printable with `npx tsx test-support/import-graph.ts`.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** Folders in the order of DESIGN.md §1, lowest first; a folder may import only lower ones. */
export const LAYERS: Record<string, readonly string[]> = {
  robots: [],
  seam: ["robots"],
  calibration: ["robots", "seam"],
  tasks: ["robots", "seam", "calibration"],
  sim: ["robots", "seam", "calibration", "tasks"],
  drivers: ["robots", "seam", "calibration", "tasks"],
  gateway: ["robots", "seam", "calibration", "tasks"],
  compose: ["robots", "seam", "calibration", "tasks", "sim", "drivers", "gateway"],
};

const SKIP_DIRS = new Set(["node_modules", ".git", "docs", "records", "runs"]);

/** A file is test code when it is a test, a test utility or lives in a test-support folder. */
export function isTestCode(rel: string): boolean {
  return (
    /\.(test|testutil)\.ts$/.test(rel) ||
    rel.startsWith("test-support/") ||
    rel.startsWith("hil-tests/") ||
    /(^|\/)testing(\/|\.ts$)/.test(rel)
  );
}

function walk(dir: string, out: string[]): void {
  for (const name of readdirSync(dir)) {
    if (SKIP_DIRS.has(name) || name.startsWith(".")) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (p.endsWith(".ts")) out.push(p);
  }
}

export interface Edge {
  from: string;
  to: string;
}

/** Every relative import between production files, as repo-relative paths. */
export function productionEdges(root = ROOT): Edge[] {
  const files: string[] = [];
  walk(root, files);
  const edges: Edge[] = [];
  const spec =
    /(?:^|\n)\s*(?:import|export)[^"';]*?from\s*["'](\.{1,2}\/[^"']+)["']|import\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g;
  for (const abs of files) {
    const from = relative(root, abs);
    if (isTestCode(from)) continue;
    const src = readFileSync(abs, "utf8");
    for (const m of src.matchAll(spec)) {
      const s = m[1] ?? m[2];
      if (!s) continue;
      const to = relative(root, resolve(dirname(abs), s));
      edges.push({ from, to });
    }
  }
  return edges;
}

export const folderOf = (rel: string): string => rel.split("/")[0] ?? rel;

/** Imports that point up or sideways in the picture. */
export function layerViolations(edges: readonly Edge[]): Edge[] {
  return edges.filter(({ from, to }) => {
    const a = folderOf(from);
    const b = folderOf(to);
    if (a === b) return false;
    const allowed = LAYERS[a];
    if (!allowed) return false; // cli/, farm/, bench/, tools/, clients/: on top, may import anything
    return !allowed.includes(b);
  });
}

/** File-level import cycles (each reported once, as the list of files around it). */
export function fileCycles(edges: readonly Edge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const e of edges) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  const cycles: string[][] = [];
  const state = new Map<string, 1 | 2>();
  const stack: string[] = [];
  const seen = new Set<string>();
  const visit = (n: string): void => {
    state.set(n, 1);
    stack.push(n);
    for (const m of next.get(n) ?? []) {
      if (state.get(m) === 1) {
        const cyc = stack.slice(stack.indexOf(m));
        const key = [...cyc].sort().join(" ");
        if (!seen.has(key)) {
          seen.add(key);
          cycles.push(cyc);
        }
      } else if (!state.has(m)) visit(m);
    }
    stack.pop();
    state.set(n, 2);
  };
  for (const n of [...next.keys()].sort()) if (!state.has(n)) visit(n);
  return cycles;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const edges = productionEdges();
  const folders = new Map<string, number>();
  for (const { from, to } of edges) {
    const k = `${folderOf(from)} -> ${folderOf(to)}`;
    if (folderOf(from) !== folderOf(to)) folders.set(k, (folders.get(k) ?? 0) + 1);
  }
  for (const [k, n] of [...folders].sort()) console.log(`${k}  (${n})`);
  console.log("violations:", layerViolations(edges));
  console.log("cycles:", fileCycles(edges));
}
