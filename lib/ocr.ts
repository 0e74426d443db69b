// What the service knows of OCR before it reads a page (stages/ocr/ reads them), here in lib/ so
// that the configuration can check its settings against it: the language data installed with the
// service, npm packages @tesseract.js-data/<code>, each holding its LSTM model gzipped in
// 4.0.0_best_int/<code>.traineddata.gz, which tesseract.js reads from that folder (langPath) and
// nothing else: no download, no cache written (docs/DECISIONS.md "Scanned documents read"); and
// how many OCR children read at once unless configured.

import { existsSync, readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);

/** The folder of the @tesseract.js-data packages; the orientation model (osd) is one of them. */
const DATA_ROOT = path.dirname(path.dirname(require.resolve('@tesseract.js-data/osd/package.json')));

/** The LSTM model's folder in a language package (the legacy engine's is 4.0.0). */
const LSTM = '4.0.0_best_int';

/** The folder tesseract.js reads `code`'s data from (langPath). */
export function languageFolder(code: string): string {
  return path.join(DATA_ROOT, code, LSTM);
}

/** The orientation model's folder: the legacy engine's data, which orientation detection needs. */
export const OSD_FOLDER = path.join(DATA_ROOT, 'osd', '4.0.0');

/** The languages OCR can read, by code (eng, ...): every installed package with an LSTM model. */
export function installedLanguages(): string[] {
  return readdirSync(DATA_ROOT)
    .filter((code) => code !== 'osd' && existsSync(path.join(languageFolder(code), `${code}.traineddata.gz`)))
    .sort();
}

/** OCR children reading at once by default: half the cores, at least one (INGEST_OCR_WORKERS). */
export const DEFAULT_OCR_WORKERS = Math.max(1, Math.floor(availableParallelism() / 2));
