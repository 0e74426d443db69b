// Flow-scope pass after the walk: derived rows of documents gone from the corpus are removed
// (DESIGN.md 5). A document is gone when no item seen in this walk resolves to it: a file
// deleted while a byte-identical copy lives elsewhere keeps its rows, since the copy owns the
// same keys. source_documents rows stay (permanent provenance).
//
// Feed URLs are items too (identity url:{url}): a URL still passed is enumerated by every
// walk, fetched or not, so its rows are never touched here; a URL no longer passed loses its
// derived rows, while its reference_items row stays (provenance, like source_documents).

import type { Database } from '../lib/db/database.ts';
import { isRetiredIdentity } from '../lib/state/keys.ts';
import type { ItemMemo, StateStore } from '../lib/state/store.ts';
import { deleteItemRows } from './upsert.ts';

/**
 * The walk keeps both as 64-bit digests (engine/digest-set.ts). A false "present" (about 3
 * in 100 million at a million items) can only leave a vanished document's rows in place; it
 * never removes a live one's.
 */
type Membership = Pick<ReadonlySet<string>, 'has'>;

export interface CleanupInput {
  /** Identity keys of every item the walk enumerated, whatever became of it. */
  seen: Membership;
  /** Document ids that some item of this walk resolves to. */
  liveDocumentIds: Membership;
}

export interface CleanupResult {
  itemsRemoved: number;
  rowsDeleted: number;
}

export async function removeVanishedDocuments(
  db: Database,
  store: StateStore,
  input: CleanupInput,
): Promise<CleanupResult> {
  const vanished: string[] = [];
  for (const key of store.itemIdentities()) if (!input.seen.has(key)) vanished.push(key);
  // Vanished entries are items gone from the corpus, and memos an item left behind when it
  // moved to another document (stored under a retired: key, never enumerated).
  const dropped: ItemMemo[] = [];
  const removedMemos: string[] = [];
  for (const key of vanished) {
    const { memo } = store.getItem(key);
    if (memo !== undefined) dropped.push(memo);
    removedMemos.push(key);
  }
  let rowsDeleted = 0;
  for (const memo of dropped) {
    if (input.liveDocumentIds.has(memo.sourceDocumentId)) continue;
    rowsDeleted += await deleteItemRows(db, memo.rows);
  }
  // Memo entries go only after their rows: a crash in between repeats the deletes next time.
  for (const key of removedMemos) await store.removeItem(key);
  return { itemsRemoved: removedMemos.filter((key) => !isRetiredIdentity(key)).length, rowsDeleted };
}
