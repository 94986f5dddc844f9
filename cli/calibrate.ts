/**
 * `robot-gateway calibrate …`: calibration procedures. Each subcommand has --help.
 * - `board-image`: a printable ChArUco board (PNG + SVG at true size, JSON sidecar).
 * - `camera`: intrinsics and (fixed cameras) extrinsics of one camera, the robot carrying the
 *   board through K poses around its current pose, everything through a running gateway's API.
 * - `intrinsics`: intrinsics only, from the API (as `camera`) or from a folder of images.
 * - `check`: one frame per camera, warn when a camera moved; overlay PNGs.
 * - `tool-frame`, `wire-teach`, `board-register`: the tool-side procedures (cli/calibrate-tool.ts).
 * - `diff`: what changed between two calibration files.
 * Results are written as a new calibration version; an existing file is never overwritten.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BenchApi, fetchTransport } from "../calibration/api-client.ts";
import { detectBoard } from "../calibration/board-detect.ts";
import {
  diffCalibrations,
  nextVersionPath,
  readCalibration,
  writeCalibration,
} from "../calibration/calibration-file.ts";
import { formatComparison } from "../calibration/camera-info.ts";
import { calibrateCamera } from "../calibration/camera-procedure.ts";
import { addToolCommands } from "./calibrate-tool.ts";
import { checkCameras } from "../calibration/check.ts";
import { calibrateWristCamera } from "../calibration/wrist-procedure.ts";
import { coverageMap, fitIntrinsics } from "../calibration/intrinsics.ts";
import { Command, InvalidArgumentError } from "commander";
import sharp from "sharp";
import {
  type BoardSpec,
  boardName,
  boardRaster,
  boardSizeM,
  boardSpecSchema,
  boardSvg,
  cornerCount,
} from "../calibration/board.ts";
import { CodedError } from "../seam/errors.ts";

/** Write the board's PNG, SVG and JSON sidecar into `dir`; returns the paths written. */
export async function writeBoardImage(
  spec: BoardSpec,
  dir: string,
  opts: { dpi: number; marginM: number },
): Promise<{ png: string; svg: string; json: string }> {
  const stem = boardName(spec);
  mkdirSync(dir, { recursive: true });
  const pxPerM = opts.dpi / 0.0254;
  const pxPerSquare = Math.round(spec.squareM * pxPerM);
  const marginPx = Math.round(opts.marginM * pxPerM);
  const r = boardRaster(spec, pxPerSquare, marginPx);
  const png = join(dir, `${stem}.png`);
  const svg = join(dir, `${stem}.svg`);
  const json = join(dir, `${stem}.json`);
  await sharp(Buffer.from(r.grey), { raw: { width: r.width, height: r.height, channels: 1 } })
    .withMetadata({ density: opts.dpi })
    .png()
    .toFile(png);
  writeFileSync(svg, boardSvg(spec, opts.marginM));
  const [w, h] = boardSizeM(spec);
  writeFileSync(
    json,
    `${JSON.stringify(
      {
        board: spec,
        name: stem,
        boardSizeMm: [w * 1000, h * 1000],
        marginMm: opts.marginM * 1000,
        corners: cornerCount(spec),
        png: { file: `${stem}.png`, dpi: opts.dpi, pxPerSquare, widthPx: r.width, heightPx: r.height },
        svg: { file: `${stem}.svg`, note: "print at 100 % (no fit-to-page) and measure one square" },
      },
      null,
      2,
    )}\n`,
  );
  return { png, svg, json };
}

/** Run a subcommand: a coded error is printed with its code and hint (exit code 2), not as a stack. */
function coded<A extends unknown[]>(fn: (...a: A) => Promise<void>): (...a: A) => Promise<void> {
  return async (...a: A) => {
    try {
      await fn(...a);
    } catch (e) {
      if (!(e instanceof CodedError)) throw e;
      process.stderr.write(`calibrate: ${e.code}: ${e.message}\n  what to do: ${e.hint}\n`);
      process.exitCode = 2;
    }
  };
}

function num(name: string) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError(`${name} must be a positive number`);
    return n;
  };
}

/** Parse `9x7`. */
function squares(v: string): [number, number] {
  const m = /^(\d+)x(\d+)$/.exec(v);
  if (!m) throw new InvalidArgumentError("--squares must look like 9x7 (columns x rows)");
  return [Number(m[1]), Number(m[2])];
}

/** A board spec from command-line options; a coded error names what is wrong. */
export function boardFromOptions(o: {
  dictionary: string;
  squares: [number, number];
  squareMm: number;
  markerMm: number;
}): BoardSpec {
  const r = boardSpecSchema.safeParse({
    dictionary: o.dictionary,
    squaresX: o.squares[0],
    squaresY: o.squares[1],
    squareM: o.squareMm / 1000,
    markerM: o.markerMm / 1000,
  });
  if (!r.success)
    throw new CodedError("RB_ERR_CALIB_BAD_INPUT", {
      what: "board",
      reason: r.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; "),
    });
  return r.data;
}

