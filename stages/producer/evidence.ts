// A concept's evidence (stages/producer/): what the producer model is shown and what its page
// may cite, read for a batch of concepts at a time in a few set queries.
//
//   an entity   the documents and feed items naming it (the first MAX_SOURCES by id), each with
//               an excerpt of the chunk that names it; the relationships those sources state
//               about it; the answered Q&A pairs of those documents that name it
//   a topic     the documents and feed items given the topic (the first MAX_SOURCES by id), each
//               with the opening of its first chunk; the first answered Q&A pair of each; the
//               entities those sources name most, as related concepts
//
// The text the model reads is the evidence entire (the mock parses it: mock/producer.ts); its
// digest is what a later run compares to know whether a concept must be drafted again.

import type { Queryable } from '../../lib/db/database.ts';
import { sha256Hex } from '../../lib/hash.ts';
import type { ConceptChange, ConceptKind } from './concepts.ts';

export const MAX_SOURCES = 6;
const MAX_RELATIONSHIPS = 12;
const MAX_ANSWERS = 5;
const MAX_RELATED = 8;
const EXCERPT_CHARS = 400;

export type CitationTarget = 'source_document' | 'reference_item' | 'concept';

export interface Source {
  target: Exclude<CitationTarget, 'concept'>;
  id: string;
  title: string;
  /** The document's corpus path or the feed item's URL. */
  place: string;
  excerpt: string;
}

/** A statement of the evidence with the numbers (1-based) of the sources it comes from. */
export interface Cited {
  text: string;
  sources: number[];
}

/** A concept this one may link to, looked up by kind and name when the page is rendered. */
export interface RelatedName {
  kind: ConceptKind;
  name: string;
}

export interface Evidence {
  concept: ConceptChange;
  sources: Source[];
  relationships: Cited[];
  answers: Cited[];
  related: RelatedName[];
  /** What the model reads. */
  text: string;
  sha256: string;
}

interface SourceRow {
  i: number;
  target: Source['target'];
  id: string;
  title: string | null;
  place: string;
  chunk: string | null;
  /** How the source names the concept (an entity's surface form); null for a topic. */
  surface: string | null;
}

/** The evidence of each concept of `batch` (every one still qualifying), in the batch's order. */
export async function loadEvidence(db: Queryable, batch: readonly ConceptChange[]): Promise<Evidence[]> {
  const entities = batch.filter((c) => c.kind === 'entity');
  const topics = batch.filter((c) => c.kind === 'topic');
  const out = new Map<ConceptChange, Evidence>();
  if (entities.length > 0) for (const e of await entityEvidence(db, entities)) out.set(e.concept, e);
  if (topics.length > 0) for (const e of await topicEvidence(db, topics)) out.set(e.concept, e);
  return batch.map((c) => out.get(c)!);
}

async function entityEvidence(db: Queryable, concepts: readonly ConceptChange[]): Promise<Evidence[]> {
  const { rows: sourceRows } = await db.query<SourceRow>(
    `SELECT k.i::int, m.target, m.id, coalesce(d.title, r.title) AS title, coalesce(d.rel_path, r.url) AS place,
            ch.text AS chunk, m.surface_form AS surface
       FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS k(entity_type, name, i)
       CROSS JOIN LATERAL (
         SELECT CASE WHEN source_document_id IS NULL THEN 'reference_item' ELSE 'source_document' END AS target,
                coalesce(source_document_id, reference_item_id)::text AS id, source_document_id, reference_item_id,
                surface_form
           FROM entity_mentions
          WHERE entity_type = k.entity_type AND canonical_name = k.name
          ORDER BY coalesce(source_document_id, reference_item_id)
          LIMIT ${MAX_SOURCES}) m
       LEFT JOIN source_documents d ON d.id = m.source_document_id
       LEFT JOIN reference_items r ON r.id = m.reference_item_id
       LEFT JOIN LATERAL (
         SELECT text FROM content_chunks c
          WHERE c.source_document_id = m.source_document_id OR c.reference_item_id = m.reference_item_id
          ORDER BY strpos(c.text, m.surface_form) > 0 DESC, c.idx
          LIMIT 1) ch ON true
      ORDER BY k.i, m.id`,
    [concepts.map((c) => c.entityType), concepts.map((c) => c.name)],
  );
  const sources = groupSources(concepts.length, sourceRows);
  const pairs = ownerPairs(concepts, sources);
  const { rows: relationships } = await db.query<{ i: number; doc: string; s: string; p: string; t: string }>(
    `SELECT p.i, r.source_document_id::text AS doc, r.source_canonical AS s, r.predicate AS p, r.target_canonical AS t
       FROM unnest($1::int[], $2::uuid[], $3::text[]) AS p(i, doc, name)
       JOIN entity_relationships r ON r.source_document_id = p.doc
                                  AND (r.source_canonical = p.name OR r.target_canonical = p.name)
      ORDER BY p.i, r.source_canonical, r.predicate, r.target_canonical, r.source_document_id`,
    [pairs.index, pairs.owner, pairs.name],
  );
  const answers = await answeredPairs(db, pairs, true);
  return concepts.map((concept, index) => {
    const own = sources[index]!;
    const numberOf = sourceNumbers(own);
    const stated = new Map<string, Cited>();
    const related = new Map<string, RelatedName>();
    for (const r of relationships.filter((row) => row.i === index)) {
      const text = `${r.s} ${r.p} ${r.t}`;
      const cited = stated.get(text) ?? { text, sources: [] };
      if (!stated.has(text) && stated.size >= MAX_RELATIONSHIPS) continue;
      cited.sources.push(numberOf(r.doc));
      stated.set(text, cited);
      const other = r.s === concept.name ? r.t : r.s;
      if (other !== concept.name && related.size < MAX_RELATED) related.set(other, { kind: 'entity', name: other });
    }
    return finish(concept, own, [...stated.values()], answersOf(answers, index, numberOf), [...related.values()]);
  });
}

