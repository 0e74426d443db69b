// Stage 2, conversion (docs/behaviour/stages.md#stage-2-conversion): bytes of a recognised document
// type -> text.
//
// Markdown and plain text pass through and HTML goes through the in-process cleaner; PDF,
// DOCX and XLSX are converted in isolated child processes under a hard timeout and memory
// cap (pool.ts), after size, page, zip-inflation and cell limits
// (docs/behaviour/limits.md#conversion-limits). Every failure is a ConversionError with a code
// naming what stopped it.

import { ConversionError } from './errors.ts';
import { cleanHtml } from './html/index.ts';
import { ConverterPool } from './pool.ts';
import { DEFAULT_OCR_OPTIONS, Ocr, type OcrAsk, type OcrOptions } from '../ocr/index.ts';
import type { ReadingStore } from '../ocr/readings.ts';
import { convertMarkdown, convertPlainText } from './text.ts';
import { textBlocks } from './text-blocks.ts';
import type { Converted, FormBlocks, MediaType } from './types.ts';

export { ConversionError, type ConversionErrorCode } from './errors.ts';
export type { BlockLocation, ConversionWarning, Converted, FormBlock, FormBlocks, MediaType } from './types.ts';

const BY_EXTENSION: Readonly<Record<string, MediaType>> = {
  '.pdf': 'application/pdf',
  '.docx': 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  '.xlsx': 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  '.md': 'text/markdown',
  '.markdown': 'text/markdown',
  '.txt': 'text/plain',
  '.html': 'text/html',
  '.htm': 'text/html',
};

/** Page images, documents only when asked (INGEST_IMAGE_DOCUMENTS): read by OCR (stages/ocr/). */
const IMAGES_BY_EXTENSION: Readonly<Record<string, MediaType>> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.tif': 'image/tiff',
  '.tiff': 'image/tiff',
};

/**
 * The media type by file extension (case-insensitive); null for anything the walk drops, images
 * too unless `images` (a home folder's photos and logos are no documents unasked).
 */
export function mediaTypeFor(relPath: string, images = false): MediaType | null {
  const dot = relPath.lastIndexOf('.');
  if (dot <= relPath.lastIndexOf('/') + 1) return null;
  const extension = relPath.slice(dot).toLowerCase();
  return BY_EXTENSION[extension] ?? (images ? (IMAGES_BY_EXTENSION[extension] ?? null) : null);
}

export interface ConverterOptions {
  /** Child processes converting at once. */
  workers: number;
  timeoutMs: number;
  /** Resident memory a converter child may reach before it is killed. */
  memoryMb: number;
  maxInputBytes: number;
  maxInflatedBytes: number;
  maxZipEntries: number;
  maxPages: number;
  maxCells: number;
  /** OCR of the pages without words (stages/ocr/). */
  ocr: OcrOptions;
  /** Where OCR readings outlive the process (the state store: stages/ocr/readings.ts); none by default. */
  ocrReadings?: ReadingStore;
}

export const DEFAULT_CONVERTER_OPTIONS: Readonly<ConverterOptions> = Object.freeze({
  workers: 2,
  timeoutMs: 60_000,
  memoryMb: 512,
  maxInputBytes: 100 * 1024 * 1024,
  maxInflatedBytes: 512 * 1024 * 1024,
  maxZipEntries: 10_000,
  maxPages: 2_000,
  maxCells: 2_000_000,
  ocr: DEFAULT_OCR_OPTIONS,
});

export interface Converter {
  /** `ocr`: what the walk's item asks of OCR (stages/ocr/index.ts OcrAsk). */
  convert(bytes: Uint8Array, mediaType: MediaType, ocr?: OcrAsk): Promise<Converted>;
  /** Whether a document needing OCR now would be queued for it rather than deferred. */
  ocrHasRoom(): boolean;
  /**
   * The document's addressed blocks (a form's paragraphs, cells or lines): DOCX and XLSX read
   * in the isolated children, other types as the lines of their converted text, with the
   * warning `ocr` when pages of it were read by OCR (a scanned form).
   */
  blocks(bytes: Uint8Array, mediaType: MediaType): Promise<FormBlocks>;
  close(): Promise<void>;
}

/** The converter's options from the service's configuration (INGEST_CONVERT_*, INGEST_MAX_DOCUMENT_BYTES, INGEST_OCR*). */
export function converterOptions(convert: {
  workers: number;
  timeoutMs: number;
  memoryMb: number;
  maxDocumentBytes: number;
  maxPages: number;
  maxCells: number;
  ocr: OcrOptions;
}): Partial<ConverterOptions> {
  return {
    ocr: convert.ocr,
    workers: convert.workers,
    timeoutMs: convert.timeoutMs,
    memoryMb: convert.memoryMb,
    maxInputBytes: convert.maxDocumentBytes,
    maxPages: convert.maxPages,
    maxCells: convert.maxCells,
  };
}

export function createConverter(overrides: Partial<ConverterOptions> = {}): Converter {
  const options = { ...DEFAULT_CONVERTER_OPTIONS, ...overrides };
  let pool: ConverterPool | null = null;
  const ocr = new Ocr(options.ocr, options.ocrReadings ?? null);
  const limits = {
    maxPages: options.maxPages,
    maxCells: options.maxCells,
    maxEntries: options.maxZipEntries,
    maxInflatedBytes: options.maxInflatedBytes,
  };
  const checkSize = (bytes: Uint8Array) => {
    if (bytes.byteLength > options.maxInputBytes) {
      throw new ConversionError(
        'too_large',
        `the document is ${bytes.byteLength} bytes, over the limit of ${options.maxInputBytes}`,
      );
    }
  };
  // Children start on first need, so a corpus of markdown never forks one.
  const children = () =>
    (pool ??= new ConverterPool({
      workers: options.workers,
      timeoutMs: options.timeoutMs,
      memoryMb: options.memoryMb,
    }));
  const converter: Converter = {
    async convert(bytes, mediaType, ask = {}) {
      checkSize(bytes);
      switch (mediaType) {
        case 'text/markdown':
          return convertMarkdown(bytes);
        case 'text/plain':
          return convertPlainText(bytes);
        case 'text/html': {
          const cleaned = cleanHtml(bytes);
          return { text: cleaned.text, title: cleaned.title ?? null };
        }
        case 'image/png':
        case 'image/jpeg':
        case 'image/tiff':
          return ocr.readImage(bytes, mediaType, ask);
        default:
          return ocr.complete(await children().run(mediaType, bytes, limits), bytes, ask);
      }
    },
    async blocks(bytes, mediaType) {
      checkSize(bytes);
      switch (mediaType) {
        case 'application/vnd.openxmlformats-officedocument.wordprocessingml.document':
        case 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet':
          return { blocks: await children().blocks(mediaType, bytes, limits) };
        default: {
          const { text, warnings = [] } = await converter.convert(bytes, mediaType);
          const ocr = warnings.find((w) => w.name === 'ocr');
          return { blocks: textBlocks(text), ...(ocr === undefined ? {} : { ocr }) };
        }
      }
    },
    ocrHasRoom: () => ocr.hasRoom(),
    async close() {
      await Promise.all([pool?.close(), ocr.close()]);
    },
  };
  return converter;
}
