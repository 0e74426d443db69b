// Stage 5 (ii): one batch's proposals written, in one transaction, idempotently (a pass cut
// short is done again by the next walk and lands the same rows).
//
// Decisions stand (docs/behaviour/stages.md#curated-records): a proposal the platform accepted or
// rejected is never updated, re-scored or reset, and never proposed again (its id is the pair's,
// uuid5 of dedup:{a}:{b}, and q_a_extractions ids are natural keys that survive full_reprocess).
// Only a row still 'proposed' follows its pairs: re-scored when found again with another
// similarity, withdrawn (deleted) when one of its pairs changed and the two no longer resemble each
// other. A proposal whose Q&A row is deleted goes with it (ON DELETE CASCADE, schema/0001).

import type { Database } from '../../lib/db/database.ts';
import { EMBEDDING_OF, type Proposal } from './candidates.ts';

export async function writeProposals(
  db: Database,
  pairs: readonly string[],
  found: readonly Proposal[],
  minSimilarity: number,
  opId: string,
): Promise<{ proposed: number; withdrawn: number }> {
  return db.transaction(async (tx) => {
    const written = await tx.query(
      `INSERT INTO q_a_dedup_proposals AS d (id, q_a_extraction_a, q_a_extraction_b, similarity, status, op_id)
       SELECT i, a, b, s::real, 'proposed', $5::uuid
         FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[]) AS u(i, a, b, s)
       ON CONFLICT (id) DO UPDATE SET similarity = EXCLUDED.similarity, op_id = EXCLUDED.op_id, updated_at = now()
        WHERE d.status = 'proposed' AND d.similarity <> EXCLUDED.similarity`,
      [
        found.map((p) => p.id),
        found.map((p) => p.a),
        found.map((p) => p.b),
        found.map((p) => String(p.similarity)),
        opId,
      ],
    );
    // The same test as the candidate query's, on the pair as it stands now.
    const withdrawn = await tx.query(
      `DELETE FROM q_a_dedup_proposals d
        WHERE d.status = 'proposed'
          AND (d.q_a_extraction_a = ANY($1::uuid[]) OR d.q_a_extraction_b = ANY($1::uuid[]))
          AND NOT EXISTS (
            SELECT 1 FROM q_a_extractions x, q_a_extractions y
             WHERE x.id = d.q_a_extraction_a AND y.id = d.q_a_extraction_b
               AND x.source_document_id <> y.source_document_id
               AND q_a_is_answered(x.answer_text) AND q_a_is_answered(y.answer_text)
               AND (q_a_dedup_key(x.question_text, x.answer_text) = q_a_dedup_key(y.question_text, y.answer_text)
                    OR 1 - ((${EMBEDDING_OF('x.id')}) <=> (${EMBEDDING_OF('y.id')})) >= $2::float8))`,
      [pairs, minSimilarity],
    );
    return { proposed: written.rowCount ?? 0, withdrawn: withdrawn.rowCount ?? 0 };
  });
}
