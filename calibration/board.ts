/**
 * ChArUco calibration boards: the description (dictionary, squares, square and marker size),
 * the chessboard corners in the board frame, and the printed image (raster and SVG), drawn from
 * the dictionary table without OpenCV so the simulator can texture a board too.
 *
 * Layout (OpenCV ≥ 4.6, non-legacy): square (col, row) is black when col + row is even; a marker
 * sits centred in every white square, ids counting up row by row from the top left.
 * Board frame: origin at the board's top-left outer corner, x along the columns, y down the rows,
 * z into the board (the printed face is seen looking along +z). Inner corner id k lies at
 * ((k mod (squaresX−1)) + 1, ⌊k / (squaresX−1)⌋ + 1) · squareM.
 */
import { z } from "zod";
import { ARUCO_DICTIONARIES } from "./aruco-dictionaries.ts";

export type DictionaryName = keyof typeof ARUCO_DICTIONARIES;
const DICT_NAMES = Object.keys(ARUCO_DICTIONARIES) as [DictionaryName, ...DictionaryName[]];

export const boardSpecSchema = z
  .object({
    type: z.literal("charuco").default("charuco"),
    /** OpenCV predefined ArUco dictionary */
    dictionary: z.enum(DICT_NAMES).default("DICT_5X5_100"),
    /** squares along x (columns) */
    squaresX: z.number().int().min(3),
    /** squares along y (rows) */
    squaresY: z.number().int().min(3),
    /** chessboard square side, m */
    squareM: z.number().positive(),
    /** marker side, m (smaller than the square) */
    markerM: z.number().positive(),
  })
  .strict()
  .refine((b) => b.markerM < b.squareM, {
    message: "markerM must be smaller than squareM",
    path: ["markerM"],
  })
  .refine(
    (b) => Math.ceil((b.squaresX * b.squaresY) / 2) <= ARUCO_DICTIONARIES[b.dictionary].markers.length,
    {
      message: "the dictionary has fewer markers than the board needs",
      path: ["dictionary"],
    },
  );
export type BoardSpec = z.infer<typeof boardSpecSchema>;

/** The default board: 9 × 7 squares of 30 mm, 22 mm markers, 5×5 dictionary (fits A4 landscape). */
export const DEFAULT_BOARD: BoardSpec = Object.freeze(
  boardSpecSchema.parse({ squaresX: 9, squaresY: 7, squareM: 0.03, markerM: 0.022 }),
);

/** File stem naming everything needed to rebuild the board, e.g. `charuco_DICT_5X5_100_9x7_sq30mm_mk22mm`. */
export function boardName(b: BoardSpec): string {
  const mm = (m: number) => `${+(m * 1000).toFixed(3)}mm`;
  return `charuco_${b.dictionary}_${b.squaresX}x${b.squaresY}_sq${mm(b.squareM)}_mk${mm(b.markerM)}`;
}

/** Number of inner chessboard corners (the ChArUco corner ids are 0 … count−1). */
export function cornerCount(b: BoardSpec): number {
  return (b.squaresX - 1) * (b.squaresY - 1);
}

/** Corner id → position in the board frame, m (z = 0). */
export function cornerPoint(b: BoardSpec, id: number): [number, number, number] {
  const n = b.squaresX - 1;
  return [((id % n) + 1) * b.squareM, (Math.floor(id / n) + 1) * b.squareM, 0];
}

/** Board outline size, m: [width along x, height along y]. */
export function boardSizeM(b: BoardSpec): [number, number] {
  return [b.squaresX * b.squareM, b.squaresY * b.squareM];
}

/** Marker bits (row-major, 1 = white) of a dictionary marker. */
export function markerBits(dictionary: DictionaryName, id: number): Uint8Array {
  const d = ARUCO_DICTIONARIES[dictionary];
  const hex = d.markers[id];
  if (hex === undefined) throw new Error(`${dictionary} has no marker ${id}`);
  const n = d.bits * d.bits;
  let v = BigInt(`0x${hex}`);
  const out = new Uint8Array(n);
  for (let i = n - 1; i >= 0; i--) {
    out[i] = Number(v & 1n);
    v >>= 1n;
  }
  return out;
}

