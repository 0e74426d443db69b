// Stage 5 (ii): which Q&A pairs the proposer still owes a look. A pair is new or changed when
// its row was (re)written by a walk, which stamps the walk's op_id on it
// (docs/behaviour/states.md#memo-and-stamping: an unchanged item keeps its old op_id, a changed one
// or full_reprocess stamps the current one). The proposer lists each op_id it has been through in
// q_a_dedup_ops (lib/db/op-ledger.ts), so the pending pairs are those whose op_id is not there:
// this walk's changes, and those of a walk whose pass failed or never ran. Finding them never reads
// the pairs themselves.

import type { Queryable } from '../../lib/db/database.ts';
import type { OpLedger } from '../../lib/db/op-ledger.ts';

/** The ops of q_a_extractions the proposer has been through are listed in q_a_dedup_ops. */
export const QA_DEDUP_LEDGER: OpLedger = { rows: 'q_a_extractions', done: 'q_a_dedup_ops' };

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
