// OCR of the pages that hold no words (docs/DECISIONS.md "Scanned documents read"): a PDF's
// textless pages are drawn and read by tesseract.js in OCR children of their own, under limits
// of their own (a page's time, a document's time, pages per document, pixels per page, memory),
// and folded back into the text in page order. With OCR off the pages stay empty and the
// document says so (`no_text_layer`).

import { createHash } from 'node:crypto';
import { DEFAULT_OCR_WORKERS } from '../../lib/ocr.ts';
import { fileURLToPath } from 'node:url';
import { IngestError } from '../../lib/errors.ts';
import { ConversionError } from '../convert/errors.ts';
import { ConverterPool } from '../convert/pool.ts';
import type { Converted, ConversionWarning } from '../convert/types.ts';
import type { PageReading } from './engine.ts';
import type { ImageMediaType } from './images.ts';
import { Readings, type ReadingAsk, type ReadingStore } from './readings.ts';

export interface OcrOptions {
  enabled: boolean;
  /** OCR children reading at once. */
  workers: number;
  /** One page's rendering and reading. */
  pageTimeoutMs: number;
  /** One document's OCR, all its pages. */
  timeoutMs: number;
  /** Resident memory an OCR child may reach before it is killed. */
  memoryMb: number;
  /** A document with more pages to OCR fails as too_many_ocr_pages. */
  maxPages: number;
  /** A page is drawn at 300 dpi or at as many pixels as this, the smaller. */
  maxPixels: number;
  /** An installed language (lib/ocr.ts). */
  language: string;
  /** Pages read with a lower mean confidence are named in the warning `ocr`. */
  confidenceFloor: number;
}

/** Set by measurement (bench/ocr.ts; docs/DECISIONS.md "Scanned documents read"). */
export const DEFAULT_OCR_OPTIONS: Readonly<OcrOptions> = Object.freeze({
  enabled: true,
  workers: DEFAULT_OCR_WORKERS,
  pageTimeoutMs: 120_000,
  timeoutMs: 3_600_000,
  memoryMb: 1_536,
  maxPages: 500,
  maxPixels: 12_000_000,
  language: 'eng',
  confidenceFloor: 60,
});

/**
 * A page with fewer letters than this in its text layer holds no real words: it is OCRed. Digits
 * do not count: a scanner's page number or Bates stamp ("ABC000123") is no text of the page.
 */
export const MIN_PAGE_LETTERS = 8;

/** The resolution a page is drawn at for reading. */
const OCR_DPI = 300;

/** A job for an OCR child: a PDF's pages, or an image document's (all of them). */
export type OcrJob = PdfJob | ImageJob;

interface JobBase {
  bytes: Uint8Array;
  language: string;
  maxPixels: number;
  dpi: number;
}

export interface PdfJob extends JobBase {
  kind: 'pdf';
  /** Pages to read, numbered from 1. */
  pages: number[];
}

export interface ImageJob extends JobBase {
  kind: 'image';
  mediaType: ImageMediaType;
}

export interface OcrPage extends PageReading {
  page: number;
  /** The child's time on the page (drawn or decoded, and read): the wait for a free child not counted. */
  ms: number;
}

/** Whether a page's text layer holds real words (docs/DECISIONS.md "Scanned documents read"). */
export function holdsWords(text: string): boolean {
  return letters(text) >= MIN_PAGE_LETTERS;
}

const CHILD = fileURLToPath(new URL('./child.ts', import.meta.url));

/**
 * glibc's malloc arenas for the OCR child: two, not eight per core. The child's threads (the two
 * tesseract.js workers, pdfjs, libuv's pool) each allocate page images of tens of megabytes
 * natively, and memory freed in one thread's arena stays resident there
 * (docs/DECISIONS.md "Scanned documents read", "Memory across a long scan").
 */
const CHILD_ENV = { MALLOC_ARENA_MAX: '2' } as const;

/**
 * What a caller asks of OCR beside the document: the walk's item says which walk it is, whether
 * that walk reads every scan again, and whether it would rather be put back than wait for OCR.
 */
