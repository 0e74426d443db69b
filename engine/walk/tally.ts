// What a walk reports: items by outcome, the first failures in detail, rows written and
// deleted, and how each flow-scope pass ended. `walkCounts` is the one flat view of it that both
// the pipeline_runs record and /walk-status carry.

import type { SyncReport } from '../../lib/bucket/pull-sync.ts';
import type { SkippedEntry } from '../../lib/corpus/files.ts';
import type { FailStage5Mode } from '../../lib/failure-directive.ts';
import type { Logger } from '../../lib/log.ts';
import type { RunCounters } from '../../lib/run-context.ts';
import type { RunWarning } from '../../lib/runs/record.ts';
import type { ItemOutcome } from '../item/outcome.ts';

export interface ItemCounts {
  seen: number;
  changed: number;
  unchanged: number;
  failed: number;
  /** Of no recognised type. */
  dropped: number;
  /** Entries of the corpus passed over: unreadable files and directories, links leaving the corpus, special files. */
  skipped: number;
  /** Gone from the corpus since the last walk: their rows were deleted. */
  removed: number;
}

export interface ItemFailure {
  path: string;
  stage: string;
  code: string;
  message: string;
}

export interface PassOutcome {
  name: string;
  ok: boolean;
  /** How long the pass ran: a walk's time after its last item settled is the passes' sum. */
  durationMs: number;
  /** What the pass did, when it says. */
  counts?: Record<string, number>;
  error?: string;
}

/** The first failures kept in detail; items.failed has the count. */
export const MAX_REPORTED_FAILURES = 1000;
/** Warnings about single items kept in the summary; the rest are logged only. */
export const MAX_REPORTED_ITEM_WARNINGS = 1000;

/** How many paths a warning names at most; the log names every one. */
export const MAX_NAMED_PATHS = 20;

export class WalkTally {
  readonly items: ItemCounts = { seen: 0, changed: 0, unchanged: 0, failed: 0, dropped: 0, skipped: 0, removed: 0 };
  readonly failures: ItemFailure[] = [];
  readonly rows: Record<string, number> = {};
  rowsDeleted = 0;
  readonly passes: PassOutcome[] = [];
  readonly warnings: RunWarning[] = [];
  /** Pages OCRed by the walk's items, and the time their OCR took (stages/ocr/). */
  readonly ocr = { pages: 0, ms: 0 };
  /** The failStage5 mode the flow-scope passes ran under; null when they ran clean or never ran. */
  stage5FailureInjected: FailStage5Mode | null = null;
  readonly #counters: RunCounters;
  readonly #log: Logger;
  /** The first symbolic links met that lead outside the corpus or nowhere, and how many there were of each. */
  readonly #links = { link_outside_corpus: new NamedPaths(), broken_link: new NamedPaths() };
  #itemWarnings = 0;

  constructor(counters: RunCounters, log: Logger) {
    this.#counters = counters;
    this.#log = log;
  }

  /**
   * One item settled: counted by its outcome; a failure also as the run's item_failure, kept in
   * detail while there is room, and logged; a landed item's warnings kept.
   */
  record(outcome: ItemOutcome): void {
    const { path, failure } = outcome;
    this.items[outcome.kind] += 1;
    if (failure !== undefined) {
      this.#counters.item_failure += 1;
      if (this.failures.length < MAX_REPORTED_FAILURES) this.failures.push({ path, ...failure });
      this.#log.warn({ path, stage: failure.stage, code: failure.code, err: failure.message }, 'item failed');
    }
    for (const warning of outcome.warnings ?? []) this.#itemWarning(path, warning);
    if (outcome.ocr !== undefined) {
      this.ocr.pages += outcome.ocr.pages;
      this.ocr.ms += outcome.ocr.ms;
    }
  }

  /** One entry of the corpus passed over: counted; a link leaving the corpus or broken is also named by `listingDone`. */
  skipped(entry: SkippedEntry): void {
    this.items.skipped += 1;
    if (entry.kind === 'link_outside_corpus' || entry.kind === 'broken_link')
      this.#links[entry.kind].add(entry.relPath);
  }

  /**
   * The corpus is listed: the links that lead outside it become the warning `links_outside_corpus`,
   * the links that lead nowhere `broken_links` (a link is neither unreadable nor a document).
   */
  listingDone(): void {
    const outside = this.#links.link_outside_corpus;
    if (outside.count > 0)
      this.warnings.push({
        name: 'links_outside_corpus',
        message: `${linksLead(outside.count)} outside the corpus and ${outside.count === 1 ? 'was' : 'were'} not walked: ${outside}`,
      });
    const broken = this.#links.broken_link;
    if (broken.count > 0)
      this.warnings.push({
        name: 'broken_links',
        message: `${linksLead(broken.count)} to nothing (broken) and ${broken.count === 1 ? 'was' : 'were'} not walked: ${broken}`,
      });
  }

  /** One item landed with something to say about it (a guessed encoding, a PDF without text). */
  #itemWarning(path: string, warning: { name: string; message: string }): void {
    this.#itemWarnings += 1;
    if (this.#itemWarnings <= MAX_REPORTED_ITEM_WARNINGS) this.warnings.push({ ...warning, path });
    this.#log.warn({ path, warning: warning.name }, warning.message);
  }
}

/** The first MAX_NAMED_PATHS paths of a kind, and how many there were. */
class NamedPaths {
  readonly #named: string[] = [];
  count = 0;

  add(relPath: string): void {
    this.count += 1;
    if (this.#named.length < MAX_NAMED_PATHS) this.#named.push(relPath);
  }

  /** The named paths in order, then how many more the log names. */
  toString(): string {
    const more = this.count - this.#named.length;
    return [...this.#named].sort().join(', ') + (more > 0 ? ` and ${more} more (the log names each)` : '');
  }
}

const linksLead = (n: number): string => (n === 1 ? '1 symbolic link leads' : `${n} symbolic links lead`);

/**
 * The flat counts of a walk: items, rows_<table>, rows_deleted, sync_<field> when a bucket was
 * pulled, <pass>_<count> for each flow-scope pass that said what it did, and ocr_pages and
 * ocr_ms when pages were OCRed.
 */
export function walkCounts(walk: {
  items: ItemCounts;
  rows: Record<string, number>;
  rowsDeleted: number;
  sync: SyncReport | null;
  passes: readonly PassOutcome[];
  ocr?: { pages: number; ms: number };
}): Record<string, number> {
  return {
    ...walk.items,
    ...(walk.ocr === undefined || walk.ocr.pages === 0 ? {} : prefixed('ocr_', walk.ocr)),
    ...prefixed('rows_', walk.rows),
    rows_deleted: walk.rowsDeleted,
    ...(walk.sync === null ? {} : prefixed('sync_', walk.sync)),
    ...Object.assign({}, ...walk.passes.map((p) => prefixed(`${p.name}_`, p.counts ?? {}))),
  };
}

function prefixed(prefix: string, counts: object): Record<string, number> {
  return Object.fromEntries(Object.entries(counts).map(([k, n]) => [prefix + k, n as number]));
}
