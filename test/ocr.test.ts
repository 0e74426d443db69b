// OCR of PDF pages without words (stages/ocr/): scans generated at test time (bench/corpus/scans.ts)
// are read by tesseract.js in OCR children; a mixed PDF keeps its text pages and reads the others
// in page order; a page fed sideways is turned before reading; OCR off says which pages went
// unread; a crashed OCR child fails its document alone with a named reason.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync } from 'node:fs';
import { ConversionError, createConverter, type Converter } from '../stages/convert/index.ts';
import { DEFAULT_OCR_OPTIONS, type OcrOptions } from '../stages/ocr/index.ts';
import { ConfigError, loadConfig } from '../lib/config.ts';
import { installedLanguages } from '../lib/ocr.ts';
import { makeImagePdf, makeTiff, pageImage, pngDeclaring } from '../bench/corpus/scans.ts';

const PDF = 'application/pdf';
const ocrConverter = (ocr: Partial<OcrOptions> = {}): Converter =>
  createConverter({ ocr: { ...DEFAULT_OCR_OPTIONS, workers: 1, ...ocr } });

const DELIVERY = ['The supplier agrees to deliver the goods', 'within thirty days of the signed order.'];
const PAYMENT = ['Payment is due on receipt of the invoice', 'and late payments carry interest.'];
const TEXT_PAGE = 'Section two is typed text: the warranty lasts for twelve months from delivery.';

/** Words of a text, lower case, for comparing what OCR read with what was drawn. */
const words = (text: string) => text.toLowerCase().match(/[a-z]+/g) ?? [];

test('a mixed PDF: scanned pages read in page order beside its text page, a sideways page turned, a blank page named', async () => {
  const converter = ocrConverter();
  try {
    const pdf = await makeImagePdf([
      { lines: DELIVERY },
      { text: TEXT_PAGE },
      { lines: PAYMENT, rotated: 90 },
      { lines: [] },
    ]);
    const converted = await converter.convert(pdf, PDF);
    assert.equal(words(converted.text), words([...DELIVERY, TEXT_PAGE, ...PAYMENT].join(' ')));
    assert.is(converted.pages, 4);
    assert.is(converted.ocr?.pages, 3);
    assert.is(converted.warnings?.length, 1);
    const [warning] = converted.warnings!;
    assert.is(warning!.name, 'ocr');
    assert.match(
      warning!.message,
      /^3 pages read by OCR \(pages 1, 3 and 4\), mean confidence \d+; no words found on 4$/,
    );
  } finally {
    await converter.close();
  }
});

test('a page read under the confidence floor is kept and named', async () => {
  const converter = ocrConverter({ confidenceFloor: 100 });
  try {
    const converted = await converter.convert(await makeImagePdf([{ lines: DELIVERY }]), PDF);
    assert.equal(words(converted.text), words(DELIVERY.join(' ')));
    assert.match(converted.warnings![0]!.message, /; under the confidence floor of 100, kept but check them: 1$/);
  } finally {
    await converter.close();
  }
});

test('OCR off: the scanned pages of a mixed PDF stay empty and are named in no_text_layer', async () => {
  const converter = ocrConverter({ enabled: false });
  try {
    const pdf = await makeImagePdf([{ lines: DELIVERY }, { text: TEXT_PAGE }, { lines: PAYMENT }]);
    const converted = await converter.convert(pdf, PDF);
    assert.equal(words(converted.text), words(TEXT_PAGE));
    assert.is(converted.ocr, undefined);
    assert.equal(converted.warnings, [
      {
        name: 'no_text_layer',
        message: 'pages 1 and 3 of 3 hold no text (a scan?): nothing on them is chunked or extracted (OCR is off)',
      },
    ]);
  } finally {
    await converter.close();
  }
});

test('more pages to OCR than the limit fail as too_many_ocr_pages, before any is read', async () => {
  const converter = ocrConverter({ maxPages: 1 });
  try {
    const error = await converter.convert(await makeImagePdf([{ lines: DELIVERY }, { lines: PAYMENT }]), PDF).then(
      () => null,
      (e: unknown) => e as ConversionError,
    );
    assert.is(error?.code, 'too_many_ocr_pages');
  } finally {
    await converter.close();
  }
});

/** The pids of this process's OCR children. */
function ocrChildren(): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        return parent === process.pid && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('stages/ocr/child.ts');
      } catch {
        return false;
      }
    })
    .map(Number);
}

