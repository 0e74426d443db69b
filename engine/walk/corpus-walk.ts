// One walk over the corpus (the part of engine/walk/walk.ts between the run record's opening and
// its end): bind the state store, admit each source item into a slot (or a walk worker's job),
// the settle barrier, then the flow-scope passes. Its state lives in named fields, as the worker
// loop's does: what is in flight, what was seen, whether the walk must stop.

import { isDatabaseUnavailable } from '../../lib/db/database.ts';
import { isFenceLost } from '../../lib/db/fenced.ts';
import { Sink } from '../../lib/db/sink.ts';
import type { FileItem, WalkFilesOptions } from '../../lib/corpus/files.ts';
import { ownDataDirectories } from '../../lib/corpus/own-data.ts';
import type { Logger } from '../../lib/log.ts';
import { inRunContext, type RunContext } from '../../lib/run-context.ts';
import { fileIdentity, urlIdentity } from '../../lib/state/keys.ts';
import type { ItemStamp } from '../../lib/state/store.ts';
import { ProducerDebt, WalkDebt } from '../../lib/state/producer-debt.ts';
import { isStorageFull, storageStop } from '../../lib/storage-full.ts';
import { mediaTypeFor } from '../../stages/convert/index.ts';
import { isOcrDeferred } from '../../stages/ocr/index.ts';
import { sourceItems, type UrlItem } from '../../stages/source.ts';
import { isWrongDimensions } from '../../stages/embed.ts';
import { unchangedByStat, withStamps } from '../item/admit.ts';
import { walkFile, type FileWalkDeps, type ItemProgress } from '../item/file.ts';
import { DocumentIdentity } from '../item/identity.ts';
import { failedOutcome, type ItemOutcome } from '../item/outcome.ts';
import type { ItemSlot } from '../item/slot.ts';
import { ingestUrl, type UrlIngestDeps } from '../item/url.ts';
import type { WalkLifespan } from './walk-lifespan.ts';
import { bindStoreToCorpus, bindStoreToDatabase } from './binding.ts';
import { RemoteItems } from './distributed.ts';
import { ItemSlots } from './item-slots.ts';
import { LiveItems } from './live-items.ts';
import { runFlowPasses } from './passes.ts';
import type { WalkTally } from './tally.ts';
import { UnlistedDirectories } from './unlisted.ts';
import { IngestError } from '../../lib/errors.ts';
import type { WalkOptions } from './walk-options.ts';

export interface ThisWalk {
  run: RunContext;
  tally: WalkTally;
  log: Logger;
  options: WalkOptions;
}

/** Walks the corpus at `sourcePath` once; throws what stopped the walk (the database, the disk, the fence). */
export async function walkCorpus(lifespan: WalkLifespan, sourcePath: string, walk: ThisWalk): Promise<void> {
  const { db, store } = lifespan;
  if (await bindStoreToDatabase(store, db)) {
    walk.log.warn('the state store described another database (or this one was wiped): every item counts as changed');
  }
  await bindStoreToCorpus(store, sourcePath, walk.options.rebindCorpus === true);
  await lifespan.aliases.refresh(db);
  const remote =
    lifespan.config.walk.mode === 'distributed'
      ? await RemoteItems.open(lifespan, walk.run, walk.options.fence?.token ?? null)
      : null;
  await new CorpusWalk(lifespan, walk, remote).run(sourcePath);
}

/** The database could not be reached during the walk. */
export class DatabaseLostError extends IngestError {
  constructor(cause: unknown) {
    super(
      'database_unavailable',
      `the database could not be reached during the walk (${(cause as Error).message}); ` +
        'the items it had not committed are redone by the next walk',
      { cause },
    );
  }
}

class CorpusWalk {
  readonly #lifespan: WalkLifespan;
  readonly #walk: ThisWalk;
  /** A distributed walk's queue of jobs for the walk workers; null when the items run here. */
  readonly #remote: RemoteItems | null;
  readonly #sink: Sink;
  readonly #live = new LiveItems();
  readonly #debt: WalkDebt;
  readonly #slots: ItemSlots;
  readonly #fileDeps: FileWalkDeps;
  readonly #urlDeps: UrlIngestDeps;
  #done = 0;
  /**
   * Scans put back because the OCR line was full when they needed it (stages/ocr/index.ts
   * OcrDeferred): each a path and its life to live again, brought back while the listing goes on
   * as the line has room, the rest once it ends. Bounded as the walk's seen set is: no bytes
   * held (docs/DECISIONS.md "Scanned documents read", "Scans beside the other items").
   */
  readonly #deferred: { path: string; life: (slot: ItemSlot) => Promise<ItemOutcome> }[] = [];
  /** True while the corpus is being listed: an item needing OCR may then be put back. */
  #stillListing = true;
  /** The last file written in several batches while it is not yet all durable. */
  #longItem: ItemProgress | undefined;
  /**
   * Set when the database cannot be reached, the disk is full, or the writer fence passed to
   * another walk: the walk admits nothing more and fails. The items it met are not item
   * failures; none of them committed a memo, so the next walk redoes them.
   */
  #stopped: Error | null = null;

