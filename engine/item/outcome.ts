// What became of one item of a walk: all the walk needs to count it (engine/walk/tally.ts) and
// to keep its document's rows (engine/walk/live-items.ts). An item's life returns its outcome
// instead of writing into the walk's tallies, so that the life can run anywhere and its outcome
// travel back to the walk as data (docs/ARCHITECTURE.md "The walk").

import { isDatabaseUnavailable } from '../../lib/db/database.ts';
import { isStorageFull } from '../../lib/storage-full.ts';
import { isFenceLost } from '../../lib/db/fenced.ts';
import { isWrongDimensions } from '../../stages/embed.ts';
import { StageError } from './at-stage.ts';
import type { OcrReport } from '../../stages/convert/types.ts';

export interface ItemOutcome {
  /** The file's corpus path, or the URL. */
  path: string;
  kind: 'changed' | 'unchanged' | 'failed';
  /** The document a file resolves to (or resolved to before a change that failed): its rows stay. */
  liveDocumentId?: string;
  /** The reference item of a URL whose rows are in place. */
  landedReferenceId?: string;
  /** What a landed item has to say about its document (a guessed encoding, a PDF without text). */
  warnings?: { name: string; message: string }[];
  /** What OCR read of a landed file's document (stages/ocr/), for the walk's summary. */
  ocr?: OcrReport;
  /** Where and why the item failed. */
  failure?: { stage: string; code: string; message: string };
}

/**
 * A failure that is not the item's own: the database is gone, a disk is full, the writer fence
 * passed to another walk, or the embedding model answers vectors of the wrong length (every item
 * would fail alike, stage 4). The walk stops instead of counting the item as failed.
 */
export function stopsTheWalk(error: unknown): boolean {
  return isDatabaseUnavailable(error) || isStorageFull(error) || isFenceLost(error) || isWrongDimensions(error);
}

/** The outcome of an item that failed with `error`, pinned to the stage it failed at. */
export function failedOutcome(path: string, error: unknown, liveDocumentId?: string): ItemOutcome {
  const { stage, code, message } = error instanceof StageError ? error : new StageError('walk', error);
  return { path, kind: 'failed', failure: { stage, code, message }, ...(liveDocumentId ? { liveDocumentId } : {}) };
}
