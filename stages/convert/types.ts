// What conversion takes and gives, shared by the stage's entry (index.ts), its pool and each converter.

import type { ImageMediaType } from '../ocr/images.ts';

export type MediaType =
  | 'application/pdf'
  | 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'
  | 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet'
  | 'text/markdown'
  | 'text/plain'
  | 'text/html'
  | ImageMediaType;

/**
 * Something about a document that converted which the walk's summary names beside its path
 * (docs/OPERATIONS.md "Warnings about a document"): its text was read in a guessed encoding,
 * held bytes that could not be decoded, pages hold no text (and OCR is off), or pages were OCRed.
 */
export interface ConversionWarning {
  name: 'encoding_fallback' | 'replacement_characters' | 'no_text_layer' | 'ocr';
  message: string;
}

export interface Converted {
  text: string;
  title: string | null;
  pages?: number;
  warnings?: ConversionWarning[];
  /**
   * A PDF with pages that hold no real words (pdf.ts): every page's text, and those pages
   * (numbered from 1), for OCR to read (stages/ocr/). The stage's entry folds it into `text`.
   */
  scanned?: { pageTexts: string[]; pages: number[] };
  /** What OCR read of the document, for the walk's summary. */
  ocr?: OcrReport;
  /** A PDF's pages without words left unread (OCR off); 0 when there are none. */
  unreadPages?: number;
}

export interface OcrReport {
  /** Pages OCRed. */
  pages: number;
  /** Time OCR took. */
  ms: number;
}

/**
 * Where a block of a form sits: a DOCX body paragraph or table cell, an XLSX cell, or a line of
 * the converted text (PDF, HTML, markdown, plain text). Indices count from 0, lines from 1.
 */
export type BlockLocation =
  | { kind: 'docx_paragraph'; paragraph: number }
  | { kind: 'docx_table_cell'; table: number; row: number; cell: number }
  | { kind: 'xlsx_cell'; sheet: string; cell: string }
  | { kind: 'text_line'; line: number };

/** A form's blocks, and what OCR said when its pages were read by OCR (a scanned form). */
export interface FormBlocks {
  blocks: FormBlock[];
  ocr?: ConversionWarning;
}

/** One addressed piece of a form's text (the bid-worker's view of a document). */
export interface FormBlock {
  /** Short and unique in the document: p12, t0.r1.c0, Sheet1!B3, l14. */
  address: string;
  text: string;
  location: BlockLocation;
}
