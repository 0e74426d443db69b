// Stage 5 (i), the roots in entity_names: a name as a root (its normalised key, trigram bands
// and embedding), the candidate search over the roots of earlier batches, and the recording of
// names with the band keys of the roots (entity_root_bands). Three blocks feed the search, so
// that no easy case is missed because another block scored it low (SPEC.md 1 stage 5):
//
//   exact      the same normalised name
//   shingle    a shared MinHash band of the trigrams (typos, abbreviations)
//   embedding  the NEAREST_ROOTS nearest root vectors at cosine >= MIN_COSINE (the same thing
//              spelled apart: "International Business Machines", "IBM")

import type { Database, Queryable } from '../../lib/db/database.ts';
import { bandKeys, normaliseName, trigrams } from './names.ts';
import type { Candidate } from './pair-resolver.ts';

/** Roots a name's embedding block offers: its nearest, and only those near enough to be the same thing. */
export const NEAREST_ROOTS = 5;
export const MIN_COSINE = 0.5;
/** Roots the shingle block offers at most per name, the most bands shared first. */
const BLOCK_LIMIT = 50;
/** Nearest roots of any type read from the index per name, before the type filter. */
const NEAREST_SCANNED = 20;

export interface Root {
  type: string;
  name: string;
  normalised: string;
  bands: string[];
  vector: readonly number[];
}

/** A root found for a name, with the cosine of their embeddings. */
export type Near = Candidate & { cosine: number };

export function rootOf(p: { type: string; name: string }, vector: readonly number[]): Root {
  const normalised = normaliseName(p.name);
  return { type: p.type, name: p.name, normalised, bands: bandKeys(trigrams(normalised)), vector };
}

const vectorLiteral = (vector: readonly number[]) => `[${vector.join(',')}]`;

/**
 * Per name, the roots of its type its three blocks find: one set-based query for a whole batch.
 * The names are materialised first, so each vector is parsed once. The shingle block joins the
 * batch's band keys to entity_root_bands and keeps each name's BLOCK_LIMIT roots sharing the most
 * bands. The embedding block reads the HNSW index over all roots and keeps the name's type
 * among the NEAREST_SCANNED nearest, then the NEAREST_ROOTS nearest of those: a type filter
 * inside the index scan makes the planner scan the type's roots instead.
 */
export async function rootsNear(db: Database, names: readonly Root[]): Promise<Near[][]> {
  const rows = await db.transaction(async (tx) => {
    await tx.query(`SET LOCAL hnsw.iterative_scan = relaxed_order`);
    const { rows } = await tx.query<Near & { i: number }>(
      `WITH q AS MATERIALIZED (
         SELECT i::int - 1 AS i, t, z, ARRAY(SELECT jsonb_array_elements_text(b::jsonb)) AS b, v::vector AS v
           FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS u(t, z, b, v, i)),
       exact AS (
         SELECT q.i, n.name FROM q
           JOIN entity_names n ON n.entity_type = q.t AND n.normalised = q.z AND n.name = n.canonical_name),
       shingle AS (
         SELECT i, name FROM (
           SELECT k.i, r.name, row_number() OVER (PARTITION BY k.i ORDER BY count(*) DESC, r.name) AS rank
             FROM (SELECT i, t, unnest(b) AS band FROM q) k
             JOIN entity_root_bands r ON r.band = k.band AND r.entity_type = k.t
            GROUP BY k.i, r.name) ranked
          WHERE rank <= ${BLOCK_LIMIT}),
       nearest AS (
         SELECT i, name FROM (
           SELECT q.i, x.name, row_number() OVER (PARTITION BY q.i ORDER BY x.distance, x.name) AS rank
             FROM q CROSS JOIN LATERAL (
               SELECT name, entity_type, embedding <=> q.v AS distance FROM entity_names
                WHERE name = canonical_name ORDER BY embedding <=> q.v LIMIT ${NEAREST_SCANNED}) x
            WHERE x.entity_type = q.t AND x.distance <= ${1 - MIN_COSINE}) ranked
          WHERE rank <= ${NEAREST_ROOTS})
       SELECT f.i, n.name, n.normalised, 1 - (n.embedding <=> q.v) AS cosine
         FROM (SELECT * FROM exact UNION SELECT * FROM shingle UNION SELECT * FROM nearest) f
         JOIN q ON q.i = f.i
         JOIN entity_names n ON n.entity_type = q.t AND n.name = f.name`,
      [
        names.map((n) => n.type),
        names.map((n) => n.normalised),
        names.map((n) => JSON.stringify(n.bands)),
        names.map((n) => vectorLiteral(n.vector)),
      ],
    );
    return rows;
  });
  const near = names.map((): Near[] => []);
  for (const { i, ...candidate } of rows) near[i]!.push(candidate);
  return near;
}

/** A name and the root it is under; a root (name = root) carries its keys and vector, a name under another none. */
export interface NameRow {
  type: string;
  name: string;
  root: string;
  normalised: string;
  bands: readonly string[];
  vector: readonly number[] | null;
}

/**
 * Records names in entity_names, and the band keys of those that are roots. `existing` says what
 * a name already there keeps: 'keep' (a walk's decision never re-points a name) or 'replace'
 * (an admin merge's word).
 */
export async function recordNames(
  tx: Queryable,
  names: readonly NameRow[],
  opId: string,
  existing: 'keep' | 'replace',
): Promise<void> {
  if (names.length === 0) return;
  const types = names.map((n) => n.type);
  const named = names.map((n) => n.name);
  await tx.query(
    `INSERT INTO entity_names (entity_type, name, canonical_name, normalised, embedding, op_id)
     SELECT t, n, c, z, v::vector, $6::uuid
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS u(t, n, c, z, v)
     ON CONFLICT (entity_type, name) DO ${
       existing === 'keep'
         ? 'NOTHING'
         : `UPDATE SET canonical_name = EXCLUDED.canonical_name, normalised = EXCLUDED.normalised,
              embedding = EXCLUDED.embedding, updated_at = now()`
     }`,
    [
      types,
      named,
      names.map((n) => n.root),
      names.map((n) => n.normalised),
      names.map((n) => (n.vector === null ? null : vectorLiteral(n.vector))),
      opId,
    ],
  );
  if (existing === 'replace') {
    await tx.query(
      `DELETE FROM entity_root_bands b USING unnest($1::text[], $2::text[]) AS u(t, n)
        WHERE b.entity_type = u.t AND b.name = u.n`,
      [types, named],
    );
  }
  // Bands of the names that are roots now, whether this statement made them so or not.
  await tx.query(
    `INSERT INTO entity_root_bands (band, entity_type, name)
     SELECT DISTINCT band, t, n
       FROM unnest($1::text[], $2::text[], $3::text[]) AS u(t, n, b), jsonb_array_elements_text(b::jsonb) AS band
      WHERE EXISTS (SELECT 1 FROM entity_names WHERE entity_type = t AND name = n AND canonical_name = n)
     ON CONFLICT DO NOTHING`,
    [types, named, names.map((n) => JSON.stringify(n.bands))],
  );
}
