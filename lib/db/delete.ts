// Deletes rows by key: the walk removes exactly the rows an item no longer emits, never by a
// broad predicate, and never a curated (pinned) row.

import { quoteIdent, type Queryable } from './database.ts';
import type { TableSpec } from './tables.ts';

/** Deletes the rows whose keys (in rowKey form) are given; returns how many went. */
export async function deleteRowsByKey(db: Queryable, spec: TableSpec, keys: readonly string[]): Promise<number> {
  if (keys.length === 0) return 0;
  const parts = spec.key.map((_, i) => keys.map((k) => k.split(':')[i]!));
  const columns = spec.key.map(quoteIdent).join(', ');
  const unnest = spec.key.map((_, i) => `$${i + 1}::text[]`).join(', ');
  const casts = spec.key.map((k, i) => `k${i}::${spec.columns.find((c) => c.name === k)!.type}`).join(', ');
  const keepPinned = spec.pinned === undefined ? '' : ` AND NOT (${spec.pinned})`;
  const { rowCount } = await db.query(
    `DELETE FROM ${quoteIdent(spec.name)} WHERE (${columns}) IN (SELECT ${casts} FROM unnest(${unnest}) AS u(${spec.key.map((_, i) => `k${i}`).join(', ')}))${keepPinned}`,
    parts,
  );
  return rowCount;
}
