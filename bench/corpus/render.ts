// The corpus as files: one document as the bytes of its type, through the same libraries real documents come
// from (pdfkit, docx, exceljs). Output is deterministic: fixed metadata dates, and zip
// containers rewritten with fixed entry timestamps.

import { Document, HeadingLevel, Packer, Paragraph, Table, TableCell, TableRow } from 'docx';
import ExcelJS from 'exceljs';
import PDFDocument from 'pdfkit';
import {
  buildDocument,
  mixPattern,
  relPathOf,
  type CorpusDocument,
  type CorpusOptions,
  type CorpusType,
} from './generate.ts';
import { normaliseZip } from './zip.ts';

const EPOCH = new Date(0);

const qaLines = (doc: CorpusDocument): string[] => doc.qa.map((p) => `Q: ${p.question}\nA: ${p.answer ?? ''}`);

function markdown(doc: CorpusDocument): string {
  const parts = [`# ${doc.title}`];
  for (const s of doc.sections) parts.push(`## ${s.heading}`, ...s.paragraphs);
  if (doc.qa.length > 0) parts.push('## Questions and answers', ...qaLines(doc));
  return `${parts.join('\n\n')}\n`;
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

function html(doc: CorpusDocument): string {
  const body = doc.sections
    .map((s) => `<h2>${escapeHtml(s.heading)}</h2>${s.paragraphs.map((p) => `<p>${escapeHtml(p)}</p>`).join('')}`)
    .join('\n');
  const qa =
    doc.qa.length === 0
      ? ''
      : `<h2>Questions and answers</h2>${qaLines(doc)
          .map((l) => `<p>${escapeHtml(l).replace('\n', '<br>\n')}</p>`)
          .join('')}`;
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(doc.title)}</title></head>
<body><nav><a href="/">Home</a> | <a href="/news">News</a> | <a href="/about">About</a></nav>
<article><h1>${escapeHtml(doc.title)}</h1>
${body}
${qa}</article>
<footer>Generated corpus document ${doc.index}</footer></body></html>
`;
}

async function pdf(doc: CorpusDocument): Promise<Buffer> {
  const pdfDoc = new PDFDocument({ info: { Title: doc.title, CreationDate: EPOCH, ModDate: EPOCH } });
  const chunks: Buffer[] = [];
  pdfDoc.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise<void>((resolve) => pdfDoc.on('end', () => resolve()));
  pdfDoc.fontSize(18).text(doc.title);
  doc.sections.forEach((s, i) => {
    // Every other section starts a page, so documents span several pages.
    if (i % 2 === 1) pdfDoc.addPage();
    pdfDoc.fontSize(14).text(s.heading);
    for (const p of s.paragraphs) pdfDoc.fontSize(11).text(p);
  });
  if (doc.qa.length > 0) {
    pdfDoc.fontSize(14).text('Questions and answers');
    for (const line of qaLines(doc)) pdfDoc.fontSize(11).text(line);
  }
  pdfDoc.end();
  await done;
  return Buffer.concat(chunks);
}

async function docx(doc: CorpusDocument): Promise<Buffer> {
  const cell = (text: string | number) => new TableCell({ children: [new Paragraph(String(text))] });
  const children: (Paragraph | Table)[] = [new Paragraph({ text: doc.title, heading: HeadingLevel.HEADING_1 })];
  for (const s of doc.sections) {
    children.push(
      new Paragraph({ text: s.heading, heading: HeadingLevel.HEADING_2 }),
      ...s.paragraphs.map((p) => new Paragraph(p)),
    );
  }
  for (const t of doc.tables) {
    children.push(new Paragraph({ text: t.name, heading: HeadingLevel.HEADING_2 }));
    children.push(new Table({ rows: [t.header, ...t.rows].map((r) => new TableRow({ children: r.map(cell) })) }));
  }
  if (doc.qa.length > 0) {
    children.push(new Paragraph({ text: 'Questions and answers', heading: HeadingLevel.HEADING_2 }));
    for (const p of doc.qa) children.push(new Paragraph(`Q: ${p.question}`), new Paragraph(`A: ${p.answer ?? ''}`));
  }
  const document = new Document({ creator: 'ingest bench corpus', title: doc.title, sections: [{ children }] });
  // The core properties carry creation times; the zip entries carry the current time.
  const xml = await Packer.toBuffer(document, false, [{ path: 'docProps/core.xml', data: coreProperties(doc.title) }]);
  return normaliseZip(xml);
}

function coreProperties(title: string): string {
  return `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><dc:title>${escapeHtml(title)}</dc:title><dc:creator>ingest bench corpus</dc:creator><dcterms:created xsi:type="dcterms:W3CDTF">1970-01-01T00:00:00Z</dcterms:created><dcterms:modified xsi:type="dcterms:W3CDTF">1970-01-01T00:00:00Z</dcterms:modified></cp:coreProperties>`;
}

async function xlsx(doc: CorpusDocument): Promise<Buffer> {
  const workbook = new ExcelJS.Workbook();
  workbook.creator = 'ingest bench corpus';
  workbook.created = EPOCH;
  workbook.modified = EPOCH;
  for (const t of doc.tables) {
    const sheet = workbook.addWorksheet(t.name);
    sheet.addRow(t.header);
    for (const r of t.rows) sheet.addRow(r);
  }
  // The text of the document goes on a sheet of its own, one paragraph or Q&A line per row.
  const notes = workbook.addWorksheet('Notes');
  notes.addRow([doc.title]);
  for (const s of doc.sections) (notes.addRow([s.heading]), s.paragraphs.forEach((p) => notes.addRow([p])));
  for (const line of qaLines(doc)) notes.addRow([line]);
  return normaliseZip(Buffer.from(await workbook.xlsx.writeBuffer()));
}

export async function renderDocument(doc: CorpusDocument): Promise<Buffer> {
  switch (doc.type) {
    case 'md':
      return Buffer.from(markdown(doc));
    case 'html':
      return Buffer.from(html(doc));
    case 'pdf':
      return pdf(doc);
    case 'docx':
      return docx(doc);
    case 'xlsx':
      return xlsx(doc);
  }
}

export interface CorpusFile {
  relPath: string;
  type: CorpusType;
  bytes: Buffer;
}

/** The corpus, one file at a time: nothing is built before the consumer asks for it. */
export async function* corpusFiles(options: CorpusOptions): AsyncGenerator<CorpusFile> {
  const pattern = mixPattern(options.mix);
  for (let index = 0; index < options.docs; index++) {
    const type = pattern[index % pattern.length]!;
    yield {
      relPath: relPathOf(index, type),
      type,
      bytes: await renderDocument(buildDocument(options.seed, index, type)),
    };
  }
}
