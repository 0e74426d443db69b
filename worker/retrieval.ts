// Evidence for a question from what the walks built (template_fill and `ingest search` share
// it): answered Q&A pairs (promotion_candidates(), the answered predicate of schema/0002),
// content chunks and entity facts, found by vector similarity over record_embeddings and, for
// the Q&A pairs, by their words too. A candidate's score is its cosine similarity plus, for a
// Q&A pair, LEXICAL_WEIGHT times the cosine of its words and the question's (idf-weighted):
// a pair that answers the question in other words still shares the rare words of its subject,
// and the answered pairs, the curated form of an answer, come before chunks that merely look
// alike. LEXICAL_WEIGHT was chosen on the benchmark's seed 1 and checked on seed 2
// (bench/README.md "bid-worker").
//
// Every piece of evidence carries a record:// citation of what
// docs/behaviour/tables.md#bundle-citations allows as a target: the source_document (or
// reference_item) it came from, and that document's corpus-relative path (or the item's URL), which
// is what a person can look up.
//
// A caller may exclude documents: template_fill excludes the form's own (docs/DECISIONS.md
// "A form is never its own evidence"). They are left out of every query, before the nearest
// neighbours are cut at their limit, so the form's own text cannot crowd out real evidence.

import type { Queryable } from '../lib/db/database.ts';
import type { Evidence } from './payloads.ts';

export const LEXICAL_WEIGHT = 15;
/** A vector hit less similar than this, with no word in common, is noise, not evidence. */
export const MIN_SIMILARITY = 0.3;

export type Embed = (text: string) => Promise<number[]>;

interface Hit {
  kind: Evidence['kind'];
  id: string;
  similarity: number | null;
  /** The cosine of this Q&A pair's words and the query's (idf-weighted), 0 to 1; null: no word shared. */
  lexical: number | null;
}

const OWNER_KIND: Record<Evidence['kind'], string> = {
  q_a_pair: 'q_a_extraction',
  chunk: 'content_chunk',
  entity: 'entity_mention',
};

/** The table of each kind's rows; every one has source_document_id. */
const OWNER_TABLE: Record<Evidence['kind'], string> = {
  q_a_pair: 'q_a_extractions',
  chunk: 'content_chunks',
  entity: 'entity_mentions',
};

export interface RetrieveOptions {
  lexicalWeight?: number;
  /** source_documents ids whose rows are never evidence. */
  excludeDocuments?: readonly string[];
}

export async function retrieve(
  db: Queryable,
  embed: Embed,
  query: string,
  k: number,
  { lexicalWeight = LEXICAL_WEIGHT, excludeDocuments = [] }: RetrieveOptions = {},
): Promise<Evidence[]> {
  const excluded = [...excludeDocuments];
  const vector = `[${(await embed(query)).join(',')}]`;
  const hits = new Map<string, Hit>();
  const hit = (kind: Evidence['kind'], id: string): Hit => {
    const key = `${kind}:${id}`;
    let h = hits.get(key);
    if (h === undefined) hits.set(key, (h = { kind, id, similarity: null, lexical: null }));
    return h;
  };
  const wide = k * 4;
  // One nearest-neighbour query per kind: the Q&A pairs' has its own HNSW index (schema/0012).
  for (const kind of ['q_a_pair', 'chunk', 'entity'] as const) {
    // Without exclusions the query stays as plain as the nearest-neighbour index wants it.
    const excluding =
      excluded.length === 0
        ? ''
        : `AND NOT EXISTS (SELECT 1 FROM ${OWNER_TABLE[kind]} o
                            WHERE o.id = e.owner_id AND o.source_document_id = ANY($4::uuid[]))`;
    const { rows } = await db.query<{ owner_id: string; similarity: number }>(
      `SELECT e.owner_id, 1 - (e.embedding <=> $1::vector) AS similarity FROM record_embeddings e
        WHERE e.owner_kind = $2 ${excluding} ORDER BY e.embedding <=> $1::vector LIMIT $3`,
      excluded.length === 0 ? [vector, OWNER_KIND[kind], wide] : [vector, OWNER_KIND[kind], wide, excluded],
    );
    for (const r of rows) hit(kind, r.owner_id).similarity = Number(r.similarity);
  }
  for (const [id, cosine] of await lexicalMatches(db, query, wide, excluded)) hit('q_a_pair', id).lexical = cosine;
  // Pairs found by their words alone get their similarity too, so every score has both parts.
  const unscored = [...hits.values()].filter((h) => h.similarity === null).map((h) => h.id);
  if (unscored.length > 0) {
    const { rows } = await db.query<{ owner_id: string; similarity: number }>(
      `SELECT owner_id, 1 - (embedding <=> $1::vector) AS similarity FROM record_embeddings
        WHERE owner_kind = 'q_a_extraction' AND owner_id = ANY($2::uuid[])`,
      [vector, unscored],
    );
    for (const r of rows) hit('q_a_pair', r.owner_id).similarity = Number(r.similarity);
  }
  const ranked = [...hits.values()]
    .filter((h) => h.lexical !== null || (h.similarity ?? 0) >= MIN_SIMILARITY)
    .map((h) => ({ h, score: (h.similarity ?? 0) + lexicalWeight * (h.lexical ?? 0) }))
    .sort((a, b) => b.score - a.score || (a.h.id < b.h.id ? -1 : 1));
  const out: Evidence[] = [];
  const seen = new Set<string>();
  for (const { h, score } of ranked) {
    if (out.length === k) break;
    const described = await describe(db, h);
    // A Q&A row that is no promotion candidate (blank answer) or an owner gone since: skipped.
    // The same text from another document (a pair copied between FAQs) adds nothing: one slot.
    const text = described?.text.replace(/\s+/g, ' ').trim().toLowerCase();
    if (described !== null && !seen.has(`${h.kind}:${text}`)) {
      seen.add(`${h.kind}:${text}`);
      out.push({
        kind: h.kind,
        id: h.id,
        score: Number(score.toFixed(6)),
        similarity: h.similarity === null ? null : Number(h.similarity.toFixed(4)),
        lexical: h.lexical !== null,
        ...described,
      });
    }
  }
  return out;
}

