// Stage 5 (ii): the candidates of a batch of pending pairs, in one set-based query. Two blocks,
// so that neither's blind spot loses a duplicate:
//
//   exact    the same question and answer once normalised (q_a_dedup_key, schema/0012: case,
//            punctuation and spacing aside), read from its expression index: an exact repeat is
//            found however many near neighbours crowd the embedding block
//   nearest  the NEAREST_PAIRS nearest Q&A embeddings (question and answer embedded together,
//            "Q: ... A: ...", stages/embed.ts), from the HNSW index over those rows
//
// A candidate is always in another document (a question repeated inside one document, as forms
// repeat them per section, is that document's business: docs/DECISIONS.md) and answered (the
// blank-form gate's predicate, q_a_is_answered). Its similarity is the cosine of the two
// embeddings, 1 for an exact repeat. Every row outside the batch is reached by key (an index
// lookup per candidate), never by a join over the table: a batch costs the same at any size.

import type { Database } from '../../lib/db/database.ts';
import { dedupKey } from '../../lib/ids.ts';

/** Nearest pairs read per pending pair; most are below the threshold or in the same document. */
export const NEAREST_PAIRS = 20;
/**
 * Exact repeats read per pending pair: the exact block is unbounded in principle, and a
 * boilerplate pair in every document would otherwise make a batch's result (and its memory)
 * grow with the corpus. Past this many, the first by key are proposed.
 */
export const MAX_EXACT_PER_PAIR = 200;

/**
 * The Q&A embedding of the row `id` names, as a scalar subquery: one primary-key lookup per row.
 * Joined instead, the planner hashed every Q&A embedding for each batch (O(all pairs) per batch).
 */
export const EMBEDDING_OF = (id: string) =>
  `SELECT e.embedding FROM record_embeddings e WHERE e.owner_kind = 'q_a_extraction' AND e.owner_id = ${id}`;

export interface Proposal {
  id: string;
  /** The smaller of the two q_a_extractions ids (the table's CHECK), then the larger. */
  a: string;
  b: string;
  similarity: number;
}

export async function findCandidates(
  db: Database,
  pairs: readonly string[],
  minSimilarity: number,
): Promise<Proposal[]> {
  const rows = await db.transaction(async (tx) => {
    // Without it, the index scan stops at ef_search entries, and the filters after it (another
    // document, answered) could leave fewer than NEAREST_PAIRS.
    await tx.query(`SET LOCAL hnsw.iterative_scan = relaxed_order`);
    const { rows } = await tx.query<{ a: string; b: string; similarity: number }>(
      `WITH p AS MATERIALIZED (
         SELECT q.id, q.source_document_id AS doc, q_a_dedup_key(q.question_text, q.answer_text) AS k,
                (${EMBEDDING_OF('q.id')}) AS v
           FROM q_a_extractions q
          WHERE q.id = ANY($1::uuid[]) AND q_a_is_answered(q.answer_text))
       SELECT p.id::text AS a, x.id::text AS b, 1::float8 AS similarity
         FROM p CROSS JOIN LATERAL (
           SELECT o.id FROM q_a_extractions o
            WHERE q_a_dedup_key(o.question_text, o.answer_text) = p.k AND q_a_is_answered(o.answer_text)
              AND o.source_document_id <> p.doc
            ORDER BY o.id LIMIT ${MAX_EXACT_PER_PAIR}) x
       UNION ALL
       SELECT a::text, b::text, 1 - distance FROM (
         SELECT p.id AS a, p.doc, x.owner_id AS b, x.distance,
                (SELECT o.source_document_id FROM q_a_extractions o
                  WHERE o.id = x.owner_id AND q_a_is_answered(o.answer_text)) AS other_doc
           FROM p CROSS JOIN LATERAL (
             SELECT owner_id, embedding <=> p.v AS distance FROM record_embeddings
              WHERE owner_kind = 'q_a_extraction' ORDER BY embedding <=> p.v LIMIT ${NEAREST_PAIRS}) x
          WHERE p.v IS NOT NULL AND x.distance <= 1 - $2::float8) n
        WHERE other_doc <> doc`,
      [pairs, minSimilarity],
    );
    return rows;
  });
  // A pair of two pending pairs is found from both sides: one proposal, the higher score.
  const proposals = new Map<string, Proposal>();
  for (const row of rows) {
    const similarity = Number(row.similarity);
    if (!(similarity >= minSimilarity)) continue;
    const [a, b] = row.a < row.b ? [row.a, row.b] : [row.b, row.a];
    const id = dedupKey(a, b);
    const known = proposals.get(id);
    if (known === undefined || known.similarity < similarity) proposals.set(id, { id, a, b, similarity });
  }
  return [...proposals.values()].sort((x, y) => (x.id < y.id ? -1 : 1));
}
