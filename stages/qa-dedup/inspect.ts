// What an operator sees of stage 5 (ii), and the decision the platform normally records itself
// (`ingest qa proposals | decide`): each proposal with both pairs side by side.

import type { Queryable } from '../../lib/db/database.ts';
import { IngestError } from '../../lib/errors.ts';

export const PROPOSAL_STATUSES = Object.freeze(['proposed', 'accepted', 'rejected'] as const);
export type ProposalStatus = (typeof PROPOSAL_STATUSES)[number];
export const DECISIONS = Object.freeze({ accept: 'accepted', reject: 'rejected' } as const);
export type Decision = keyof typeof DECISIONS;

export interface QaSide {
  id: string;
  document: string;
  question: string;
  answer: string | null;
}

export interface ProposalView {
  id: string;
  similarity: number;
  status: ProposalStatus;
  op_id: string;
  a: QaSide;
  b: QaSide;
}

export class ProposalNotFoundError extends IngestError {
  constructor(id: string) {
    super('proposal_not_found', `no Q&A dedup proposal ${id}`);
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Proposals, the most similar first, optionally of one status. */
export async function listProposals(
  db: Queryable,
  options: { status: ProposalStatus | null; limit: number },
): Promise<ProposalView[]> {
  const { rows } = await db.query<{
    id: string;
    similarity: number;
    status: ProposalStatus;
    op_id: string;
    a_id: string;
    a_document: string;
    a_question: string;
    a_answer: string | null;
    b_id: string;
    b_document: string;
    b_question: string;
    b_answer: string | null;
  }>(
    `SELECT p.id::text, p.similarity, p.status, p.op_id::text,
            a.id::text AS a_id, da.rel_path AS a_document, a.question_text AS a_question, a.answer_text AS a_answer,
            b.id::text AS b_id, db.rel_path AS b_document, b.question_text AS b_question, b.answer_text AS b_answer
       FROM q_a_dedup_proposals p
       JOIN q_a_extractions a ON a.id = p.q_a_extraction_a
       JOIN q_a_extractions b ON b.id = p.q_a_extraction_b
       JOIN source_documents da ON da.id = a.source_document_id
       JOIN source_documents db ON db.id = b.source_document_id
      WHERE $1::text IS NULL OR p.status = $1::text
      ORDER BY p.similarity DESC, p.id LIMIT $2`,
    [options.status, options.limit],
  );
  return rows.map((r) => ({
    id: r.id,
    similarity: Number(r.similarity),
    status: r.status,
    op_id: r.op_id,
    a: { id: r.a_id, document: r.a_document, question: r.a_question, answer: r.a_answer },
    b: { id: r.b_id, document: r.b_document, question: r.b_question, answer: r.b_answer },
  }));
}

/**
 * Records the platform's (or an operator's) decision. Walks never change it again (write.ts).
 * Returns the status before and after; throws ProposalNotFoundError for an unknown id.
 */
export async function decideProposal(
  db: Queryable,
  id: string,
  decision: Decision,
): Promise<{ id: string; before: ProposalStatus; status: ProposalStatus }> {
  if (!UUID.test(id)) throw new ProposalNotFoundError(id);
  const status = DECISIONS[decision];
  const { rows } = await db.query<{ before: ProposalStatus }>(
    `UPDATE q_a_dedup_proposals p SET status = $2, updated_at = now()
       FROM (SELECT id, status FROM q_a_dedup_proposals WHERE id = $1::uuid FOR UPDATE) old
      WHERE p.id = old.id RETURNING old.status AS before`,
    [id, status],
  );
  if (rows.length === 0) throw new ProposalNotFoundError(id);
  return { id: id.toLowerCase(), before: rows[0]!.before, status };
}