/** The query's distinct words; only letters and digits pass, so no input can inject tsquery syntax. */
export function queryWords(query: string): string[] {
  return [...new Set(query.toLowerCase().match(/[\p{L}\p{N}]{2,}/gu) ?? [])].slice(0, 32);
}

const TSV = `to_tsvector('english', q.question_text || ' ' || coalesce(q.answer_text, ''))`;
/** A word in more than this share of the pairs says nothing about which one is meant. */
const MAX_DOCUMENT_FREQUENCY = 0.25;
/** Pairs read by their shared words, per piece of lexical evidence kept, before the cosine ranks them. */
const LEXICAL_POOL = 4;

/**
 * Answered Q&A pairs sharing words with the query, best first, each with the cosine of the
 * query's words and its question's, every word weighted by its inverse document frequency
 * among the pairs (BM25's idf): a reworded question meets its pair through the words of its
 * subject, phrasing every question shares weighs little, and a question about a neighbouring
 * subject (the same wording, another site or product) loses by the rare word it adds. A
 * pair's answer may share words too; they count in the match, not in its question's length.
 * Words are stemmed and stop words dropped by PostgreSQL's english configuration; document
 * frequencies and matches are read from the text-search index (schema/0015).
 */
async function lexicalMatches(
  db: Queryable,
  query: string,
  limit: number,
  excluded: readonly string[],
): Promise<Map<string, number>> {
  const words = queryWords(query);
  if (words.length === 0) return new Map();
  const { rows: frequencies } = await db.query<{ word: string; df: string; total: string }>(
    `SELECT w AS word, (SELECT count(*) FROM q_a_extractions q WHERE ${TSV} @@ to_tsquery('english', w)) AS df,
            (SELECT count(*) FROM q_a_extractions) AS total
       FROM unnest($1::text[]) AS w
      WHERE numnode(to_tsquery('english', w)) > 0`,
    [words],
  );
  // The query's length counts the words no pair has too: a question about something the corpus
  // never mentions matches little of it, whatever it shares.
  const informative = frequencies
    .map((f) => ({ word: f.word, df: Number(f.df), total: Number(f.total) }))
    .filter((f) => isInformative(f.df, f.total));
  const queryLength = Math.sqrt(informative.reduce((n, f) => n + idf(f.df, f.total) ** 2, 0));
  const shared = informative.filter((f) => f.df > 0);
  if (shared.length === 0) return new Map();
  const { rows } = await db.query<{ id: string; weight: number }>(
    `SELECT m.id, sum(w.weight) AS weight FROM unnest($1::text[], $2::float8[]) AS w(word, weight)
       CROSS JOIN LATERAL (SELECT q.id FROM q_a_extractions q
                            WHERE ${TSV} @@ to_tsquery('english', w.word) AND q_a_is_answered(q.answer_text)
                              AND q.source_document_id <> ALL($4::uuid[])) m
      GROUP BY m.id ORDER BY sum(w.weight) DESC, m.id LIMIT $3`,
    [shared.map((f) => f.word), shared.map((f) => idf(f.df, f.total) ** 2), limit * LEXICAL_POOL, excluded],
  );
  const lengths = await questionLengths(
    db,
    rows.map((r) => r.id),
  );
  return new Map(
    rows
      .map((r) => [r.id, Math.min(1, Number(r.weight) / (queryLength * (lengths.get(r.id) ?? queryLength)))] as const)
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, limit),
  );
}

