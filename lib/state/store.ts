// The engine state store (ENGINE_DB, docs/behaviour/tiers.md#engine-state-store): an LMDB
// environment in a directory. This is the only module that imports lmdb.
//
// It keeps five things:
//   - meta: the store's format version, the database and corpus root its memos describe, and
//     the run records not yet known to be in the ledger (a walk's own while it runs: one
//     found in progress at the next walk is a walk that died);
//   - items: the stamp of each source item's outer memo (identity -> bytes hash, stat, its
//     document, the op_id of its last material change);
//   - item_rows: the keys of the rows each item emitted, apart from its stamp because an
//     unchanged walk reads every stamp and no row key (format 2; format 1 kept them together
//     and is upgraded in place on open);
//   - memos: inner memo values (extractor outputs, embeddings), keyed by content hash;
//   - doc_items: each document's items, the reverse of the stamps' sourceDocumentId, so that an
//     edit can tell whether another live file still holds its document (format 3; a format 2
//     store gets it built on open).
// The store cannot be rebuilt from the database: losing it means a full re-extraction.

import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { sha256Hex } from '../hash.ts';
import type { Queryable } from '../db/database.ts';
import type { RunRecord } from '../runs/record.ts';
import { open, type Database as LmdbDatabase, type RootDatabase } from 'lmdb';
import { isStorageFull, StateStoreWriteError, StorageFullError } from '../storage-full.ts';
import { IngestError } from '../errors.ts';

export const STATE_FORMAT_VERSION = 3;
/** The format whose item memos held their row keys inline; upgraded on open. */
const FORMAT_WITH_INLINE_ROWS = 1;
/** The format without the doc_items index; upgraded on open. */
const FORMAT_WITHOUT_DOCUMENT_INDEX = 2;
const STORE_FILE = 'state.mdb';
// The store is mapped in chunks of 16 pages (remapChunks): a whole-file map keeps every page a
// walk touched resident, and a cold walk touches nearly all of them. LMDB lets go of unused
// chunks once 8,191 are mapped (a constant of its build), so the page size bounds the store's
// share of the resident set: 8,191 x 16 x 1 KB = 128 MB whatever the store's size (4 KB pages
// allowed 512 MB). 512-byte pages (64 MB) were used before and are not safe: rewriting 3,000 of
// 10,000 memos a dozen times while memo puts run beside, as stage 5 does, failed a commit with
// MDB_PROBLEM ("expected node to be branch") in 2 of 3 runs, never in 8 runs on 1 KB pages nor
// in 3 on 4 KB. The page size is fixed when a store is created: a store of 512-byte pages is
// rebuilt on open (rebuildWithPages), one of 1 KB or 4 KB keeps its pages.
const STORE_PAGE_BYTES = 1024;
/**
 * Row-key bytes one write transaction carries at most. Rewriting 10,000 memos of 200 keys
 * (90 MB) in one transaction fails its commit with MDB_BAD_TXN on 512-byte pages, and lmdb then
 * rejects a promise nobody holds, which ends the process; 2,000 of them (18 MB) commit.
 */
const TRANSACTION_BYTES = 4 * 1024 * 1024;

/**
 * The key an item's identity is stored under: itself, or its digest when it is longer than a key
 * may be. lmdb derives a key's limit from the page size and reports it (for the store's
 * pages: 1,978 bytes at 4 KB, 496 at 1 KB, 186 at 512 bytes); a path or a URL can be
 * longer. A stamp stored under a digest carries its identity, so that the store still lists
 * identities.
 */
const DIGEST_KEY = 'sha256:';
export function itemKeyOf(maxKeyBytes: number): (identity: string) => string {
  return (identity) => (Buffer.byteLength(identity) < maxKeyBytes ? identity : `${DIGEST_KEY}${sha256Hex(identity)}`);
}

/** The small part of an item's outer memo, read without its row keys (all an unchanged walk needs). */
export interface ItemStamp {
  sha256: string;
  size: number;
  /** stat identity for the no-read fast path: nanosecond mtime and inode, as decimal strings. */
  mtimeNs: string;
  ino: string;
  sourceDocumentId: string;
  mediaType: string;
  /** op_id of the walk that last changed this item's rows. */
  opId: string;
  /**
   * How many chunks the item owns: chunks 0 to chunks - 1 of its owner (sourceDocumentId), whose
   * keys and whose embeddings' keys follow from the owner and the index, so the row keys do not
   * list them (a 100 MB text has some 115,000). Absent from a memo written before chunks were
   * counted: its row keys list them.
   */
  chunks?: number;
  /**
   * A PDF's pages without words that OCR did not read (INGEST_OCR=off): 0 when every page held
   * words or was read. Absent from a PDF's memo written before OCR was built: such a scan's
   * pages were never read either (`--read-scans`, docs/DECISIONS.md "Scanned documents read").
   */
  unreadPages?: number;
}

