// Stage 5 (i), what waits for resolution: the mentions written by the walks the pass has not
// been through (lib/db/op-ledger.ts: their op_ids, not listed in entity_resolution_ops), so a
// walk killed before its pass, or whose pass failed, leaves its mentions to the next pass. The
// pass lists those ops once it has decided every name their mentions carry and moved them. An
// unchanged walk writes nothing, and its pass finds no op in a few index probes.
//
// A pass records its names under the least of its ops (index.ts), an op of the walks whose
// mentions it decides, so a pass over the same ops (or more) after it tells the roots that pass
// founded from the roots there were before: the waiting list is then the same list, whatever
// batches a stopped pass recorded (docs/DECISIONS.md "Stage 5 resumes to the same outcome").

import type { Queryable } from '../../lib/db/database.ts';
import { isPinnedMention } from '../../lib/db/tables.ts';
import type { OpLedger } from '../../lib/db/op-ledger.ts';
import { adornments } from './names.ts';
import { ROOT } from './roots.ts';

export const RESOLUTION_LEDGER: OpLedger = { rows: 'entity_mentions', done: 'entity_resolution_ops' };

/** A name that waits: undecided (root null), or decided (by a stopped pass, or before) with its root. */
export interface WaitingName {
  type: string;
  name: string;
  root: { name: string; type: string } | null;
}

/**
 * The names the ops' unpinned mentions carry that are no root, or a root recorded under one of
 * the ops (founded by a pass over these ops that stopped): those no resolution has decided come
 * undecided, the others with their root. The most mentioned first, so that the common spelling
 * founds its root and its variants join it, and of two as common the plainer one (fewer
 * legal-form and title words: "Jane Smith" before "Dr Jane Smith"). Names, not mentions: the
 * list grows with the vocabulary a walk met, never with the corpus. Until the pass moves a
 * mention, which it does only once every name is recorded, the list is the same at every try.
 */
export async function waitingNames(db: Queryable, ops: readonly string[]): Promise<WaitingName[]> {
  const { rows } = await db.query<{
    entity_type: string;
    name: string;
    root: string | null;
    root_type: string | null;
    mentions: number;
  }>(
    `SELECT m.entity_type, m.canonical_name AS name, n.canonical_name AS root, n.canonical_type AS root_type,
            count(*)::int AS mentions
       FROM entity_mentions m
       LEFT JOIN entity_names n ON n.entity_type = m.entity_type AND n.name = m.canonical_name
      WHERE m.op_id = ANY($1::uuid[]) AND NOT (${isPinnedMention('m')})
        AND (n.name IS NULL OR NOT (${ROOT('n')}) OR n.op_id = ANY($1::uuid[]))
      GROUP BY m.entity_type, m.canonical_name, n.canonical_name, n.canonical_type
      ORDER BY count(*) DESC, m.entity_type, m.canonical_name`,
    [ops],
  );
  // A stable sort: names as common and as plain keep the query's order.
  const plainness = new Map(rows.map((r) => [r, adornments(r.name)]));
  rows.sort((a, b) => b.mentions - a.mentions || plainness.get(a)! - plainness.get(b)!);
  return rows.map((r) => ({
    type: r.entity_type,
    name: r.name,
    root: r.root === null ? null : { name: r.root, type: r.root_type! },
  }));
}
