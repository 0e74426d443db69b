// The feed_articles backlink (docs/behaviour/tables.md#feed_articles,
// docs/behaviour/states.md#url-backlink-reconciliation): a passed feed row points at the
// reference_items row its URL landed in.
//
// Each URL item links its own rows as soon as its reference item is durable; that link may
// defer (the row not visible yet on a first walk, or any fault), and is never an item
// failure. After the URL source, the flow-scope pass links every passed-but-unlinked row
// whose reference item landed in this walk, and logs url_backlink_reconciled with
// linked_count. A row already linked is never re-pointed.

import type { Queryable } from '../lib/db/database.ts';
import type { Logger } from '../lib/log.ts';

/** Links the unlinked passed rows of one URL; returns how many were linked. */
export async function linkFeedRows(db: Queryable, url: string, referenceItemId: string): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE feed_articles SET reference_item_id = $2::uuid, linked_at = now()
      WHERE url = $1::text AND passed AND reference_item_id IS NULL`,
    [url, referenceItemId],
  );
  return rowCount;
}

const RECONCILE_BATCH = 1_000;

/** The post-pass: links passed, unlinked rows to the reference items this walk landed. */
export async function reconcileUrlBacklinks(
  db: Queryable,
  landedReferenceIds: ReadonlySet<string>,
  log: Logger,
): Promise<number> {
  const ids = [...landedReferenceIds];
  let linked = 0;
  for (let i = 0; i < ids.length; i += RECONCILE_BATCH) {
    const { rowCount } = await db.query(
      `UPDATE feed_articles AS f SET reference_item_id = r.id, linked_at = now()
         FROM reference_items AS r
        WHERE r.id = ANY($1::text[]::uuid[]) AND f.url = r.url AND f.passed AND f.reference_item_id IS NULL`,
      [ids.slice(i, i + RECONCILE_BATCH)],
    );
    linked += rowCount;
  }
  log.info({ linked_count: linked }, 'url_backlink_reconciled');
  return linked;
}