/** Whether a word in `df` of `total` pairs says something about which pair is meant. */
const isInformative = (df: number, total: number) => df <= Math.max(1, MAX_DOCUMENT_FREQUENCY * total);

/** Inverse document frequency of a word in `df` of `total` pairs (BM25's). */
const idf = (df: number, total: number) => Math.log(1 + (total - df + 0.5) / (df + 0.5));

/** The length of each pair's question as a vector of its informative words' idf. */
async function questionLengths(db: Queryable, ids: string[]): Promise<Map<string, number>> {
  const { rows } = await db.query<{ id: string; df: string; total: string }>(
    `WITH words AS (SELECT q.id, l AS lexeme FROM q_a_extractions q,
                           unnest(tsvector_to_array(to_tsvector('english', q.question_text))) AS l
                     WHERE q.id = ANY($1::uuid[])),
          frequencies AS (SELECT lexeme, (SELECT count(*) FROM q_a_extractions q
                                           WHERE ${TSV} @@ plainto_tsquery('simple', lexeme)) AS df
                            FROM (SELECT DISTINCT lexeme FROM words) d)
     SELECT words.id, frequencies.df, (SELECT count(*) FROM q_a_extractions) AS total
       FROM words JOIN frequencies USING (lexeme)`,
    [ids],
  );
  const squares = new Map<string, number>();
  for (const r of rows) {
    const df = Number(r.df);
    const total = Number(r.total);
    if (!isInformative(df, total)) continue;
    squares.set(r.id, (squares.get(r.id) ?? 0) + idf(df, total) ** 2);
  }
  return new Map([...squares].map(([id, square]) => [id, Math.sqrt(square)]));
}

const citation = (documentId: string | null, referenceItemId: string | null): string =>
  documentId !== null ? `record://source_document/${documentId}` : `record://reference_item/${referenceItemId}`;

/** Joins an owner row `o` to its document (d.rel_path) or reference item (ri.url). */
const SOURCE_JOIN = `LEFT JOIN source_documents d ON d.id = o.source_document_id
                     LEFT JOIN reference_items ri ON ri.id = o.reference_item_id`;

interface Described {
  text: string;
  citation: string;
  source: string;
}

async function describe(db: Queryable, h: Hit): Promise<Described | null> {
  switch (h.kind) {
    case 'q_a_pair': {
      const { rows } = await db.query<{
        question_text: string;
        answer_text: string;
        source_document_id: string;
        source: string;
      }>(
        `SELECT o.question_text, o.answer_text, o.source_document_id, d.rel_path AS source
           FROM promotion_candidates() o JOIN source_documents d ON d.id = o.source_document_id WHERE o.id = $1`,
        [h.id],
      );
      const r = rows[0];
      return r === undefined
        ? null
        : {
            text: `Q: ${r.question_text} A: ${r.answer_text}`,
            citation: citation(r.source_document_id, null),
            source: r.source,
          };
    }
    case 'chunk': {
      const { rows } = await db.query<{
        text: string;
        source_document_id: string | null;
        reference_item_id: string;
        source: string;
      }>(
        `SELECT o.text, o.source_document_id, o.reference_item_id, coalesce(d.rel_path, ri.url) AS source
           FROM content_chunks o ${SOURCE_JOIN} WHERE o.id = $1`,
        [h.id],
      );
      const r = rows[0];
      return r === undefined
        ? null
        : { text: r.text, citation: citation(r.source_document_id, r.reference_item_id), source: r.source };
    }
    case 'entity': {
      const { rows } = await db.query<{
        canonical_name: string;
        entity_type: string;
        source_document_id: string | null;
        reference_item_id: string | null;
        source: string;
        facts: string[] | null;
      }>(
        `SELECT o.canonical_name, o.entity_type, o.source_document_id, o.reference_item_id,
                coalesce(d.rel_path, ri.url) AS source,
                (SELECT array_agg(r.source_canonical || ' ' || r.predicate || ' ' || r.target_canonical)
                   FROM (SELECT * FROM entity_relationships r
                          WHERE r.source_document_id = o.source_document_id
                            AND (r.source_canonical = o.canonical_name OR r.target_canonical = o.canonical_name)
                          ORDER BY r.confidence DESC NULLS LAST, r.id LIMIT 3) r) AS facts
           FROM entity_mentions o ${SOURCE_JOIN} WHERE o.id = $1`,
        [h.id],
      );
      const r = rows[0];
      if (r === undefined) return null;
      const facts = (r.facts ?? []).join('; ');
      return {
        text: `${r.canonical_name} (${r.entity_type})${facts === '' ? '' : `: ${facts}`}`,
        citation: citation(r.source_document_id, r.reference_item_id ?? null),
        source: r.source,
      };
    }
  }
}
