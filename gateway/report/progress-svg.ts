/**
 * The progress plot of a run, drawn as plain SVG (no plotting library), in the style of the
 * published buzz-wire figure: trials on x, score 0–100 % on y with grid lines every 20 %, one
 * bar per trial (the quantised score, coloured by outcome), a dot for the continuous progress,
 * and a dashed line at the mean.
 */
import type { RunReport, TrialOutcome } from "./types.ts";

/** Bar colours by outcome (colour-blind-safe Okabe–Ito hues). */
export const OUTCOME_COLOURS: Record<TrialOutcome, string> = {
  success: "#009E73",
  failed: "#D55E00",
  incomplete: "#E69F00",
  fault: "#999999",
  aborted: "#999999",
  error: "#666666",
};

/** Escape text for XML/HTML content and attribute values. */
export function escapeXml(s: string): string {
  return s
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&apos;");
}

const pct = (x: number): string => `${(Math.round(x * 1000) / 10).toString()} %`;
const n2 = (x: number): string => (Math.round(x * 100) / 100).toString();

export interface SvgOptions {
  widthPx?: number;
  heightPx?: number;
}

/** The progress plot of a run report, as a standalone SVG document. */
export function progressSvg(report: RunReport, opts: SvgOptions = {}): string {
  const W = opts.widthPx ?? 720;
  const H = opts.heightPx ?? 400;
  const m = { left: 64, right: 24, top: 48, bottom: 64 };
  const pw = W - m.left - m.right;
  const ph = H - m.top - m.bottom;
  const trials = report.trials;
  const n = Math.max(1, trials.length);
  const slot = pw / n;
  const barW = Math.max(2, Math.min(48, slot * 0.6));
  const x = (i: number) => m.left + slot * (i + 0.5);
  const y = (v: number) => m.top + ph * (1 - Math.min(1, Math.max(0, v)));
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
  );
  const title = `${report.task}: progress by trial (${trials.length} trial${trials.length === 1 ? "" : "s"}, seeds ${report.seed_base}…${report.seed_base + Math.max(0, trials.length - 1)})`;
  out.push(`<title>${escapeXml(title)}</title>`);
  out.push(`<rect x="0" y="0" width="${W}" height="${H}" fill="#ffffff"/>`);
  out.push(`<text x="${W / 2}" y="24" text-anchor="middle" font-size="15">${escapeXml(title)}</text>`);
  // y grid and labels, 20 % steps
  for (let k = 0; k <= 5; k++) {
    const v = k / 5;
    const yy = n2(y(v));
    out.push(
      `<line x1="${m.left}" y1="${yy}" x2="${m.left + pw}" y2="${yy}" stroke="${k === 0 ? "#333333" : "#dddddd"}" stroke-width="1"/>`,
    );
    out.push(`<text x="${m.left - 8}" y="${n2(y(v) + 4)}" text-anchor="end">${k * 20} %</text>`);
  }
  out.push(
    `<line x1="${m.left}" y1="${m.top}" x2="${m.left}" y2="${m.top + ph}" stroke="#333333" stroke-width="1"/>`,
  );
  // bars (quantised score, or continuous when the task has no checkpoints) and dots
  const labelEvery = Math.max(1, Math.ceil(n / 20));
  trials.forEach((t, i) => {
    const v = t.progress_quantised ?? t.progress;
    const top = y(v);
    const h = Math.max(0, m.top + ph - top);
    const colour = OUTCOME_COLOURS[t.outcome];
    const tip = `trial ${t.trial} (seed ${t.seed}): ${t.outcome}, ${t.end_reason ?? "no result"}${t.end_detail ? ` (${t.end_detail})` : ""}, progress ${pct(t.progress)}${t.progress_quantised !== null ? `, score ${pct(t.progress_quantised)}` : ""}`;
    out.push(
      `<rect class="bar" data-trial="${t.trial}" data-score="${n2(v * 100)}" x="${n2(x(i) - barW / 2)}" y="${n2(top)}" width="${n2(barW)}" height="${n2(h)}" fill="${colour}"><title>${escapeXml(tip)}</title></rect>`,
    );
    out.push(
      `<circle class="progress" cx="${n2(x(i))}" cy="${n2(y(t.progress))}" r="3.5" fill="#ffffff" stroke="#000000" stroke-width="1.5"/>`,
    );
    if (i % labelEvery === 0 || i === trials.length - 1) {
      out.push(`<text x="${n2(x(i))}" y="${m.top + ph + 18}" text-anchor="middle">${t.trial}</text>`);
    }
  });
  // mean line
  const s = report.summary;
  const mean = s.mean_progress_quantised ?? s.mean_progress;
  if (trials.length > 0) {
    const ym = n2(y(mean));
    out.push(
      `<line class="mean" x1="${m.left}" y1="${ym}" x2="${m.left + pw}" y2="${ym}" stroke="#0072B2" stroke-width="2" stroke-dasharray="6 4"/>`,
    );
    out.push(
      `<text x="${m.left + pw - 4}" y="${n2(y(mean) - 6)}" text-anchor="end" fill="#0072B2">mean ${pct(mean)}</text>`,
    );
  }
  // axis titles and legend
  out.push(`<text x="${m.left + pw / 2}" y="${H - 30}" text-anchor="middle">trial</text>`);
  out.push(
    `<text x="16" y="${m.top + ph / 2}" text-anchor="middle" transform="rotate(-90 16 ${m.top + ph / 2})">score</text>`,
  );
  const legend: [string, string][] = [
    ["success", OUTCOME_COLOURS.success],
    ["failed", OUTCOME_COLOURS.failed],
    ["incomplete", OUTCOME_COLOURS.incomplete],
    ["fault / aborted", OUTCOME_COLOURS.fault],
  ];
  let lx = m.left;
  const ly = H - 12;
  for (const [name, colour] of legend) {
    out.push(`<rect x="${lx}" y="${ly - 9}" width="10" height="10" fill="${colour}"/>`);
    out.push(`<text x="${lx + 14}" y="${ly}">${escapeXml(name)}</text>`);
    lx += 24 + name.length * 7;
  }
  out.push(
    `<circle cx="${lx + 5}" cy="${ly - 4}" r="3.5" fill="#ffffff" stroke="#000000" stroke-width="1.5"/>`,
  );
  out.push(`<text x="${lx + 14}" y="${ly}">continuous progress</text>`);
  out.push("</svg>");
  return `${out.join("\n")}\n`;
}
