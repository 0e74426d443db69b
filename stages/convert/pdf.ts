// PDF text through pdf-parse 2.x (pdfjs). Runs inside a converter child: pdfjs parses on the
// calling thread and a hostile file can keep it busy forever, which only the child's hard
// timeout can end.

import { PDFParse } from 'pdf-parse';
import { ConversionError } from './errors.ts';
import { holdsWords } from '../ocr/index.ts';
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
    const pageTexts = result.pages.map((p) => p.text);
    // A scanned page is a picture: its words are OCR's to read (stages/ocr/), or it lands empty.
    const textless = result.pages.filter((p) => !holdsWords(p.text)).map((p) => p.num);
    return {
      text: pageTexts.join('\n\n'),
      title,
      pages: info.total,
      ...(textless.length > 0 ? { scanned: { pageTexts, pages: textless } } : {}),
    };
  } finally {
    await parser.destroy().catch(() => {});
  }
}

function classify(error: unknown): ConversionError {
  if (error instanceof ConversionError) return error;
  const name = (error as Error)?.name ?? '';
  const message = (error as Error)?.message ?? String(error);
  if (name === 'PasswordException') return new ConversionError('encrypted', 'the PDF is encrypted');
  return new ConversionError('corrupt', `unreadable PDF: ${message}`);
}
