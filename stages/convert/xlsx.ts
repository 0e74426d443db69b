// XLSX through exceljs's streaming reader: rows are read one at a time and counted, so a
// sheet that declares (or holds) millions of cells is stopped at the cell budget instead of
// being materialised. The declared sheet dimension is never used. Each sheet becomes a
// heading line followed by one line per row, cells joined by " | ".

import { Readable } from 'node:stream';
import ExcelJS from 'exceljs';
import { ConversionError } from './errors.ts';
import type { Converted } from './index.ts';
import { checkZip, type ZipLimits } from './zip-guard.ts';

export async function convertXlsx(bytes: Uint8Array, limits: ZipLimits & { maxCells: number }): Promise<Converted> {
  await checkZip(bytes, limits);
  const reader = new ExcelJS.stream.xlsx.WorkbookReader(Readable.from([Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)]), {
    sharedStrings: 'cache', hyperlinks: 'ignore', styles: 'ignore', worksheets: 'emit', entries: 'emit',
  });
  const parts: string[] = [];
  let cells = 0;
  try {
    for await (const sheet of reader) {
      const name = (sheet as unknown as { name?: string }).name;
      const lines: string[] = [`# ${name ?? 'Sheet'}`];
      for await (const row of sheet as AsyncIterable<ExcelJS.Row>) {
        const values: string[] = [];
        row.eachCell({ includeEmpty: false }, (cell) => {
          cells += 1;
          values.push(cellText(cell.value));
        });
        if (cells > limits.maxCells) throw new ConversionError('too_many_cells', `the workbook holds more than ${limits.maxCells} cells`);
        if (values.some((v) => v !== '')) lines.push(values.join(' | '));
      }
      parts.push(lines.join('\n'));
    }
  } catch (error) {
    if (error instanceof ConversionError) throw error;
    throw new ConversionError('corrupt', `unreadable XLSX: ${(error as Error).message}`);
  }
  return { text: parts.join('\n\n'), title: null };
}

function cellText(value: ExcelJS.CellValue): string {
  if (value === null || value === undefined) return '';
  if (value instanceof Date) return value.toISOString().slice(0, 10);
  if (typeof value !== 'object') return String(value).trim();
  if ('richText' in value) return value.richText.map((r) => r.text).join('').trim();
  if ('text' in value && typeof value.text === 'string') return value.text.trim();
  if ('result' in value) return cellText(value.result as ExcelJS.CellValue);
  if ('error' in value) return '';
  return '';
}
