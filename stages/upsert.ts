// Stage 6, row UPSERT for one item: its rows go to the batched sink (lib/db/sink.ts), a large
// item's in several writes (engine/item/file.ts); once all are durable, the rows the item emitted
// last time and no longer emits are deleted by key.
// source_documents and reference_items rows are permanent provenance (citation targets) and
// are never deleted.

import type { Database } from '../lib/db/database.ts';
import { deleteRowsByKey } from '../lib/db/delete.ts';
import { referenceItems, rowKey, sourceDocuments, WALK_TABLES, type TableRows } from '../lib/db/tables.ts';

/** One item's rows per table. */
export type ItemRows = TableRows;

/** Keys of the rows an item owns, per table name. */
export type RowKeys = Record<string, string[]>;

export function keysOf(rows: ItemRows): RowKeys {
  return Object.fromEntries([...rows].map(([spec, list]) => [spec.name, list.map((row) => rowKey(spec, row))]));
}

/** Deletes the given keys table by table, children before parents. */
export async function deleteItemRows(db: Database, keys: RowKeys): Promise<number> {
  let deleted = 0;
  for (const spec of [...WALK_TABLES].reverse()) {
    if (spec === sourceDocuments || spec === referenceItems) continue;
    deleted += await deleteRowsByKey(db, spec, keys[spec.name] ?? []);
  }
  return deleted;
}

/** Deletes the rows an item owned before (`previousKeys`) and owns no longer (`keys`), once its new rows are durable. */
export async function deleteStaleRows(db: Database, keys: RowKeys, previousKeys: RowKeys): Promise<number> {
  const stale: RowKeys = {};
  for (const [table, old] of Object.entries(previousKeys)) {
    const now = new Set(keys[table] ?? []);
    stale[table] = old.filter((k) => !now.has(k));
  }
  return deleteItemRows(db, stale);
}
