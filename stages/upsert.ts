// Stage 6, row UPSERT for one item: hand its rows to the batched sink, wait until they are
// durable (all of them, in one transaction), then delete by key the rows the item emitted last time and no longer emits.
// source_documents and reference_items rows are permanent provenance (citation targets) and
// are never deleted.

import type { Database } from '../lib/db/database.ts';
import { deleteRowsByKey } from '../lib/db/delete.ts';
import type { Sink } from '../lib/db/sink.ts';
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

/** Writes the item's rows, then deletes the rows it owned before and owns no longer (`keys`). */
export async function upsertItemRows(
  sink: Sink,
  db: Database,
  rows: ItemRows,
  keys: RowKeys,
  previousKeys: RowKeys | undefined,
): Promise<void> {
  await sink.write(rows);
  if (previousKeys !== undefined) {
    const stale: RowKeys = {};
    for (const [table, old] of Object.entries(previousKeys)) {
      const now = new Set(keys[table] ?? []);
      stale[table] = old.filter((k) => !now.has(k));
    }
    await deleteItemRows(db, stale);
  }
}
