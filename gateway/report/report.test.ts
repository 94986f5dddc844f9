import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { OUTCOME_COLOURS, progressSvg } from "./progress-svg.ts";
import { renderReport, writeReport } from "./render.ts";
import { assertWellFormedXml, demoReport } from "./testing.ts";
import { summarize } from "./types.ts";

describe("the XML check itself", () => {
  it("rejects what a parser rejects", () => {
    expect(() => assertWellFormedXml('<svg a="1"><g></g></svg>')).not.toThrow();
    expect(() => assertWellFormedXml("<svg><g></svg>")).toThrow(/closes/);
    expect(() => assertWellFormedXml("<svg>a & b</svg>")).toThrow(/unescaped &/);
    expect(() => assertWellFormedXml("<svg>a < b</svg>")).toThrow(/malformed tag/);
    expect(() => assertWellFormedXml("<svg a=1></svg>")).toThrow(/malformed tag/);
    expect(() => assertWellFormedXml('<svg a="1" a="2"></svg>')).toThrow(/duplicate/);
    expect(() => assertWellFormedXml("<a></a><b></b>")).toThrow(/one root/);
  });
});

describe("run report", () => {
  it("summarises trials", () => {
    const s = demoReport().summary;
    expect(s.trials).toBe(8);
    expect(s.successes).toBe(1);
    expect(s.mean_progress_quantised).toBeCloseTo((0.2 + 0.4 + 1 + 0 + 0.6 + 0.4 + 0.8 + 0.2) / 8, 12);
    expect(s.outcomes).toEqual({ failed: 6, success: 1, incomplete: 1 });
    expect(summarize([]).mean_progress).toBe(0);
    expect(summarize([]).mean_progress_quantised).toBeNull();
  });

  it("draws one bar per trial at its score, on a 0–100 % axis in 20 % steps, with the mean", () => {
    const r = demoReport();
    const svg = progressSvg(r);
    assertWellFormedXml(svg);
    const bars = [...svg.matchAll(/class="bar" data-trial="(\d+)" data-score="([\d.]+)"/g)];
    expect(bars.map((b) => Number(b[1]))).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(bars.map((b) => Number(b[2]))).toEqual([20, 40, 100, 0, 60, 40, 80, 20]);
    for (const label of ["0 %", "20 %", "40 %", "60 %", "80 %", "100 %"]) expect(svg).toContain(`>${label}<`);
    expect(svg).toContain(">mean 45 %<");
    expect(svg.match(/class="progress"/g)).toHaveLength(8);
    // text from the report is escaped
    expect(svg).toContain("wire contact &lt;loop &amp; wire&gt;");
  });

  it("renders the SVG to an image with the bars where the scores put them", async () => {
    const svg = progressSvg(demoReport());
    const png = await sharp(Buffer.from(svg)).png().toBuffer();
    const dir = mkdtempSync(join(tmpdir(), "rg-report-"));
    writeFileSync(join(dir, "progress.png"), png);
    const { data, info } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    expect([info.width, info.height]).toEqual([720, 400]);
    const hex = (x: number, y: number) => {
      const o = (y * info.width + x) * 3;
      return `#${[data[o]!, data[o + 1]!, data[o + 2]!].map((v) => v.toString(16).padStart(2, "0").toUpperCase()).join("")}`;
    };
    // plot area: x 64…696, y 48…336; trial 3 (success, 100 %) fills its column to the top
    const slot = (720 - 64 - 24) / 8;
    const cx = (i: number) => Math.round(64 + slot * (i + 0.5));
    const yAt = (v: number) => Math.round(48 + 288 * (1 - v));
    expect(hex(cx(2) - 10, yAt(0.95))).toBe(OUTCOME_COLOURS.success);
    // trial 5 (failed, 60 %): coloured below 60 %, white above
    expect(hex(cx(4) - 10, yAt(0.5))).toBe(OUTCOME_COLOURS.failed);
    expect(hex(cx(4) - 10, yAt(0.7))).toBe("#FFFFFF");
    // trial 4 scored 0: nothing drawn above the axis
    expect(hex(cx(3) - 10, yAt(0.1))).toBe("#FFFFFF");
  });

  it("writes report.json, report.md, progress.svg and index.html", () => {
    const r = demoReport();
    const dir = mkdtempSync(join(tmpdir(), "rg-report-"));
    const paths = writeReport(dir, r);
    expect(Object.keys(paths).sort()).toEqual(["index.html", "progress.svg", "report.json", "report.md"]);
    expect(JSON.parse(readFileSync(paths["report.json"], "utf8"))).toEqual(r);
    const md = readFileSync(paths["report.md"], "utf8");
    const tableRows = md.split("\n").filter((l) => /^\| \d+ \|/.test(l));
    expect(tableRows).toHaveLength(8);
    expect(tableRows[2]).toMatch(/^\| 3 \| 12 \| success \| 100 % \| 100 % \| success \|/);
    expect(tableRows[3]).toContain("agent exited with code 1 while the episode was running");
    expect(tableRows[3]).toContain("| run |");
    const html = readFileSync(paths["index.html"], "utf8");
    expect(html).toContain("<svg");
    expect(html.match(/<tr>/g)).toHaveLength(9);
    expect(html).toContain("A &amp; B");
    // the body (inline SVG included) is well-formed markup
    const bodyStart = html.indexOf("<body>");
    assertWellFormedXml(html.slice(bodyStart, html.indexOf("</body>") + 7));
    expect(renderReport(r)["progress.svg"]).toBe(readFileSync(paths["progress.svg"], "utf8"));
  });
});
