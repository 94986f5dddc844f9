/**
 * The tool-side calibrate subcommands as a user runs them: a real process against a gateway on a
 * real port, prompting on stderr and reading Enter on stdin while the (scripted) operator moves
 * the robot between prompts.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readCalibration } from "../calibration/calibration-file.ts";
import { defaultBoardMarks } from "../calibration/tool-procedures.ts";
import { AGENT_TOKEN } from "../compose/testing.ts";
import { mat4Point, poseToMat4 } from "../robots/math.ts";
import {
  liftLoop,
  PointingToucher,
  perturbPose,
  type ToolCalibrationBench,
  toolCalibrationBench,
} from "../test-support/tool-calibration-bench.ts";

let b: ToolCalibrationBench;
beforeAll(async () => {
  b = await toolCalibrationBench();
}, 300_000);
afterAll(async () => {
  await b?.close();
});

/** Run `calibrate …` as a child process; `onPrompt` answers each stderr prompt line. */
function cli(
  args: string[],
  onPrompt?: (line: string) => Promise<string | null>,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ["--import", "tsx", "cli/main.ts", "calibrate", ...args]);
    let stdout = "";
    let stderr = "";
    let pending = "";
    let chain = Promise.resolve();
    p.stdout.on("data", (d) => {
      stdout += d;
    });
    p.stderr.on("data", (d) => {
      stderr += d;
      pending += d;
      const lines = pending.split("\n");
      pending = lines.pop()!;
      for (const line of lines)
        chain = chain.then(async () => {
          if (!onPrompt) return;
          const answer = await onPrompt(line);
          if (answer === null) p.stdin.end();
          else p.stdin.write(`${answer}\n`);
        });
    });
    if (!onPrompt) p.stdin.end();
    p.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

describe("calibrate tool-frame | wire-teach | board-register", () => {
  it("each has --help naming what the operator does", async () => {
    for (const [sub, words] of [
      ["tool-frame", /clear of the wire/],
      ["wire-teach", /centre it/],
      ["board-register", /touch the named mark/],
    ] as const) {
      const r = await cli([sub, "--help"]);
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(words);
      expect(r.stdout).toMatch(/--calibration/);
    }
  }, 120_000);

  it("tool-frame: moves the wrist itself and writes the measured loop frame (within 0.5 mm) with provenance", async () => {
    await liftLoop(b.api);
    // the file a lab starts from: the loop 4 mm and 3° off
    const dir = mkdtempSync(join(tmpdir(), "rg-toolcal-tf-"));
    const nominalFile = join(dir, "calibration.json");
    writeFileSync(
      nominalFile,
      JSON.stringify({
        ...b.truth,
        tool: { ...b.truth.tool, loopPoseFlange: perturbPose(b.truth.tool.loopPoseFlange, 4, 3) },
      }),
    );
    const out = join(dir, "calibration.v2.json");
    const r = await cli([
      "tool-frame",
      "--url",
      b.url,
      "--agent-token",
      AGENT_TOKEN,
      "--calibration",
      nominalFile,
      "--poses",
      "8",
      "--report-dir",
      dir,
    ]);
    expect(JSON.parse(r.stdout).calibration).toBe(out);
    expect(r.status, r.stderr).toBe(0);
    const cal = readCalibration(out);
    const got = poseToMat4(cal.tool.loopPoseFlange);
    const want = poseToMat4(b.truth.tool.loopPoseFlange);
    expect(Math.hypot(got[3]! - want[3]!, got[7]! - want[7]!, got[11]! - want[11]!)).toBeLessThan(0.0005);
    expect(cal.provenance!.at(-1)!.procedure).toMatch(
      /^tool frame: loop ring from depth of front, side, top at 8/,
    );
    expect(JSON.parse(r.stdout).residuals.rmsMm).toBeGreaterThan(0);
    expect(existsSync(join(dirname(out), "calibration-tool-frame.report.json"))).toBe(true);
  }, 600_000);

  it("board-register: prompts per mark, writes the next version with the board within 1 mm; refuses to overwrite", async () => {
    await liftLoop(b.api, 0.08);
    const toucher = new PointingToucher(b.api, b.truth, 0.0005);
    const marks = defaultBoardMarks(b.truth);
    const reportDir = mkdtempSync(join(tmpdir(), "rg-toolcal-report-"));
    const args = [
      "board-register",
      "--url",
      b.url,
      "--agent-token",
      AGENT_TOKEN,
      "--calibration",
      b.file,
      "--report-dir",
      reportDir,
    ];
    const r = await cli(args, async (line) => {
      const m = /^touch mark (\w+)/.exec(line);
      if (!m) return "";
      await toucher.touch(marks.find((k) => k.name === m[1])!);
      return "";
    });
    expect(r.stderr).toMatch(/touch mark D/);
    expect(r.status).toBe(0);
    const out = join(dirname(b.file), "calibration.v2.json");
    expect(JSON.parse(r.stdout).calibration).toBe(out);
    const cal = readCalibration(out);
    expect(cal.provenance!.at(-1)!.procedure).toMatch(/^board registration: 4 touched marks/);
    const got = poseToMat4(cal.board.poseWorld);
    const want = poseToMat4(b.truth.board.poseWorld);
    const corner = [b.truth.board.sizeM[0] / 2, b.truth.board.sizeM[1] / 2, 0];
    const e = mat4Point(got, corner).map((v, k) => v - mat4Point(want, corner)[k]!);
    expect(Math.hypot(...e)).toBeLessThan(0.001);
    expect(existsSync(join(reportDir, "calibration-board-register.report.json"))).toBe(true);
    // the same output named again: refused before any prompt
    const again = await cli([...args, "--out", out]);
    expect(again.status).toBe(2);
    expect(again.stderr).toMatch(/RB_ERR_CALIB_FILE_EXISTS/);
    expect(again.stderr).not.toMatch(/touch mark/);
  }, 600_000);

  it("wire-teach with no taught pose: a coded error that says what to do", async () => {
    const r = await cli(
      [
        "wire-teach",
        "--url",
        b.url,
        "--agent-token",
        AGENT_TOKEN,
        "--calibration",
        b.file,
        "--out",
        join(tmpdir(), `rg-never-${process.pid}.json`),
      ],
      async () => null,
    );
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(
      /RB_ERR_CALIB_TOO_FEW_POINTS: wire teaching: 0 usable taught poses, at least 4 needed/,
    );
    expect(r.stderr).toMatch(/what to do: Record more/);
  }, 120_000);
});