export interface OcrAsk extends ReadingAsk {
  /**
   * Asked when the document needs reading and the OCR line is full (OcrLine): true, and the
   * document is not queued but refused with OcrDeferred, for the walk to bring back later.
   */
  mayDefer?: () => boolean;
}

/**
 * Documents being read or waiting for an OCR child, per child, before a walk's next scan is put
 * back rather than queued: one read and one waiting, so that a child never waits for the walk
 * to bring it a scan, and a scan that waits holds one of the walk's slots (engine/walk/corpus-walk.ts)
 * for at most one reading's time.
 */
const LINE_PER_CHILD = 2;

/**
 * The walk's item was not queued for OCR: the line was full (docs/DECISIONS.md "Scanned
 * documents read", "Scans beside the other items"). Not a failure: the walk brings the item
 * back once the line has room.
 */
export class OcrDeferred extends IngestError {
  constructor() {
    super('ocr_deferred', 'the OCR line is full: the document is read later in the walk');
  }
}

/** Whether `error` (or the stage error it caused) is OcrDeferred. */
export const isOcrDeferred = (error: unknown): boolean =>
  error instanceof OcrDeferred || (error instanceof Error && error.cause instanceof OcrDeferred);

export class Ocr {
  readonly #options: OcrOptions;
  #pool: ConverterPool | null = null;
  /** A byte-identical copy (another path, walk or process) is not read twice (readings.ts). */
  readonly #readings: Readings<OcrPage>;
  /** Documents being read or queued for a child. */
  #inLine = 0;

  constructor(options: OcrOptions, store: ReadingStore | null = null) {
    this.#options = options;
    this.#readings = new Readings<OcrPage>(store);
  }

  /** Whether a document needing OCR now would be queued rather than deferred. */
  hasRoom(): boolean {
    return this.#inLine < LINE_PER_CHILD * this.#options.workers;
  }

  /** A converted PDF with its textless pages read (or, OCR off, named); any other result as it is. */
  async complete(converted: Converted, bytes: Uint8Array, ask: OcrAsk = {}): Promise<Converted> {
    const { scanned, ...read } = converted;
    // Only a PDF counts pages (docs/DECISIONS.md "Scanned documents read": --read-scans).
    const unread =
      read.pages === undefined ? {} : { unreadPages: this.#options.enabled ? 0 : (scanned?.pages.length ?? 0) };
    const rest = { ...read, ...unread };
    if (scanned === undefined) return rest;
    if (!this.#options.enabled) {
      // Unread, a page with a few letters still says them: only the empty ones go unsaid.
      const empty = scanned.pages.filter((page) => scanned.pageTexts[page - 1]!.trim() === '');
      return empty.length === 0 ? rest : withWarning(rest, noTextLayer(empty, scanned.pageTexts.length));
    }
    if (scanned.pages.length > this.#options.maxPages) {
      throw new ConversionError(
        'too_many_ocr_pages',
        `${scanned.pages.length} pages need OCR, over the limit of ${this.#options.maxPages}`,
      );
    }
    const { pages, fresh } = await this.#read(
      {
        kind: 'pdf',
        bytes,
        pages: scanned.pages,
        language: this.#options.language,
        maxPixels: this.#options.maxPixels,
        dpi: OCR_DPI,
      },
      ask,
    );
    const pageTexts = [...scanned.pageTexts];
    for (const { page, text } of pages) {
      // The text layer's few characters stay when OCR finds fewer (a blank page with a number).
      if (letters(text) > letters(pageTexts[page - 1]!)) pageTexts[page - 1] = text.trim();
    }
    return withWarning(
      { ...rest, text: pageTexts.join('\n\n'), ...(fresh ? { ocr: report(pages) } : {}) },
      ocrWarning(pages, this.#options.confidenceFloor),
    );
  }

  /**
   * An image document (INGEST_IMAGE_DOCUMENTS) read page by page: a multi-page TIFF's each. An
   * image without words is a document all the same, its warning says so.
   */
  async readImage(bytes: Uint8Array, mediaType: ImageMediaType, ask: OcrAsk = {}): Promise<Converted> {
    const { language, maxPixels } = this.#options;
    const job = { kind: 'image', bytes, mediaType, language, maxPixels, dpi: OCR_DPI } as const;
    const { pages, fresh } = await this.#read(job, ask);
    return {
      text: pages.map((p) => p.text.trim()).join('\n\n'),
      title: null,
      pages: pages.length,
      ...(fresh ? { ocr: report(pages) } : {}),
      warnings: [ocrWarning(pages, this.#options.confidenceFloor)],
    };
  }

  async close(): Promise<void> {
    await this.#pool?.close();
  }

  /**
   * The job's pages read, or the reading of the same bytes kept from before (fresh: false); a
   * document that would wait in a full line is refused with OcrDeferred when the asker may be put back.
   */
  async #read(job: OcrJob, ask: OcrAsk): Promise<{ pages: OcrPage[]; fresh: boolean }> {
    const { bytes, ...rest } = job;
    const key = createHash('sha256').update(bytes).update(JSON.stringify(rest)).digest('hex');
    const kept = await this.#readings.kept(key, ask);
    if (kept !== undefined) return { pages: kept, fresh: false };
    if (!this.hasRoom() && ask.mayDefer?.() === true) throw new OcrDeferred();
    this.#inLine += 1;
    try {
      return { pages: await this.#readings.read(key, ask, () => this.#children().job<OcrPage[]>(job)), fresh: true };
    } finally {
      this.#inLine -= 1;
    }
  }

  #children(): ConverterPool {
    return (this.#pool ??= new ConverterPool({
      workers: this.#options.workers,
      timeoutMs: this.#options.timeoutMs,
      stepTimeoutMs: this.#options.pageTimeoutMs,
      memoryMb: this.#options.memoryMb,
      script: CHILD,
      name: 'the OCR engine',
      crashCode: 'ocr_crashed',
      env: CHILD_ENV,
    }));
  }
}