/** The outer memo of one source item. */
export interface ItemMemo extends ItemStamp {
  /** Keys of the rows this item emitted, per table, so rows it stops emitting are deleted by key. */
  rows: Record<string, string[]>;
}

export class StateStoreVersionError extends IngestError {
  constructor(storePath: string, found: unknown) {
    super(
      'state_store_version',
      `the engine state store at ${storePath} has format version ${String(found)}, this build needs ${STATE_FORMAT_VERSION}. ` +
        'Run `ingest state verify` to inspect it, or `ingest state reset` to start over (the next walk then re-extracts everything).',
    );
  }
}

/**
 * What the engine keeps between walks. Its reads are promises although lmdb answers at once, so
 * that a store in the database itself can stand behind the same interface for processes that
 * share one corpus (docs/ARCHITECTURE.md "The walk").
 */
export interface StateStore {
  readonly path: string;
  /** The item's memo, or undefined when absent; an unreadable entry is removed and reported as healed. */
  getItem(identity: string): Promise<{ memo: ItemMemo | undefined; healed: boolean }>;
  /** The item's stamp alone (no row keys to decode), healed the same way. */
  getItemStamp(identity: string): Promise<{ stamp: ItemStamp | undefined; healed: boolean }>;
  /**
   * How many stamps a walk reads at once: 1 where a read is answered at once (lmdb), so the walk
   * enumerates no further ahead than it admits; more where each read is a round trip.
   */
  readonly stampsAtOnce: number;
  /** The stamps of several items in the order asked, in one read (one round trip for a store in the database). */
  getItemStamps(identities: readonly string[]): Promise<{ stamp: ItemStamp | undefined; healed: boolean }[]>;
  /** Resolves once the stamp and the row keys are committed to disk, together. */
  putItem(identity: string, memo: ItemMemo): Promise<void>;
  /**
   * Several items' memos in few commits: one per TRANSACTION_BYTES of row keys. Each memo lands
   * whole; a crash between commits leaves some memos new and the others as they were.
   */
  putItems(entries: readonly (readonly [identity: string, memo: ItemMemo])[]): Promise<void>;
  removeItem(identity: string): Promise<void>;
  /** The identity of every item, streamed from disk. */
  itemIdentities(): AsyncIterable<string>;
  /** The identities of the items whose memo resolves to this document (retired ones included). */
  itemsOfDocument(sourceDocumentId: string): Promise<string[]>;
  itemCount(): Promise<number>;
  clearItems(): Promise<void>;
  /** The id of the database whose rows the item memos describe. */
  boundDatabaseId(): Promise<string | undefined>;
  bindDatabase(databaseId: string): Promise<void>;
  /** The corpus directory (its real path) the item memos describe; undefined before the first walk. */
  boundCorpusRoot(): Promise<string | undefined>;
  bindCorpusRoot(root: string): Promise<void>;
  /** Run records not yet known to have reached the ledger: a walk's own while it runs, then any undelivered. */
  unsettledRuns(): Promise<RunRecord[]>;
  putUnsettledRun(record: RunRecord): Promise<void>;
  removeUnsettledRun(opId: string): Promise<void>;
  getMemo(key: string): Promise<unknown>;
  putMemo(key: string, value: unknown): Promise<void>;
  removeMemo(key: string): Promise<void>;
  memoCount(): Promise<number>;
  close(): Promise<void>;
  /**
   * Present where the store lives in the database the rows are written to (the database store):
   * its writes on a transaction of that database, so that an item's rows and memos commit
   * together (engine/item/item-memos.ts). Absent for a store of its own (lmdb).
   */
  readonly inRowsTransaction?: MemoWritesIn;
}

/** A store's memo writes made on a transaction the caller holds. */
export interface MemoWritesIn {
  putItems(tx: Queryable, entries: readonly (readonly [identity: string, memo: ItemMemo])[]): Promise<void>;
  putMemos(tx: Queryable, entries: readonly (readonly [key: string, value: unknown])[]): Promise<void>;
}

const STAMP_STRINGS = ['sha256', 'mtimeNs', 'ino', 'sourceDocumentId', 'mediaType', 'opId'] as const;

