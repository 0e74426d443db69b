// A form's addressed blocks, for the bid-worker: where each piece of text sits, so a question
// found in it can be located (and answered in place). DOCX and XLSX run in the converter child
// like their text conversion, after the same zip guard; other types are the lines of their text.
//
// DOCX: the body's paragraphs and its tables' cells, read from word/document.xml in document
// order, with the character offsets a filler needs to write after a paragraph or into a cell.

import ExcelJS from 'exceljs';
import JSZip from 'jszip';
import { Parser } from 'htmlparser2';
import { ConversionError } from './errors.ts';
import type { FormBlock } from './types.ts';
import { cellText } from './xlsx.ts';
import { checkZip, type ZipLimits } from './zip-guard.ts';

/** A DOCX block with where it sits in word/document.xml. */
export interface DocxBlock extends FormBlock {
  /** Offset just past the paragraph's closing tag, or of the cell's closing tag. */
  insertAt: number;
}

/** The body's paragraphs and table cells of a word/document.xml, with their offsets. */
export function docxLayout(xml: string): DocxBlock[] {
  const blocks: DocxBlock[] = [];
  // Element path from the root; body-level means the direct child of w:body.
  const stack: string[] = [];
  let paragraph = -1;
  let table = -1;
  let row = -1;
  let cell = -1;
  let text: string[] | null = null;
  let inText = false;
  const parser = new Parser(
    {
      onopentag(name) {
        stack.push(name);
        const depth = stack.length;
        const bodyLevel = stack[depth - 2] === 'w:body';
        if (bodyLevel && name === 'w:p') {
          paragraph += 1;
          text = [];
        } else if (bodyLevel && name === 'w:tbl') {
          table += 1;
          row = -1;
        } else if (name === 'w:tr' && stack[depth - 2] === 'w:tbl' && stack[depth - 3] === 'w:body') {
          row += 1;
          cell = -1;
        } else if (name === 'w:tc' && stack[depth - 4] === 'w:body' && stack[depth - 3] === 'w:tbl') {
          cell += 1;
          text = [];
        } else if (name === 'w:p' && text !== null && text.length > 0 && stack.includes('w:tc')) {
          text.push('\n');
        }
        inText = name === 'w:t';
      },
      ontext(data) {
        if (inText && text !== null) text.push(data);
      },
      onclosetag(name) {
        const depth = stack.length;
        const bodyLevel = stack[depth - 2] === 'w:body';
        if (bodyLevel && name === 'w:p' && text !== null) {
          blocks.push({
            address: `p${paragraph}`,
            text: decode(text.join('')).trim(),
            location: { kind: 'docx_paragraph', paragraph },
            insertAt: parser.endIndex + 1,
          });
          text = null;
        } else if (name === 'w:tc' && stack[depth - 4] === 'w:body' && stack[depth - 3] === 'w:tbl' && text !== null) {
          blocks.push({
            address: `t${table}.r${row}.c${cell}`,
            text: decode(text.join('')).trim(),
            location: { kind: 'docx_table_cell', table, row, cell },
            insertAt: parser.startIndex,
          });
          text = null;
        }
        stack.pop();
        inText = false;
      },
    },
    { xmlMode: true, decodeEntities: false },
  );
  parser.end(xml);
  return blocks;
}

function decode(text: string): string {
  return text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCodePoint(Number(n)))
    .replace(/&#x([0-9a-f]+);/gi, (_, n: string) => String.fromCodePoint(parseInt(n, 16)))
    .replace(/&amp;/g, '&');
}

/** word/document.xml of a DOCX whose zip has passed the guard. */
export async function documentXml(bytes: Uint8Array): Promise<string> {
  let zip: JSZip;
  try {
    zip = await JSZip.loadAsync(bytes);
  } catch (error) {
    throw new ConversionError('corrupt', `unreadable DOCX: ${(error as Error).message}`);
  }
  const part = zip.file('word/document.xml');
  if (part === null) throw new ConversionError('corrupt', 'unreadable DOCX: no word/document.xml');
  return part.async('string');
}

export async function docxBlocks(bytes: Uint8Array, limits: ZipLimits): Promise<FormBlock[]> {
  await checkZip(bytes, limits);
  return docxLayout(await documentXml(bytes)).map(({ address, text, location }) => ({ address, text, location }));
}

/** Every non-empty cell of every sheet, in sheet and row order, within the cell budget. */
export async function xlsxBlocks(bytes: Uint8Array, limits: ZipLimits & { maxCells: number }): Promise<FormBlock[]> {
  await checkZip(bytes, limits);
  const workbook = new ExcelJS.Workbook();
  try {
    await workbook.xlsx.load(
      Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) as unknown as Parameters<
        typeof workbook.xlsx.load
      >[0],
    );
  } catch (error) {
    throw new ConversionError('corrupt', `unreadable XLSX: ${(error as Error).message}`);
  }
  const blocks: FormBlock[] = [];
  for (const sheet of workbook.worksheets) {
    sheet.eachRow({ includeEmpty: false }, (row) =>
      row.eachCell({ includeEmpty: false }, (cell) => {
        if (blocks.length >= limits.maxCells)
          throw new ConversionError('too_many_cells', `the workbook holds more than ${limits.maxCells} cells`);
        const text = cellText(cell.value);
        if (text !== '')
          blocks.push({
            address: `${sheet.name}!${cell.address}`,
            text,
            location: { kind: 'xlsx_cell', sheet: sheet.name, cell: cell.address },
          });
      }),
    );
  }
  return blocks;
}
