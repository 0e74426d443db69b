// The lmdb databases behind a state store open in this process, and what the store holds in
// content terms, to compare the stores of two deployments of one corpus.

import { createHash } from 'node:crypto';
import path from 'node:path';
import * as lmdb from 'lmdb';
import type { StateStore } from '../../lib/state/store.ts';
import { OWED_MEMO } from '../../lib/state/producer-debt.ts';

/** The store's environment and its named databases (lib/state/store.ts). */
const NAMES = ['meta', 'items', 'item_rows', 'memos', 'doc_items'] as const;
export type StoreDatabases = Record<'root' | (typeof NAMES)[number], lmdb.Database<unknown, string>>;

/**
 * The databases of `store`, the one of its file opened last in this process: lmdb keeps every
 * database it opens in `allDbs` (exported, untyped) under its file's name and the database's.
 */
export function lmdbDatabasesOf(store: StateStore): StoreDatabases {
  const { allDbs } = lmdb as unknown as { allDbs: Map<string, lmdb.Database<unknown, string> & { path: string }> };
  const file = path.join(store.path, 'state.mdb');
  const name = path.basename(file, '.mdb');
  const root = allDbs.get(name);
  if (root?.path !== file) throw new Error(`the lmdb databases open last under ${name} are not those of ${file}`);
  const named = Object.fromEntries(NAMES.map((n) => [n, allDbs.get(`${name}-${n}`)!]));
  return { root, ...named } as unknown as StoreDatabases;
}

/**
 * Every item's stamp in content terms (its identity, bytes, type, chunk count and how many rows
 * of each table it owns: the rows' ids are minted per deployment) and every memo with a digest
 * of its value (what the producer owes: only that it is owed, its token is new at each walk),
 * sorted.
 */
export async function stateInContentTerms(store: StateStore): Promise<{ items: string[]; memos: string[] }> {
  const items: string[] = [];
  for await (const identity of store.itemIdentities()) {
    const { memo } = await store.getItem(identity);
    if (memo === undefined) throw new Error(`${identity} is listed without a memo`);
    const rows = Object.entries(memo.rows)
      .filter(([, keys]) => keys.length > 0)
      .map(([table, keys]) => `${table}:${keys.length}`)
      .sort();
    items.push([identity, memo.sha256, memo.size, memo.mediaType, memo.chunks ?? '-', ...rows].join(' '));
  }
  const memos = [...lmdbDatabasesOf(store).memos.getRange()].map(({ key, value }) =>
    key === OWED_MEMO ? key : `${key} ${createHash('sha256').update(JSON.stringify(value)).digest('hex')}`,
  );
  return { items: items.sort(), memos: memos.sort() };
}
