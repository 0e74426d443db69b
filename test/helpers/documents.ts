// Real and hostile documents, generated at test time (nothing large is committed).

import { createDeflateRaw, crc32 } from 'node:zlib';
import ExcelJS from 'exceljs';
import PDFDocument from 'pdfkit';
import { Document, HeadingLevel, Packer, Paragraph, Table, TableCell, TableRow } from 'docx';
import { zip, type ZipEntry } from '../../bench/corpus/zip-writer.ts';

/** A real PDF: one page per entry, each a heading and its paragraphs. */
export async function makePdf(
  pages: { heading: string; paragraphs: string[] }[],
  title = 'Generated',
): Promise<Buffer> {
  const doc = new PDFDocument({ info: { Title: title, CreationDate: new Date(0) } });
  const chunks: Buffer[] = [];
  doc.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise<void>((resolve) => doc.on('end', () => resolve()));
  pages.forEach((page, i) => {
    if (i > 0) doc.addPage();
    doc.fontSize(18).text(page.heading);
    for (const p of page.paragraphs) doc.fontSize(11).text(p);
  });
  doc.end();
  await done;
  return Buffer.concat(chunks);
}

/** A scan as far as text goes: pages of vector drawings (ruled boxes and bars where lines of text would be), no text. */
export async function makeScannedPdf(pages: number): Promise<Buffer> {
  const doc = new PDFDocument({ info: { Title: 'Scan', CreationDate: new Date(0) } });
  const chunks: Buffer[] = [];
  doc.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise<void>((resolve) => doc.on('end', () => resolve()));
  for (let page = 0; page < pages; page++) {
    if (page > 0) doc.addPage();
    doc.rect(60, 60, 480, 660).stroke();
    for (let line = 0; line < 30; line++) doc.rect(80, 90 + line * 20, 300 + ((line * 37) % 140), 8).fill('#333');
  }
  doc.end();
  await done;
  return Buffer.concat(chunks);
}

/** `text` in a single-byte encoding TextDecoder knows (windows-1252, koi8-r, ...): Node encodes none but Latin-1. */
export function encodeSingleByte(text: string, encoding: string): Buffer {
  const decoder = new TextDecoder(encoding);
  const byChar = new Map<string, number>();
  for (let b = 255; b >= 0; b--) byChar.set(decoder.decode(Uint8Array.of(b)), b);
  return Buffer.from(
    Array.from(text, (c) => {
      const b = byChar.get(c);
      if (b === undefined) throw new Error(`${encoding} has no ${c}`);
      return b;
    }),
  );
}

export async function makeDocx(): Promise<Buffer> {
  const cell = (text: string) => new TableCell({ children: [new Paragraph(text)] });
  const doc = new Document({
    sections: [
      {
        children: [
          new Paragraph({ text: 'Onboarding Guide', heading: HeadingLevel.HEADING_1 }),
          new Paragraph('Welcome to Northwind Traders. This guide covers your first week.'),
          new Paragraph({ text: 'Bring your badge', bullet: { level: 0 } }),
          new Paragraph({ text: 'Meet Ada Lovelace', bullet: { level: 0 } }),
          new Table({
            rows: [
              new TableRow({ children: [cell('Day'), cell('Task')] }),
              new TableRow({ children: [cell('Monday'), cell('Laptop setup')] }),
            ],
          }),
        ],
      },
    ],
  });
  return Packer.toBuffer(doc);
}

export async function makeXlsx(): Promise<Buffer> {
  const workbook = new ExcelJS.Workbook();
  workbook.created = new Date(0);
  workbook.modified = new Date(0);
  const sheet = workbook.addWorksheet('Price list');
  sheet.addRow(['Item', 'Price', 'Currency']);
  sheet.addRow(['Widget', 9.5, 'EUR']);
  sheet.addRow(['Gadget', 120, 'EUR']);
  return Buffer.from(await workbook.xlsx.writeBuffer());
}

/** Streams `total` bytes of `unit` repeated through raw deflate without holding them. */
async function deflateRepeated(unit: Buffer, total: number, prefix = Buffer.alloc(0), suffix = Buffer.alloc(0)) {
  const deflate = createDeflateRaw({ level: 9 });
  const out: Buffer[] = [];
  deflate.on('data', (c: Buffer) => out.push(c));
  const finished = new Promise<void>((resolve, reject) => deflate.on('end', resolve).on('error', reject));
  let crc = crc32(prefix);
  deflate.write(prefix);
  const block = Buffer.alloc(Math.max(unit.length, Math.floor((1 << 20) / unit.length) * unit.length));
  for (let i = 0; i < block.length; i += unit.length) unit.copy(block, i);
  let written = 0;
  while (written < total) {
    const piece = total - written >= block.length ? block : block.subarray(0, total - written);
    crc = crc32(piece, crc);
    if (!deflate.write(piece)) await new Promise((resolve) => deflate.once('drain', resolve));
    written += piece.length;
  }
  crc = crc32(suffix, crc);
  deflate.end(suffix);
  await finished;
  return { data: Buffer.concat(out), crc, size: prefix.length + total + suffix.length };
}

