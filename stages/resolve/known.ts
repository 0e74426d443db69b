// Stage 5 (i) at extraction time: every extracted name chains under its root canonical before
// its mention is written, so the pass after the walk has only never-seen names to decide.
// Curated names come first (the alias snapshot of admin merges), then what resolution decided
// before (entity_names). A name neither knows is written as it came, for the pass to decide
// (pending.ts). A name resolution joined to a root of another type takes the root's type too.
// Relationships follow their endpoints.
//
// Curation pin, site 3 (docs/behaviour/states.md#curation-pins): an item re-declares its document's
// pinned mentions verbatim (their stored canonical name, metadata and op_id), and a fresh mention
// of the same entity gives way to the pinned one, so a pinned row keeps its key, its embedding and
// its place through any re-walk, full_reprocess included.

import type { AliasSnapshot } from '../../lib/aliases.ts';
import type { Queryable } from '../../lib/db/database.ts';
import { isPinnedMention } from '../../lib/db/tables.ts';
import type { Entities, Relationships } from '../../lib/llm/schemas.ts';
import { mergeMentions } from '../extract/index.ts';

const pairKey = (type: string, name: string) => `${type}\u0000${name}`;

type EntityType = Entities['entities'][number]['type'];

/** The root (canonical name and type) of each (type, name) that resolution has seen. */
async function knownRoots(
  db: Queryable,
  entities: Entities['entities'],
): Promise<Map<string, { name: string; type: EntityType }>> {
  if (entities.length === 0) return new Map();
  const { rows } = await db.query<{
    entity_type: string;
    name: string;
    canonical_name: string;
    canonical_type: string;
  }>(
    `SELECT entity_type, name, canonical_name, canonical_type FROM entity_names
      WHERE (entity_type, name) IN (SELECT t, n FROM unnest($1::text[], $2::text[]) AS u(t, n))`,
    [entities.map((e) => e.type), entities.map((e) => e.canonical_name)],
  );
  return new Map(
    rows.map((r) => [pairKey(r.entity_type, r.name), { name: r.canonical_name, type: r.canonical_type as EntityType }]),
  );
}

/** The extraction with each entity under its root and each relationship between roots, merged again. */
export async function chainUnderRoots(
  db: Queryable,
  aliases: AliasSnapshot,
  extraction: { entities: Entities['entities']; relationships: Relationships['relationships'] },
): Promise<{ entities: Entities['entities']; relationships: Relationships['relationships'] }> {
  const curated = extraction.entities.map(
    (e) => aliases.canonicalFor(e.type, e.surface_form) ?? aliases.canonicalFor(e.type, e.canonical_name),
  );
  const roots = await knownRoots(
    db,
    extraction.entities.filter((_, i) => curated[i] === undefined),
  );
  const renamed = new Map<string, string>();
  const entities = extraction.entities.map((e, i) => {
    const root =
      curated[i] === undefined ? roots.get(pairKey(e.type, e.canonical_name)) : { name: curated[i], type: e.type };
    if (root === undefined || (root.name === e.canonical_name && root.type === e.type)) return e;
    renamed.set(e.canonical_name, root.name);
    return { ...e, canonical_name: root.name, type: root.type };
  });
  const relationships = extraction.relationships.map((r) => ({
    ...r,
    source: renamed.get(r.source) ?? r.source,
    target: renamed.get(r.target) ?? r.target,
  }));
  return mergeMentions(entities, relationships);
}

/** An owner's pinned mention rows, verbatim, as the sink writes them. */
export async function pinnedMentions(
  db: Queryable,
  owner: { column: 'source_document_id' | 'reference_item_id'; id: string },
): Promise<Record<string, unknown>[]> {
  const { rows } = await db.query<Record<string, unknown>>(
    `SELECT id::text, source_document_id::text, reference_item_id::text, canonical_name, entity_type, surface_form,
            confidence, metadata, op_id::text
       FROM entity_mentions WHERE ${owner.column} = $1 AND ${isPinnedMention()}`,
    [owner.id],
  );
  return rows;
}
