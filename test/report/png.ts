/**
 * A small PNG decoder for screenshot checks: 8-bit RGB or RGBA, not interlaced,
 * which is what Chromium writes. Enough to look at pixels without a dependency.
 */
import { inflateSync } from 'node:zlib';

export interface Image {
  width: number;
  height: number;
  /** RGBA, 4 bytes per pixel, row by row. */
  pixels: Uint8Array;
}

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export function decodePng(png: Buffer): Image {
  if (!png.subarray(0, 8).equals(SIGNATURE)) throw new Error('not a PNG file');
  let offset = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const data: Buffer[] = [];
  while (offset < png.length) {
    const length = png.readUInt32BE(offset);
    const type = png.toString('latin1', offset + 4, offset + 8);
    const body = png.subarray(offset + 8, offset + 8 + length);
    if (type === 'IHDR') {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      const depth = body[8];
      const colour = body[9];
      const interlace = body[12];
      if (depth !== 8 || (colour !== 2 && colour !== 6) || interlace !== 0) {
        throw new Error(`unsupported PNG: depth ${depth}, colour type ${colour}, interlace ${interlace}`);
      }
      channels = colour === 6 ? 4 : 3;
    } else if (type === 'IDAT') data.push(body);
    else if (type === 'IEND') break;
    offset += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(data));
  const stride = width * channels;
  const rows = new Uint8Array(stride * height);
  for (let y = 0; y < height; y += 1) {
    const filter = raw[y * (stride + 1)] ?? 0;
    const source = y * (stride + 1) + 1;
    for (let x = 0; x < stride; x += 1) {
      const left = x >= channels ? (rows[y * stride + x - channels] ?? 0) : 0;
      const up = y > 0 ? (rows[(y - 1) * stride + x] ?? 0) : 0;
      const upLeft = y > 0 && x >= channels ? (rows[(y - 1) * stride + x - channels] ?? 0) : 0;
      const value = raw[source + x] ?? 0;
      rows[y * stride + x] = (value + predict(filter, left, up, upLeft)) & 0xff;
    }
  }
  const pixels = new Uint8Array(width * height * 4);
  for (let i = 0; i < width * height; i += 1) {
    pixels[i * 4] = rows[i * channels] ?? 0;
    pixels[i * 4 + 1] = rows[i * channels + 1] ?? 0;
    pixels[i * 4 + 2] = rows[i * channels + 2] ?? 0;
    pixels[i * 4 + 3] = channels === 4 ? (rows[i * channels + 3] ?? 0) : 255;
  }
  return { width, height, pixels };
}

function predict(filter: number, left: number, up: number, upLeft: number): number {
  switch (filter) {
    case 0:
      return 0;
    case 1:
      return left;
    case 2:
      return up;
    case 3:
      return (left + up) >> 1;
    case 4: {
      const p = left + up - upLeft;
      const pa = Math.abs(p - left);
      const pb = Math.abs(p - up);
      const pc = Math.abs(p - upLeft);
      return pa <= pb && pa <= pc ? left : pb <= pc ? up : upLeft;
    }
    default:
      throw new Error(`unknown PNG filter ${filter}`);
  }
}

/** Number of pixels within `tolerance` of an RGB colour on each channel. */
export function countColour(image: Image, [r, g, b]: readonly [number, number, number], tolerance = 2): number {
  let count = 0;
  for (let i = 0; i < image.pixels.length; i += 4) {
    if (
      Math.abs((image.pixels[i] ?? 0) - r) <= tolerance &&
      Math.abs((image.pixels[i + 1] ?? 0) - g) <= tolerance &&
      Math.abs((image.pixels[i + 2] ?? 0) - b) <= tolerance
    ) {
      count += 1;
    }
  }
  return count;
}
