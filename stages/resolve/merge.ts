// The admin merge (docs/behaviour/states.md#curation-pins): the canonicals of the named mentions
// merge into the target mention's, everywhere. Every mention of a merged canonical moves under the
// target's (re-keyed, its embedding and its document's relationships with it, as the pass moves
// them: write-back.ts), and entity_names re-points the merged names and every name that chained
// under them to the target's canonical, so extraction chains them there from now on and no name is
// left pointing at a name that is no root. That is one transaction.
//
// Then, apart, the pin step: the surviving rows of the target canonical are marked
// curation_pinned, the merged names kept as their aliases (the alias snapshot reads them). The
// merge has committed by then, so a fault in the pin step is reported, never raised.

import { randomUUID } from 'node:crypto';
import type { Database, Queryable } from '../../lib/db/database.ts';
import { CURATION_PIN } from '../../lib/db/tables.ts';
import type { StateStore } from '../../lib/state/store.ts';
import { normaliseName } from './names.ts';
import { recordNames, ROOT, rootOf, type Root } from './roots.ts';
import { applyMove, mentionsNamed, planMove, withItemKeys } from './write-back.ts';
import { IngestError } from '../../lib/errors.ts';
import type { TextEmbedder } from '../embed.ts';

export class EntityMergeError extends IngestError {
  declare readonly code: 'mention_not_found' | 'type_mismatch';
  constructor(code: EntityMergeError['code'], message: string) {
    super(code, message);
  }
}

export interface MergeRequest {
  /** The mention whose canonical survives. */
  into: string;
  /** Mentions whose canonicals merge into it. */
  mentions: readonly string[];
}

export interface MergeResult {
  /** Mentions moved under the target's canonical. */
  merged: number;
  mentions_pinned?: number;
  mentions_pin_error?: string;
}

interface Named {
  id: string;
  canonical_name: string;
  entity_type: string;
}

export async function mergeEntities(
  db: Database,
  store: StateStore,
  embed: TextEmbedder,
  request: MergeRequest,
): Promise<MergeResult> {
  const named = await namedMentions(db, [request.into, ...request.mentions]);
  const target = named.get(request.into)!;
  const sources = request.mentions.map((id) => named.get(id)!);
  const wrong = sources.find((s) => s.entity_type !== target.entity_type);
  if (wrong !== undefined) {
    throw new EntityMergeError(
      'type_mismatch',
      `mention ${wrong.id} is a ${wrong.entity_type}, the target ${request.into} a ${target.entity_type}: only one type merges`,
    );
  }
  const type = target.entity_type;
  const root = target.canonical_name;
  const names = [...new Set(sources.map((s) => s.canonical_name))].filter((n) => n !== root);
  const moving = await mentionsNamed(
    db,
    names.map((name) => ({ type, name })),
  );
  const move = await planMove(
    db,
    moving,
    new Map(names.map((n) => [`${type}\u0000${n}`, { name: root, type }])),
    embed,
  );
  const [vector] = await embed([root]);
  await withItemKeys(store, move, () =>
    db.transaction(async (tx) => {
      // The admin's word moves pinned rows of the merged canonicals too.
      await applyMove(tx, move, 'true');
      await repointNames(tx, rootOf({ type, name: root }, vector!), names);
    }),
  );
  try {
    return { merged: moving.length, mentions_pinned: await pinSurvivors(db, type, root, names) };
  } catch (error) {
    return { merged: moving.length, mentions_pin_error: (error as Error).message };
  }
}

/**
 * The words for mention ids that name no mention. A mention moved to another entity (by stage 5
 * or a merge) is written again under an id of its new name, so an id read before a move names
 * nothing after it.
 */
export const noMentionMessage = (ids: readonly string[]): string =>
  `no entity mention ${ids.join(', ')} (a mention moved to another entity, by stage 5 or a merge, ` +
  'takes a new id: `ingest entities list` and `entities show` give the current ones)';

async function namedMentions(db: Queryable, ids: readonly string[]): Promise<Map<string, Named>> {
  const valid = ids.filter((id) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id));
  const { rows } = await db.query<Named>(
    'SELECT id::text, canonical_name, entity_type FROM entity_mentions WHERE id = ANY($1::uuid[])',
    [valid],
  );
  const found = new Map(rows.map((r) => [r.id, r]));
  const missing = ids.filter((id) => !found.has(id.toLowerCase()));
  if (missing.length > 0) throw new EntityMergeError('mention_not_found', noMentionMessage(missing));
  return new Map(ids.map((id) => [id, found.get(id.toLowerCase())!]));
}

/**
 * The root is a root; the merged names, and every name under them (of its type, or joined to
 * them from another), point at it directly.
 */
async function repointNames(tx: Queryable, root: Root, names: readonly string[]): Promise<void> {
  const op = randomUUID();
  await recordNames(tx, [{ ...root, root: root.name, rootType: root.type }], op, 'replace');
  await tx.query(
    `UPDATE entity_names SET canonical_name = $2, canonical_type = $1, embedding = NULL, updated_at = now()
      WHERE NOT (entity_type = $1 AND name = $2)
        AND ((canonical_type = $1 AND canonical_name = ANY($3::text[])) OR (entity_type = $1 AND name = ANY($3::text[])))`,
    [root.type, root.name, names],
  );
  // The merged names are roots no more: their band keys go.
  await tx.query(
    `DELETE FROM entity_root_bands b USING entity_names n
      WHERE b.entity_type = $1 AND n.entity_type = b.entity_type AND n.name = b.name AND NOT (${ROOT('n')})`,
    [root.type],
  );
  await recordNames(
    tx,
    names.map((name) => ({
      type: root.type,
      name,
      root: root.name,
      rootType: root.type,
      normalised: normaliseName(name),
      bands: [],
      vector: null,
    })),
    op,
    'keep',
  );
}

/** Pins the target canonical's rows, its merged names recorded as their aliases; returns how many. */
async function pinSurvivors(db: Queryable, type: string, root: string, names: readonly string[]): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE entity_mentions
        SET metadata = metadata || jsonb_build_object('${CURATION_PIN}', true, 'aliases',
              (SELECT coalesce(jsonb_agg(DISTINCT a), '[]'::jsonb)
                 FROM jsonb_array_elements_text(coalesce(metadata -> 'aliases', '[]'::jsonb) || $3::jsonb) AS a)),
            updated_at = now()
      WHERE entity_type = $1 AND canonical_name = $2`,
    [type, root, JSON.stringify(names)],
  );
  return rowCount;
}