/** Every printed black cell of the board, in square units ([x, y, w, h], origin top left). */
export function boardBlackRects(b: BoardSpec): Array<[number, number, number, number]> {
  const rects: Array<[number, number, number, number]> = [];
  const bits = ARUCO_DICTIONARIES[b.dictionary].bits;
  const cells = bits + 2;
  const m = b.markerM / b.squareM;
  const off = (1 - m) / 2;
  const cell = m / cells;
  let id = 0;
  for (let row = 0; row < b.squaresY; row++) {
    for (let col = 0; col < b.squaresX; col++) {
      if ((col + row) % 2 === 0) {
        rects.push([col, row, 1, 1]);
        continue;
      }
      const code = markerBits(b.dictionary, id++);
      for (let cy = 0; cy < cells; cy++) {
        for (let cx = 0; cx < cells; cx++) {
          const border = cx === 0 || cy === 0 || cx === cells - 1 || cy === cells - 1;
          if (border || code[(cy - 1) * bits + (cx - 1)] === 0)
            rects.push([col + off + cx * cell, row + off + cy * cell, cell, cell]);
        }
      }
    }
  }
  return rects;
}

/** A greyscale raster of the board (0 black, 255 white), row-major. */
export interface BoardRaster {
  width: number;
  height: number;
  /** white margin around the board, px */
  marginPx: number;
  pxPerSquare: number;
  grey: Uint8Array;
}

/**
 * Draw the board at `pxPerSquare` pixels per square, with a white margin. Each pixel is the
 * area-weighted coverage of black cells (4 × 4 samples), so edges are anti-aliased.
 */
export function boardRaster(b: BoardSpec, pxPerSquare: number, marginPx = 0): BoardRaster {
  if (!(Number.isInteger(pxPerSquare) && pxPerSquare >= 8))
    throw new Error("pxPerSquare must be an integer ≥ 8");
  const width = b.squaresX * pxPerSquare + 2 * marginPx;
  const height = b.squaresY * pxPerSquare + 2 * marginPx;
  const cover = new Float32Array(width * height);
  const S = 4;
  for (const [x, y, w, h] of boardBlackRects(b)) {
    // rectangle in sample units (S samples per pixel)
    const x0 = Math.round((x * pxPerSquare + marginPx) * S);
    const x1 = Math.round(((x + w) * pxPerSquare + marginPx) * S);
    const y0 = Math.round((y * pxPerSquare + marginPx) * S);
    const y1 = Math.round(((y + h) * pxPerSquare + marginPx) * S);
    for (let sy = y0; sy < y1; sy++) {
      const row = Math.floor(sy / S) * width;
      for (let sx = x0; sx < x1; sx++) cover[row + Math.floor(sx / S)]! += 1 / (S * S);
    }
  }
  const grey = new Uint8Array(width * height);
  for (let i = 0; i < grey.length; i++) grey[i] = Math.round(255 * (1 - Math.min(1, cover[i]!)));
  return { width, height, marginPx, pxPerSquare, grey };
}

/** The board as an SVG document at its true size (print at 100 %), with a white margin, mm. */
export function boardSvg(b: BoardSpec, marginM = 0.01): string {
  const sq = b.squareM * 1000;
  const mg = marginM * 1000;
  const [wM, hM] = boardSizeM(b);
  const W = wM * 1000 + 2 * mg;
  const H = hM * 1000 + 2 * mg;
  const f = (v: number) => +v.toFixed(4);
  const rects = boardBlackRects(b)
    .map(
      ([x, y, w, h]) =>
        `<rect x="${f(mg + x * sq)}" y="${f(mg + y * sq)}" width="${f(w * sq)}" height="${f(h * sq)}"/>`,
    )
    .join("\n");
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${f(W)}mm" height="${f(H)}mm" viewBox="0 0 ${f(W)} ${f(H)}" shape-rendering="crispEdges">`,
    `<title>${boardName(b)}</title>`,
    `<rect x="0" y="0" width="${f(W)}" height="${f(H)}" fill="#fff"/>`,
    `<g fill="#000">`,
    rects,
    "</g>",
    "</svg>",
    "",
  ].join("\n");
}
