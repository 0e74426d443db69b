// Stage 5 (i), the roots in entity_names: a name as a root (its normalised key, trigram bands
// and embedding), the candidate search over the roots of earlier batches, and the recording of
// names with the band keys of the roots (entity_root_bands). Three blocks feed the search, so
// that no easy case is missed because another block scored it low
// (docs/behaviour/stages.md#entity-resolution):
//
//   exact      the same normalised name, in a root of any type
//   shingle    a shared MinHash band of the trigrams (typos, abbreviations), any type
//   embedding  the NEAREST_ROOTS nearest root vectors of the name's type at cosine >= MIN_COSINE
//              (the same thing spelled apart: "International Business Machines", "IBM")
//
// Roots of another type come from the name blocks only, and index.ts keeps those whose name is
// near-identical: a name typed differently in another document, for the resolver to decide.
// A root is a name naming itself in its own type (ROOT).

import type { Database, Queryable } from '../../lib/db/database.ts';
import { bandKeys, normaliseName, trigrams, unitLength } from './names.ts';
import type { Candidate } from './pair-resolver.ts';

/** The predicate of a root among entity_names rows (`n`): its own name and type. */
export const ROOT = (n: string) => `${n}.name = ${n}.canonical_name AND ${n}.entity_type = ${n}.canonical_type`;

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
  /** The vector at unit length, for the pass's own cosines (candidates.ts nearness). */
  unit: Float64Array;
}

/** A root found for a name, with the cosine of their embeddings. */
export type Near = Candidate & { cosine: number };

export function rootOf(p: { type: string; name: string }, vector: readonly number[]): Root {
  const normalised = normaliseName(p.name);
  const bands = bandKeys(trigrams(normalised));
  return { type: p.type, name: p.name, normalised, bands, vector, unit: unitLength(vector) };
}

export const vectorLiteral = (vector: readonly number[]) => `[${vector.join(',')}]`;

/** A root (by its type and name columns) the search may offer: not among the `hidden` CTE's. */
const SHOWN = (type: string, name: string) =>
  `NOT EXISTS (SELECT 1 FROM hidden h WHERE h.t = ${type} AND h.n = ${name})`;

/**
 * Per name, the roots its three blocks find: one set-based query for a whole batch. The names
 * are materialised first, so each vector is parsed once. The shingle block joins the batch's
 * band keys to entity_root_bands and keeps each name's BLOCK_LIMIT roots sharing the most
 * bands. The embedding block reads the HNSW index over all roots and keeps the name's type
 * among the NEAREST_SCANNED nearest, then the NEAREST_ROOTS nearest of those: a type filter
 * inside the index scan makes the planner scan the type's roots instead.
 *
 * `hidden` are roots none of the blocks may offer, left out before any block's limit: roots a
 * stopped pass over the same ops recorded where this search must not see them yet (decide.ts
 * "resumes"), so that what each name is offered is what an uninterrupted pass offered it.
 */
export async function rootsNear(
  db: Database,
  names: readonly Root[],
  hidden: readonly { type: string; name: string }[] = [],
): Promise<Near[][]> {
  const rows = await db.transaction(async (tx) => {
    await tx.query(`SET LOCAL hnsw.iterative_scan = relaxed_order`);
    const { rows } = await tx.query<Near & { i: number }>(
      `WITH q AS MATERIALIZED (
         SELECT i::int - 1 AS i, t, z, ARRAY(SELECT jsonb_array_elements_text(b::jsonb)) AS b, v::vector AS v
           FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS u(t, z, b, v, i)),
       hidden AS MATERIALIZED (SELECT t, n FROM unnest($5::text[], $6::text[]) AS h(t, n)),
       exact AS (
         SELECT q.i, n.entity_type AS t, n.name FROM q
           JOIN entity_names n ON n.normalised = q.z AND ${ROOT('n')}
          WHERE ${SHOWN('n.entity_type', 'n.name')}),
       shingle AS (
         SELECT i, t, name FROM (
           SELECT k.i, r.entity_type AS t, r.name,
                  row_number() OVER (PARTITION BY k.i ORDER BY count(*) DESC, r.entity_type, r.name) AS rank
             FROM (SELECT i, unnest(b) AS band FROM q) k
             JOIN entity_root_bands r ON r.band = k.band
            WHERE ${SHOWN('r.entity_type', 'r.name')}
            GROUP BY k.i, r.entity_type, r.name) ranked
          WHERE rank <= ${BLOCK_LIMIT}),
       nearest AS (
         SELECT i, t, name FROM (
           SELECT q.i, q.t, x.name, row_number() OVER (PARTITION BY q.i ORDER BY x.distance, x.name) AS rank
             FROM q CROSS JOIN LATERAL (
               SELECT n.name, n.entity_type, n.embedding <=> q.v AS distance FROM entity_names n
                WHERE ${ROOT('n')} AND ${SHOWN('n.entity_type', 'n.name')}
                ORDER BY n.embedding <=> q.v LIMIT ${NEAREST_SCANNED}) x
            WHERE x.entity_type = q.t AND x.distance <= ${1 - MIN_COSINE}) ranked
          WHERE rank <= ${NEAREST_ROOTS})
       SELECT f.i, n.entity_type AS type, n.name, n.normalised, 1 - (n.embedding <=> q.v) AS cosine
         FROM (SELECT * FROM exact UNION SELECT * FROM shingle UNION SELECT * FROM nearest) f
         JOIN q ON q.i = f.i
         JOIN entity_names n ON n.entity_type = f.t AND n.name = f.name`,
      [
        names.map((n) => n.type),
        names.map((n) => n.normalised),
        names.map((n) => JSON.stringify(n.bands)),
        names.map((n) => vectorLiteral(n.vector)),
        hidden.map((h) => h.type),
        hidden.map((h) => h.name),
      ],
    );
    return rows;
  });
  const near = names.map((): Near[] => []);
  for (const { i, ...candidate } of rows) near[i]!.push(candidate);
  return near;
}

/** A name and the root it is under (its name and type); a root carries its keys and vector, a name under another none. */
export interface NameRow {
  type: string;
  name: string;
  root: string;
  rootType: string;
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
    `INSERT INTO entity_names (entity_type, name, canonical_name, canonical_type, normalised, embedding, op_id)
     SELECT t, n, c, ct, z, v::vector, $7::uuid
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) AS u(t, n, c, ct, z, v)
     ON CONFLICT (entity_type, name) DO ${
       existing === 'keep'
         ? 'NOTHING'
         : `UPDATE SET canonical_name = EXCLUDED.canonical_name, canonical_type = EXCLUDED.canonical_type,
              normalised = EXCLUDED.normalised, embedding = EXCLUDED.embedding, updated_at = now()`
     }`,
    [
      types,
      named,
      names.map((n) => n.root),
      names.map((n) => n.rootType),
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
      WHERE EXISTS (SELECT 1 FROM entity_names r WHERE r.entity_type = t AND r.name = n AND ${ROOT('r')})
     ON CONFLICT DO NOTHING`,
    [types, named, names.map((n) => JSON.stringify(n.bands))],
  );
}
