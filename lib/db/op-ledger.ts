// Which walks a flow-scope pass has been through. A walk stamps its op_id on every row it writes
// (an unchanged row keeps the op_id of the walk that last wrote it), so the rows a pass still
// owes a look are those whose op_id its ledger table does not list: the walk's own, and those
// of a walk whose pass failed or never ran (the process died first). The pass lists an op once
// it is through with it. Nothing is recorded while a walk writes, and finding the pending ops
// never reads the rows themselves.

import type { Queryable } from './database.ts';

/** A table of rows stamped with op_id (its op_id indexed), and the table of ops a pass is through with. */
export interface OpLedger {
  rows: string;
  done: string;
}

/**
 * The op_ids of the rows not yet listed as done. The distinct op_ids are read by a loose scan of
 * the op_id index (one probe per distinct op_id, one per walk that wrote something), so an
 * unchanged walk over 10,000 documents costs a few index probes.
 */
export async function pendingOps(db: Queryable, ledger: OpLedger): Promise<string[]> {
  const { rows } = await db.query<{ op: string }>(
    `WITH RECURSIVE ops(op) AS (
       (SELECT op_id FROM ${ledger.rows} ORDER BY op_id LIMIT 1)
       UNION ALL
       SELECT (SELECT r.op_id FROM ${ledger.rows} r WHERE r.op_id > ops.op ORDER BY r.op_id LIMIT 1)
         FROM ops WHERE ops.op IS NOT NULL)
     SELECT op::text AS op FROM ops
      WHERE op IS NOT NULL AND NOT EXISTS (SELECT 1 FROM ${ledger.done} d WHERE d.op_id = ops.op)
      ORDER BY op`,
  );
  return rows.map((r) => r.op);
}

/**
 * Lists the ops as done, and forgets done ops no row carries any more (their rows were
 * rewritten or deleted since), so the ledger stays as small as the set of live op_ids.
 */
export async function markOpsDone(db: Queryable, ledger: OpLedger, ops: readonly string[]): Promise<void> {
  await db.query(`INSERT INTO ${ledger.done} (op_id) SELECT unnest($1::uuid[]) ON CONFLICT (op_id) DO NOTHING`, [ops]);
  await db.query(
    `DELETE FROM ${ledger.done} d WHERE NOT EXISTS (SELECT 1 FROM ${ledger.rows} r WHERE r.op_id = d.op_id)`,
  );
}
