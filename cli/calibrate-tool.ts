/**
 * `robot-gateway calibrate tool-frame | wire-teach | board-register`: the tool-side procedures
 * (calibration/tool-procedures.ts) against a running gateway. `tool-frame` moves the robot
 * itself; `wire-teach` and `board-register` prompt the operator on the terminal (jog or
 * hand-guide the robot between prompts, then press Enter). Each writes the next calibration
 * version (never over an existing file) and a report JSON.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { Command } from "commander";
import { BenchApi, fetchTransport } from "../calibration/api-client.ts";
import { nextVersionPath, readCalibration, writeCalibration } from "../calibration/calibration-file.ts";
import type { Calibration } from "../calibration/schema.ts";
import {
  type BoardMark,
  calibrateToolFrame,
  defaultBoardMarks,
  registerBoard,
  type TeachStep,
  teachWire,
} from "../calibration/tool-procedures.ts";
import { CodedError } from "../seam/errors.ts";

/** Lines typed on stdin, one at a time (a prompt is printed on stderr before each). */
function lineReader(): { ask(prompt: string): Promise<string | null>; close(): void } {
  const rl = createInterface({ input: process.stdin });
  const queue: string[] = [];
  const waiting: Array<(s: string | null) => void> = [];
  let ended = false;
  rl.on("line", (l) => {
    const w = waiting.shift();
    if (w) w(l.trim());
    else queue.push(l.trim());
  });
  rl.on("close", () => {
    ended = true;
    for (const w of waiting.splice(0)) w(null);
  });
  return {
    ask(prompt) {
      process.stderr.write(`${prompt}\n`);
      const q = queue.shift();
      if (q !== undefined) return Promise.resolve(q);
      // stdin closed: null
      if (ended) return Promise.resolve(null);
      return new Promise((resolve) => waiting.push(resolve));
    },
    close: () => rl.close(),
  };
}

/** Read and check the output path before anything moves. */
function outputPath(o: { calibration: string; out?: string }): string {
  const out = o.out ?? nextVersionPath(o.calibration);
  if (existsSync(out)) throw new CodedError("RB_ERR_CALIB_FILE_EXISTS", { path: out });
  return out;
}

function finish(out: string, cal: Calibration, reportDir: string, name: string, report: unknown): void {
  writeCalibration(out, cal);
  mkdirSync(reportDir, { recursive: true });
  const path = join(reportDir, `calibration-${name}.report.json`);
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
  console.log(
    JSON.stringify({ calibration: out, report: path, residuals: cal.provenance?.at(-1)?.residuals }, null, 2),
  );
}

/** Parse a marks file: [{ "name": "A", "boardMm": [x, y, z] }, …] in the board frame (top face centre), mm. */
function readMarks(path: string): BoardMark[] {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (e) {
    throw new CodedError("RB_ERR_CALIB_BAD_INPUT", { what: path, reason: (e as Error).message });
  }
  const ok =
    Array.isArray(raw) &&
    raw.every(
      (m) =>
        m &&
        typeof m.name === "string" &&
        Array.isArray(m.boardMm) &&
        m.boardMm.length === 3 &&
        m.boardMm.every((v: unknown) => typeof v === "number" && Number.isFinite(v)),
    );
  if (!ok)
    throw new CodedError("RB_ERR_CALIB_BAD_INPUT", {
      what: path,
      reason: 'expected a JSON array of { "name": string, "boardMm": [x, y, z] }',
    });
  return (raw as Array<{ name: string; boardMm: [number, number, number] }>).map((m) => ({
    name: m.name,
    boardM: [m.boardMm[0] / 1000, m.boardMm[1] / 1000, m.boardMm[2] / 1000],
  }));
}

/**
 * Add the three subcommands to `calibrate`. `coded` wraps an action so that a coded error prints
 * its code and what to do; `gateway` adds --url and --agent-token.
 */
