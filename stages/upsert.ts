// Stage 6, row UPSERT for one item: its rows go to the batched sink (lib/db/sink.ts), a large
// item's in several writes (engine/item/file.ts); once all are durable, the rows the item emitted
// last time and no longer emits are deleted by key.
// source_documents and reference_items rows are permanent provenance (citation targets) and
// are never deleted.

import type { Queryable } from '../lib/db/database.ts';
import { deleteRowsByKey } from '../lib/db/delete.ts';
import {
  contentChunks,
  embeddingKey,
  recordEmbeddings,
  referenceItems,
  sourceDocuments,
  WALK_TABLES,
  type TableRows,
} from '../lib/db/tables.ts';
import { chunkKey } from '../lib/ids.ts';
import type { ItemMemo } from '../lib/state/store.ts';

/** One item's rows per table. */
export type ItemRows = TableRows;

/** Keys of the rows an item owns, per table name. */
export type RowKeys = Record<string, string[]>;

/** What an item's memo says it owns: the rows it lists by key, and its chunks by count. */
export type OwnedRows = Pick<ItemMemo, 'sourceDocumentId' | 'rows' | 'chunks'>;

/** Chunks deleted per statement, each with its embedding. */
const CHUNKS_PER_DELETE = 5000;

/** Deletes every row the item owns (its provenance row is never deleted). */
export async function deleteItemRows(db: Queryable, owned: OwnedRows): Promise<number> {
  return (await deleteListed(db, owned.rows)) + (await deleteChunks(db, owned.sourceDocumentId, 0, owned.chunks ?? 0));
}

/**
 * Deletes the rows an item owned before and owns no longer, once its new rows are durable. Both
 * memos belong to one owner, so the chunks past the new count are the stale ones.
 */
export async function deleteStaleRows(db: Queryable, now: OwnedRows, before: OwnedRows): Promise<number> {
  // A memo from before chunks were counted lists its chunks; the ones the new count covers stay.
  const counted = before.rows[contentChunks.name]?.length ? chunkKeys(now.sourceDocumentId, 0, now.chunks ?? 0) : [];
  const kept: Record<string, Set<string>> = {
    [contentChunks.name]: new Set(counted),
    [recordEmbeddings.name]: new Set(counted.map(chunkEmbeddingKey)),
  };
  const stale: RowKeys = {};
  for (const [table, old] of Object.entries(before.rows)) {
    const listed = new Set(now.rows[table] ?? []);
    stale[table] = old.filter((k) => !listed.has(k) && kept[table]?.has(k) !== true);
  }
  return (
    (await deleteListed(db, stale)) +
    (await deleteChunks(db, now.sourceDocumentId, now.chunks ?? 0, before.chunks ?? 0))
  );
}

/** Deletes the given keys table by table, children before parents. */
async function deleteListed(db: Queryable, keys: RowKeys): Promise<number> {
  let deleted = 0;
  for (const spec of [...WALK_TABLES].reverse()) {
    if (spec === sourceDocuments || spec === referenceItems) continue;
    deleted += await deleteRowsByKey(db, spec, keys[spec.name] ?? []);
  }
  return deleted;
}

/** Deletes chunks `from` to `to` - 1 of an owner and their embeddings, a bounded number at a time. */
async function deleteChunks(db: Queryable, ownerId: string, from: number, to: number): Promise<number> {
  let deleted = 0;
  for (let start = from; start < to; start += CHUNKS_PER_DELETE) {
    const keys = chunkKeys(ownerId, start, Math.min(to, start + CHUNKS_PER_DELETE));
    deleted += await deleteRowsByKey(db, recordEmbeddings, keys.map(chunkEmbeddingKey));
    deleted += await deleteRowsByKey(db, contentChunks, keys);
  }
  return deleted;
}

const chunkKeys = (ownerId: string, from: number, to: number): string[] =>
  Array.from({ length: to - from }, (_, i) => chunkKey(ownerId, from + i));

/** The key of a chunk's embedding row (rowKey form). */
export const chunkEmbeddingKey = (chunk: string): string => embeddingKey('content_chunk', chunk);
