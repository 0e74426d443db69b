// What a caller asks of one walk (engine/walk/walk.ts), and what it hears while the walk runs: in a
// file of their own, since the walk over the corpus (corpus-walk.ts) reads them too.

import type { SyncReport } from '../../lib/bucket/pull-sync.ts';
import type { FailStage5Mode } from '../../lib/failure-directive.ts';
import type { StageObserver } from '../item/at-stage.ts';
import type { ItemProgress } from '../item/file.ts';
import type { FenceHold } from './fence.ts';
import type { ItemCounts } from './tally.ts';

export interface WalkOptions {
  /** Overrides ENGINE_SOURCE_PATH. */
  sourcePath?: string | null;
  fullReprocess?: boolean;
  onProgress?: (progress: WalkProgress) => void;
  /** A consumed failStage5 directive: the flow-scope passes run with those credentials broken. */
  failStage5?: FailStage5Mode | null;
  /** What pull-sync did just before this walk, inside the same fence hold (engine/trigger/fenced-walk.ts). */
  sync?: SyncReport | null;
  /** The operator's word that this walk may remove more documents than the guard allows (stages/cleanup.ts). */
  allowMassRemoval?: boolean;
  /**
   * Reprocess, changed or not, the PDFs whose memo records pages OCR did not read, or that were
   * walked before OCR was built (engine/walk/corpus-walk.ts `scanToRead`).
   */
  readScans?: boolean;
  /** The corpus really moved: bind the state store to this walk's corpus root (engine/walk/binding.ts). */
  rebindCorpus?: boolean;
  /**
   * false: the walk reads the corpus's files alone, neither fetching the ledger's passed URLs nor
   * retracting their rows (watch mode's walks after a save: engine/trigger/watch.ts). Default true.
   */
  feedUrls?: boolean;
  /** Told how long each stage of each of this walk's items took (the sidecar's metrics, the walk benchmark). */
  observeStage?: StageObserver;
  /**
   * The writer fence this walk holds (engine/trigger/fenced-walk.ts): every write goes through its
   * fenced database, and a lost fence stops the walk.
   */
  fence?: FenceHold;
}

/** What a caller asks of one walk: the body of POST /walk, the flags of `ingest walk`. */
export type WalkFlags = Pick<WalkOptions, 'fullReprocess' | 'readScans' | 'allowMassRemoval' | 'rebindCorpus'>;

export interface WalkProgress {
  seen: number;
  done: number;
  /** The walk's counts as this item finished: changed items are committed (rows and memo) by then. */
  items: Readonly<ItemCounts>;
  /** The last file written in several batches while it is not yet all durable (engine/item/file.ts). */
  item?: ItemProgress;
  /** The item (a file's path, a URL) whose end this report tells, when it tells one. */
  finished?: string;
}
