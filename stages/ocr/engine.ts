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

  async read(page: Buffer, dpi: number): Promise<PageReading> {
    const { osd, reader } = await (this.#workers ??= this.#start());
    const image = await despeckled(page);
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

/**
 * The page in grey through a 3 x 3 median filter: scanner specks and fax noise go, strokes two
 * pixels wide or more stay. On the tuning pages of bench/ocr-quality.ts (1 % salt-and-pepper
 * noise, 1.2 degrees of rotation) it took the character error rate from 19.7 % to 0.04 % for
 * 0.4 s a letter page at 300 dpi, and left clean pages as they were (docs/DECISIONS.md
 * "Scanned documents read"). The image is one this child drew, not the input file: decoding it
 * with @napi-rs/canvas is safe.
 */
async function despeckled(png: Buffer): Promise<Buffer> {
  const source = await loadImage(png);
  const { width, height } = source;
  const canvas = createCanvas(width, height);
  const context = canvas.getContext('2d');
  context.drawImage(source, 0, 0);
  const image = context.getImageData(0, 0, width, height);
  const rgba = image.data;
  const grey = new Uint8Array(width * height);
  for (let i = 0; i < grey.length; i++) grey[i] = (rgba[i * 4]! + rgba[i * 4 + 1]! + rgba[i * 4 + 2]!) / 3;
  const window = new Uint8Array(9);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let value = grey[y * width + x]!;
      if (y > 0 && y < height - 1 && x > 0 && x < width - 1) {
        let k = 0;
        for (let dy = -width; dy <= width; dy += width)
          for (let dx = -1; dx <= 1; dx++) window[k++] = grey[y * width + x + dy + dx]!;
        value = window.sort()[4]!;
      }
      rgba.fill(value, (y * width + x) * 4, (y * width + x) * 4 + 3);
    }
  }
  context.putImageData(image, 0, 0);
  return canvas.toBuffer('image/png');
}
