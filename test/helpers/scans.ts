// Scanned pages made at test time: known lines of text drawn into a page image with
// @napi-rs/canvas (the canvas pdf-parse brings), then wrapped as an image-only PDF with pdfkit.
// Small pages at 150 dpi keep OCR quick on a shared machine.

import { createCanvas } from '@napi-rs/canvas';
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

/** A page image (PNG) with `lines` in a plain sans-serif, turned by `rotated`. */
export function pageImage(lines: readonly string[], rotated = 0): Buffer {
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
  return canvas.toBuffer('image/png');
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
