// Evidence for a question from what the walks built (template_fill and `ingest search` share
// it): answered Q&A pairs (promotion_candidates(), the answered predicate of schema/0002),
// content chunks and entity facts, found by vector similarity over record_embeddings and, for
// the Q&A pairs, by a lexical match too; the two rankings are fused by reciprocal rank, and a
// Q&A pair, the curated form of an answer, weighs more than a chunk or an entity fact.
//
// Every piece of evidence carries a record:// citation of what SPEC.md 2 allows as a target:
// the source_document (or reference_item) it came from.

import type { Queryable } from '../lib/db/database.ts';
import type { Evidence } from './payloads.ts';

/** Reciprocal-rank constant: the usual 60, so a rank-1 hit is not worth a whole list. */
const RRF_K = 60;
const QA_WEIGHT = 1.5;
/** A vector hit less similar than this is noise, not evidence (the mock tier and real models alike). */
export const MIN_SIMILARITY = 0.3;

export type Embed = (text: string) => Promise<number[]>;

interface Hit {
  kind: Evidence['kind'];
  id: string;
  similarity: number | null;
  vectorRank: number | null;
  lexicalRank: number | null;
}

const OWNER_KIND: Record<Evidence['kind'], string> = {
  q_a_pair: 'q_a_extraction',
  chunk: 'content_chunk',
  entity: 'entity_mention',
};

export async function retrieve(db: Queryable, embed: Embed, query: string, k: number): Promise<Evidence[]> {
  const vector = `[${(await embed(query)).join(',')}]`;
  const hits = new Map<string, Hit>();
  const hit = (kind: Evidence['kind'], id: string): Hit => {
    const key = `${kind}:${id}`;
    let h = hits.get(key);
    if (h === undefined) hits.set(key, (h = { kind, id, similarity: null, vectorRank: null, lexicalRank: null }));
    return h;
  };
  const wide = k * 4;
  // One nearest-neighbour query per kind: the Q&A pairs' has its own HNSW index (schema/0012).
  for (const kind of ['q_a_pair', 'chunk', 'entity'] as const) {
    const { rows } = await db.query<{ owner_id: string; similarity: number }>(
      `SELECT owner_id, 1 - (embedding <=> $1::vector) AS similarity FROM record_embeddings
        WHERE owner_kind = $2 ORDER BY embedding <=> $1::vector LIMIT $3`,
      [vector, OWNER_KIND[kind], wide],
    );
    rows
      .filter((r) => Number(r.similarity) >= MIN_SIMILARITY)
      .forEach((r, rank) =>
        Object.assign(hit(kind, r.owner_id), { similarity: Number(r.similarity), vectorRank: rank }),
      );
  }
  const terms = lexicalTerms(query);
  if (terms !== null) {
    const { rows } = await db.query<{ id: string }>(
      `SELECT id FROM promotion_candidates() q
        WHERE to_tsvector('english', q.question_text || ' ' || q.answer_text) @@ to_tsquery('english', $1)
        ORDER BY ts_rank(to_tsvector('english', q.question_text || ' ' || q.answer_text), to_tsquery('english', $1)) DESC, id
        LIMIT $2`,
      [terms, wide],
    );
    rows.forEach((r, rank) => (hit('q_a_pair', r.id).lexicalRank = rank));
  }
  const ranked = [...hits.values()]
    .map((h) => ({ h, score: fused(h) }))
    .sort((a, b) => b.score - a.score || (a.h.id < b.h.id ? -1 : 1));
  const out: Evidence[] = [];
  for (const { h, score } of ranked) {
    if (out.length === k) break;
    const described = await describe(db, h);
    // A Q&A row that is no promotion candidate (blank answer) or an owner gone since: skipped.
    if (described !== null)
      out.push({
        kind: h.kind,
        id: h.id,
        score: Number(score.toFixed(6)),
        similarity: h.similarity === null ? null : Number(h.similarity.toFixed(4)),
        lexical: h.lexicalRank !== null,
        ...described,
      });
  }
  return out;
}

function fused(h: Hit): number {
  const rrf = (rank: number | null) => (rank === null ? 0 : 1 / (RRF_K + rank + 1));
  return (rrf(h.vectorRank) + rrf(h.lexicalRank)) * (h.kind === 'q_a_pair' ? QA_WEIGHT : 1);
}

/**
 * The query's words as an OR of stemmed terms for to_tsquery: any shared word counts, since a
 * reworded question shares some words, rarely all. Only letters and digits pass, so no input
 * can inject tsquery syntax.
 */
export function lexicalTerms(query: string): string | null {
  const words = [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]{3,}/gu) ?? [])].slice(0, 32);
  return words.length === 0 ? null : words.join(' | ');
}

const citation = (documentId: string | null, referenceItemId: string | null): string =>
  documentId !== null ? `record://source_document/${documentId}` : `record://reference_item/${referenceItemId}`;

async function describe(db: Queryable, h: Hit): Promise<{ text: string; citation: string } | null> {
  switch (h.kind) {
    case 'q_a_pair': {
      const { rows } = await db.query<{ question_text: string; answer_text: string; source_document_id: string }>(
        `SELECT question_text, answer_text, source_document_id FROM promotion_candidates() WHERE id = $1`,
        [h.id],
      );
      const r = rows[0];
      return r === undefined
        ? null
        : { text: `Q: ${r.question_text} A: ${r.answer_text}`, citation: citation(r.source_document_id, null) };
    }
    case 'chunk': {
      const { rows } = await db.query<{ text: string; source_document_id: string | null; reference_item_id: string }>(
        `SELECT text, source_document_id, reference_item_id FROM content_chunks WHERE id = $1`,
        [h.id],
      );
      const r = rows[0];
      return r === undefined ? null : { text: r.text, citation: citation(r.source_document_id, r.reference_item_id) };
    }
    case 'entity': {
      const { rows } = await db.query<{
        canonical_name: string;
        entity_type: string;
        source_document_id: string | null;
        reference_item_id: string | null;
        facts: string[] | null;
      }>(
        `SELECT m.canonical_name, m.entity_type, m.source_document_id, m.reference_item_id,
                (SELECT array_agg(r.source_canonical || ' ' || r.predicate || ' ' || r.target_canonical)
                   FROM (SELECT * FROM entity_relationships r
                          WHERE r.source_document_id = m.source_document_id
                            AND (r.source_canonical = m.canonical_name OR r.target_canonical = m.canonical_name)
                          ORDER BY r.confidence DESC NULLS LAST, r.id LIMIT 3) r) AS facts
           FROM entity_mentions m WHERE m.id = $1`,
        [h.id],
      );
      const r = rows[0];
      if (r === undefined) return null;
      const facts = (r.facts ?? []).join('; ');
      return {
        text: `${r.canonical_name} (${r.entity_type})${facts === '' ? '' : `: ${facts}`}`,
        citation: citation(r.source_document_id, r.reference_item_id ?? null),
      };
    }
  }
}