function boardOptions(c: Command): Command {
  return c
    .option(
      "--dictionary <name>",
      "ArUco dictionary: DICT_4X4_50 | DICT_5X5_100 | DICT_6X6_250",
      "DICT_5X5_100",
    )
    .option("--squares <CxR>", "squares along x and y", squares, [9, 7] as [number, number])
    .option("--square-mm <mm>", "square side, mm", num("--square-mm"), 30)
    .option("--marker-mm <mm>", "marker side, mm", num("--marker-mm"), 22);
}

/** Write an RGB buffer as PNG. */
async function writePng(path: string, rgb: Uint8Array, width: number, height: number): Promise<void> {
  await sharp(Buffer.from(rgb.buffer, rgb.byteOffset, rgb.length), { raw: { width, height, channels: 3 } })
    .png()
    .toFile(path);
}

function gatewayOptions(c: Command): Command {
  return c
    .requiredOption("--url <url>", "gateway URL, e.g. http://127.0.0.1:8080")
    .requiredOption("--agent-token <token>", "agent token of the running episode (a free-motion episode)");
}

export function calibrateCommand(): Command {
  const cmd = new Command("calibrate").description(
    "calibration procedures: boards, camera intrinsics and extrinsics, checks (see each subcommand's --help)",
  );
  boardOptions(
    cmd
      .command("board-image")
      .description(
        "write a printable ChArUco board: PNG (at --dpi) and SVG (true size, print at 100 %), and a JSON sidecar naming dictionary, squares and sizes",
      ),
  )
    .option("--out <dir>", "output folder", ".")
    .option("--dpi <n>", "PNG resolution, dots per inch", num("--dpi"), 300)
    .option("--margin-mm <mm>", "white margin around the board, mm", num("--margin-mm"), 10)
    .action(
      coded(async (o) => {
        const spec = boardFromOptions(o);
        const out = await writeBoardImage(spec, o.out, { dpi: o.dpi, marginM: o.marginMm / 1000 });
        console.log(JSON.stringify(out, null, 2));
      }),
    );

  gatewayOptions(
    cmd
      .command("camera")
      .description(
        "calibrate one camera through the API: a fixed camera sees the board carried on the flange (calibrationBoards entry mounted on the flange) through K poses around the robot's current pose — intrinsics, extrinsics and the board mount (eye-to-hand); a wrist camera (mount: tool) sees a board fixed on the table (entry mounted in the world) from K views planned in the camera frame starting at the current pose — intrinsics, cam←flange and the board's pose (eye-in-hand); writes a new calibration version, a report and a coverage map",
      ),
  )
    .requiredOption("--calibration <file>", "the bench's calibration file (read; never overwritten)")
    .requiredOption("--camera <name>", "camera to calibrate")
    .option("--poses <n>", "board poses to visit", (v) => Number.parseInt(v, 10), 24)
    .option("--intrinsics-only", "fit intrinsics only")
    .option("--out <file>", "output calibration file (default: the next free version name)")
    .option("--report-dir <dir>", "where the report JSON and coverage PNG go", ".")
    .action(
      coded(async (o) => {
        const cal = readCalibration(o.calibration);
        const out = o.out ?? nextVersionPath(o.calibration);
        // refuse before the robot moves, not after
        if (existsSync(out)) throw new CodedError("RB_ERR_CALIB_FILE_EXISTS", { path: out });
        const api = new BenchApi(fetchTransport(o.url, { agent: o.agentToken }));
        // a wrist camera (mount: tool) sees a board fixed on the table (eye-in-hand)
        const wrist =
          !o.intrinsicsOnly && cal.cameras.find((c) => c.name === o.camera)?.extrinsics.mount === "tool";
        const r = wrist
          ? await calibrateWristCamera(api, cal, { camera: o.camera, poses: o.poses })
          : await calibrateCamera(api, cal, {
              camera: o.camera,
              poses: o.poses,
              intrinsicsOnly: !!o.intrinsicsOnly,
            });
        writeCalibration(out, r.calibration);
        mkdirSync(o.reportDir, { recursive: true });
        const report = join(o.reportDir, `calibration-${o.camera}.report.json`);
        writeFileSync(report, `${JSON.stringify(r.report, null, 2)}\n`);
        const coverage = join(o.reportDir, `calibration-${o.camera}.coverage.png`);
        await writePng(coverage, r.coverageRgb, r.report.intrinsics.widthPx, r.report.intrinsics.heightPx);
        console.log(
          JSON.stringify(
            {
              calibration: out,
              report,
              coverage,
              rmsPx: r.report.intrinsics.rmsPx,
              // fit − the camera's own intrinsics (its CameraInfo on a real bench)
              cameraInfo: r.report.cameraInfo && formatComparison(r.report.cameraInfo),
              extrinsics: r.report.extrinsics && {
                rmsPx: r.report.extrinsics.rmsPx,
                worstResidualMm: r.report.extrinsics.worstResidualMm,
                worstResidualDeg: r.report.extrinsics.worstResidualDeg,
              },
            },
            null,
            2,
          ),
        );
      }),
    );

  boardOptions(
    cmd
      .command("intrinsics")
      .description(
        "fit a camera's intrinsics (fx fy cx cy, k1 k2 p1 p2) from a folder of board images (PNG/JPEG); prints the fit, per-view errors and rejected views; writes a coverage map",
      ),
  )
    .requiredOption("--images <dir>", "folder of images of the board")
    .option("--camera <name>", "camera name for the report", "camera")
    .option("--coverage <png>", "coverage map PNG to write")
    .action(
      coded(async (o) => {
        const spec = boardFromOptions(o);
        const files = readdirSync(o.images)
          .filter((f) => /\.(png|jpe?g)$/i.test(f))
          .sort();
        const views = [];
        let size = { width: 0, height: 0 };
        for (const f of files) {
          const { data, info } = await sharp(readFileSync(join(o.images, f)))
            .removeAlpha()
            .raw()
            .toBuffer({ resolveWithObject: true });
          size = { width: info.width, height: info.height };
          const d = await detectBoard(spec, {
            width: info.width,
            height: info.height,
            channels: info.channels === 1 ? 1 : 3,
            data: new Uint8Array(data),
          });
          views.push({ id: f, ids: d.ids, pixels: d.pixels });
        }
        const fit = await fitIntrinsics(o.camera, spec, views, size);
        if (o.coverage)
          await writePng(
            o.coverage,
            coverageMap(
              views.filter((v) => fit.views.some((u) => u.id === v.id)),
              size.width,
              size.height,
            ),
            size.width,
            size.height,
          );
        const { boardPoses: _b, ...report } = fit;
        console.log(JSON.stringify(report, null, 2));
      }),
    );

  gatewayOptions(
    cmd
      .command("check")
      .description(
        "re-validate at the start of a session: one frame per camera with a calibration board in view (a fixed camera: the board carried on the flange; the wrist camera: the board on the table, seen from where FK and its mount put it); warns when a camera seems to have moved more than the threshold; writes an overlay PNG per camera (calibrated wire orange, board outline blue, predicted corners green, detected red, the loop cyan in the wrist camera)",
      ),
  )
    .requiredOption("--calibration <file>", "calibration file to check")
    .option(
      "--camera <names...>",
      "cameras to check (default: every fixed camera, and the wrist camera when a board is fixed in the world)",
    )
    .option("--threshold-mm <mm>", "warn above this camera displacement, mm", num("--threshold-mm"), 2)
    .option("--threshold-deg <deg>", "warn above this camera rotation, degrees", num("--threshold-deg"), 0.2)
    .option("--out <dir>", "where overlay PNGs go", ".")
    .action(
      coded(async (o) => {
        const cal = readCalibration(o.calibration);
        const api = new BenchApi(fetchTransport(o.url, { agent: o.agentToken }));
        const checks = await checkCameras(api, cal, {
          cameras: o.camera,
          thresholdMm: o.thresholdMm,
          thresholdDeg: o.thresholdDeg,
        });
        mkdirSync(o.out, { recursive: true });
        const rows = [];
        for (const c of checks) {
          const overlay = join(o.out, `check-${c.camera}.png`);
          await writePng(overlay, c.overlay.data, c.overlay.width, c.overlay.height);
          const { overlay: _o, ...row } = c;
          rows.push({ ...row, overlayPng: overlay });
          if (c.warning) process.stderr.write(`warning: ${c.warning}\n`);
        }
        console.log(JSON.stringify(rows, null, 2));
        process.exitCode = checks.some((c) => c.warning) ? 1 : 0;
      }),
    );

  addToolCommands(cmd, coded, gatewayOptions);

  cmd
    .command("diff")
    .description(
      "list what differs between two calibration files (intrinsics in px, poses in mm and degrees)",
    )
    .argument("<a>", "first calibration file")
    .argument("<b>", "second calibration file")
    .action(
      coded(async (a: string, b: string) => {
        const d = diffCalibrations(readCalibration(a), readCalibration(b));
        for (const x of d)
          console.log(
            `${x.path}: ${JSON.stringify(x.a)} → ${JSON.stringify(x.b)}${x.delta !== undefined ? ` (Δ ${+x.delta.toFixed(4)} ${x.unit ?? ""})` : ""}`,
          );
        if (d.length === 0) console.log("no differences");
      }),
    );
  return cmd;
}