export function isItemStamp(value: unknown): value is ItemStamp {
  if (value === null || typeof value !== 'object') return false;
  const m = value as Record<string, unknown>;
  return (
    STAMP_STRINGS.every((k) => typeof m[k] === 'string') &&
    typeof m.size === 'number' &&
    (m.chunks === undefined || (Number.isSafeInteger(m.chunks) && (m.chunks as number) >= 0)) &&
    (m.unreadPages === undefined || (Number.isSafeInteger(m.unreadPages) && (m.unreadPages as number) >= 0))
  );
}

export function isRowKeys(value: unknown): value is ItemMemo['rows'] {
  if (value === null || typeof value !== 'object') return false;
  return Object.values(value).every((keys) => Array.isArray(keys) && keys.every((k) => typeof k === 'string'));
}

export function stampOf(memo: ItemMemo): ItemStamp {
  const { rows: _rows, ...stamp } = memo;
  return stamp;
}

/**
 * An lmdb write, awaited. A commit that failed rejects with lmdb's "Commit failed" and the
 * reason in a promise beside it (commitError), rejected by then, which nothing else reads: a
 * full disk becomes a StorageFullError, any other reason a StateStoreWriteError, and either stops
 * the walk by name (docs/OPERATIONS.md "When the disk is full").
 */
async function committed<T>(write: Promise<T>): Promise<T> {
  try {
    return await write;
  } catch (error) {
    const commitError = (error as { commitError?: Promise<unknown> }).commitError;
    if (commitError === undefined) throw error;
    const reason = await Promise.race([
      commitError.then(
        () => undefined,
        (r: unknown) => r,
      ),
      new Promise((resolve) => setImmediate(resolve)),
    ]);
    throw isStorageFull(reason) ? new StorageFullError(reason) : new StateStoreWriteError(reason ?? error);
  }
}

/** A write inside a transaction: its failure is the transaction's, reported by `committed`. */
function queued(write: unknown): void {
  // lmdb's writes return promises of its own making, not always instances of this realm's.
  if (typeof (write as PromiseLike<unknown> | null)?.then === 'function')
    (write as PromiseLike<unknown>).then(undefined, () => {});
}

/** Meta keys of unsettled run records: the prefix, and the first key past every one of them. */
export const UNSETTLED_RUN = 'run:';
const UNSETTLED_RUN_END = 'run;';

type Dbs = Record<'meta' | 'items' | 'itemRows' | 'memos', LmdbDatabase<unknown, string>>;

function openDbs(root: RootDatabase): Dbs {
  const db = (name: string) => root.openDB<unknown, string>({ name, encoding: 'msgpack' });
  return { meta: db('meta'), items: db('items'), itemRows: db('item_rows'), memos: db('memos') };
}

type DocumentIndex = LmdbDatabase<string, string>;

const openDocumentIndex = (root: RootDatabase): DocumentIndex =>
  root.openDB<string, string>({ name: 'doc_items', dupSort: true, encoding: 'string' });

export async function openStateStore(dir: string): Promise<StateStore> {
  await mkdir(dir, { recursive: true });
  const storePath = path.join(dir, STORE_FILE);
  let root = openRoot(storePath);
  if (pageSizeOf(root) < STORE_PAGE_BYTES) {
    await closeRoot(root);
    await rebuildWithPages(storePath);
    root = openRoot(storePath);
  }
  try {
    const dbs = openDbs(root);
    const docItems = openDocumentIndex(root);
    const found = dbs.meta.get('format_version');
    if (found === undefined) await committed(dbs.meta.put('format_version', STATE_FORMAT_VERSION));
    else if (found === FORMAT_WITH_INLINE_ROWS || found === FORMAT_WITHOUT_DOCUMENT_INDEX) {
      if (found === FORMAT_WITH_INLINE_ROWS) await splitInlineRows(root, dbs);
      await indexDocuments(root, dbs, docItems);
    } else if (found !== STATE_FORMAT_VERSION) throw new StateStoreVersionError(dir, found);
    return new LmdbStateStore(dir, root, dbs, docItems);
  } catch (error) {
    await closeRoot(root);
    throw error;
  }
}

