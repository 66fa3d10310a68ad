// tests/e2e/images.mjs: images made in the test, for the vision suites (vision_openai.test.mjs,
// hostile_images.test.mjs, tests/webui/chat_page.test.mjs). PNG only: a PNG is a few chunks
// around a zlib stream, which node's zlib writes; the other formats come from
// tests/data/image/ (fuzz/make_image_seeds.cpp writes them with the libraries' own encoders).
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const fixtureDir = path.join(root, 'tests/data/image');
export const visionDir = path.join(root, 'tests/data/vision');
export const fixture = (name) => fs.readFileSync(path.join(fixtureDir, name));

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; ++k) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

export function pngChunk(type, data) {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

// An 8-bit RGB PNG of the given width and height around an already compressed IDAT stream.
export function pngAround(width, height, idat) {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8;  // bit depth
  ihdr[9] = 2;  // RGB
  return Buffer.concat([SIGNATURE, pngChunk('IHDR', ihdr), pngChunk('IDAT', idat), pngChunk('IEND', Buffer.alloc(0))]);
}

// An RGB PNG of `rgb` (width * height * 3 bytes, rows top to bottom), every row unfiltered.
export function encodePng(width, height, rgb, level = 6) {
  const raw = Buffer.alloc(height * (1 + width * 3));
  for (let y = 0; y < height; ++y) rgb.copy(raw, y * (1 + width * 3) + 1, y * width * 3, (y + 1) * width * 3);
  return pngAround(width, height, zlib.deflateSync(raw, { level }));
}

// zlib's stream of `chunk` written `times` times, without holding the whole input.
export function deflateRepeated(chunk, times, level = 9) {
  return new Promise((resolve, reject) => {
    const d = zlib.createDeflate({ level, memLevel: 9 });
    const out = [];
    d.on('data', (b) => out.push(b));
    d.on('end', () => resolve(Buffer.concat(out)));
    d.on('error', reject);
    let i = 0;
    const pump = () => {
      while (i < times) {
        ++i;
        if (!d.write(chunk)) return d.once('drain', pump);
      }
      d.end();
    };
    pump();
  });
}

// A valid PNG of one colour, of any size, built row by row (16384 x 16384 is 768 MiB of pixels
// and a 0.8 MB file).
export async function solidPng(width, height, [r, g, b]) {
  const row = Buffer.alloc(1 + width * 3);
  for (let x = 0; x < width; ++x) row.set([r, g, b], 1 + x * 3);
  return pngAround(width, height, await deflateRepeated(row, height));
}

// A picture for the trained tower's question: a red disc on white (or `colour` on `background`).
export function circlePng(size = 96, colour = [220, 30, 30], background = [255, 255, 255]) {
  const rgb = Buffer.alloc(size * size * 3);
  const c = (size - 1) / 2, r2 = (size * 0.35) ** 2;
  for (let y = 0; y < size; ++y)
    for (let x = 0; x < size; ++x) rgb.set((x - c) ** 2 + (y - c) ** 2 <= r2 ? colour : background, (y * size + x) * 3);
  return encodePng(size, size, rgb);
}

// Pixels that do not compress: a PNG of about width * height * 3 bytes, different for each seed.
export function noisePng(width, height, seed = 1) {
  const rgb = Buffer.alloc(width * height * 3);
  let s = (seed * 0x9e3779b1) >>> 0 || 1;
  for (let i = 0; i < rgb.length; i += 4) {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    rgb.writeUInt32LE(s, i < rgb.length - 3 ? i : rgb.length - 4);
  }
  return encodePng(width, height, rgb, 1);
}

export const MIME = { png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', webp: 'image/webp', gif: 'image/gif' };
export const dataUrl = (bytes, type = 'image/png') => `data:${type};base64,${Buffer.from(bytes).toString('base64')}`;
export const imagePart = (url) => ({ type: 'image_url', image_url: { url } });
