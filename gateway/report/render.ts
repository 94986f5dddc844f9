/**
 * Render a run report into its files: report.json (the data), report.md (a table),
 * progress.svg (the plot) and index.html (summary, table and the plot inline). Pure apart from
 * `writeReport`, which writes them into a folder.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { escapeXml, OUTCOME_COLOURS, progressSvg } from "./progress-svg.ts";
import type { RunReport, TrialRecord } from "./types.ts";

export interface RenderedReport {
  "report.json": string;
  "report.md": string;
  "progress.svg": string;
  "index.html": string;
}

export type ReportFile = keyof RenderedReport;

const pct = (x: number | null): string => (x === null ? "–" : `${Math.round(x * 1000) / 10} %`);
const sec = (x: number): string => `${(Math.round(x * 10) / 10).toFixed(1)} s`;

/** The end of a trial in a few words: reason, detail, and who ended it. */
function endText(t: TrialRecord): string {
  const parts = [t.end_reason ?? "no result"];
  if (t.end_detail) parts.push(t.end_detail);
  if (t.run_note && !t.end_detail?.includes(t.run_note)) parts.push(t.run_note);
  return parts.join(": ");
}

function agentText(t: TrialRecord): string {
  if (t.agent.signal) return `killed (${t.agent.signal})`;
  return t.agent.exit_code === null ? "–" : `exit ${t.agent.exit_code}`;
}

function summaryLines(r: RunReport): string[] {
  const s = r.summary;
  const outcomes = Object.entries(s.outcomes)
    .map(([k, v]) => `${k} ${v}`)
    .join(", ");
  return [
    `task ${r.task}${r.level ? ` (level ${r.level})` : ""} on ${r.bench}`,
    `agent: ${r.agent}`,
    `${s.trials} trials, seeds ${r.seed_secret ? "derived from the run secret (report.json)" : `${r.seed_base}…${r.seed_base + Math.max(0, s.trials - 1)}`}; ${s.successes} success${s.successes === 1 ? "" : "es"}; outcomes: ${outcomes || "none"}`,
    `mean score ${pct(s.mean_progress_quantised)}, mean progress ${pct(s.mean_progress)}`,
    `started ${r.started_at}, ended ${r.ended_at}`,
  ];
}

const COLUMNS = [
  "trial",
  "seed",
  "outcome",
  "score",
  "progress",
  "end",
  "ended by",
  "episode",
  "wall",
  "agent",
  "record",
] as const;

/** The table's columns: a farm's report also names the worker that ran each trial. */
function columns(r: RunReport): readonly string[] {
  return r.trials.some((t) => t.farm) ? [...COLUMNS, "worker"] : COLUMNS;
}

function row(t: TrialRecord, farm = false): string[] {
  const cells = [
    String(t.trial),
    String(t.seed),
    t.outcome,
    pct(t.progress_quantised),
    pct(t.progress),
    endText(t),
    t.ended_by,
    sec(t.episode_s),
    sec(t.wall_s),
    agentText(t),
    t.record_path ?? "–",
  ];
  if (farm) cells.push(t.farm ? `${t.farm.worker} (attempt ${t.farm.attempt})` : "–");
  return cells;
}

function markdown(r: RunReport): string {
  const cell = (s: string) => s.replace(/\|/g, "\\|").replace(/\n/g, " ");
  const lines = [`# Run: ${r.task}`, "", ...summaryLines(r).map((l) => `- ${cell(l)}`), ""];
  const cols = columns(r);
  const farm = cols.length > COLUMNS.length;
  lines.push(`| ${cols.join(" | ")} |`);
  lines.push(`|${cols.map((c) => (c === "trial" || c === "seed" ? "---:" : "---")).join("|")}|`);
  for (const t of r.trials) lines.push(`| ${row(t, farm).map(cell).join(" | ")} |`);
  lines.push("", "![progress by trial](progress.svg)", "");
  return lines.join("\n");
}

function html(r: RunReport, svg: string): string {
  const e = escapeXml;
  const cols = columns(r);
  const farm = cols.length > COLUMNS.length;
  const head = cols.map((c) => `<th>${e(c)}</th>`).join("");
  const body = r.trials
    .map((t) => {
      const cells = row(t, farm).map((c, i) =>
        cols[i] === "outcome"
          ? `<td><span class="dot" style="background:${OUTCOME_COLOURS[t.outcome]}"></span>${e(c)}</td>`
          : `<td>${e(c)}</td>`,
      );
      return `<tr>${cells.join("")}</tr>`;
    })
    .join("\n");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${e(`Run: ${r.task}`)}</title>
<style>
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; font-size: 14px; }
th { background: #f3f3f3; }
.dot { display: inline-block; width: 10px; height: 10px; margin-right: 6px; border-radius: 2px; }
</style>
</head>
<body>
<h1>${e(`Run: ${r.task}`)}</h1>
<ul>
${summaryLines(r)
  .map((l) => `<li>${e(l)}</li>`)
  .join("\n")}
</ul>
<figure>
${svg.trim()}
</figure>
<table>
<thead><tr>${head}</tr></thead>
<tbody>
${body}
</tbody>
</table>
<p><a href="report.json">report.json</a> · <a href="report.md">report.md</a> · <a href="progress.svg">progress.svg</a></p>
</body>
</html>
`;
}

/** All files of a run report (pure). */
export function renderReport(report: RunReport): RenderedReport {
  const svg = progressSvg(report);
  return {
    "report.json": `${JSON.stringify(report, null, 2)}\n`,
    "report.md": markdown(report),
    "progress.svg": svg,
    "index.html": html(report, svg),
  };
}

/** Write the report's files into `dir` (created if missing); returns their paths. */
export function writeReport(dir: string, report: RunReport): Record<ReportFile, string> {
  mkdirSync(dir, { recursive: true });
  const files = renderReport(report);
  const paths = {} as Record<ReportFile, string>;
  for (const [name, text] of Object.entries(files) as [ReportFile, string][]) {
    const p = join(dir, name);
    writeFileSync(p, text);
    paths[name] = p;
  }
  return paths;
}
