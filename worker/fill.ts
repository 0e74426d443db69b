// The filled copy of a DOCX or XLSX form: each answer where the form expects it. In a DOCX, an
// answer goes into the question's empty answer cell when its table has one, else into a new
// paragraph right after the question (its paragraph or its cell). In an XLSX, into the answer
// cell analyse_form chose (the first empty cell right of the question). Everything else in the
// file is left byte for byte as it was: the DOCX is edited in word/document.xml only.
//
// The form's zip has passed the converter's zip guard during analysis; it is checked again
// here before it is opened, so a changed or hostile file cannot inflate past the limits.

import ExcelJS from 'exceljs';
import JSZip from 'jszip';
import { docxLayout, documentXml } from '../stages/convert/layout.ts';
import { checkZip, type ZipLimits } from '../stages/convert/zip-guard.ts';
import type { Question } from './payloads.ts';

export interface FilledAnswer {
  question: Question;
  /** The text to write: the answer, or the "no evidence" notice. */
  text: string;
}

const escapeXml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** One paragraph of text: lines become breaks, the runs keep the document's default style. */
const paragraph = (text: string) =>
  `<w:p><w:r>${text
    .split('\n')
    .map((line) => `<w:t xml:space="preserve">${escapeXml(line)}</w:t>`)
    .join('<w:br/>')}</w:r></w:p>`;

export async function fillDocx(
  bytes: Uint8Array,
  answers: readonly FilledAnswer[],
  limits: ZipLimits,
): Promise<Buffer> {
  await checkZip(bytes, limits);
  const xml = await documentXml(bytes);
  const blocks = new Map(docxLayout(xml).map((b) => [b.address, b]));
  const inserts: { at: number; xml: string }[] = [];
  for (const { question, text } of answers) {
    const at = question.location;
    const target =
      at.kind === 'docx_table_cell' && at.answer_cell !== null
        ? blocks.get(`t${at.answer_cell.table}.r${at.answer_cell.row}.c${at.answer_cell.cell}`)
        : blocks.get(question.block);
    if (target !== undefined) inserts.push({ at: target.insertAt, xml: paragraph(text) });
  }
  // From the end backwards, so earlier offsets stay valid; at one offset the last answer goes in
  // first, so the answers there read in question order.
  let filled = xml;
  for (const insert of inserts.map((insert, i) => ({ ...insert, i })).sort((a, b) => b.at - a.at || b.i - a.i))
    filled = filled.slice(0, insert.at) + insert.xml + filled.slice(insert.at);
  const zip = await JSZip.loadAsync(bytes);
  zip.file('word/document.xml', filled);
  return zip.generateAsync({ type: 'nodebuffer', compression: 'DEFLATE' });
}

export async function fillXlsx(
  bytes: Uint8Array,
  answers: readonly FilledAnswer[],
  limits: ZipLimits,
): Promise<Buffer> {
  await checkZip(bytes, limits);
  const workbook = new ExcelJS.Workbook();
  await workbook.xlsx.load(
    Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) as unknown as Parameters<
      typeof workbook.xlsx.load
    >[0],
  );
  for (const { question, text } of answers) {
    const at = question.location;
    if (at.kind !== 'xlsx_cell') continue;
    const sheet = workbook.getWorksheet(at.sheet);
    if (sheet === undefined) continue;
    const cell = sheet.getCell(at.answer_cell);
    cell.value = text;
    cell.alignment = { wrapText: true, vertical: 'top' };
  }
  return Buffer.from(await workbook.xlsx.writeBuffer());
}
