/**
 * `robot-gateway calibrate …`: calibration procedures. Each subcommand has --help.
 * - `board-image`: a printable ChArUco board (PNG + SVG at true size, JSON sidecar).
 * - `intrinsics`: camera intrinsics from board views captured through a running gateway's API.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
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
  return cmd;
}
