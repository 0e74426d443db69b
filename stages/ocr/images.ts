// Page images (PNG, JPEG, TIFF) made ready for OCR inside an OCR child: each page's size read
// from its header and refused past the pixel limit before a byte is decoded (a decompression
// bomb declares its size), then decoded by a JavaScript library that throws on a defect (pngjs,
// jpeg-js; utif2 for TIFF, which tesseract reads only the first page of and not in every
// encoding), and handed on as a PNG drawn by @napi-rs/canvas. Not decoded by @napi-rs/canvas
// itself: a corrupt PNG ends its process with a segmentation fault (measured, 0.1.80).

import { createCanvas } from '@napi-rs/canvas';
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import UTIF from 'utif2';
import { ConversionError } from '../convert/errors.ts';

export type ImageMediaType = 'image/png' | 'image/jpeg' | 'image/tiff';

/** The pages of an image document, each decoded when asked, in order. */
export function imagePages(bytes: Uint8Array, mediaType: ImageMediaType, maxPixels: number): (() => Promise<Buffer>)[] {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (mediaType === 'image/tiff') return tiffPages(buffer, maxPixels);
  const size = mediaType === 'image/png' ? pngSize(buffer) : jpegSize(buffer);
  checkPixels(size, maxPixels);
  return [
    async () => {
      let decoded: { width: number; height: number; data: Uint8Array };
      try {
        decoded =
          mediaType === 'image/png'
            ? PNG.sync.read(buffer)
            : jpeg.decode(buffer, { useTArray: true, formatAsRGBA: true, maxResolutionInMP: maxPixels / 1e6 });
      } catch (error) {
        throw corrupt((error as Error).message);
      }
      return asPng(decoded.width, decoded.height, decoded.data);
    },
  ];
}

/** RGBA pixels as a PNG on white: a transparent background reads as black to tesseract. */
function asPng(width: number, height: number, rgba: Uint8Array): Buffer {
  if (rgba.length !== width * height * 4) throw corrupt('an image that does not decode to its size');
  const canvas = createCanvas(width, height);
  const context = canvas.getContext('2d');
  const image = context.createImageData(width, height);
  image.data.set(rgba);
  const layer = createCanvas(width, height);
  layer.getContext('2d').putImageData(image, 0, 0);
  context.fillStyle = 'white';
  context.fillRect(0, 0, width, height);
  context.drawImage(layer, 0, 0);
  return canvas.toBuffer('image/png');
}

function checkPixels({ width, height }: { width: number; height: number }, maxPixels: number): void {
  if (width * height > maxPixels) {
    throw new ConversionError(
      'too_many_pixels',
      `the image declares ${width} x ${height} pixels, over the limit of ${maxPixels}`,
    );
  }
}

const corrupt = (what: string) => new ConversionError('corrupt', `unreadable image: ${what}`);

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function pngSize(bytes: Buffer): { width: number; height: number } {
  if (bytes.length < 24 || !bytes.subarray(0, 8).equals(PNG_SIGNATURE) || bytes.toString('latin1', 12, 16) !== 'IHDR')
    throw corrupt('not a PNG');
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

/** The size in a JPEG's start-of-frame segment (SOF0-SOF15 but DHT, JPG and DAC). */
function jpegSize(bytes: Buffer): { width: number; height: number } {
  if (bytes[0] !== 0xff || bytes[1] !== 0xd8) throw corrupt('not a JPEG');
  let at = 2;
  while (at + 9 < bytes.length) {
    if (bytes[at] !== 0xff) throw corrupt('a JPEG segment out of place');
    const marker = bytes[at + 1]!;
    if (marker >= 0xc0 && marker <= 0xcf && ![0xc4, 0xc8, 0xcc].includes(marker))
      return { height: bytes.readUInt16BE(at + 5), width: bytes.readUInt16BE(at + 7) };
    at += 2 + bytes.readUInt16BE(at + 2);
  }
  throw corrupt('a JPEG without a frame');
}

function tiffPages(bytes: Buffer, maxPixels: number): (() => Promise<Buffer>)[] {
  let ifds: UTIF.IFD[];
  try {
    ifds = UTIF.decode(bytes).filter((ifd) => ifd.t256 !== undefined && ifd.t257 !== undefined);
  } catch (error) {
    throw corrupt((error as Error).message);
  }
  if (ifds.length === 0) throw corrupt('a TIFF without an image');
  // Every page's declared size is checked before the first is decoded.
  for (const ifd of ifds) checkPixels({ width: tag(ifd.t256), height: tag(ifd.t257) }, maxPixels);
  return ifds.map((ifd) => async () => {
    let rgba: Uint8Array;
    try {
      UTIF.decodeImage(bytes, ifd);
      rgba = UTIF.toRGBA8(ifd);
    } catch (error) {
      throw corrupt((error as Error).message);
    }
    return asPng(ifd.width, ifd.height, rgba);
  });
}

const tag = (value: unknown) => Number((value as number[])[0]);
