// Scanned pages of known text, made when needed (test/ocr*.test.ts, bench/ocr.ts): lines drawn
// into a page image with @napi-rs/canvas (the canvas pdf-parse brings), then wrapped as an
// image-only PDF with pdfkit, or as a TIFF. The tests' small pages at 150 dpi keep OCR quick on
// a shared machine; the benchmark draws letter pages at 300 dpi.

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

/** A page's size in points, the resolution it is drawn at, and its type's size and leading in pixels. */
export interface PageFormat {
  widthPt: number;
  heightPt: number;
  dpi: number;
  fontPx: number;
  linePx: number;
}

/** Half a letter page at 150 dpi, a few lines of large type: the tests' page. */
export const SMALL_PAGE: PageFormat = { widthPt: 420, heightPt: 300, dpi: 150, fontPx: 28, linePx: 46 };
/** A letter page at 300 dpi in 11 pt type: a dense page. */
export const LETTER_PAGE: PageFormat = { widthPt: 612, heightPt: 792, dpi: 300, fontPx: 46, linePx: 60 };

/** A page image (PNG, or JPEG) with `lines` in a plain sans-serif, turned by `rotated`. */
export function pageImage(
  lines: readonly string[],
  rotated = 0,
  format: 'image/png' | 'image/jpeg' = 'image/png',
  page: PageFormat = SMALL_PAGE,
): Buffer {
  const canvas = pageCanvas(lines, rotated, page);
  return format === 'image/png' ? canvas.toBuffer('image/png') : canvas.toBuffer('image/jpeg');
}

function pageCanvas(lines: readonly string[], rotated: number, page: PageFormat): Canvas {
  const width = Math.round((page.widthPt / 72) * page.dpi);
  const height = Math.round((page.heightPt / 72) * page.dpi);
  const sideways = rotated % 180 !== 0;
  const canvas = createCanvas(sideways ? height : width, sideways ? width : height);
  const g = canvas.getContext('2d');
  g.fillStyle = 'white';
  g.fillRect(0, 0, canvas.width, canvas.height);
  g.translate(canvas.width / 2, canvas.height / 2);
  g.rotate((rotated * Math.PI) / 180);
  g.translate(-width / 2, -height / 2);
  g.fillStyle = 'black';
  g.font = `${page.fontPx}px sans-serif`;
  const margin = page.dpi / 3;
  lines.forEach((line, i) => g.fillText(line, margin, margin + page.fontPx + i * page.linePx));
  return canvas;
}

/** An image-only PDF (or a mixed one, with `text` pages): one page per entry. */
export function makeImagePdf(pages: readonly ScannedPage[], format: PageFormat = SMALL_PAGE): Promise<Buffer> {
  return pdfDocument((doc) => {
    for (const page of pages) {
      const sideways = (page.rotated ?? 0) % 180 !== 0;
      const [w, h] = sideways ? [format.heightPt, format.widthPt] : [format.widthPt, format.heightPt];
      doc.addPage({ size: [w, h], margin: 20 });
      if (page.text !== undefined) {
        doc.fontSize(12).text(page.text);
        continue;
      }
      doc.image(pageImage(page.lines ?? [], page.rotated ?? 0, 'image/png', format), 0, 0, { width: w, height: h });
    }
  });
}

/** The bytes of a PDF that `draw` lays out page by page. */
export async function pdfDocument(draw: (doc: PDFKit.PDFDocument) => void): Promise<Buffer> {
  const doc = new PDFDocument({ autoFirstPage: false, info: { CreationDate: new Date(0) } });
  const chunks: Buffer[] = [];
  doc.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise<void>((resolve) => doc.on('end', () => resolve()));
  draw(doc);
  doc.end();
  await done;
  return Buffer.concat(chunks);
}

/** A page's pixels in 8-bit grey, for a TIFF. */
function greyPixels(canvas: Canvas): { width: number; height: number; grey: Buffer } {
  const rgba = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  const grey = Buffer.alloc(canvas.width * canvas.height);
  for (let i = 0; i < grey.length; i++) grey[i] = rgba[i * 4]!;
  return { width: canvas.width, height: canvas.height, grey };
}

/** An uncompressed multi-page TIFF (8-bit grey, one strip a page), little-endian, of `pages`' lines. */
export function makeTiff(pages: readonly (readonly string[])[]): Buffer {
  return tiffOf(pages.map((lines) => pageCanvas(lines, 0, SMALL_PAGE)));
}

/** An uncompressed multi-page TIFF of the canvases, in grey. */
export function tiffOf(canvases: readonly Canvas[]): Buffer {
  const images = canvases.map(greyPixels);
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

/** The share of the drawn words that OCR read, as a bag of words (reading order aside). */
export function wordRecall(truth: string, read: string): number {
  const found = new Map<string, number>();
  for (const w of read.split(/\s+/)) found.set(w, (found.get(w) ?? 0) + 1);
  const expected = truth.split(/\s+/).filter((w) => w !== '');
  let hits = 0;
  for (const w of expected) {
    const n = found.get(w) ?? 0;
    if (n > 0) {
      hits += 1;
      found.set(w, n - 1);
    }
  }
  return hits / Math.max(1, expected.length);
}