export function addToolCommands(
  cmd: Command,
  coded: <A extends unknown[]>(fn: (...a: A) => Promise<void>) => (...a: A) => Promise<void>,
  gateway: (c: Command) => Command,
): void {
  gateway(
    cmd
      .command("tool-frame")
      .description(
        "measure the loop's centre and axis in the flange frame with calibrated depth cameras (fixed ones, or the wrist camera): first jog the loop clear of the wire (about 15 cm above it) where the cameras see it; the robot then turns the wrist through --poses poses around that pose; writes a new calibration version (tool.loopPoseFlange) with residuals",
      ),
  )
    .requiredOption(
      "--calibration <file>",
      "the bench's calibration file, cameras calibrated (read; never overwritten)",
    )
    .option(
      "--camera <names...>",
      "depth cameras to use: fixed ones, or the wrist camera (calibrated on the flange; --poses 1 is enough) (default: every fixed depth camera)",
    )
    .option("--poses <n>", "wrist poses to visit", (v) => Number.parseInt(v, 10), 12)
    .option("--out <file>", "output calibration file (default: the next free version name)")
    .option("--report-dir <dir>", "where the report JSON goes", ".")
    .action(
      coded(async (o) => {
        const cal = readCalibration(o.calibration);
        const out = outputPath(o);
        const api = new BenchApi(fetchTransport(o.url, { agent: o.agentToken }));
        const r = await calibrateToolFrame(api, cal, { cameras: o.camera, poses: o.poses });
        finish(out, r.calibration, o.reportDir, "tool-frame", r.report);
      }),
    );

  gateway(
    cmd
      .command("wire-teach")
      .description(
        "teach the wire's centreline: start a free-motion episode with the loop threaded on the wire at its start; at each prompt jog the loop 10–15 mm further along the wire, centre it (touch the wire on both sides with the buzzer and go to the middle), press Enter to record it; s = record as the start mark, e = record as the end mark, d = done; fits an arc-length smoothing spline and writes a new calibration version (wire) with residuals per pose",
      ),
  )
    .requiredOption(
      "--calibration <file>",
      "the bench's calibration file, tool frame calibrated (read; never overwritten)",
    )
    .option(
      "--see",
      "afterwards, compare the taught centreline with what the fixed depth cameras see (report: seen)",
    )
    .option(
      "--triangulate",
      "afterwards, compare the taught centreline with the wire triangulated from two fixed cameras' colour images (report: triangulated)",
    )
    .option("--max-gap-mm <mm>", "largest distance between taught poses, mm", (v) => Number(v), 30)
    .option("--min-bend-radius-mm <mm>", "the wire bends no tighter than this, mm", (v) => Number(v), 20)
    .option("--out <file>", "output calibration file (default: the next free version name)")
    .option("--report-dir <dir>", "where the report JSON goes", ".")
    .action(
      coded(async (o) => {
        const cal = readCalibration(o.calibration);
        const out = outputPath(o);
        const api = new BenchApi(fetchTransport(o.url, { agent: o.agentToken }));
        const lines = lineReader();
        try {
          const r = await teachWire(
            api,
            cal,
            {
              async next(n) {
                const a = await lines.ask(
                  `pose #${n}: centre the loop on the wire, then Enter = record, s = record as start mark, e = record as end mark, d = done`,
                );
                const step: TeachStep =
                  a === "d" || a === null ? "done" : a === "s" ? "start" : a === "e" ? "end" : "record";
                return step;
              },
            },
            {
              maxGapM: o.maxGapMm / 1000,
              minBendRadiusM: o.minBendRadiusMm / 1000,
              see: !!o.see,
              triangulate: !!o.triangulate,
            },
          );
          finish(out, r.calibration, o.reportDir, "wire-teach", r.report);
        } finally {
          lines.close();
        }
      }),
    );

  gateway(
    cmd
      .command("board-register")
      .description(
        "register the board: at each prompt touch the named mark with the loop's tip (the rim point away from the handle) and hold still, then press Enter; at least 3 marks not on one line; Kabsch fit; writes a new calibration version (board.poseWorld) with residuals per mark",
      ),
  )
    .requiredOption(
      "--calibration <file>",
      "the bench's calibration file, tool frame calibrated (read; never overwritten)",
    )
    .option(
      "--marks <file>",
      'marks JSON: [{ "name": "A", "boardMm": [x, y, z] }, …] in the board frame (origin at the top face centre, mm); default: 4 marks 20 mm in from the corners',
    )
    .option("--out <file>", "output calibration file (default: the next free version name)")
    .option("--report-dir <dir>", "where the report JSON goes", ".")
    .action(
      coded(async (o) => {
        const cal = readCalibration(o.calibration);
        const out = outputPath(o);
        const marks = o.marks ? readMarks(o.marks) : defaultBoardMarks(cal);
        const api = new BenchApi(fetchTransport(o.url, { agent: o.agentToken }));
        const lines = lineReader();
        try {
          const r = await registerBoard(api, cal, marks, {
            async touch(m) {
              const a = await lines.ask(
                `touch mark ${m.name} (board ${m.boardM.map((v) => (v * 1000).toFixed(1)).join(", ")} mm) with the loop's tip, hold still, press Enter`,
              );
              if (a === null)
                throw new CodedError("RB_ERR_CALIB_BAD_INPUT", {
                  what: "stdin",
                  reason: `input ended before mark ${m.name} was touched; run the command in a terminal and press Enter after each touch`,
                });
            },
          });
          finish(out, r.calibration, o.reportDir, "board-register", r.report);
        } finally {
          lines.close();
        }
      }),
    );
}