function openRoot(storePath: string, pageSize = STORE_PAGE_BYTES): RootDatabase {
  const root = open({ path: storePath, maxDbs: 8, compression: false, remapChunks: true, pageSize });
  // lmdb-js starts each turn's batch of writes with a commit promise of its own that it hands to
  // nobody (3.5, write.js: the batch task's writeBatchStart()). A failed commit rejects it with
  // the others, and unheard it would end the process, though the writes we await report the
  // failure (`committed`). Right after that task (a microtask queued from its beforecommit
  // callback) it is the environment's latest commit promise, the one `root.committed` reaches.
  root.on('beforecommit', () => queueMicrotask(() => void root.committed.then(undefined, () => {})));
  return root;
}

/**
 * Closes an environment opened for writing. lmdb's close waits for its last commit to be
 * flushed, which never happens when that commit failed (a full disk): an empty transaction,
 * which writes nothing and so commits on a full disk too, becomes the last one first.
 */
async function closeRoot(root: RootDatabase): Promise<void> {
  await root.transaction(() => undefined);
  await root.close();
}

const pageSizeOf = (root: RootDatabase) => (root.getStats() as { pageSize: number }).pageSize;

/** The named databases of a store whose values are msgpack (doc_items holds strings, sorted duplicates). */
const NAMED_DBS = ['meta', 'items', 'item_rows', 'memos'];
/** Entries copied in one transaction of a rebuild. */
const REBUILD_BATCH = 1_000;

/**
 * Copies the store into a new file of STORE_PAGE_BYTES pages, entry by entry, then puts it in
 * the old one's place. A crash before the rename leaves the old store as it was (the half-made
 * copy is started over next time).
 */
async function rebuildWithPages(storePath: string): Promise<void> {
  const copyPath = `${storePath}.rebuild`;
  await Promise.all([rm(copyPath, { force: true }), rm(`${copyPath}-lock`, { force: true })]);
  const from = openRoot(storePath);
  const to = openRoot(copyPath);
  try {
    const all = [
      ...NAMED_DBS.map((name) => ({ name, encoding: 'msgpack' as const })),
      { name: 'doc_items', dupSort: true, encoding: 'string' as const },
    ];
    for (const options of all) {
      const source = from.openDB<unknown, string>(options);
      const target = to.openDB<unknown, string>(options);
      let batch: { key: string; value: unknown }[] = [];
      const flush = () => to.transaction(() => batch.forEach(({ key, value }) => queued(target.put(key, value))));
      for (const entry of source.getRange()) {
        batch.push(entry);
        if (batch.length >= REBUILD_BATCH) {
          await flush();
          batch = [];
        }
      }
      await flush();
    }
  } finally {
    await Promise.all([closeRoot(from), closeRoot(to)]);
  }
  await rename(copyPath, storePath);
  await rm(`${copyPath}-lock`, { force: true });
}

/** Entries in runs of at most TRANSACTION_BYTES of row keys (a larger memo alone in its run). */
function* byTransaction<T extends readonly [string, ItemMemo]>(entries: readonly T[]): Generator<T[]> {
  let run: T[] = [];
  let bytes = 0;
  for (const entry of entries) {
    const size = Object.values(entry[1].rows).reduce((sum, keys) => sum + keys.reduce((n, k) => n + k.length, 0), 0);
    if (run.length > 0 && bytes + size > TRANSACTION_BYTES) {
      yield run;
      run = [];
      bytes = 0;
    }
    run.push(entry);
    bytes += size;
  }
  if (run.length > 0) yield run;
}

/** Format 1 -> 2 in one transaction: each memo's row keys move to item_rows. */
async function splitInlineRows(root: RootDatabase, { meta, items, itemRows }: Dbs): Promise<void> {
  await committed(
    root.transaction(() => {
      for (const { key, value } of items.getRange()) {
        const rows = (value as { rows?: unknown } | null)?.rows;
        if (isItemStamp(value) && isRowKeys(rows)) {
          queued(items.put(key, stampOf(value as ItemMemo)));
          queued(itemRows.put(key, rows));
        } else {
          // Not a memo: it would have been healed on read; it goes now.
          queued(items.remove(key));
        }
      }
      queued(meta.put('format_version', FORMAT_WITHOUT_DOCUMENT_INDEX));
    }),
  );
}

/** Format 2 -> 3 in one transaction: each item is indexed under its document. */
async function indexDocuments(root: RootDatabase, { meta, items }: Dbs, docItems: DocumentIndex): Promise<void> {
  await committed(
    root.transaction(() => {
      for (const { key, value } of items.getRange()) {
        if (isItemStamp(value)) queued(docItems.put(value.sourceDocumentId, key));
      }
      queued(meta.put('format_version', STATE_FORMAT_VERSION));
    }),
  );
}

