import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  ConversionError,
  createConverter,
  mediaTypeFor,
  type Converter,
  type MediaType,
} from '../stages/convert/index.ts';
import { DEFAULT_OCR_OPTIONS } from '../stages/ocr/index.ts';
import { workbookAfterSheets } from '../stages/convert/xlsx.ts';
import { checkZip } from '../stages/convert/zip-guard.ts';
import {
  docxBomb,
  encodeSingleByte,
  flateBombPdf,
  makeDocx,
  makePdf,
  makeScannedPdf,
  makeXlsx,
  xlsxWithCells,
} from './helpers/documents.ts';

const PDF: MediaType = 'application/pdf';
const DOCX: MediaType = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const XLSX: MediaType = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';

async function failure(converter: Converter, bytes: Uint8Array, type: MediaType): Promise<ConversionError> {
  try {
    await converter.convert(bytes, type);
  } catch (error) {
    assert.instance(error, ConversionError, String(error));
    return error as ConversionError;
  }
  assert.unreachable('expected a ConversionError');
  throw new Error('unreachable');
}

test('media types by extension, case-insensitive; anything else is dropped', () => {
  assert.is(mediaTypeFor('a/b/Report.PDF'), PDF);
  assert.is(mediaTypeFor('notes.markdown'), 'text/markdown');
  assert.is(mediaTypeFor('page.htm'), 'text/html');
  for (const name of ['image.png', 'archive.zip', 'README', 'dir.md/file', 'x.docx.bak', '.md'])
    assert.is(mediaTypeFor(name), null, name);
});

test('markdown and text pass through; a BOM is dropped; the first heading is the title', async () => {
  const converter = createConverter();
  const md = await converter.convert(Buffer.from('\ufeff# Title here\n\nBody é 中文'), 'text/markdown');
  assert.is(md.text, '# Title here\n\nBody é 中文');
  assert.is(md.title, 'Title here');
  assert.equal(await converter.convert(Buffer.from('plain'), 'text/plain'), { text: 'plain', title: null });
  await converter.close();
});

test('text in other encodings reads as written; a guessed encoding or an undecodable byte is a warning', async () => {
  const converter = createConverter();
  const read = (bytes: Uint8Array) => converter.convert(bytes, 'text/plain');
  const french = 'Le café ouvre à sept heures; la crème brûlée est préparée chaque matin, à la française.\n';
  const russian =
    'Отчёт о работе отдела за третий квартал. В этом квартале мы завершили переход на новую систему учёта, ' +
    'обучили сотрудников и сократили время обработки заявок почти вдвое.\n';
  const polish =
    'Sprawozdanie z działalności działu za trzeci kwartał. W tym kwartale zakończyliśmy przejście na nowy ' +
    'system księgowy i skróciliśmy czas obsługi zgłoszeń prawie o połowę.\n';
  const utf16be = (text: string) => Buffer.from(text, 'utf16le').swap16();
  // With a byte-order mark, or valid UTF-8: read as written, no warning.
  for (const bytes of [
    Buffer.from(`\ufeff${french}`, 'utf16le'),
    utf16be(`\ufeff${french}`),
    Buffer.from(`\ufeff${french}`),
    Buffer.from(french),
  ])
    assert.equal(await read(bytes), { text: french, title: null });
  // Guessed: each as written, with the encoding it was read in named.
  for (const [bytes, encoding] of [
    [Buffer.from(french, 'latin1'), 'windows-1252'],
    [encodeSingleByte('He said “fine” for 5 €.\n', 'windows-1252'), 'windows-1252'],
    [encodeSingleByte(russian, 'windows-1251'), 'windows-1251'],
    [encodeSingleByte(russian, 'koi8-r'), 'koi8-r'],
    [encodeSingleByte(polish, 'windows-1250'), 'windows-1250'],
    [Buffer.from(french, 'utf16le'), 'UTF-16LE'],
    [utf16be(french), 'UTF-16BE'],
  ] as const) {
    const converted = await read(bytes);
    assert.is(converted.text, new TextDecoder(encoding).decode(bytes));
    assert.not.match(converted.text, /[\ufffd\u0000]/);
    assert.is(converted.warnings?.length, 1, encoding);
    assert.is(converted.warnings![0]!.name, 'encoding_fallback');
    assert.match(converted.warnings![0]!.message, new RegExp(`read as ${encoding}\\b`));
  }
  const titled = await converter.convert(Buffer.from('# Café crème\n', 'latin1'), 'text/markdown');
  assert.is(titled.title, 'Café crème');
  assert.is(titled.warnings![0]!.name, 'encoding_fallback');
  // Too short to recognise: the last resort, windows-1252, says it recognised nothing.
  const short = await read(Buffer.from('Café crème\n', 'latin1'));
  assert.is(short.text, 'Café crème\n');
  assert.match(short.warnings![0]!.message, /no encoding was recognised: read as windows-1252$/);
  // A byte-order mark that lies: what cannot be decoded is U+FFFD, and counted.
  const broken = await read(Buffer.concat([Buffer.from('\ufeffCaf'), Buffer.from([0xe9]), Buffer.from(' ok\n')]));
  assert.is(broken.text, 'Caf\ufffd ok\n');
  assert.equal(broken.warnings, [
    { name: 'replacement_characters', message: '1 undecodable byte sequence in utf-8 became U+FFFD' },
  ]);
  await converter.close();
});

