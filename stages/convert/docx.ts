// DOCX through mammoth (to HTML, keeping headings, lists and tables) and then the HTML
// cleaner (to readable text). The zip is inflated and counted first: mammoth would inflate
// document.xml whole and build a DOM of it.

import mammoth from 'mammoth';
import { ConversionError } from './errors.ts';
import { htmlToText } from './html/index.ts';
import type { Converted } from './types.ts';
import { checkZip, type ZipLimits } from './zip-guard.ts';

export async function convertDocx(bytes: Uint8Array, limits: ZipLimits): Promise<Converted> {
  await checkZip(bytes, limits);
  let html: string;
  try {
    ({ value: html } = await mammoth.convertToHtml({
      buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
    }));
  } catch (error) {
    throw new ConversionError('corrupt', `unreadable DOCX: ${(error as Error).message}`);
  }
  // Every part of a document is content: no main-block selection, just readable text.
  const text = htmlToText(html);
  return { text, title: /^# (.+)$/m.exec(text)?.[1] ?? null };
}