async function topicEvidence(db: Queryable, concepts: readonly ConceptChange[]): Promise<Evidence[]> {
  const { rows: sourceRows } = await db.query<SourceRow>(
    `WITH k AS (SELECT name, i FROM unnest($1::text[]) WITH ORDINALITY AS k(name, i)),
     given AS (
       SELECT k.i, o.target, o.id, o.title, o.place,
              row_number() OVER (PARTITION BY k.i ORDER BY o.id) AS rank
         FROM (SELECT 'source_document' AS target, id::text, title, rel_path AS place, classification
                 FROM source_documents d
                WHERE EXISTS (SELECT 1 FROM content_chunks c WHERE c.source_document_id = d.id)
               UNION ALL
               SELECT 'reference_item', id::text, title, url, classification
                 FROM reference_items r
                WHERE EXISTS (SELECT 1 FROM content_chunks c WHERE c.reference_item_id = r.id)) o
        CROSS JOIN LATERAL (
          SELECT DISTINCT lower(btrim(t)) AS topic
            FROM jsonb_array_elements_text(
                   CASE WHEN jsonb_typeof(o.classification -> 'topics') = 'array'
                        THEN o.classification -> 'topics' ELSE '[]'::jsonb END) AS t) t
        JOIN k ON k.name = t.topic)
     SELECT g.i::int, g.target, g.id, g.title, g.place, ch.text AS chunk, NULL AS surface
       FROM given g
       LEFT JOIN LATERAL (
         SELECT text FROM content_chunks c
          WHERE c.source_document_id = CASE WHEN g.target = 'source_document' THEN g.id::uuid END
             OR c.reference_item_id = CASE WHEN g.target = 'reference_item' THEN g.id::uuid END
          ORDER BY c.idx LIMIT 1) ch ON true
      WHERE g.rank <= ${MAX_SOURCES}
      ORDER BY g.i, g.id`,
    [concepts.map((c) => c.name)],
  );
  const sources = groupSources(concepts.length, sourceRows);
  const pairs = ownerPairs(concepts, sources);
  const answers = await answeredPairs(db, pairs, false);
  const { rows: named } = await db.query<{ i: number; name: string }>(
    `SELECT p.i, m.canonical_name AS name
       FROM unnest($1::int[], $2::uuid[]) AS p(i, doc)
       JOIN entity_mentions m ON m.source_document_id = p.doc OR m.reference_item_id = p.doc
      GROUP BY p.i, m.canonical_name
      ORDER BY p.i, count(*) DESC, m.canonical_name`,
    [pairs.index, pairs.owner],
  );
  return concepts.map((concept, index) => {
    const own = sources[index]!;
    const related = named
      .filter((row) => row.i === index)
      .slice(0, MAX_RELATED)
      .map((row): RelatedName => ({ kind: 'entity', name: row.name }));
    return finish(concept, own, [], answersOf(answers, index, sourceNumbers(own)), related);
  });
}

function groupSources(count: number, rows: readonly SourceRow[]): Source[][] {
  const out = Array.from({ length: count }, (): Source[] => []);
  // unnest's ordinality counts from 1.
  for (const row of rows)
    out[row.i - 1]!.push({
      target: row.target,
      id: row.id,
      title: row.title ?? row.place,
      place: row.place,
      excerpt: excerpt(row.chunk ?? '', row.surface),
    });
  return out;
}