test('real PDF, DOCX and XLSX convert in the isolated pool with their text and structure', async () => {
  const converter = createConverter();
  try {
    const pdf = await converter.convert(
      await makePdf(
        [
          { heading: 'Quarterly Report', paragraphs: ['Revenue grew in every region.'] },
          { heading: 'Outlook', paragraphs: ['Stable.'] },
        ],
        'Q3',
      ),
      PDF,
    );
    assert.match(pdf.text, /Quarterly Report/);
    assert.match(pdf.text, /Revenue grew in every region\./);
    assert.match(pdf.text, /Outlook/);
    assert.is(pdf.pages, 2);
    assert.is(pdf.title, 'Q3');

    const docx = await converter.convert(await makeDocx(), DOCX);
    assert.match(docx.text, /^# Onboarding Guide$/m);
    assert.match(docx.text, /^- Bring your badge$/m);
    assert.match(docx.text, /^Monday \| Laptop setup$/m);
    assert.is(docx.title, 'Onboarding Guide');

    const xlsx = await converter.convert(await makeXlsx(), XLSX);
    assert.match(xlsx.text, /^# Price list$/m);
    assert.match(xlsx.text, /^Item \| Price \| Currency$/m);
    assert.match(xlsx.text, /^Widget \| 9\.5 \| EUR$/m);
  } finally {
    await converter.close();
  }
});

test('with OCR off, a PDF without a text layer (a scan) converts to no text, with the warning no_text_layer', async () => {
  const converter = createConverter({ ocr: { ...DEFAULT_OCR_OPTIONS, enabled: false } });
  try {
    const scan = await converter.convert(await makeScannedPdf(3), PDF);
    assert.is(scan.text.trim(), '');
    assert.is(scan.pages, 3);
    assert.equal(scan.warnings, [
      {
        name: 'no_text_layer',
        message: 'none of its 3 pages holds text (a scan?): nothing on them is chunked or extracted (OCR is off)',
      },
    ]);
    const text = await converter.convert(await makePdf([{ heading: 'Minutes', paragraphs: ['Agreed.'] }]), PDF);
    assert.is(text.warnings, undefined);
  } finally {
    await converter.close();
  }
});

test('a document over the size limit fails as too_large before any parsing', async () => {
  const converter = createConverter({ maxInputBytes: 10 });
  assert.is((await failure(converter, Buffer.alloc(11), PDF)).code, 'too_large');
  await converter.close();
});

test('hostile files fail alone with named errors; the pool recovers; the caller’s memory stays flat', async () => {
  const converter = createConverter({
    memoryMb: 300,
    timeoutMs: 20_000,
    maxInflatedBytes: 64 * 1024 * 1024,
    maxCells: 100_000,
  });
  const normal = await makePdf([{ heading: 'Still works', paragraphs: ['after every hostile file'] }]);
  const rssBefore = process.memoryUsage().rss;
  try {
    const truncated = await makePdf([{ heading: 'Cut short', paragraphs: ['x'.repeat(2000)] }]);
    const cases: [string, Uint8Array, MediaType, string[]][] = [
      ['truncated PDF', truncated.subarray(0, Math.floor(truncated.length / 2)), PDF, ['corrupt']],
      ['not a PDF at all', Buffer.from('GIF89a not a pdf'), PDF, ['corrupt']],
      [
        'Flate-bomb PDF (600 MB content stream)',
        await flateBombPdf(600 * 1024 * 1024),
        PDF,
        ['memory_limit', 'timeout', 'corrupt'],
      ],
      ['DOCX whose document.xml inflates to 200 MB', await docxBomb(200 * 1024 * 1024), DOCX, ['zip_bomb']],
      ['DOCX that lies about its inflated size', await docxBomb(20 * 1024 * 1024, 1000), DOCX, ['zip_bomb']],
      ['DOCX that is not a zip', Buffer.from('PK but not really'), DOCX, ['corrupt']],
      ['XLSX with a million cells', await xlsxWithCells(100_000, 10, 'A1:J100000'), XLSX, ['too_many_cells']],
    ];
    for (const [label, bytes, type, codes] of cases) {
      const error = await failure(converter, bytes, type);
      assert.ok(codes.includes(error.code), `${label}: got ${error.code} (${error.message})`);
      const after = await converter.convert(normal, PDF);
      assert.match(after.text, /Still works/, `the pool converts again after: ${label}`);
    }
    // Bound on the caller's memory (not a timing): the hostile work happened in the children.
    const grownMb = (process.memoryUsage().rss - rssBefore) / 1024 / 1024;
    assert.ok(grownMb < 200, `the calling process grew by ${grownMb.toFixed(0)} MB`);
  } finally {
    await converter.close();
  }
});

test('a sheet that declares a huge dimension but holds little converts normally', async () => {
  const converter = createConverter();
  try {
    const result = await converter.convert(await xlsxWithCells(3, 2, 'A1:XFD1048576'), XLSX);
    assert.equal(result.text.split('\n'), ['# Data', '1 | 2', '1 | 2', '1 | 2']);
  } finally {
    await converter.close();
  }
});

test('a workbook stored with xl/workbook.xml after its sheets is read whole, and its cells still count', async () => {
  const written = await makeXlsx();
  const order = await checkZip(written, { maxEntries: 100, maxInflatedBytes: 1e8 });
  assert.ok(workbookAfterSheets(order), `exceljs stores workbook.xml last: ${order.join(', ')}`);
  assert.not.ok(
    workbookAfterSheets(await checkZip(await xlsxWithCells(1, 1, 'A1'), { maxEntries: 100, maxInflatedBytes: 1e8 })),
  );
  const tight = createConverter({ maxCells: 5 });
  try {
    assert.is((await failure(tight, written, XLSX)).code, 'too_many_cells');
  } finally {
    await tight.close();
  }
});

test('a converter over its memory cap is killed as memory_limit', async () => {
  // The zip guard lets 200 MB through; mammoth then inflates document.xml whole.
  const converter = createConverter({ memoryMb: 200, maxInflatedBytes: 1024 * 1024 * 1024, timeoutMs: 60_000 });
  try {
    assert.is((await failure(converter, await docxBomb(300 * 1024 * 1024), DOCX)).code, 'memory_limit');
  } finally {
    await converter.close();
  }
});

test('a conversion past its time limit is killed as timeout, and the next one runs', async () => {
  const slow = createConverter({ timeoutMs: 1 });
  const pdf = await makePdf([{ heading: 'Slow', paragraphs: ['text'] }]);
  try {
    assert.is((await failure(slow, pdf, PDF)).code, 'timeout');
  } finally {
    await slow.close();
  }
  const converter = createConverter();
  try {
    assert.match((await converter.convert(pdf, PDF)).text, /Slow/);
  } finally {
    await converter.close();
  }
});

test.run();
