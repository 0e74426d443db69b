// Stage 5 (i), the roots in entity_names: a name as a root (its normalised key, trigram bands
// and embedding), the candidate search over the roots of earlier batches, and the one statement
// that records names. Three blocks feed the search, so that no easy case is missed because
// another block scored it low (SPEC.md 1 stage 5):
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
/** Roots the exact and shingle blocks offer at most per name, the most bands shared first. */
const BLOCK_LIMIT = 50;

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
 * Per name, the roots of its type its three blocks find. One query for all the names; the
 * names are materialised first, so each vector is parsed once, not once per root compared.
 * Where the planner takes the HNSW index for the nearest roots, its scan goes on past roots of
 * other types (iterative scan, pgvector 0.8), so the type filter never leaves a name short.
 */
export async function rootsNear(db: Database, names: readonly Root[]): Promise<Near[][]> {
  const rows = await db.transaction(async (tx) => {
    await tx.query(`SET LOCAL hnsw.iterative_scan = relaxed_order`);
    const { rows } = await tx.query<Near & { i: number }>(
      `WITH q AS MATERIALIZED (
         SELECT i::int - 1 AS i, t, z, ARRAY(SELECT jsonb_array_elements_text(b::jsonb)) AS b, v::vector AS v
           FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS u(t, z, b, v, i))
       SELECT q.i, n.name, n.normalised, n.bands, n.cosine
         FROM q CROSS JOIN LATERAL (
           (SELECT name, normalised, bands, 1 - (embedding <=> q.v) AS cosine FROM entity_names
             WHERE entity_type = q.t AND name = canonical_name AND (normalised = q.z OR bands && q.b)
             ORDER BY normalised = q.z DESC, cardinality(ARRAY(SELECT unnest(bands) INTERSECT SELECT unnest(q.b))) DESC, name
             LIMIT ${BLOCK_LIMIT})
           UNION
           (SELECT * FROM (
              SELECT name, normalised, bands, 1 - (embedding <=> q.v) AS cosine FROM entity_names
               WHERE entity_type = q.t AND name = canonical_name
               ORDER BY embedding <=> q.v LIMIT ${NEAREST_ROOTS}) nearest
             WHERE cosine >= ${MIN_COSINE})) n`,
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
 * Records names in entity_names. `existing` says what a name already there keeps: 'keep' (a
 * walk's decision never re-points a name) or 'replace' (an admin merge's word).
 */
export async function recordNames(
  tx: Queryable,
  names: readonly NameRow[],
  opId: string,
  existing: 'keep' | 'replace',
): Promise<void> {
  if (names.length === 0) return;
  await tx.query(
    `INSERT INTO entity_names (entity_type, name, canonical_name, normalised, bands, embedding, op_id)
     SELECT t, n, c, z, ARRAY(SELECT jsonb_array_elements_text(b::jsonb)), v::vector, $7::uuid
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) AS u(t, n, c, z, b, v)
     ON CONFLICT (entity_type, name) DO ${
       existing === 'keep'
         ? 'NOTHING'
         : `UPDATE SET canonical_name = EXCLUDED.canonical_name, normalised = EXCLUDED.normalised,
              bands = EXCLUDED.bands, embedding = EXCLUDED.embedding, updated_at = now()`
     }`,
    [
      names.map((n) => n.type),
      names.map((n) => n.name),
      names.map((n) => n.root),
      names.map((n) => n.normalised),
      names.map((n) => JSON.stringify(n.bands)),
      names.map((n) => (n.vector === null ? null : vectorLiteral(n.vector))),
      opId,
    ],
  );
}