const deflated = async (name: string, text: string): Promise<ZipEntry> => ({
  name,
  ...(await deflateRepeated(Buffer.from(text), 0, Buffer.from(text))),
});

const DOCX_TYPES =
  '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>';
const DOCX_RELS =
  '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>';

/** A DOCX whose document.xml inflates to `inflatedBytes` of paragraphs (optionally lying about it). */
export async function docxBomb(inflatedBytes: number, declaredSize?: number): Promise<Buffer> {
  const paragraph = Buffer.from('<w:p><w:r><w:t>boom</w:t></w:r></w:p>');
  const body = await deflateRepeated(
    paragraph,
    Math.floor(inflatedBytes / paragraph.length) * paragraph.length,
    Buffer.from(
      '<?xml version="1.0"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>',
    ),
    Buffer.from('</w:body></w:document>'),
  );
  return zip([
    await deflated('[Content_Types].xml', DOCX_TYPES),
    await deflated('_rels/.rels', DOCX_RELS),
    { name: 'word/document.xml', ...body, ...(declaredSize === undefined ? {} : { declaredSize }) },
  ]);
}

/** An XLSX written by hand: one sheet with `rows` x `columns` numeric cells and the given dimension. */
export async function xlsxWithCells(rows: number, columns: number, dimension: string): Promise<Buffer> {
  const letters = (n: number) => {
    let s = '';
    for (n += 1; n > 0; n = Math.floor((n - 1) / 26)) s = String.fromCharCode(65 + ((n - 1) % 26)) + s;
    return s;
  };
  // Every row is the same bytes but for its number: write them through one deflate stream.
  const deflate = createDeflateRaw({ level: 6 });
  const out: Buffer[] = [];
  deflate.on('data', (c: Buffer) => out.push(c));
  const finished = new Promise<void>((resolve) => deflate.on('end', resolve));
  const head = Buffer.from(
    `<?xml version="1.0"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><dimension ref="${dimension}"/><sheetData>`,
  );
  let crc = crc32(head);
  let size = head.length;
  deflate.write(head);
  const columnsXml = (r: number) =>
    Array.from({ length: columns }, (_, c) => `<c r="${letters(c)}${r}"><v>${c + 1}</v></c>`).join('');
  const template = columnsXml(0);
  // Rows differ only in their number: build them from one template, a thousand per write.
  for (let first = 1; first <= rows; first += 1000) {
    let text = '';
    for (let r = first; r < Math.min(rows + 1, first + 1000); r++)
      text += `<row r="${r}">${template.replaceAll('0"><v>', `${r}"><v>`)}</row>`;
    const piece = Buffer.from(text);
    crc = crc32(piece, crc);
    size += piece.length;
    if (!deflate.write(piece)) await new Promise((resolve) => deflate.once('drain', resolve));
  }
  const tail = Buffer.from('</sheetData></worksheet>');
  crc = crc32(tail, crc);
  size += tail.length;
  deflate.end(tail);
  await finished;
  return zip([
    await deflated(
      '[Content_Types].xml',
      '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>',
    ),
    await deflated(
      '_rels/.rels',
      '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>',
    ),
    await deflated(
      'xl/workbook.xml',
      '<?xml version="1.0"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Data" sheetId="1" r:id="rId1"/></sheets></workbook>',
    ),
    await deflated(
      'xl/_rels/workbook.xml.rels',
      '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>',
    ),
    { name: 'xl/worksheets/sheet1.xml', data: Buffer.concat(out), crc, size },
  ]);
}

/** A PDF whose single content stream is a Flate bomb: `inflatedBytes` of text operators. */
export async function flateBombPdf(inflatedBytes: number): Promise<Buffer> {
  const { data } = await deflateRepeated(Buffer.from('BT /F1 12 Tf 72 712 Td (bomb) Tj ET\n'), inflatedBytes);
  // zlib framing (header + raw deflate + adler32 placeholder): pdfjs tolerates a bad checksum.
  const stream = Buffer.concat([Buffer.from([0x78, 0x9c]), data, Buffer.alloc(4)]);
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    null,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  const parts: Buffer[] = [Buffer.from('%PDF-1.4\n')];
  const offsets: number[] = [];
  let length = parts[0]!.length;
  objects.forEach((body, i) => {
    offsets.push(length);
    const piece =
      body === null
        ? Buffer.concat([
            Buffer.from(`${i + 1} 0 obj\n<< /Length ${stream.length} /Filter /FlateDecode >>\nstream\n`),
            stream,
            Buffer.from('\nendstream\nendobj\n'),
          ])
        : Buffer.from(`${i + 1} 0 obj\n${body}\nendobj\n`);
    parts.push(piece);
    length += piece.length;
  });
  const xref = `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  parts.push(
    Buffer.from(`${xref}trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${length}\n%%EOF\n`),
  );
  return Buffer.concat(parts);
}