/** Pages read and the children's time on them, for the walk's summary. */
const report = (pages: readonly OcrPage[]) => ({ pages: pages.length, ms: pages.reduce((sum, p) => sum + p.ms, 0) });

const letters = (text: string) => text.match(/\p{L}/gu)?.length ?? 0;

function withWarning(converted: Converted, warning: ConversionWarning): Converted {
  return { ...converted, warnings: [...(converted.warnings ?? []), warning] };
}

/** Page numbers as a reader says them: "3", "2 and 5", "1, 4 and 7"; past 20, how many more. */
function pageList(pages: readonly number[]): string {
  const shown = pages.slice(0, 20).map(String);
  if (pages.length > shown.length) return `${shown.join(', ')} and ${pages.length - shown.length} more`;
  return shown.length === 1 ? shown[0]! : `${shown.slice(0, -1).join(', ')} and ${shown.at(-1)}`;
}

function noTextLayer(pages: readonly number[], total: number): ConversionWarning {
  const which =
    pages.length === total
      ? total === 1
        ? 'its page holds no text'
        : `none of its ${total} pages holds text`
      : `${pages.length === 1 ? 'page' : 'pages'} ${pageList(pages)} of ${total} hold no text`;
  return { name: 'no_text_layer', message: `${which} (a scan?): nothing on them is chunked or extracted (OCR is off)` };
}

function ocrWarning(read: readonly OcrPage[], floor: number): ConversionWarning {
  // A blank page's confidence is 0 and says nothing of how well the words were read.
  const worded = read.filter((p) => p.text.trim() !== '');
  const mean = worded.reduce((sum, p) => sum + p.confidence, 0) / Math.max(1, worded.length);
  const low = worded.filter((p) => p.confidence < floor).map((p) => p.page);
  const blank = read.filter((p) => p.text.trim() === '').map((p) => p.page);
  const parts = [
    `${read.length === 1 ? '1 page' : `${read.length} pages`} read by OCR (${read.length === 1 ? 'page' : 'pages'} ` +
      `${pageList(read.map((p) => p.page))}), mean confidence ${Math.round(mean)}`,
    ...(low.length > 0 ? [`under the confidence floor of ${floor}, kept but check them: ${pageList(low)}`] : []),
    ...(blank.length > 0 ? [`no words found on ${pageList(blank)}`] : []),
  ];
  return { name: 'ocr', message: parts.join('; ') };
}
