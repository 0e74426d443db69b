// XLSX through exceljs's streaming reader: rows are read one at a time and counted, so a
// sheet that declares (or holds) millions of cells is stopped at the cell budget instead of
// being materialised. The declared sheet dimension is never used. Each sheet becomes a
// heading line followed by one line per row, cells joined by " | ".
//
// One exception: a workbook whose xl/workbook.xml comes after its worksheets in the zip (as
// exceljs itself, among other writers, stores it) is read whole instead. On such files the
// streaming reader parks the sheets in temp files and needs workbook.xml, the last entry, to
// name them; under load it intermittently loses that last entry and fails the file
// ("reading 'sheets'"). Read whole, the workbook is bounded by the zip guard's inflated-bytes
// limit and the child's memory cap, and its cells are still counted against the budget.

import { Readable } from 'node:stream';
import ExcelJS from 'exceljs';
import { ConversionError } from './errors.ts';
import type { Converted } from './types.ts';
import { checkZip, type ZipLimits } from './zip-guard.ts';

interface Sheet {
  name: string | undefined;
  rows: AsyncIterable<ExcelJS.Row> | Iterable<ExcelJS.Row>;
}

async function* streamedSheets(buffer: Buffer): AsyncGenerator<Sheet> {
  const reader = new ExcelJS.stream.xlsx.WorkbookReader(Readable.from([buffer]), {
    sharedStrings: 'cache',
    hyperlinks: 'ignore',
    styles: 'ignore',
    worksheets: 'emit',
    entries: 'emit',
  });
  for await (const sheet of reader)
    yield { name: (sheet as unknown as { name?: string }).name, rows: sheet as AsyncIterable<ExcelJS.Row> };
}

async function* wholeSheets(buffer: Buffer): AsyncGenerator<Sheet> {
  const workbook = new ExcelJS.Workbook();
  // exceljs's typings merge an ArrayBuffer shape into Buffer; a Node Buffer is what it reads.
  await workbook.xlsx.load(buffer as unknown as Parameters<typeof workbook.xlsx.load>[0]);
  for (const sheet of workbook.worksheets) {
    const rows: ExcelJS.Row[] = [];
    sheet.eachRow({ includeEmpty: false }, (row) => rows.push(row));
    yield { name: sheet.name, rows };
  }
}

/** True when some worksheet comes before xl/workbook.xml in the zip (see the top of this file). */
export function workbookAfterSheets(entryNames: readonly string[]): boolean {
  const firstSheet = entryNames.findIndex((name) => /^xl\/worksheets\/sheet\d+\.xml$/.test(name));
  return firstSheet !== -1 && entryNames.indexOf('xl/workbook.xml') > firstSheet;
}

export async function convertXlsx(bytes: Uint8Array, limits: ZipLimits & { maxCells: number }): Promise<Converted> {
  const entryNames = await checkZip(bytes, limits);
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const parts: string[] = [];
  let cells = 0;
  try {
    for await (const sheet of workbookAfterSheets(entryNames) ? wholeSheets(buffer) : streamedSheets(buffer)) {
      const lines: string[] = [`# ${sheet.name ?? 'Sheet'}`];
      for await (const row of sheet.rows) {
        const values: string[] = [];
        row.eachCell({ includeEmpty: false }, (cell) => {
          cells += 1;
          values.push(cellText(cell.value));
        });
        if (cells > limits.maxCells)
          throw new ConversionError('too_many_cells', `the workbook holds more than ${limits.maxCells} cells`);
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

export function cellText(value: ExcelJS.CellValue): string {
  if (value === null || value === undefined) return '';
  if (value instanceof Date) return value.toISOString().slice(0, 10);
  if (typeof value !== 'object') return String(value).trim();
  if ('richText' in value)
    return value.richText
      .map((r) => r.text)
      .join('')
      .trim();
  if ('text' in value && typeof value.text === 'string') return value.text.trim();
  if ('result' in value) return cellText(value.result as ExcelJS.CellValue);
  if ('error' in value) return '';
  return '';
}
