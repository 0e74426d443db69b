// Stage 5 (ii): which Q&A pairs the proposer still owes a look. A pair is new or changed when
// its row was (re)written by a walk, which stamps the walk's op_id on it (SPEC.md 3 memo rules
// 1-3: an unchanged item keeps its old op_id, a changed one or full_reprocess stamps the
// current one). The proposer records each op_id it has been through in q_a_dedup_ops, so the
// pending pairs are those whose op_id is not there: this walk's changes, and those of a walk
// whose pass failed or never ran. Finding them never reads the pairs themselves.

import type { Queryable } from '../../lib/db/database.ts';

/**
 * The op_ids of q_a_extractions not yet recorded as done. The distinct op_ids are read by a
 * loose scan of the op_id index (one probe per distinct op_id, a few per walk that changed
 * something), not by reading the rows: an unchanged walk over 10,000 documents costs a few
 * index probes.
 */
export async function pendingOps(db: Queryable): Promise<string[]> {
  const { rows } = await db.query<{ op: string }>(
    `WITH RECURSIVE ops(op) AS (
       (SELECT op_id FROM q_a_extractions ORDER BY op_id LIMIT 1)
       UNION ALL
       SELECT (SELECT q.op_id FROM q_a_extractions q WHERE q.op_id > ops.op ORDER BY q.op_id LIMIT 1)
         FROM ops WHERE ops.op IS NOT NULL)
     SELECT op::text AS op FROM ops
      WHERE op IS NOT NULL AND NOT EXISTS (SELECT 1 FROM q_a_dedup_ops d WHERE d.op_id = ops.op)
      ORDER BY op`,
  );
  return rows.map((r) => r.op);
}

/** The next page of one walk's answered pairs after `after` (key order): their ids. */
export async function pendingPairs(db: Queryable, op: string, after: string | null, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id::text AS id FROM q_a_extractions
      WHERE op_id = $1::uuid AND ($2::uuid IS NULL OR id > $2::uuid) AND q_a_is_answered(answer_text)
      ORDER BY id LIMIT $3`,
    [op, after, limit],
  );
  return rows.map((r) => r.id);
}

/**
 * Records the ops as done, and forgets done ops no Q&A row carries any more (their rows were
 * restamped or deleted since), so the table stays as small as the set of live op_ids.
 */
export async function markOpsDone(db: Queryable, ops: readonly string[]): Promise<void> {
  await db.query(`INSERT INTO q_a_dedup_ops (op_id) SELECT unnest($1::uuid[]) ON CONFLICT (op_id) DO NOTHING`, [ops]);
  await db.query(
    `DELETE FROM q_a_dedup_ops d WHERE NOT EXISTS (SELECT 1 FROM q_a_extractions q WHERE q.op_id = d.op_id)`,
  );
}
