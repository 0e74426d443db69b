// The engine state store (ENGINE_DB, DESIGN.md 6): an LMDB environment in a directory. This is
// the only module that imports lmdb.
//
// It keeps three things:
//   - meta: the store's format version and the id of the database its memos describe;
//   - items: the outer memo of each source item (identity -> bytes hash, stat, the rows it
//     emitted, the op_id of its last material change);
//   - memos: inner memo values (extractor outputs, embeddings), keyed by content hash.
// The store cannot be rebuilt from the database: losing it means a full re-extraction.

import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { open, type Database as LmdbDatabase, type RootDatabase } from 'lmdb';

export const STATE_FORMAT_VERSION = 1;
const STORE_FILE = 'state.mdb';

/** The outer memo of one source item. */
export interface ItemMemo {
  sha256: string;
  size: number;
  /** stat identity for the no-read fast path: nanosecond mtime and inode, as decimal strings. */
  mtimeNs: string;
  ino: string;
  sourceDocumentId: string;
  mediaType: string;
  /** op_id of the walk that last changed this item's rows. */
  opId: string;
  /** Keys of the rows this item emitted, per table, so rows it stops emitting are deleted by key. */
  rows: Record<string, string[]>;
}

export class StateStoreVersionError extends Error {
  constructor(storePath: string, found: unknown) {
    super(
      `the engine state store at ${storePath} has format version ${String(found)}, this build needs ${STATE_FORMAT_VERSION}. ` +
        'Run `ingest state verify` to inspect it, or `ingest state reset` to start over (the next walk then re-extracts everything).',
    );
    this.name = 'StateStoreVersionError';
  }
}

export interface StateStore {
  readonly path: string;
  /** The item's memo, or undefined when absent; an unreadable entry is removed and reported as healed. */
  getItem(key: string): { memo: ItemMemo | undefined; healed: boolean };
  /** Resolves once the entry is committed to disk. */
  putItem(key: string, memo: ItemMemo): Promise<void>;
  removeItem(key: string): Promise<void>;
  /** Every item key, streamed from disk. */
  itemKeys(): Iterable<string>;
  itemCount(): number;
  clearItems(): Promise<void>;
  /** The id of the database whose rows the item memos describe. */
  boundDatabaseId(): string | undefined;
  bindDatabase(databaseId: string): Promise<void>;
  getMemo(key: string): unknown;
  putMemo(key: string, value: unknown): Promise<void>;
  removeMemo(key: string): Promise<void>;
  memoCount(): number;
  close(): Promise<void>;
}

export function isItemMemo(value: unknown): value is ItemMemo {
  if (value === null || typeof value !== 'object') return false;
  const m = value as Record<string, unknown>;
  const strings = ['sha256', 'mtimeNs', 'ino', 'sourceDocumentId', 'mediaType', 'opId'];
  if (!strings.every((k) => typeof m[k] === 'string')) return false;
  if (typeof m.size !== 'number' || m.rows === null || typeof m.rows !== 'object') return false;
  return Object.values(m.rows as object).every((keys) => Array.isArray(keys) && keys.every((k) => typeof k === 'string'));
}

export async function openStateStore(dir: string): Promise<StateStore> {
  await mkdir(dir, { recursive: true });
  const storePath = path.join(dir, STORE_FILE);
  const root: RootDatabase = open({ path: storePath, maxDbs: 4, compression: false });
  try {
    const meta = root.openDB<unknown, string>({ name: 'meta', encoding: 'msgpack' });
    const found = meta.get('format_version');
    if (found === undefined) await meta.put('format_version', STATE_FORMAT_VERSION);
    else if (found !== STATE_FORMAT_VERSION) throw new StateStoreVersionError(dir, found);
    const items = root.openDB<unknown, string>({ name: 'items', encoding: 'msgpack' });
    const memos = root.openDB<unknown, string>({ name: 'memos', encoding: 'msgpack' });
    return facade(dir, root, meta, items, memos);
  } catch (error) {
    await root.close();
    throw error;
  }
}

function facade(
  dir: string,
  root: RootDatabase,
  meta: LmdbDatabase<unknown, string>,
  items: LmdbDatabase<unknown, string>,
  memos: LmdbDatabase<unknown, string>,
): StateStore {
  return {
    path: dir,
    getItem(key) {
      const value = items.get(key);
      if (value === undefined) return { memo: undefined, healed: false };
      if (isItemMemo(value)) return { memo: value, healed: false };
      items.removeSync(key);
      return { memo: undefined, healed: true };
    },
    async putItem(key, memo) {
      await items.put(key, memo);
    },
    async removeItem(key) {
      await items.remove(key);
    },
    itemKeys: () => items.getKeys(),
    itemCount: () => items.getKeysCount(),
    async clearItems() {
      await items.clearAsync();
    },
    boundDatabaseId() {
      const id = meta.get('database_id');
      return typeof id === 'string' ? id : undefined;
    },
    async bindDatabase(databaseId) {
      await meta.put('database_id', databaseId);
    },
    getMemo: (key) => memos.get(key),
    async putMemo(key, value) {
      await memos.put(key, value);
    },
    async removeMemo(key) {
      await memos.remove(key);
    },
    memoCount: () => memos.getKeysCount(),
    close: () => root.close(),
  };
}

export interface StateStoreReport {
  path: string;
  formatVersion: unknown;
  expectedFormatVersion: number;
  items: number;
  invalidItems: number;
  memos: number;
  boundDatabaseId: string | null;
}

/** Reads a store without changing it (even one of another format version). */
export async function inspectStateStore(dir: string): Promise<StateStoreReport> {
  const root = open({ path: path.join(dir, STORE_FILE), maxDbs: 4, compression: false, readOnly: true });
  try {
    const meta = root.openDB<unknown, string>({ name: 'meta', encoding: 'msgpack' });
    const items = root.openDB<unknown, string>({ name: 'items', encoding: 'msgpack' });
    const memos = root.openDB<unknown, string>({ name: 'memos', encoding: 'msgpack' });
    let count = 0;
    let invalid = 0;
    for (const { value } of items.getRange()) {
      count += 1;
      if (!isItemMemo(value)) invalid += 1;
    }
    const bound = meta.get('database_id');
    return {
      path: dir,
      formatVersion: meta.get('format_version'),
      expectedFormatVersion: STATE_FORMAT_VERSION,
      items: count,
      invalidItems: invalid,
      memos: memos.getKeysCount(),
      boundDatabaseId: typeof bound === 'string' ? bound : null,
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
