import { describe, expect, it } from "vitest";
import {
  boardName,
  boardRaster,
  boardSvg,
  boardSpecSchema,
  cornerCount,
  cornerPoint,
  DEFAULT_BOARD,
  markerBits,
} from "./board.ts";
import { detectBoard } from "./board-detect.ts";
import { ARUCO_DICTIONARIES } from "./aruco-dictionaries.ts";
import { loadOpenCv } from "./opencv.ts";

describe("ChArUco board", () => {
  it("names the board by dictionary, squares and sizes", () => {
    expect(boardName(DEFAULT_BOARD)).toBe("charuco_DICT_5X5_100_9x7_sq30mm_mk22mm");
    expect(cornerCount(DEFAULT_BOARD)).toBe(48);
    expect(() => boardSpecSchema.parse({ squaresX: 5, squaresY: 5, squareM: 0.02, markerM: 0.03 })).toThrow(
      /markerM/,
    );
    expect(() =>
      boardSpecSchema.parse({
        dictionary: "DICT_4X4_50",
        squaresX: 12,
        squaresY: 9,
        squareM: 0.03,
        markerM: 0.02,
      }),
    ).toThrow(/fewer markers/);
  });

  it("the dictionary table matches OpenCV's markers", async () => {
    const { cv } = await loadOpenCv();
    for (const name of Object.keys(ARUCO_DICTIONARIES) as Array<keyof typeof ARUCO_DICTIONARIES>) {
      const d = ARUCO_DICTIONARIES[name];
      const dict = cv.getPredefinedDictionary(cv[name]);
      for (const id of [0, 1, d.markers.length - 1]) {
        const m = new cv.Mat();
        dict.generateImageMarker(id, d.bits + 2, m, 1);
        const bits = markerBits(name, id);
        for (let y = 0; y < d.bits; y++)
          for (let x = 0; x < d.bits; x++)
            expect(m.ucharAt(y + 1, x + 1) > 127 ? 1 : 0).toBe(bits[y * d.bits + x]);
        m.delete();
      }
    }
  });

  it("our raster is OpenCV's board image, and OpenCV's corners are ours", async () => {
    const { cv } = await loadOpenCv();
    const spec = boardSpecSchema.parse({ squaresX: 5, squaresY: 4, squareM: 0.04, markerM: 0.03 });
    const P = 100;
    const ours = boardRaster(spec, P);
    const dict = cv.getPredefinedDictionary(cv.DICT_5X5_100);
    const board = new cv.aruco_CharucoBoard(new cv.Size(5, 4), 0.04, 0.03, dict, new cv.Mat());
    const img = new cv.Mat();
    board.generateImage(new cv.Size(5 * P, 4 * P), img, 0, 1);
    let differ = 0;
    for (let i = 0; i < ours.grey.length; i++) if (Math.abs(ours.grey[i]! - img.data[i]!) > 128) differ++;
    // only pixels on cell edges may round differently
    expect(differ / ours.grey.length).toBeLessThan(0.01);
    const cc = board.getChessboardCorners();
    expect(cc.size()).toBe(cornerCount(spec));
    for (let id = 0; id < cc.size(); id++) {
      const p = cc.get(id);
      const q = cornerPoint(spec, id);
      expect(p.x).toBeCloseTo(q[0], 6);
      expect(p.y).toBeCloseTo(q[1], 6);
    }
  });

  it("detects every corner of the printed raster at sub-pixel precision", async () => {
    const P = 40;
    const margin = 30;
    const r = boardRaster(DEFAULT_BOARD, P, margin);
    const det = await detectBoard(DEFAULT_BOARD, {
      width: r.width,
      height: r.height,
      channels: 1,
      data: r.grey,
    });
    expect(det.ids.length).toBe(cornerCount(DEFAULT_BOARD));
    for (let k = 0; k < det.ids.length; k++) {
      const [x, y] = cornerPoint(DEFAULT_BOARD, det.ids[k]!);
      // pixel centres at integers: the corner at x·P sits at u = x·P − 0.5
      expect(Math.abs(det.pixels[k]![0] - (margin + (x / DEFAULT_BOARD.squareM) * P - 0.5))).toBeLessThan(
        0.1,
      );
      expect(Math.abs(det.pixels[k]![1] - (margin + (y / DEFAULT_BOARD.squareM) * P - 0.5))).toBeLessThan(
        0.1,
      );
    }
    const blank = new Uint8Array(r.width * r.height).fill(200);
    expect(
      (await detectBoard(DEFAULT_BOARD, { width: r.width, height: r.height, channels: 1, data: blank })).ids,
    ).toEqual([]);
  });

  it("writes an SVG at the stated size", () => {
    const svg = boardSvg(DEFAULT_BOARD, 0.01);
    expect(svg).toContain('width="290mm" height="230mm"');
    expect(svg).toContain(boardName(DEFAULT_BOARD));
  });
});