// Inside a transaction callback lmdb applies each write at once; the promise a write returns only
// repeats the transaction's, which is awaited, so the writes below are marked `void`.

/** The store over an open lmdb environment: its named databases and the key an identity takes. */
class LmdbStateStore implements StateStore {
  readonly path: string;
  readonly stampsAtOnce = 1;
  readonly #root: RootDatabase;
  readonly #meta: LmdbDatabase<unknown, string>;
  readonly #items: LmdbDatabase<unknown, string>;
  readonly #itemRows: LmdbDatabase<unknown, string>;
  readonly #memos: LmdbDatabase<unknown, string>;
  readonly #docItems: DocumentIndex;
  readonly #itemKey: (identity: string) => string;

  constructor(dir: string, root: RootDatabase, { meta, items, itemRows, memos }: Dbs, docItems: DocumentIndex) {
    this.path = dir;
    this.#root = root;
    this.#meta = meta;
    this.#items = items;
    this.#itemRows = itemRows;
    this.#memos = memos;
    this.#docItems = docItems;
    // lmdb sets maxKeySize on every database it opens; its typings leave it out.
    this.#itemKey = itemKeyOf((root as unknown as { maxKeySize: number }).maxKeySize);
  }

  async getItemStamp(identity: string): Promise<{ stamp: ItemStamp | undefined; healed: boolean }> {
    return this.#stampAt(this.#itemKey(identity), identity);
  }

