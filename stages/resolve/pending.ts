// Stage 5 (i), what waits for resolution. A walk that writes rows records its op in
// entity_resolution_pending in the transaction of its first write (the sink's firstWrite), so a
// walk killed before its pass leaves its op behind, and so does a pass that failed. The pass
// takes every op recorded, decides the names their mentions carry that no resolution has
// placed, and deletes the ops once every such name is decided and moved. An unchanged walk
// writes nothing, records nothing, and its pass reads one empty table.

import type { Queryable } from '../../lib/db/database.ts';

/** Records a walk's op as waiting for resolution; in the transaction of its first write. */
export async function awaitResolution(tx: Queryable, opId: string): Promise<void> {
  await tx.query('INSERT INTO entity_resolution_pending (op_id) VALUES ($1) ON CONFLICT DO NOTHING', [opId]);
}

export async function pendingOps(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ op_id: string }>('SELECT op_id::text FROM entity_resolution_pending');
  return rows.map((r) => r.op_id);
}

/** The ops whose names are all decided and moved. */
export async function settleOps(db: Queryable, ops: readonly string[]): Promise<void> {
  await db.query('DELETE FROM entity_resolution_pending WHERE op_id = ANY($1::uuid[])', [ops]);
}

/** A name that waits: undecided (root null), or decided with mentions still to move under its root. */
export interface WaitingName {
  type: string;
  name: string;
  root: string | null;
}

/**
 * The names the ops' unpinned mentions carry that are no root: those no resolution has decided,
 * and those a stopped pass decided without moving every mention; the most mentioned first, so
 * that the common spelling founds its root and its variants join it. Names, not mentions: the
 * list grows with the vocabulary a walk met, never with the corpus.
 */
export async function waitingNames(db: Queryable, ops: readonly string[]): Promise<WaitingName[]> {
  const { rows } = await db.query<{ entity_type: string; name: string; root: string | null }>(
    `SELECT m.entity_type, m.canonical_name AS name, n.canonical_name AS root
       FROM entity_mentions m
       LEFT JOIN entity_names n ON n.entity_type = m.entity_type AND n.name = m.canonical_name
      WHERE m.op_id = ANY($1::uuid[]) AND (m.metadata ->> 'curation_pinned')::boolean IS NOT TRUE
        AND (n.name IS NULL OR n.canonical_name <> n.name)
      GROUP BY m.entity_type, m.canonical_name, n.canonical_name
      ORDER BY count(*) DESC, m.entity_type, m.canonical_name`,
    [ops],
  );
  return rows.map((r) => ({ type: r.entity_type, name: r.name, root: r.root }));
}