  constructor(lifespan: WalkLifespan, walk: ThisWalk, remote: RemoteItems | null) {
    const { config, db, store } = lifespan;
    this.#lifespan = lifespan;
    this.#walk = walk;
    this.#remote = remote;
    this.#sink = new Sink(db, config.sink);
    this.#debt = new WalkDebt(new ProducerDebt(store));
    this.#slots = new ItemSlots(config.walk.inFlight);
    this.#fileDeps = {
      ...lifespan,
      sink: this.#sink,
      debt: this.#debt,
      identity: new DocumentIdentity(db, store),
      limits: config.convert,
      batchChunks: config.walk.itemBatchChunks,
      mayDeferOcr: () => this.#stillListing,
      onItemProgress: (progress: ItemProgress) => {
        walk.log.debug(progress, 'item batch durable');
        this.#longItem = progress.percent < 100 ? progress : undefined;
        this.#report();
      },
    };
    this.#urlDeps = { ...lifespan, sink: this.#sink, debt: this.#debt, fetch: config.fetch, log: walk.log };
  }

  async run(sourcePath: string): Promise<void> {
    const { config, db, store } = this.#lifespan;
    const { run, tally, log, options } = this.#walk;
    const unlisted = new UnlistedDirectories();
    try {
      const items = sourceItems(sourcePath, db, log, this.#listing(unlisted), options.feedUrls !== false);
      for await (const item of withStamps(items, store)) {
        if (this.#stopping()) break;
        await this.#bringBackDeferred(() => this.#lifespan.converter.ocrHasRoom());
        tally.items.seen += 1;
        if (item.kind === 'file') {
          this.#live.seen.add(fileIdentity(item.file.relPath));
          await this.#admitFile(item.file, item.stamp);
        } else {
          this.#live.seen.add(urlIdentity(item.url.url));
          await this.#admitUrl(item.url);
        }
      }
      this.#stillListing = false;
      // The scans put back wait in the line now; one put back just before the listing ended is met on the second round.
      while (this.#deferred.length > 0 && !this.#stopping()) {
        await this.#bringBackDeferred(() => true);
        await this.#slots.ended();
      }
      // A distributed walk's barrier: every item it queued has come back from a worker.
      await this.#remote?.settleAll(
        (outcome) => {
          this.#settle(outcome);
          this.#finished(outcome.path);
        },
        () => this.#stopping(),
      );
    } finally {
      // Settle barrier: every item has finished and every row it wrote is durable (also when
      // the enumeration itself failed, so no write is left in flight).
      await this.#slots.ended();
      await this.#sink.close();
      await this.#remote?.close();
      for (const [table, n] of this.#sink.rowsWritten) tally.rows[table] = n;
      for (const [table, n] of this.#remote?.rowsWritten ?? []) tally.rows[table] = (tally.rows[table] ?? 0) + n;
    }
    // What the walk could not list is not gone: kept before the cleanup pass looks for removals.
    tally.warnings.push(...unlisted.warnings(await unlisted.keepKnownItems(store, this.#live)));
    tally.listingDone();
    // No flow-scope pass without the database or the fence, and above all no cleanup: the walk saw
    // only part of the corpus, and the rest would read as removed.
    if (this.#stopping()) throw this.#stopped;
    const guard = {
      maxPercent: config.walk.maxRemovalPercent,
      minItems: config.walk.removalGuardMinDocs,
      allow: options.allowMassRemoval === true,
    };
    const live = this.#live;
    await runFlowPasses(
      this.#lifespan.passes,
      { db, store, log, run, live, tally, guard, debt: this.#debt, feedUrls: options.feedUrls !== false },
      options.failStage5 ?? null,
    );
  }

  /** Settles a file that needs no slot (of no known type, or unchanged by stat), or queues its life. */
  async #admitFile(file: FileItem, stamp: ItemStamp | undefined): Promise<void> {
    const { run, tally, log, options } = this.#walk;
    const mediaType = mediaTypeFor(file.relPath, this.#lifespan.config.convert.imageDocuments);
    if (mediaType === null) {
      tally.items.dropped += 1;
      log.info({ path: file.relPath }, 'item dropped: unrecognised file type');
      return this.#finished(file.relPath);
    }
    const reread = options.readScans === true && scanToRead(stamp);
    if (unchangedByStat(stamp, file, run.fullReprocess || reread)) {
      // The fast path of an unchanged walk: no read, no slot, nothing else.
      this.#live.liveDocumentIds.add(stamp.sourceDocumentId);
      tally.items.unchanged += 1;
      return this.#finished(file.relPath);
    }
    // A distributed walk queues the item's life for a walk worker instead.
    if (this.#remote !== null) return this.#remote.dispatchFile(file, mediaType, reread);
    // A scan to read is this walk's item as under --full-reprocess, alone.
    const life = (slot: ItemSlot) => walkFile(file, mediaType, this.#fileDeps, slot);
    await this.#inSlot(
      file.relPath,
      reread ? (slot) => inRunContext({ ...run, fullReprocess: true }, () => life(slot)) : life,
    );
  }

  /** Admits the scans put back, oldest first, while `room()` says the OCR line has room for one more. */
  async #bringBackDeferred(room: () => boolean): Promise<void> {
    while (this.#deferred.length > 0 && room() && !this.#stopping()) {
      const { path, life } = this.#deferred.shift()!;
      await this.#inSlot(path, life);
    }
  }

  #admitUrl(item: UrlItem): Promise<void> {
    return this.#remote !== null
      ? this.#remote.dispatch({ kind: 'url', url: item })
      : this.#inSlot(item.url, (slot) => ingestUrl(item, this.#urlDeps, slot));
  }

  /**
   * Queues an item's life for a slot; what it ends in is tallied, or stops the walk. A life put
   * back for OCR (OcrDeferred) is not finished: it waits in #deferred to be lived again.
   */
  #inSlot(path: string, life: (slot: ItemSlot) => Promise<ItemOutcome>): Promise<void> {
    const fence = this.#walk.options.fence;
    return this.#slots.admit((slot) =>
      life(slot).then(
        (outcome) => {
          this.#settle(outcome);
          this.#finished(path);
        },
        (error: unknown) => {
          if (isOcrDeferred(error)) return void this.#deferred.push({ path, life });
          if (isDatabaseUnavailable(error)) this.#stopped ??= new DatabaseLostError(error);
          else if (isStorageFull(error)) this.#stopped ??= storageStop(error);
          else if (isFenceLost(error)) this.#stopped ??= fence?.lost ?? (error as Error);
          else if (isWrongDimensions(error)) this.#stopped ??= error as Error;
          else this.#settle(failedOutcome(path, error));
          this.#finished(path);
        },
      ),
    );
  }

  #stopping(): boolean {
    return (this.#stopped ??= this.#walk.options.fence?.lost ?? null) !== null;
  }

  #settle(outcome: ItemOutcome): void {
    this.#walk.tally.record(outcome);
    this.#live.record(outcome);
  }

  #finished(path?: string): void {
    this.#done += 1;
    if (this.#longItem?.path === path) this.#longItem = undefined;
    this.#report(path);
  }

  #report(finished?: string): void {
    const { tally, options } = this.#walk;
    options.onProgress?.({
      seen: tally.items.seen,
      done: this.#done,
      items: { ...tally.items },
      ...(this.#longItem === undefined ? {} : { item: this.#longItem }),
      ...(finished === undefined ? {} : { finished }),
    });
  }

  /** What the corpus's listing leaves out, and who hears of the entries it skips and the folders it cannot list. */
  #listing(unlisted: UnlistedDirectories): WalkFilesOptions {
    const { tally } = this.#walk;
    return {
      exclude: ownDataDirectories(this.#lifespan.config),
      onSkip: (entry) => {
        // An unreadable entry is still part of the corpus: its earlier rows must not be cleaned up.
        this.#live.seen.add(fileIdentity(entry.relPath));
        tally.skipped(entry);
      },
      onUnlisted: (directory) => {
        unlisted.add(directory);
        tally.items.skipped += 1;
      },
    };
  }
}

/**
 * A PDF whose pages without words went unread: its memo says so (walked with OCR off), or it was
 * walked before OCR was built and its memo has no count (docs/DECISIONS.md "Scanned documents read").
 */
export function scanToRead(stamp: ItemStamp | undefined): boolean {
  return stamp !== undefined && stamp.mediaType === 'application/pdf' && (stamp.unreadPages ?? 1) > 0;
}