  async getItemStamps(identities: readonly string[]): Promise<{ stamp: ItemStamp | undefined; healed: boolean }[]> {
    return identities.map((identity) => this.#stampAt(this.#itemKey(identity), identity));
  }

  async getItem(identity: string): Promise<{ memo: ItemMemo | undefined; healed: boolean }> {
    const key = this.#itemKey(identity);
    const { stamp, healed } = this.#stampAt(key, identity);
    if (stamp === undefined) return { memo: undefined, healed };
    const rows = read(this.#itemRows, key);
    if (isRowKeys(rows)) return { memo: { ...stamp, rows }, healed: false };
    this.#drop(key);
    return { memo: undefined, healed: true };
  }

  putItem(identity: string, memo: ItemMemo): Promise<void> {
    return this.putItems([[identity, memo]]);
  }

  async putItems(entries: readonly (readonly [identity: string, memo: ItemMemo])[]): Promise<void> {
    for (const part of byTransaction(entries)) await this.#putTogether(part);
  }

  async removeItem(identity: string): Promise<void> {
    const key = this.#itemKey(identity);
    await committed(
      this.#root.transaction(() => {
        const previous = read(this.#items, key);
        if (isItemStamp(previous)) queued(this.#docItems.remove(previous.sourceDocumentId, key));
        queued(this.#items.remove(key));
        queued(this.#itemRows.remove(key));
      }),
    );
  }

  async *itemIdentities(): AsyncIterable<string> {
    for (const key of this.#items.getKeys()) {
      if (!key.startsWith(DIGEST_KEY)) yield key;
      else {
        const { identity } = (read(this.#items, key) ?? {}) as { identity?: unknown };
        yield typeof identity === 'string' ? identity : key;
      }
    }
  }

  async itemsOfDocument(sourceDocumentId: string): Promise<string[]> {
    const identities: string[] = [];
    for (const key of this.#docItems.getValues(sourceDocumentId)) {
      // An entry whose stamp was healed away or moved on is stale: the stamp decides.
      const stamp = read(this.#items, key);
      if (!isItemStamp(stamp) || stamp.sourceDocumentId !== sourceDocumentId) continue;
      const { identity } = stamp as ItemStamp & { identity?: unknown };
      identities.push(typeof identity === 'string' ? identity : key);
    }
    return identities;
  }

  async itemCount(): Promise<number> {
    return this.#items.getKeysCount();
  }

  async clearItems(): Promise<void> {
    await committed(
      this.#root.transaction(() => {
        this.#items.clearSync();
        this.#itemRows.clearSync();
        this.#docItems.clearSync();
      }),
    );
  }

  async boundDatabaseId(): Promise<string | undefined> {
    const id = this.#meta.get('database_id');
    return typeof id === 'string' ? id : undefined;
  }

  async bindDatabase(databaseId: string): Promise<void> {
    await committed(this.#meta.put('database_id', databaseId));
  }

  async boundCorpusRoot(): Promise<string | undefined> {
    const root = this.#meta.get('corpus_root');
    return typeof root === 'string' ? root : undefined;
  }

  async bindCorpusRoot(root: string): Promise<void> {
    await committed(this.#meta.put('corpus_root', root));
  }

  async unsettledRuns(): Promise<RunRecord[]> {
    return [...this.#meta.getRange({ start: UNSETTLED_RUN, end: UNSETTLED_RUN_END })].map((e) => e.value as RunRecord);
  }

  async putUnsettledRun(record: RunRecord): Promise<void> {
    await committed(this.#meta.put(UNSETTLED_RUN + record.opId, record));
  }

  async removeUnsettledRun(opId: string): Promise<void> {
    await committed(this.#meta.remove(UNSETTLED_RUN + opId));
  }

  async getMemo(key: string): Promise<unknown> {
    return this.#memos.get(key);
  }

  async putMemo(key: string, value: unknown): Promise<void> {
    await committed(this.#memos.put(key, value));
  }

  async removeMemo(key: string): Promise<void> {
    await committed(this.#memos.remove(key));
  }

  async memoCount(): Promise<number> {
    return this.#memos.getKeysCount();
  }

  close(): Promise<void> {
    return closeRoot(this.#root);
  }

  #drop(key: string): void {
    this.#items.removeSync(key);
    this.#itemRows.removeSync(key);
  }

  /** The stamp under a key; one stored under a digest gives back the identity it carries. */
  #stampAt(key: string, identity: string): { stamp: ItemStamp | undefined; healed: boolean } {
    const value = read(this.#items, key);
    if (value === undefined) return { stamp: undefined, healed: false };
    if (isItemStamp(value)) {
      if (key === identity) return { stamp: value, healed: false };
      const { identity: _identity, ...stamp } = value as ItemStamp & { identity?: string };
      return { stamp, healed: false };
    }
    this.#drop(key);
    return { stamp: undefined, healed: true };
  }

  /** Memos in one transaction: each lands whole, with its document index entry. */
  async #putTogether(entries: readonly (readonly [string, ItemMemo])[]): Promise<void> {
    await committed(
      this.#root.transaction(() => {
        for (const [identity, memo] of entries) {
          const key = this.#itemKey(identity);
          const previous = read(this.#items, key);
          if (isItemStamp(previous) && previous.sourceDocumentId !== memo.sourceDocumentId) {
            queued(this.#docItems.remove(previous.sourceDocumentId, key));
          }
          queued(this.#items.put(key, key === identity ? stampOf(memo) : { ...stampOf(memo), identity }));
          queued(this.#itemRows.put(key, memo.rows));
          queued(this.#docItems.put(memo.sourceDocumentId, key));
        }
      }),
    );
  }
}

/** Reads a value; bytes that no longer decode count as a value of the wrong shape. */
function read(db: LmdbDatabase<unknown, string>, key: string): unknown {
  try {
    return db.get(key);
  } catch {
    return null;
  }
}

export interface StateStoreReport {
  path: string;
  formatVersion: unknown;
  expectedFormatVersion: number;
  items: number;
  invalidItems: number;
  memos: number;
  boundDatabaseId: string | null;
  boundCorpusRoot: string | null;
}

/** Reads a store without changing it (even one of another format version). */
export async function inspectStateStore(dir: string): Promise<StateStoreReport> {
  const root = open({ path: path.join(dir, STORE_FILE), maxDbs: 5, compression: false, readOnly: true });
  try {
    const { meta, items, itemRows, memos } = openDbs(root);
    const formatVersion = meta.get('format_version');
    let count = 0;
    let invalid = 0;
    for (const { key, value } of items.getRange()) {
      count += 1;
      const rows =
        formatVersion === FORMAT_WITH_INLINE_ROWS ? (value as { rows?: unknown } | null)?.rows : itemRows.get(key);
      if (!isItemStamp(value) || !isRowKeys(rows)) invalid += 1;
    }
    const bound = meta.get('database_id');
    const corpusRoot = meta.get('corpus_root');
    return {
      path: dir,
      formatVersion,
      expectedFormatVersion: STATE_FORMAT_VERSION,
      items: count,
      invalidItems: invalid,
      memos: memos.getKeysCount(),
      boundDatabaseId: typeof bound === 'string' ? bound : null,
      boundCorpusRoot: typeof corpusRoot === 'string' ? corpusRoot : null,
    };
  } finally {
    await root.close();
  }
}

/** Deletes the store. The next walk re-extracts every item. */
export async function resetStateStore(dir: string): Promise<void> {
  await rm(path.join(dir, STORE_FILE), { force: true });
  await rm(path.join(dir, `${STORE_FILE}-lock`), { force: true });
}
