// PDF text through pdf-parse 2.x (pdfjs). Runs inside a converter child: pdfjs parses on the
// calling thread and a hostile file can keep it busy forever, which only the child's hard
// timeout can end.

import { PDFParse } from 'pdf-parse';
import { ConversionError } from './errors.ts';
import type { Converted } from './types.ts';

export async function convertPdf(bytes: Uint8Array, maxPages: number): Promise<Converted> {
  const parser = new PDFParse({ data: bytes });
  try {
    const info = await parser.getInfo().catch((error: unknown) => {
      throw classify(error);
    });
    if (info.total > maxPages)
      throw new ConversionError('too_many_pages', `the PDF has ${info.total} pages, over the limit of ${maxPages}`);
    const result = await parser.getText().catch((error: unknown) => {
      throw classify(error);
    });
    const title = typeof info.info?.Title === 'string' && info.info.Title.trim() !== '' ? info.info.Title.trim() : null;
    const text = result.pages.map((p) => p.text).join('\n\n');
    // A scan is pictures of pages: it converts, to nothing, and would land without a word said.
    const scan = text.trim() === '';
    return {
      text,
      title,
      pages: info.total,
      ...(scan ? { warnings: [{ name: 'no_text_layer', message: noTextLayer(info.total) }] } : {}),
    };
  } finally {
    await parser.destroy().catch(() => {});
  }
}

const noTextLayer = (pages: number) =>
  `${pages === 1 ? 'its page holds no text' : `none of its ${pages} pages holds text`} (a scan?): ` +
  'nothing to chunk or extract until it is OCRed';

function classify(error: unknown): ConversionError {
  if (error instanceof ConversionError) return error;
  const name = (error as Error)?.name ?? '';
  const message = (error as Error)?.message ?? String(error);
  if (name === 'PasswordException') return new ConversionError('encrypted', 'the PDF is encrypted');
  return new ConversionError('corrupt', `unreadable PDF: ${message}`);
}