interface OwnerPairs {
  index: number[];
  owner: string[];
  name: string[];
}

/** One (concept index, source id, concept name) row per source, for the set queries. */
function ownerPairs(concepts: readonly ConceptChange[], sources: readonly Source[][]): OwnerPairs {
  const pairs: OwnerPairs = { index: [], owner: [], name: [] };
  sources.forEach((own, index) => {
    for (const s of own) {
      pairs.index.push(index);
      pairs.owner.push(s.id);
      pairs.name.push(concepts[index]!.name);
    }
  });
  return pairs;
}

const sourceNumbers =
  (own: readonly Source[]) =>
  (id: string): number =>
    own.findIndex((s) => s.id === id) + 1;

interface AnswerRow {
  i: number;
  doc: string;
  question: string;
  answer: string;
}

/** Answered pairs of the sources' documents: those naming the concept, or each document's first. */
async function answeredPairs(db: Queryable, pairs: OwnerPairs, naming: boolean): Promise<AnswerRow[]> {
  const { rows } = await db.query<AnswerRow>(
    naming
      ? `SELECT p.i, q.source_document_id::text AS doc, q.question_text AS question, q.answer_text AS answer
           FROM unnest($1::int[], $2::uuid[], $3::text[]) AS p(i, doc, name)
           JOIN q_a_extractions q ON q.source_document_id = p.doc AND q_a_is_answered(q.answer_text)
                                 AND (strpos(q.question_text, p.name) > 0 OR strpos(q.answer_text, p.name) > 0)
          ORDER BY p.i, q.source_document_id, q.idx`
      : `SELECT DISTINCT ON (p.i, q.source_document_id)
                p.i, q.source_document_id::text AS doc, q.question_text AS question, q.answer_text AS answer
           FROM unnest($1::int[], $2::uuid[], $3::text[]) AS p(i, doc, name)
           JOIN q_a_extractions q ON q.source_document_id = p.doc AND q_a_is_answered(q.answer_text)
          ORDER BY p.i, q.source_document_id, q.idx`,
    [pairs.index, pairs.owner, pairs.name],
  );
  return rows;
}

function answersOf(rows: readonly AnswerRow[], index: number, numberOf: (id: string) => number): Cited[] {
  return rows
    .filter((r) => r.i === index)
    .slice(0, MAX_ANSWERS)
    .map((r) => ({ text: `Q: ${oneLine(r.question)} A: ${oneLine(r.answer)}`, sources: [numberOf(r.doc)] }));
}

function finish(
  concept: ConceptChange,
  sources: Source[],
  relationships: Cited[],
  answers: Cited[],
  related: RelatedName[],
): Evidence {
  const text = evidenceText(concept, sources, relationships, answers);
  return { concept, sources, relationships, answers, related, text, sha256: sha256Hex(text) };
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();

/** About EXCERPT_CHARS of `chunk` on one line, around where it names `surface` (else its opening). */
function excerpt(chunk: string, surface: string | null): string {
  const flat = oneLine(chunk);
  if (flat.length <= EXCERPT_CHARS) return flat;
  const at = surface === null ? -1 : flat.indexOf(surface);
  const start = at < 0 ? 0 : Math.max(0, at - EXCERPT_CHARS / 4);
  const from = start === 0 ? 0 : flat.indexOf(' ', start) + 1;
  const end = flat.lastIndexOf(' ', from + EXCERPT_CHARS);
  return `${from > 0 ? '... ' : ''}${flat.slice(from, end > from ? end : from + EXCERPT_CHARS)} ...`;
}

/** The evidence as the model reads it; mock/producer.ts parses this shape. */
function evidenceText(concept: ConceptChange, sources: Source[], relationships: Cited[], answers: Cited[]): string {
  const list = (heading: string, items: Cited[]) =>
    items.length === 0
      ? ''
      : `\n${heading}:\n${items.map((c) => `- ${c.text} [${c.sources.join(', ')}]`).join('\n')}\n`;
  return (
    `Concept: ${concept.name}\nKind: ${concept.kind === 'topic' ? 'topic' : concept.entityType}\n` +
    `Named in ${concept.sources} sources; ${sources.length} are numbered below.\n\nSources:\n` +
    sources
      .map((s, i) => `[${i + 1}] ${JSON.stringify(oneLine(s.title))} (${s.place})\nExcerpt: ${s.excerpt}`)
      .join('\n') +
    '\n' +
    list('Relationships', relationships) +
    list('Answered questions', answers)
  );
}
