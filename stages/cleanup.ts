// Flow-scope pass after the walk: derived rows of documents gone from the corpus are removed
// (docs/behaviour/stages.md#stale-row-cleanup). A document is gone when no item seen in this walk
// resolves to it: a file deleted while a byte-identical copy lives elsewhere keeps its rows, since
// the copy owns the same keys, and its rel_path moves to that copy. source_documents rows stay
// (permanent provenance).
//
// Feed URLs are items too (identity url:{url}): a URL still passed is enumerated by every
// walk, fetched or not, so its rows are never touched here; a URL no longer passed loses its
// derived rows, while its reference_items row stays (provenance, like source_documents).
//
// The mass-removal guard: an ENGINE_SOURCE_PATH whose volume failed to mount is an existing,
// empty directory, and one walk of it would empty every derived table. So a walk whose corpus
// lists nothing, or that would remove more than a set share of the known items, removes none
// and says so (a warning on the run record and /walk-status) unless the operator allows it.

import type { Database } from '../lib/db/database.ts';
import { currentRunContext } from '../lib/run-context.ts';
import { isRetiredIdentity, isUrlIdentity, relPathOf, unretired } from '../lib/state/keys.ts';
import type { ItemMemo, StateStore } from '../lib/state/store.ts';
import { deleteItemRows } from './upsert.ts';

/**
 * The walk keeps both as 64-bit digests (engine/walk/digest-set.ts). A false "present" (about 3
 * in 100 million at a million items) can only leave a vanished document's rows in place; it
 * never removes a live one's.
 */
type Membership = Pick<ReadonlySet<string>, 'has'>;

export interface CleanupInput {
  /** Identity keys of every item the walk enumerated, whatever became of it. */
  seen: Membership;
  /** Document ids that some item of this walk resolves to. */
  liveDocumentIds: Membership;
  /** How many items the walk enumerated. */
  listed: number;
  /**
   * The walk enumerated the ledger's passed URLs. A walk that did not (watch mode's save walks)
   * saw no URL, which says nothing of whether one is still passed: their items are not vanished.
   */
  feedUrls: boolean;
}

/** When a walk may remove documents in bulk (the mass-removal guard). */
export interface RemovalGuard {
  /** Past this share of the known items, in percent, removing needs `allow`... */
  maxPercent: number;
  /** ...once more than this many items would go. A corpus that lists nothing always needs it. */
  minItems: number;
  /** The operator's word, for this walk, that the removals are meant. */
  allow: boolean;
}

export interface CleanupResult {
  itemsRemoved: number;
  rowsDeleted: number;
  /** Set when the guard kept every vanished item's rows and memo. */
  refused?: { vanished: number; known: number };
}

/** True when removing `vanished` of `known` items needs the operator's word. */
export function removalNeedsConsent(vanished: number, known: number, listed: number, guard: RemovalGuard): boolean {
  if (vanished === 0 || guard.allow) return false;
  if (listed === 0) return true;
  return vanished > guard.minItems && vanished * 100 > known * guard.maxPercent;
}

export async function removeVanishedDocuments(
  db: Database,
  store: StateStore,
  input: CleanupInput,
  guard: RemovalGuard,
  /** Runs once before the first delete, when there is one (the producer's debt). */
  beforeDeleting: () => Promise<void>,
): Promise<CleanupResult> {
  // Vanished entries are items gone from the corpus, and memos an item left behind when it
  // moved to another document (stored under a retired: key, never enumerated).
  const vanished: string[] = [];
  let known = 0;
  for await (const key of store.itemIdentities()) {
    const retired = isRetiredIdentity(key);
    if (!retired) known += 1;
    if (!input.seen.has(key) && (input.feedUrls || !isUrlIdentity(retired ? unretired(key) : key))) vanished.push(key);
  }
  const gone = vanished.filter((key) => !isRetiredIdentity(key)).length;
  const refused = removalNeedsConsent(gone, known, input.listed, guard);
  // Refused, the vanished items keep their memos and rows: the next walk decides again. The
  // memos a moved item left behind are not removals of a document and go as always.
  const removing = refused ? vanished.filter(isRetiredIdentity) : vanished;
  const dropped: { key: string; memo: ItemMemo }[] = [];
  for (const key of removing) {
    const { memo } = await store.getItem(key);
    if (memo !== undefined) dropped.push({ key, memo });
  }
  if (dropped.length > 0) await beforeDeleting();
  let rowsDeleted = 0;
  const stillHeld = new Set<string>();
  for (const { key, memo } of dropped) {
    if (!input.liveDocumentIds.has(memo.sourceDocumentId)) rowsDeleted += await deleteItemRows(db, memo);
    else if (relPathOf(isRetiredIdentity(key) ? unretired(key) : key) !== null) stillHeld.add(memo.sourceDocumentId);
  }
  // Memo entries go only after their rows: a crash in between repeats the deletes next time.
  for (const key of removing) await store.removeItem(key);
  for (const id of stillHeld) await nameLiveFile(db, store, id);
  return {
    itemsRemoved: refused ? 0 : gone,
    rowsDeleted,
    ...(refused ? { refused: { vanished: gone, known } } : {}),
  };
}

/**
 * A document that a gone or moved file named and another file still holds keeps its rows; its
 * rel_path then names one of the files that hold it, so it never points at a file that is gone.
 */
async function nameLiveFile(db: Database, store: StateStore, sourceDocumentId: string): Promise<void> {
  const paths = (await store.itemsOfDocument(sourceDocumentId))
    .filter((identity) => !isRetiredIdentity(identity))
    .map(relPathOf)
    .filter((relPath) => relPath !== null)
    .sort();
  if (paths.length === 0) return;
  await db.query(
    `UPDATE source_documents SET rel_path = $2, op_id = $3, updated_at = now()
      WHERE id = $1 AND NOT (rel_path = ANY($4::text[]))`,
    [sourceDocumentId, paths[0], currentRunContext().opId, paths],
  );
}
