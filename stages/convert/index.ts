// Stage 2, conversion (SPEC.md 1): bytes of a recognised document type -> text.
//
// Markdown and plain text pass through and HTML goes through the in-process cleaner; PDF,
// DOCX and XLSX are converted in isolated child processes under a hard timeout and memory
// cap (pool.ts), after size, page, zip-inflation and cell limits (DESIGN.md 14). Every
// failure is a ConversionError with a code naming what stopped it.

import { ConversionError } from './errors.ts';
import { cleanHtml } from './html.ts';
import { ConverterPool } from './pool.ts';
import { convertMarkdown, convertPlainText } from './text.ts';

import type { Converted, MediaType } from './types.ts';

export { ConversionError, type ConversionErrorCode } from './errors.ts';
export type { Converted, MediaType } from './types.ts';

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

/** The media type by file extension (case-insensitive); null for anything the walk drops. */
export function mediaTypeFor(relPath: string): MediaType | null {
  const dot = relPath.lastIndexOf('.');
  if (dot <= relPath.lastIndexOf('/') + 1) return null;
  return BY_EXTENSION[relPath.slice(dot).toLowerCase()] ?? null;
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
});

export interface Converter {
  convert(bytes: Uint8Array, mediaType: MediaType): Promise<Converted>;
  close(): Promise<void>;
}

export function createConverter(overrides: Partial<ConverterOptions> = {}): Converter {
  const options = { ...DEFAULT_CONVERTER_OPTIONS, ...overrides };
  let pool: ConverterPool | null = null;
  const limits = {
    maxPages: options.maxPages,
    maxCells: options.maxCells,
    maxEntries: options.maxZipEntries,
    maxInflatedBytes: options.maxInflatedBytes,
  };
  return {
    async convert(bytes, mediaType) {
      if (bytes.byteLength > options.maxInputBytes) {
        throw new ConversionError(
          'too_large',
          `the document is ${bytes.byteLength} bytes, over the limit of ${options.maxInputBytes}`,
        );
      }
      switch (mediaType) {
        case 'text/markdown':
          return convertMarkdown(bytes);
        case 'text/plain':
          return convertPlainText(bytes);
        case 'text/html': {
          const cleaned = cleanHtml(bytes);
          return { text: cleaned.text, title: cleaned.title ?? null };
        }
        default:
          // Children start on first need, so a corpus of markdown never forks one.
          pool ??= new ConverterPool({
            workers: options.workers,
            timeoutMs: options.timeoutMs,
            memoryMb: options.memoryMb,
          });
          return pool.run(mediaType, bytes, limits);
      }
    },
    async close() {
      await pool?.close();
    },
  };
}
