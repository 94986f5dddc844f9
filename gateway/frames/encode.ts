/**
 * Encode rendered frames for the API with sharp: RGB as JPEG or PNG, depth as a 16-bit
 * grayscale PNG holding millimetres (0 = no surface). Both are async and allocate the
 * encoded buffer; they run after capture, not inside the renderer.
 */
import sharp from "sharp";

// libvips' operation cache would keep images alive outside the frame store's budget (up to 50 MB
// and 100 operations by default); frames are encoded once, so a cache buys nothing here
sharp.cache(false);

export type RgbEncoding = "jpeg" | "png";

/** MIME type of an encoding, for `GET /v1/frames/:id`. */
export const MIME: Record<RgbEncoding, string> = { jpeg: "image/jpeg", png: "image/png" };

export interface EncodeOptions {
  /** JPEG quality 1…100 (default 85) */
  jpegQuality?: number;
}

/** Encode a row-major RGB frame (width·height·3 bytes). */
export async function encodeRgb(
  rgb: Uint8Array,
  width: number,
  height: number,
  encoding: RgbEncoding,
  options: EncodeOptions = {},
): Promise<Buffer> {
  checkSize(rgb.length, width * height * 3, "rgb");
  const img = sharp(rgb, { raw: { width, height, channels: 3 } });
  switch (encoding) {
    case "jpeg":
      return img.jpeg({ quality: options.jpegQuality ?? 85 }).toBuffer();
    case "png":
      // fast zlib level: frames are transient, speed matters more than a few percent of size
      return img.png({ compressionLevel: 1, adaptiveFiltering: false }).toBuffer();
  }
}

/**
 * Encode a depth frame (millimetres, Uint16Array, width·height) as a 16-bit grayscale PNG.
 * The values round-trip exactly (see encode.test.ts).
 */
export async function encodeDepthPng16(depthMm: Uint16Array, width: number, height: number): Promise<Buffer> {
  checkSize(depthMm.length, width * height, "depth");
  return sharp(depthMm, { raw: { width, height, channels: 1 } })
    .toColourspace("grey16")
    .png({ compressionLevel: 1, adaptiveFiltering: false })
    .toBuffer();
}

/** Decode a 16-bit grayscale PNG back to millimetres (for tests and tools). */
export async function decodeDepthPng16(
  png: Buffer,
): Promise<{ depthMm: Uint16Array; width: number; height: number }> {
  const { data, info } = await sharp(png)
    .toColourspace("grey16")
    .raw({ depth: "ushort" })
    .toBuffer({ resolveWithObject: true });
  if (info.channels !== 1) throw new Error(`expected 1 channel, got ${info.channels}`);
  const depthMm = new Uint16Array(info.width * info.height);
  for (let i = 0; i < depthMm.length; i++) depthMm[i] = data.readUInt16LE(i * 2);
  return { depthMm, width: info.width, height: info.height };
}

function checkSize(got: number, want: number, what: string): void {
  if (got !== want) throw new Error(`${what} buffer has ${got} elements, expected ${want}`);
}
