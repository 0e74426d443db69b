// The OCR engine inside an OCR child (child.ts): two tesseract.js workers kept for the child's
// life, one finding a page's orientation (the legacy engine with the osd model), one reading its
// words (the LSTM engine). Kept, not made per page: loading a model costs more than a small page,
// and a reused worker keeps the child's memory flat across a long scan.

import { createCanvas, loadImage } from '@napi-rs/canvas';
import { createWorker, OEM, type Worker } from 'tesseract.js';
import { languageFolder, OSD_FOLDER } from '../../lib/ocr.ts';

/** What one page image gave. */
export interface PageReading {
  text: string;
  /** Tesseract's mean word confidence, 0-100. */
  confidence: number;
  /** Degrees the image was turned clockwise before reading (0, 90, 180, 270). */
  rotated: number;
}

/** Below this, tesseract's orientation guess is noise (a page with a handful of characters). */
const MIN_ORIENTATION_CONFIDENCE = 2;

const WORKER_OPTIONS = { cacheMethod: 'none', gzip: true } as const;

export class OcrEngine {
  readonly #language: string;
  #workers: Promise<{ osd: Worker; reader: Worker }> | null = null;

  constructor(language: string) {
    this.#language = language;
  }

  async read(image: Buffer, dpi: number): Promise<PageReading> {
    const { osd, reader } = await (this.#workers ??= this.#start());
    const rotated = await orientation(osd, image);
    const upright = rotated === 0 ? image : await rotate(image, rotated);
    await reader.setParameters({ user_defined_dpi: String(dpi) });
    const { data } = await reader.recognize(upright);
    return { text: data.text, confidence: data.confidence, rotated };
  }

  async #start(): Promise<{ osd: Worker; reader: Worker }> {
    const [osd, reader] = await Promise.all([
      createWorker('osd', OEM.TESSERACT_ONLY, {
        ...WORKER_OPTIONS,
        langPath: OSD_FOLDER,
        legacyCore: true,
        legacyLang: true,
      }),
      createWorker(this.#language, OEM.LSTM_ONLY, { ...WORKER_OPTIONS, langPath: languageFolder(this.#language) }),
    ]);
    return { osd, reader };
  }
}

/** How far clockwise the image must turn to stand upright; 0 when tesseract cannot tell. */
async function orientation(osd: Worker, image: Buffer): Promise<number> {
  // A page with too few characters has no orientation to find: tesseract then rejects.
  const found = await osd.detect(image).catch(() => null);
  const degrees = found?.data.orientation_degrees ?? 0;
  const confidence = found?.data.orientation_confidence ?? 0;
  return confidence >= MIN_ORIENTATION_CONFIDENCE && [90, 180, 270].includes(degrees) ? degrees : 0;
}

async function rotate(image: Buffer, degrees: number): Promise<Buffer> {
  const source = await loadImage(image);
  const sideways = degrees % 180 !== 0;
  const canvas = createCanvas(sideways ? source.height : source.width, sideways ? source.width : source.height);
  const context = canvas.getContext('2d');
  context.translate(canvas.width / 2, canvas.height / 2);
  context.rotate((degrees * Math.PI) / 180);
  context.drawImage(source, -source.width / 2, -source.height / 2);
  return canvas.toBuffer('image/png');
}