test('an OCR child that dies fails its document as ocr_crashed; the next document is read by a new child', async () => {
  const converter = ocrConverter();
  try {
    const scan = await makeImagePdf([{ lines: DELIVERY }, { lines: PAYMENT }]);
    const reading = converter.convert(scan, PDF).then(
      () => null,
      (e: unknown) => e as ConversionError,
    );
    let pids: number[] = [];
    while (pids.length === 0) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      pids = ocrChildren();
    }
    process.kill(pids[0]!, 'SIGKILL');
    const error = await reading;
    assert.ok(error instanceof ConversionError);
    assert.is(error.code, 'ocr_crashed');
    const next = await converter.convert(await makeImagePdf([{ lines: PAYMENT }]), PDF);
    assert.equal(words(next.text), words(PAYMENT.join(' ')));
  } finally {
    await converter.close();
  }
});

test('page images: PNG and JPEG read, a multi-page TIFF page by page, a blank image a document with a warning', async () => {
  const converter = ocrConverter();
  try {
    const png = await converter.convert(pageImage(DELIVERY), 'image/png');
    assert.equal(words(png.text), words(DELIVERY.join(' ')));
    assert.equal([png.pages, png.ocr?.pages], [1, 1]);
    const jpeg = await converter.convert(pageImage(PAYMENT, 180, 'image/jpeg'), 'image/jpeg');
    assert.equal(words(jpeg.text), words(PAYMENT.join(' ')));
    const tiff = await converter.convert(makeTiff([DELIVERY, PAYMENT]), 'image/tiff');
    assert.equal(words(tiff.text), words([...DELIVERY, ...PAYMENT].join(' ')));
    assert.equal([tiff.pages, tiff.ocr?.pages], [2, 2]);
    const blank = await converter.convert(pageImage([]), 'image/png');
    assert.is(blank.text, '');
    assert.match(
      blank.warnings![0]!.message,
      /^1 page read by OCR \(page 1\), mean confidence 0; no words found on 1$/,
    );
  } finally {
    await converter.close();
  }
});

test('a corrupt image and a decompression bomb fail alone, by name; the next image is read', async () => {
  const converter = ocrConverter({ maxPixels: 50_000_000 });
  const failure = (bytes: Buffer, mediaType: 'image/png' | 'image/tiff') =>
    converter.convert(bytes, mediaType).then(
      () => null,
      (e: unknown) => e as ConversionError,
    );
  try {
    const corrupt = Buffer.concat([
      pngDeclaring(200, 100).subarray(0, 33),
      Buffer.from('IDAT is not zlib at all, just words'),
    ]);
    assert.is((await failure(corrupt, 'image/png'))?.code, 'corrupt');
    assert.is((await failure(Buffer.from('II*\0 not a tiff'), 'image/tiff'))?.code, 'corrupt');
    const bomb = await failure(pngDeclaring(100_000, 100_000), 'image/png');
    assert.is(bomb?.code, 'too_many_pixels');
    assert.match(bomb!.message, /declares 100000 x 100000 pixels, over the limit of 50000000/);
    const read = await converter.convert(pageImage(DELIVERY), 'image/png');
    assert.equal(words(read.text), words(DELIVERY.join(' ')));
  } finally {
    await converter.close();
  }
});

test('the OCR child runs with two malloc arenas (its memory across a long scan)', async () => {
  const converter = ocrConverter();
  try {
    await converter.convert(await makeImagePdf([{ lines: DELIVERY }]), PDF);
    const children = ocrChildren();
    assert.is(children.length, 1);
    const environment = readFileSync(`/proc/${children[0]}/environ`, 'utf8').split('\0');
    assert.ok(environment.includes('MALLOC_ARENA_MAX=2'));
  } finally {
    await converter.close();
  }
});

test('the OCR language is one of those installed: another is a named configuration error', () => {
  assert.equal(installedLanguages(), ['eng']);
  assert.is(loadConfig({}, '/tmp').convert.ocr.language, 'eng');
  try {
    loadConfig({ INGEST_OCR_LANGUAGES: 'fra' }, '/tmp');
    assert.unreachable('fra accepted');
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    assert.is(error.code, 'invalid_config');
    assert.match(error.message, 'INGEST_OCR_LANGUAGES: fra is not an installed OCR language (installed: eng)');
  }
});

test.run();
