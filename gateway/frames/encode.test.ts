import { inflateSync } from "node:zlib";
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { decodeDepthPng16, encodeDepthPng16, encodeRgb } from "./encode.ts";

/** Minimal independent PNG reader for 16-bit grayscale (checks sharp against the PNG spec). */
function readGray16Png(png: Buffer): {
  width: number;
  height: number;
  bitDepth: number;
  colorType: number;
  values: number[];
} {
  expect(png.subarray(0, 8).toString("hex")).toBe("89504e470d0a1a0a");
  let off = 8;
  let width = 0;
  let height = 0;
  let bitDepth = 0;
  let colorType = -1;
  const idat: Buffer[] = [];
  while (off < png.length) {
    const len = png.readUInt32BE(off);
    const type = png.toString("latin1", off + 4, off + 8);
    const data = png.subarray(off + 8, off + 8 + len);
    if (type === "IHDR") {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      bitDepth = data[8]!;
      colorType = data[9]!;
      expect(data[12]).toBe(0); // not interlaced
    } else if (type === "IDAT") idat.push(data);
    off += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const bpp = 2;
  const stride = width * bpp;
  const prev = Buffer.alloc(stride);
  const cur = Buffer.alloc(stride);
  const values: number[] = [];
  for (let y = 0; y < height; y++) {
    const f = raw[y * (stride + 1)]!;
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= bpp ? cur[x - bpp]! : 0;
      const b = prev[x]!;
      const c = x >= bpp ? prev[x - bpp]! : 0;
      let pred = 0;
      if (f === 1) pred = a;
      else if (f === 2) pred = b;
      else if (f === 3) pred = (a + b) >> 1;
      else if (f === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      cur[x] = (line[x]! + pred) & 255;
    }
    for (let x = 0; x < width; x++) values.push(cur.readUInt16BE(x * 2)); // PNG samples are big-endian
    cur.copy(prev);
  }
  return { width, height, bitDepth, colorType, values };
}

describe("encodeDepthPng16", () => {
  it("writes a 16-bit grayscale PNG whose samples are exactly the millimetres", async () => {
    const w = 256;
    const h = 256;
    const depth = new Uint16Array(w * h);
    for (let i = 0; i < depth.length; i++) depth[i] = i; // every value 0…65535
    const png = await encodeDepthPng16(depth, w, h);
    const parsed = readGray16Png(png);
    expect([parsed.width, parsed.height, parsed.bitDepth, parsed.colorType]).toEqual([w, h, 16, 0]);
    expect(parsed.values.every((v, i) => v === i)).toBe(true);
    // and sharp reads the same values back
    const back = await decodeDepthPng16(png);
    expect(back.width).toBe(w);
    expect(Buffer.from(back.depthMm.buffer).equals(Buffer.from(depth.buffer))).toBe(true);
  });

  it("rejects a buffer of the wrong size", async () => {
    await expect(encodeDepthPng16(new Uint16Array(5), 2, 2)).rejects.toThrow(/expected 4/);
  });
});

describe("encodeRgb", () => {
  const w = 64;
  const h = 48;
  const rgb = new Uint8Array(w * h * 3);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const o = (y * w + x) * 3;
      rgb[o] = x * 4;
      rgb[o + 1] = y * 5;
      rgb[o + 2] = x < 32 ? 200 : 30;
    }
  }

  it("PNG round-trips exactly", async () => {
    const png = await encodeRgb(rgb, w, h, "png");
    const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
    expect([info.width, info.height, info.channels]).toEqual([w, h, 3]);
    expect(Buffer.compare(data, Buffer.from(rgb))).toBe(0);
  });

  it("JPEG decodes to the same size and nearly the same pixels", async () => {
    const jpg = await encodeRgb(rgb, w, h, "jpeg", { jpegQuality: 90 });
    expect(jpg.subarray(0, 2).toString("hex")).toBe("ffd8");
    const { data, info } = await sharp(jpg).raw().toBuffer({ resolveWithObject: true });
    expect([info.width, info.height, info.channels]).toEqual([w, h, 3]);
    let err = 0;
    for (let i = 0; i < rgb.length; i++) err += Math.abs(data[i]! - rgb[i]!);
    expect(err / rgb.length).toBeLessThan(4);
  });
});
