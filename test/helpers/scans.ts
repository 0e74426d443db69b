// Scanned pages made at test time: known lines of text drawn into a page image with
// @napi-rs/canvas (the canvas pdf-parse brings), then wrapped as an image-only PDF with pdfkit.
// Small pages at 150 dpi keep OCR quick on a shared machine.

import { createCanvas, type Canvas } from '@napi-rs/canvas';
import { crc32, deflateSync } from 'node:zlib';
import PDFDocument from 'pdfkit';

export interface ScannedPage {
  /** Lines of text drawn on the page; none for a blank page. */
  lines?: string[];
  /** Degrees the scan is turned clockwise (a page fed sideways: 90). */
  rotated?: 0 | 90 | 180 | 270;
  /** Text laid on the page as a text layer instead of a picture (a mixed PDF's text pages). */
  text?: string;
}

/** Page size in points: half a letter page, drawn at 150 dpi. */
const WIDTH_PT = 420;
const HEIGHT_PT = 300;
const DPI = 150;

/** A page image (PNG, or JPEG) with `lines` in a plain sans-serif, turned by `rotated`. */
export function pageImage(
  lines: readonly string[],
  rotated = 0,
  format: 'image/png' | 'image/jpeg' = 'image/png',
): Buffer {
  const canvas = pageCanvas(lines, rotated);
  return format === 'image/png' ? canvas.toBuffer('image/png') : canvas.toBuffer('image/jpeg');
}

function pageCanvas(lines: readonly string[], rotated: number): Canvas {
  const width = (WIDTH_PT / 72) * DPI;
  const height = (HEIGHT_PT / 72) * DPI;
  const sideways = rotated % 180 !== 0;
  const canvas = createCanvas(sideways ? height : width, sideways ? width : height);
  const g = canvas.getContext('2d');
  g.fillStyle = 'white';
  g.fillRect(0, 0, canvas.width, canvas.height);
  g.translate(canvas.width / 2, canvas.height / 2);
  g.rotate((rotated * Math.PI) / 180);
  g.translate(-width / 2, -height / 2);
  g.fillStyle = 'black';
  g.font = '28px sans-serif';
  lines.forEach((line, i) => g.fillText(line, 50, 80 + i * 46));
  return canvas;
}

/** An image-only PDF (or a mixed one, with `text` pages): one page per entry. */
export async function makeImagePdf(pages: readonly ScannedPage[]): Promise<Buffer> {
  const doc = new PDFDocument({ autoFirstPage: false, info: { CreationDate: new Date(0) } });
  const chunks: Buffer[] = [];
  doc.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise<void>((resolve) => doc.on('end', () => resolve()));
  for (const page of pages) {
    const sideways = (page.rotated ?? 0) % 180 !== 0;
    const [w, h] = sideways ? [HEIGHT_PT, WIDTH_PT] : [WIDTH_PT, HEIGHT_PT];
    doc.addPage({ size: [w, h], margin: 20 });
    if (page.text !== undefined) {
      doc.fontSize(12).text(page.text);
      continue;
    }
    doc.image(pageImage(page.lines ?? [], page.rotated ?? 0), 0, 0, { width: w, height: h });
  }
  doc.end();
  await done;
  return Buffer.concat(chunks);
}

/** A page's pixels in 8-bit grey, for a TIFF. */
function greyPixels(lines: readonly string[]): { width: number; height: number; grey: Buffer } {
  const canvas = pageCanvas(lines, 0);
  const rgba = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  const grey = Buffer.alloc(canvas.width * canvas.height);
  for (let i = 0; i < grey.length; i++) grey[i] = rgba[i * 4]!;
  return { width: canvas.width, height: canvas.height, grey };
}

/** An uncompressed multi-page TIFF (8-bit grey, one strip a page), little-endian, of `pages`' lines. */
export function makeTiff(pages: readonly (readonly string[])[]): Buffer {
  const images = pages.map((lines) => greyPixels(lines));
  const TAGS = 9;
  const ifdSize = 2 + TAGS * 12 + 4;
  const parts: Buffer[] = [];
  const header = Buffer.alloc(8);
  header.write('II', 0, 'latin1');
  header.writeUInt16LE(42, 2);
  header.writeUInt32LE(8, 4);
  parts.push(header);
  let offset = 8;
  images.forEach(({ width, height, grey }, i) => {
    const dataAt = offset + ifdSize;
    const next = i + 1 < images.length ? dataAt + grey.length : 0;
    const ifd = Buffer.alloc(ifdSize);
    ifd.writeUInt16LE(TAGS, 0);
    const entries: [tag: number, type: number, value: number][] = [
      [256, 4, width],
      [257, 4, height],
      [258, 3, 8],
      [259, 3, 1],
      [262, 3, 1],
      [273, 4, dataAt],
      [277, 3, 1],
      [278, 4, height],
      [279, 4, grey.length],
    ];
    entries.forEach(([tag, type, value], e) => {
      const at = 2 + e * 12;
      ifd.writeUInt16LE(tag, at);
      ifd.writeUInt16LE(type, at + 2);
      ifd.writeUInt32LE(1, at + 4);
      if (type === 3) ifd.writeUInt16LE(value, at + 8);
      else ifd.writeUInt32LE(value, at + 8);
    });
    ifd.writeUInt32LE(next, 2 + TAGS * 12);
    parts.push(ifd, grey);
    offset = dataAt + grey.length;
  });
  return Buffer.concat(parts);
}

/** A PNG that declares `width` x `height` pixels over a few bytes of data: a decompression bomb's header. */
export function pngDeclaring(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 0, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.alloc(1024))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}
