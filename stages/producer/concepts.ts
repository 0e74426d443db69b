// What a concept of the knowledge bundle is (docs/DECISIONS.md "The producer"):
//
//   an entity concept  a resolved root name (entity_mentions.canonical_name after stage 5 i)
//                      of one entity type, named by at least MIN_SOURCES distinct documents or
//                      feed items
//   a topic concept    a classifier topic (classification.topics, lower-cased) given to at
//                      least MIN_SOURCES documents or feed items that are still in the corpus
//                      (their rows stay as provenance when they leave it, their chunks do not)
//
// Its id is uuid5 of concept:{kind}:{entity type}:{name} (lib/ids.ts; the seed is frozen once a
// bundle is published), its path entities/{type}/{slug}.md or topics/{slug}.md, assigned once.
//
// Which concepts a run must look at comes from one comparison in the database: the digest of
// the rows feeding each concept now (its mentions and relationships, or its documents, each
// with its op_id, so a rewritten row moves it) against the digest the last run recorded in
// bundle_concepts. A concept whose digest did not move is not read at all.

import type { Queryable } from '../../lib/db/database.ts';
import { conceptKey } from '../../lib/ids.ts';

export const MIN_SOURCES = 2;

export type ConceptKind = 'entity' | 'topic';

export interface ConceptRef {
  kind: ConceptKind;
  /** The entity type; '' for a topic. */
  entityType: string;
  name: string;
}

export interface ConceptChange extends ConceptRef {
  id: string;
  /** The digest of the rows feeding it now; null when it no longer qualifies (its evidence vanished). */
  fingerprint: string | null;
  /** Distinct documents and feed items naming it now. */
  sources: number;
  /** Its row in bundle_concepts, when an earlier run drafted it. */
  known: boolean;
}

export const conceptIdOf = (c: ConceptRef): string => conceptKey(c.kind, c.entityType, c.name);

const RESERVED_STEMS = new Set(['index', 'log']);

/** A readable file stem: ASCII letters and digits joined by hyphens, never a reserved OKF name. */
export function slugOf(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 80)
    .replace(/-+$/, '');
  return slug === '' || RESERVED_STEMS.has(slug) ? `concept-${slug}` : slug;
}

export function directoryOf(c: ConceptRef): string {
  return c.kind === 'topic' ? 'topics' : `entities/${slugOf(c.entityType)}`;
}

/** The path a new concept asks for; the id-suffixed form when another concept holds it. */
export function conceptPaths(c: ConceptRef, id: string): [preferred: string, fallback: string] {
  const stem = `${directoryOf(c)}/${slugOf(c.name)}`;
  return [`${stem}.md`, `${stem}-${id.slice(0, 8)}.md`];
}

// The rows feeding each qualifying concept, digested. Relationship rows join by either end's
// name (they carry no entity type), through the canonical-name indexes of schema/0013.
const CURRENT_CONCEPTS = `
  WITH named AS (
    SELECT entity_type, canonical_name AS name,
           count(DISTINCT coalesce(source_document_id, reference_item_id))::int AS sources,
           md5(string_agg(id::text || op_id::text, ',' ORDER BY id)) AS digest
      FROM entity_mentions
     GROUP BY entity_type, canonical_name
    HAVING count(DISTINCT coalesce(source_document_id, reference_item_id)) >= ${MIN_SOURCES}
  ), related AS (
    SELECT n.entity_type, n.name, md5(string_agg(r.id::text || r.op_id::text, ',' ORDER BY r.id)) AS digest
      FROM named n
      JOIN LATERAL (
        SELECT id, op_id FROM entity_relationships WHERE source_canonical = n.name
        UNION
        SELECT id, op_id FROM entity_relationships WHERE target_canonical = n.name
      ) r ON true
     GROUP BY n.entity_type, n.name
  ), topical AS (
    SELECT lower(btrim(t.topic)) AS name, owner.id, owner.op_id
      FROM (SELECT id, op_id, classification FROM source_documents d
             WHERE EXISTS (SELECT 1 FROM content_chunks c WHERE c.source_document_id = d.id)
            UNION ALL
            SELECT id, op_id, classification FROM reference_items r
             WHERE EXISTS (SELECT 1 FROM content_chunks c WHERE c.reference_item_id = r.id)) owner
      CROSS JOIN LATERAL jsonb_array_elements_text(
        CASE WHEN jsonb_typeof(owner.classification -> 'topics') = 'array'
             THEN owner.classification -> 'topics' ELSE '[]'::jsonb END) AS t(topic)
     WHERE btrim(t.topic) <> ''
  ), topics AS (
    SELECT name, count(DISTINCT id)::int AS sources,
           md5(string_agg(DISTINCT id::text || op_id::text, ',')) AS digest
      FROM topical
     GROUP BY name
    HAVING count(DISTINCT id) >= ${MIN_SOURCES}
  )
  SELECT 'entity' AS kind, n.entity_type, n.name, n.sources,
         md5(n.digest || ':' || coalesce(r.digest, '')) AS fingerprint
    FROM named n LEFT JOIN related r USING (entity_type, name)
  UNION ALL
  SELECT 'topic', '', name, sources, digest FROM topics`;

/**
 * The concepts whose feeding rows moved since the last run (new, changed, or gone: fingerprint
 * null), or with `all` every concept there is and every one recorded.
 */
export async function changedConcepts(db: Queryable, all: boolean): Promise<ConceptChange[]> {
  const { rows } = await db.query<{
    kind: ConceptKind;
    entity_type: string;
    name: string;
    sources: number | null;
    fingerprint: string | null;
    known: boolean;
  }>(
    `WITH now AS (${CURRENT_CONCEPTS})
     SELECT kind, entity_type, name, now.sources, now.fingerprint, b.id IS NOT NULL AS known
       FROM now FULL JOIN bundle_concepts b USING (kind, entity_type, name)
      WHERE ${all ? 'true' : 'b.fingerprint IS DISTINCT FROM now.fingerprint'}
      ORDER BY kind, entity_type, name`,
  );
  return rows.map((r) => {
    const ref = { kind: r.kind, entityType: r.entity_type, name: r.name };
    return { ...ref, id: conceptIdOf(ref), fingerprint: r.fingerprint, sources: r.sources ?? 0, known: r.known };
  });
}
