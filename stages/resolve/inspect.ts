// What an operator sees of stage 5 (i): the entities (root canonicals with their mentions) and
// one entity whole, the names that chain under it included (`ingest entities list | show`).

import type { Queryable } from '../../lib/db/database.ts';
import { isPinnedMention } from '../../lib/db/tables.ts';

export interface EntitySummary {
  entity_type: string;
  canonical_name: string;
  mentions: number;
  owners: number;
  pinned: boolean;
  /** One of its mentions, to name it to `show` and `merge`. */
  mention: string;
}

export async function listEntities(
  db: Queryable,
  options: { pinned: boolean; limit: number },
): Promise<EntitySummary[]> {
  const { rows } = await db.query<EntitySummary>(
    `SELECT entity_type, canonical_name, count(*)::int AS mentions,
            count(DISTINCT coalesce(source_document_id, reference_item_id))::int AS owners,
            bool_or(${isPinnedMention()}) AS pinned, min(id::text) AS mention
       FROM entity_mentions GROUP BY entity_type, canonical_name
     HAVING NOT $1 OR bool_or(${isPinnedMention()})
      ORDER BY count(*) DESC, entity_type, canonical_name LIMIT $2`,
    [options.pinned, options.limit],
  );
  return rows;
}

export interface EntityDetail {
  entity_type: string;
  canonical_name: string;
  /** Every name that chains under it (itself included, when resolution has seen it). */
  names: string[];
  mentions: { id: string; owner: string; surface_form: string; confidence: number | null; pinned: boolean }[];
}

/** The entity of one mention; null when there is no such mention. */
export async function showEntity(db: Queryable, mentionId: string): Promise<EntityDetail | null> {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(mentionId)) return null;
  const { rows: found } = await db.query<{ entity_type: string; canonical_name: string }>(
    'SELECT entity_type, canonical_name FROM entity_mentions WHERE id = $1',
    [mentionId],
  );
  if (found.length === 0) return null;
  const { entity_type, canonical_name } = found[0]!;
  const [names, mentions] = await Promise.all([
    db.query<{ name: string }>(
      'SELECT name FROM entity_names WHERE canonical_type = $1 AND canonical_name = $2 ORDER BY name',
      [entity_type, canonical_name],
    ),
    db.query<EntityDetail['mentions'][number]>(
      `SELECT m.id::text, coalesce(d.rel_path, r.url) AS owner, m.surface_form, m.confidence,
              ${isPinnedMention('m')} AS pinned
         FROM entity_mentions m
         LEFT JOIN source_documents d ON d.id = m.source_document_id
         LEFT JOIN reference_items r ON r.id = m.reference_item_id
        WHERE m.entity_type = $1 AND m.canonical_name = $2 ORDER BY owner, m.id`,
      [entity_type, canonical_name],
    ),
  ]);
  return { entity_type, canonical_name, names: names.rows.map((r) => r.name), mentions: mentions.rows };
}
