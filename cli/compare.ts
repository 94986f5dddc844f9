/**
 * `robot-gateway compare A1 B1 [A2 B2 …]`: paired runs of the same agents on two benches (side A,
 * e.g. the sim; side B, e.g. the real bench), one pair of `robot-gateway run` folders per agent.
 * Prints and writes (--out): per-trial pairs (matched by seed), success and mean progress per agent
 * and side with 95 % intervals, Pearson r and MMRV across agents (SIMPLER's definitions,
 * compose/twin/paired.ts) on success rate and on mean progress, and scatter.svg (B against A:
 * per-agent means with intervals, per-trial progress faint).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { Command } from "commander";
import { meanCi, mmrv, pearson, wilson } from "../compose/twin/paired.ts";
import { CodedError } from "../seam/errors.ts";

interface RunTrial {
  seed: number;
  success: boolean;
  progress: number;
}
interface Run {
  dir: string;
  agent: string;
  bench: string;
  trials: RunTrial[];
}

function loadRun(dir: string): Run {
  const p = join(dir, "report.json");
  if (!existsSync(p))
    throw new CodedError("RB_ERR_TWIN_INPUT", { tool: "compare", path: dir, reason: "no report.json" });
  const r = JSON.parse(readFileSync(p, "utf8")) as {
    format?: string;
    agent?: string;
    bench?: string;
    trials?: { seed: number; success: boolean; progress: number }[];
  };
  if (!r.format?.startsWith("robot-gateway/run-report") || !Array.isArray(r.trials))
    throw new CodedError("RB_ERR_TWIN_INPUT", { tool: "compare", path: p, reason: "not a run report" });
  return {
    dir,
    agent: r.agent ?? basename(dir),
    bench: r.bench ?? "?",
    trials: r.trials.map((t) => ({ seed: t.seed, success: !!t.success, progress: Number(t.progress) || 0 })),
  };
}

export interface AgentPair {
  label: string;
  a: Run;
  b: Run;
  pairs: { seed: number; a: RunTrial; b: RunTrial }[];
  success: { a: { rate: number; ci: [number, number] }; b: { rate: number; ci: [number, number] } };
  progress: { a: { mean: number; ci: [number, number] }; b: { mean: number; ci: [number, number] } };
}

export function pairRuns(a: Run, b: Run): AgentPair {
  const bySeed = new Map(b.trials.map((t) => [t.seed, t]));
  const pairs = a.trials
    .filter((t) => bySeed.has(t.seed))
    .map((t) => ({ seed: t.seed, a: t, b: bySeed.get(t.seed)! }));
  const rate = (v: RunTrial[]) => {
    const k = v.filter((t) => t.success).length;
    return { rate: v.length ? k / v.length : Number.NaN, ci: wilson(k, v.length) };
  };
  return {
    label: `${basename(a.dir)} | ${basename(b.dir)}`,
    a,
    b,
    pairs,
    success: { a: rate(pairs.map((p) => p.a)), b: rate(pairs.map((p) => p.b)) },
    progress: { a: meanCi(pairs.map((p) => p.a.progress)), b: meanCi(pairs.map((p) => p.b.progress)) },
  };
}

export function scatterSvg(agents: readonly AgentPair[], sideA: string, sideB: string): string {
  const W = 420;
  const M = 50;
  const S = W - 2 * M;
  const x = (v: number) => M + v * S;
  const y = (v: number) => W - M - v * S;
  const colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];
  const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;");
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W + 220}" height="${W}" font-family="sans-serif" font-size="11">`,
    `<rect x="${M}" y="${M}" width="${S}" height="${S}" fill="none" stroke="#999"/>`,
    `<line x1="${x(0)}" y1="${y(0)}" x2="${x(1)}" y2="${y(1)}" stroke="#ccc" stroke-dasharray="4 3"/>`,
    `<text x="${W / 2}" y="${W - 12}" text-anchor="middle">progress on ${esc(sideA)} (A)</text>`,
    `<text x="14" y="${W / 2}" text-anchor="middle" transform="rotate(-90 14 ${W / 2})">progress on ${esc(sideB)} (B)</text>`,
  ];
  for (const t of [0, 0.25, 0.5, 0.75, 1]) {
    parts.push(`<text x="${x(t)}" y="${W - M + 14}" text-anchor="middle">${t}</text>`);
    parts.push(`<text x="${M - 6}" y="${y(t) + 4}" text-anchor="end">${t}</text>`);
  }
  agents.forEach((g, k) => {
    const c = colours[k % colours.length];
    for (const p of g.pairs)
      parts.push(
        `<circle cx="${x(p.a.progress).toFixed(1)}" cy="${y(p.b.progress).toFixed(1)}" r="2.5" fill="${c}" opacity="0.35"/>`,
      );
    const pa = g.progress.a;
    const pb = g.progress.b;
    parts.push(
      `<line x1="${x(pa.ci[0])}" y1="${y(pb.mean)}" x2="${x(pa.ci[1])}" y2="${y(pb.mean)}" stroke="${c}"/>`,
      `<line x1="${x(pa.mean)}" y1="${y(pb.ci[0])}" x2="${x(pa.mean)}" y2="${y(pb.ci[1])}" stroke="${c}"/>`,
      `<rect x="${x(pa.mean) - 4}" y="${y(pb.mean) - 4}" width="8" height="8" fill="${c}"/>`,
      `<rect x="${W + 4}" y="${M + k * 18 - 8}" width="10" height="10" fill="${c}"/>`,
      `<text x="${W + 20}" y="${M + k * 18 + 1}">${esc(g.label)}</text>`,
    );
  });
  parts.push("</svg>");
  return `${parts.join("\n")}\n`;
}

export function compareRuns(dirs: readonly string[], out: string): string {
  if (dirs.length < 2 || dirs.length % 2 !== 0)
    throw new CodedError("RB_ERR_TWIN_INPUT", {
      tool: "compare",
      path: dirs.join(" "),
      reason: "give run folders in pairs: A1 B1 [A2 B2 …] (the same agent on side A and side B)",
    });
  const agents: AgentPair[] = [];
  for (let i = 0; i < dirs.length; i += 2) agents.push(pairRuns(loadRun(dirs[i]!), loadRun(dirs[i + 1]!)));
  const sideA = agents[0]!.a.bench;
  const sideB = agents[0]!.b.bench;
  const sa = agents.map((g) => g.success.a.rate);
  const sb = agents.map((g) => g.success.b.rate);
  const pa = agents.map((g) => g.progress.a.mean);
  const pb = agents.map((g) => g.progress.b.mean);
  const metrics = {
    agents: agents.length,
    success: { pearson_r: pearson(sa, sb), mmrv: mmrv(sa, sb) },
    progress: { pearson_r: pearson(pa, pb), mmrv: mmrv(pa, pb) },
  };
  const f = (v: number, d = 3) => (Number.isFinite(v) ? v.toFixed(d) : "n/a");
  const ci = (c: [number, number]) => `[${f(c[0], 2)}, ${f(c[1], 2)}]`;
  const lines = [
    `compare: side A = ${sideA}, side B = ${sideB}; ${agents.length} agents`,
    "",
    "agent (A run | B run)                       n  success A [95% CI]     success B [95% CI]     progress A [95% CI]     progress B [95% CI]",
    ...agents.map(
      (g) =>
        `${g.label.padEnd(42).slice(0, 42)} ${String(g.pairs.length).padStart(3)}  ` +
        `${f(g.success.a.rate, 2)} ${ci(g.success.a.ci).padEnd(14)}  ${f(g.success.b.rate, 2)} ${ci(g.success.b.ci).padEnd(14)}  ` +
        `${f(g.progress.a.mean, 2)} ${ci(g.progress.a.ci).padEnd(14)}  ${f(g.progress.b.mean, 2)} ${ci(g.progress.b.ci)}`,
    ),
    "",
    `across agents: success  Pearson r ${f(metrics.success.pearson_r)}  MMRV ${f(metrics.success.mmrv)}`,
    `               progress Pearson r ${f(metrics.progress.pearson_r)}  MMRV ${f(metrics.progress.mmrv)}`,
    "(SIMPLER: r of the per-agent scores across the two sides; MMRV = mean over agents of the largest |B_i − B_j| among agents whose order differs between A and B)",
  ];
  const text = lines.join("\n");
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, "scatter.svg"), scatterSvg(agents, sideA, sideB));
  const trials = agents.flatMap((g) =>
    g.pairs.map(
      (p) =>
        `| ${g.label} | ${p.seed} | ${p.a.success ? "✓" : "✗"} ${f(p.a.progress, 2)} | ${p.b.success ? "✓" : "✗"} ${f(p.b.progress, 2)} |`,
    ),
  );
  writeFileSync(
    join(out, "report.md"),
    `# Paired runs\n\n\`\`\`\n${text}\n\`\`\`\n\n![scatter](scatter.svg)\n\n## Per-trial pairs\n\n| agent | seed | A (success, progress) | B (success, progress) |\n|---|---|---|---|\n${trials.join("\n")}\n`,
  );
  writeFileSync(
    join(out, "compare.json"),
    `${JSON.stringify(
      {
        side_a: sideA,
        side_b: sideB,
        metrics,
        agents: agents.map((g) => ({
          a_run: g.a.dir,
          b_run: g.b.dir,
          agent: g.a.agent,
          success: g.success,
          progress: g.progress,
          pairs: g.pairs,
        })),
      },
      (_k, v) => (typeof v === "number" && !Number.isFinite(v) ? null : v),
      1,
    )}\n`,
  );
  return text;
}

export function compareCommand(): Command {
  return new Command("compare")
    .description(
      "compare paired runs of the same agents on two benches (Pearson r, MMRV, success/progress with CIs, scatter plot)",
    )
    .argument(
      "<runs...>",
      "run folders in pairs: A1 B1 [A2 B2 …] (one pair per agent; A e.g. sim, B e.g. real)",
    )
    .option("--out <dir>", "report folder (default runs/compare-<timestamp>/)")
    .action((runs: string[], o: { out?: string }) => {
      try {
        const out = o.out ?? `runs/compare-${new Date().toISOString().replace(/[:.]/g, "-")}`;
        console.log(compareRuns(runs, out));
        console.error(`compare: report in ${out}/ (report.md, scatter.svg, compare.json)`);
      } catch (e) {
        if (!(e instanceof CodedError)) throw e;
        console.error(`robot-gateway compare: ${e.code}: ${e.message}\n  ${e.hint}`);
        process.exitCode = 2;
      }
    });
}
