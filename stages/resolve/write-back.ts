// Stage 5 (i) write-back, in bounded transactions, so that memory and the size of a transaction
// stay flat however many mentions a corpus has.
//
//   decisions     a batch's in one transaction: every decided name -> its root in entity_names
//                 (a founded root with its normalised key and bands); the mentions of a name
//                 that founded its root stay as they are
//   moves         once the pass has decided every name, one sweep over the owners: MOVE_CHUNK
//                 mentions at a time in the order of their owners (so an owner's item memos
//                 are rewritten about once a pass), the mentions of names that joined another
//                 root are re-keyed to em:{owner}:{root}:{root's type}, taking the root's type
//                 when the resolver joined a name of another type to it. Two mentions
//                 meeting on one key collapse into one by confidence (outranks).
//                 Curation pin, sites 1 and 2 (docs/behaviour/states.md#curation-pins): no
//                 statement here updates or deletes a pinned row; a pinned holder of the new
//                 key wins over any confidence, and the moved row collapses into it by the
//                 DELETE of the rows this chunk selected, which re-asserts the pin predicate.
//   embeddings    a moved mention's embedding moves with it, now of its root's name (copied in
//                 the database from a row of that text; embedded only if none exists), unless
//                 the row it collapses into already holds one
//   relationships of the owners whose mentions moved: endpoints renamed, re-keyed, collapsed
//
// A pass stopped between these transactions leaves names decided whose mentions are still
// under the name they came with: the next pass moves them under the root entity_names already
// gives (pending.ts waitingNames), asking nothing again, so every name ends wholly under one root.
//
// Item memos list the keys their rows are deleted by. Before each move the new keys are added
// to the owners' memos, after it the old ones are dropped: a crash on either side leaves a memo
// listing a key with no row (a delete that deletes nothing), never a row no memo lists.

import type { Database, Queryable } from '../../lib/db/database.ts';
import {
  entityMentions,
  entityRelationships,
  isPinnedMention,
  MENTION_MERGE,
  recordEmbeddings,
  RELATIONSHIP_MERGE,
  VectorCopy,
  type Row,
} from '../../lib/db/tables.ts';
import { upsertRows } from '../../lib/db/upsert-rows.ts';
import { sha256Hex } from '../../lib/hash.ts';
import { entityMentionKey, entityRelationshipKey } from '../../lib/ids.ts';
import type { ItemMemo, StateStore } from '../../lib/state/store.ts';
import { knownTexts, type TextEmbedder } from '../embed.ts';
import { outranks } from '../extract/index.ts';
import { recordNames, type Root } from './roots.ts';

/** A name of the batch as decided: the root it is under (itself when it founded one), its type, and how ('before': decided before the pass). */
export interface Decision extends Root {
  root: string;
  rootType: string;
  how: 'exact' | 'resolver' | 'founded' | 'before';
}

/** A row of entity_mentions as read back (a type, not an interface, so that it is a sink Row). */
export type MentionRow = {
  id: string;
  source_document_id: string | null;
  reference_item_id: string | null;
  canonical_name: string;
  entity_type: string;
  surface_form: string;
  confidence: number | null;
  metadata: Record<string, unknown>;
  op_id: string;
};

/** A row of entity_relationships as read back. */
type RelationshipRow = {
  id: string;
  source_document_id: string;
  source_canonical: string;
  predicate: string;
  target_canonical: string;
  confidence: number | null;
  metadata: Record<string, unknown>;
  op_id: string;
};

/** Rows under their new keys, and the rows they were before. */
interface Moving<T> {
  rows: T[];
  old: T[];
}

/** Per owner (document or reference item): the keys its items' memos gain, and the keys they lose. */
type KeyChanges = Map<string, { add: Record<string, string[]>; drop: Record<string, string[]> }>;

/** Mentions moved in one transaction at most: what a move holds in memory is bounded by it. */
const MOVE_CHUNK = 5_000;
/** Owners (documents, reference items) the sweep of moves reads at a time. */
const OWNERS_PAGE = 500;

const UNPINNED = `NOT (${isPinnedMention()})`;

/** A name and its root: decided by this pass, or by a pass that stopped before moving its mentions. */
export interface Placed {
  type: string;
  name: string;
  root: RootName;
}

/** A root by its name and type: where a name's mentions go. */
export interface RootName {
  name: string;
  type: string;
}

export const isRoot = (d: { type: string; name: string; root: string; rootType: string }) =>
  d.root === d.name && d.rootType === d.type;

/** Records a batch's decisions in one transaction: entity_names rows, a founded root with its keys and bands. */
export async function recordDecisions(db: Database, decisions: readonly Decision[], opId: string): Promise<void> {
  // A name that joined a root is never a candidate: only roots carry bands and a vector.
  await db.transaction((tx) =>
    recordNames(
      tx,
      decisions.map((d) => (isRoot(d) ? d : { ...d, bands: [], vector: null })),
      opId,
      'keep',
    ),
  );
}

/** The tables whose rows own mentions, by the column that names the owner. */
const OWNERS = [
  { table: 'source_documents', column: 'source_document_id' },
  { table: 'reference_items', column: 'reference_item_id' },
] as const;

/**
 * Moves every unpinned mention of the joined names under its root, in one sweep over the owners
 * the waiting ops wrote (a mention of such a name is written with its owner's row, so an owner
 * the ops did not write holds none): OWNERS_PAGE owners, then MOVE_CHUNK of their mentions, at
 * a time. An owner's item memos are so rewritten about once for the whole pass, not once per
 * batch of names, and memory stays flat. Returns how many mentions moved.
 */
export async function moveJoined(
  db: Database,
  keys: ItemKeys,
  joined: readonly Placed[],
  ops: readonly string[],
  embed: TextEmbedder,
): Promise<number> {
  if (joined.length === 0) return 0;
  const rootOf = new Map(joined.map((p) => [`${p.type}\u0000${p.name}`, p.root]));
  let moved = 0;
  for (const owner of OWNERS) {
    for (let after = NIL; ;) {
      const { rows } = await db.query<{ id: string }>(
        `SELECT id::text FROM ${owner.table} WHERE op_id = ANY($1::uuid[]) AND id > $2::uuid ORDER BY id LIMIT ${OWNERS_PAGE}`,
        [ops, after],
      );
      if (rows.length === 0) break;
      const owners = rows.map((r) => r.id);
      for (let last: MentionRow | undefined; ;) {
        const chunk = await mentionsToMove(db, joined, owner.column, owners, last);
        if (chunk.length === 0) break;
        const move = await planMove(db, chunk, rootOf, embed);
        // The rows this chunk selected, and only if they are still as selected.
        await keys.around(move.changes, () => db.transaction((tx) => applyMove(tx, move, UNPINNED)));
        moved += chunk.length;
        last = chunk.at(-1);
      }
      after = owners.at(-1)!;
    }
  }
  return moved;
}

/** Mention rows going under other roots: where they land, what moves with them, what memos must list. */
export interface MentionMove {
  moving: MentionRow[];
  /** The moved rows under their new keys, collapsed, without those a pinned row already holds. */
  landing: MentionRow[];
  relationships: Moving<RelationshipRow>;
  embeddings: Row[];
  changes: KeyChanges;
}

/** Plans moving `moving` under the roots `rootOf` names for their (type, canonical name). */
export async function planMove(
  db: Queryable,
  moving: MentionRow[],
  rootOf: ReadonlyMap<string, RootName>,
  embed: TextEmbedder,
): Promise<MentionMove> {
  const mentions = collapse(
    moving.map((m) => {
      const root = rootOf.get(`${m.entity_type}\u0000${m.canonical_name}`)!;
      const owner = (m.source_document_id ?? m.reference_item_id)!;
      return {
        ...m,
        id: entityMentionKey(owner, root.name, root.type),
        canonical_name: root.name,
        entity_type: root.type,
      };
    }),
    outranks,
  );
  const holders = await holdersAmong(
    db,
    mentions.map((m) => m.id),
  );
  // A pinned holder of a new key wins whatever the confidence: the moved row only goes.
  const landing = mentions.filter((m) => holders.get(m.id) !== true);
  const relationships = await relationshipsMoving(db, moving, rootOf);
  return {
    moving,
    landing,
    relationships,
    // A row already holding the key has its root's embedding: the moved row collapses into it.
    embeddings: await embeddingRows(
      db,
      landing.filter((m) => !holders.has(m.id)),
      embed,
    ),
    changes: keyChanges(moving, mentions, relationships),
  };
}

/**
 * The owners' item memos around a run of moves: before a move they gain its new keys; its old
 * keys are dropped with the next move's gains (one rewrite of an owner's memos where two would
 * do), and the last move's when the run settles. A run that stops before it settles leaves memos
 * listing keys without rows (deletes that delete nothing), never a row no memo lists.
 */
export class ItemKeys {
  readonly #store: StateStore;
  #owed: KeyChanges | null = null;

  constructor(store: StateStore) {
    this.#store = store;
  }

  /** Runs `work`, the transaction applying a move with these key changes. */
  async around<T>(changes: KeyChanges, work: () => Promise<T>): Promise<T> {
    await rewriteItemKeys(this.#store, this.#owed, changes);
    this.#owed = null;
    const result = await work();
    this.#owed = changes;
    return result;
  }

  async settle(): Promise<void> {
    await rewriteItemKeys(this.#store, this.#owed, null);
    this.#owed = null;
  }
}

/** Runs `work`, the transaction applying `move`: its owners' memos list the new keys before it, and the old ones no more after it. */
export async function withItemKeys<T>(store: StateStore, move: MentionMove, work: () => Promise<T>): Promise<T> {
  const keys = new ItemKeys(store);
  const result = await keys.around(move.changes, work);
  await keys.settle();
  return result;
}

/** Applies `move` in `tx`; the old rows go where `guard` (an SQL predicate on entity_mentions) still holds. */
export async function applyMove(tx: Queryable, move: MentionMove, guard: string): Promise<void> {
  if (move.moving.length === 0) return;
  const oldIds = move.moving.map((m) => m.id);
  await upsertRows(tx, entityMentions, move.landing, 'unnest', MENTION_MERGE);
  await tx.query(`DELETE FROM entity_mentions WHERE id = ANY($1::uuid[]) AND ${guard}`, [oldIds]);
  // Joined, not `owner_id = ANY(...)`: with a long array the planner reads every mention's
  // embedding by owner_kind alone and filters (19,000 heap pages a batch at 300 documents).
  await tx.query(
    `DELETE FROM record_embeddings e USING unnest($1::uuid[]) AS u(id)
      WHERE e.owner_kind = 'entity_mention' AND e.owner_id = u.id`,
    [oldIds],
  );
  await upsertRows(tx, recordEmbeddings, move.embeddings, 'unnest');
  await moveRelationships(tx, move.relationships);
}

const MENTION_COLUMNS = `id::text, source_document_id::text, reference_item_id::text, canonical_name, entity_type,
  surface_form, confidence, metadata, op_id::text`;

const namesIn = `(entity_type, canonical_name) IN (SELECT t, n FROM unnest($1::text[], $2::text[]) AS u(t, n))`;

/** Every mention of these (type, canonical name) pairs, pinned ones included. */
export async function mentionsNamed(
  db: Queryable,
  names: readonly { type: string; name: string }[],
): Promise<MentionRow[]> {
  if (names.length === 0) return [];
  const { rows } = await db.query<MentionRow>(`SELECT ${MENTION_COLUMNS} FROM entity_mentions WHERE ${namesIn}`, [
    names.map((d) => d.type),
    names.map((d) => d.name),
  ]);
  return rows;
}

/** The next MOVE_CHUNK unpinned mentions of these names among these owners, in owner order after `last`. */
async function mentionsToMove(
  db: Queryable,
  names: readonly { type: string; name: string }[],
  column: (typeof OWNERS)[number]['column'],
  owners: readonly string[],
  last: MentionRow | undefined,
): Promise<MentionRow[]> {
  // Driven by the owners (their index), never by the names: the names' mentions run to hundreds
  // of thousands across the corpus, a page of owners' to a few tens of thousands. MATERIALIZED
  // keeps the planner from reading the names' mentions instead (300 ms a page at 10,000 documents).
  const { rows } = await db.query<MentionRow>(
    `WITH entity_mentions AS MATERIALIZED (SELECT * FROM entity_mentions WHERE ${column} = ANY($3::uuid[]))
     SELECT ${MENTION_COLUMNS} FROM entity_mentions
      WHERE ${namesIn} AND ${UNPINNED} AND (${column}, id) > ($4::uuid, $5::uuid)
      ORDER BY ${column}, id LIMIT ${MOVE_CHUNK}`,
    [
      names.map((d) => d.type),
      names.map((d) => d.name),
      owners,
      last === undefined ? NIL : (last.source_document_id ?? last.reference_item_id),
      last?.id ?? NIL,
    ],
  );
  return rows;
}

const NIL = '00000000-0000-0000-0000-000000000000';

/** The rows already holding these keys: id -> whether the holder is pinned. */
async function holdersAmong(db: Queryable, ids: readonly string[]): Promise<Map<string, boolean>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.query<{ id: string; pinned: boolean }>(
    `SELECT id::text, ${isPinnedMention()} AS pinned FROM entity_mentions WHERE id = ANY($1::uuid[])`,
    [ids],
  );
  return new Map(rows.map((r) => [r.id, r.pinned]));
}

/** One row per key: the one `isBetter` keeps over every other row of its key. */
function collapse<T extends { id: string }>(rows: readonly T[], isBetter: (a: T, b: T) => boolean): T[] {
  const byId = new Map<string, T>();
  for (const row of rows) {
    const kept = byId.get(row.id);
    if (kept === undefined || isBetter(row, kept)) byId.set(row.id, row);
  }
  return [...byId.values()];
}

/** The relationships of the moving mentions' documents, between their roots, collapsed; with the ids they leave. */
async function relationshipsMoving(
  db: Queryable,
  moving: readonly MentionRow[],
  rootOf: ReadonlyMap<string, RootName>,
): Promise<Moving<RelationshipRow>> {
  const renames = new Map<string, Map<string, string>>();
  for (const m of moving) {
    if (m.source_document_id === null) continue;
    const renamed = renames.get(m.source_document_id) ?? new Map<string, string>();
    renamed.set(m.canonical_name, rootOf.get(`${m.entity_type}\u0000${m.canonical_name}`)!.name);
    renames.set(m.source_document_id, renamed);
  }
  if (renames.size === 0) return { rows: [], old: [] };
  const names = [...new Set([...renames.values()].flatMap((r) => [...r.keys()]))];
  const { rows: old } = await db.query<RelationshipRow>(
    `SELECT id::text, source_document_id::text, source_canonical, predicate, target_canonical, confidence, metadata,
            op_id::text
       FROM entity_relationships
      WHERE source_document_id = ANY($1::uuid[]) AND (source_canonical = ANY($2::text[]) OR target_canonical = ANY($2::text[]))`,
    [[...renames.keys()], names],
  );
  const affected = old.filter((r) => {
    const renamed = renames.get(r.source_document_id)!;
    return renamed.has(r.source_canonical) || renamed.has(r.target_canonical);
  });
  const rows = affected.map((r) => {
    const renamed = renames.get(r.source_document_id)!;
    const source = renamed.get(r.source_canonical) ?? r.source_canonical;
    const target = renamed.get(r.target_canonical) ?? r.target_canonical;
    return {
      ...r,
      id: entityRelationshipKey(r.source_document_id, source, r.predicate, target),
      source_canonical: source,
      target_canonical: target,
    };
  });
  return { rows: collapse(rows, (a, b) => (a.confidence ?? 0) > (b.confidence ?? 0)), old: affected };
}

/** Each moved mention's embedding: a copy of its root's vector, or one embedded now when no row holds it. */
async function embeddingRows(db: Queryable, mentions: readonly MentionRow[], embed: TextEmbedder): Promise<Row[]> {
  const roots = [...new Set(mentions.map((m) => m.canonical_name))];
  const held = await knownTexts(
    db,
    roots.map((r) => sha256Hex(r)),
    embed.model,
  );
  const missing = roots.filter((r) => !held.has(sha256Hex(r)));
  const vectors = new Map((await (missing.length === 0 ? [] : embed(missing))).map((v, i) => [missing[i]!, v]));
  return mentions.map((m) => ({
    owner_kind: 'entity_mention',
    owner_id: m.id,
    model: embed.model,
    embedding: vectors.get(m.canonical_name) ?? new VectorCopy(m.canonical_name),
    content_sha256: sha256Hex(m.canonical_name),
    op_id: m.op_id,
  }));
}

function keyChanges(
  moving: readonly MentionRow[],
  mentions: readonly MentionRow[],
  relationships: Moving<RelationshipRow>,
): KeyChanges {
  const changes: KeyChanges = new Map();
  const entry = (owner: string) => {
    let change = changes.get(owner);
    if (change === undefined) changes.set(owner, (change = { add: {}, drop: {} }));
    return change;
  };
  const push = (keys: Record<string, string[]>, table: string, key: string) => (keys[table] ??= []).push(key);
  for (const m of moving) {
    const change = entry((m.source_document_id ?? m.reference_item_id)!);
    push(change.drop, 'entity_mentions', m.id);
    push(change.drop, 'record_embeddings', `entity_mention:${m.id}`);
  }
  for (const m of mentions) {
    const change = entry((m.source_document_id ?? m.reference_item_id)!);
    push(change.add, 'entity_mentions', m.id);
    push(change.add, 'record_embeddings', `entity_mention:${m.id}`);
  }
  for (const r of relationships.old) push(entry(r.source_document_id).drop, 'entity_relationships', r.id);
  for (const r of relationships.rows) push(entry(r.source_document_id).add, 'entity_relationships', r.id);
  return changes;
}

/**
 * Drops the old keys of `dropping` (a move made), then adds the new keys of `adding` (a move to
 * make), in the memos of every item of each owner: each memo rewritten once.
 */
async function rewriteItemKeys(
  store: StateStore,
  dropping: KeyChanges | null,
  adding: KeyChanges | null,
): Promise<void> {
  const owners = new Set([...(dropping?.keys() ?? []), ...(adding?.keys() ?? [])]);
  const updated: [string, ItemMemo][] = [];
  for (const owner of owners) {
    const dropped = dropping?.get(owner);
    const added = adding?.get(owner);
    for (const identity of await store.itemsOfDocument(owner)) {
      const { memo } = await store.getItem(identity);
      if (memo === undefined) continue;
      const rows = { ...memo.rows };
      const edit = (table: string, change: (listed: Set<string>) => void) => {
        const listed = new Set(rows[table] ?? []);
        change(listed);
        rows[table] = [...listed];
      };
      for (const [table, keys] of Object.entries(dropped?.drop ?? {})) {
        // A key both left and gained by that move (a collision with a row already there) stays.
        const kept = new Set(dropped!.add[table] ?? []);
        edit(table, (listed) => keys.forEach((key) => kept.has(key) || listed.delete(key)));
      }
      for (const [table, keys] of Object.entries(added?.add ?? {})) {
        edit(table, (listed) => keys.forEach((key) => listed.add(key)));
      }
      updated.push([identity, { ...memo, rows }]);
    }
  }
  if (updated.length > 0) await store.putItems(updated);
}

/** Relationships under their renamed endpoints (the higher confidence kept on a collision), the old keys gone. */
async function moveRelationships(tx: Queryable, moving: Moving<RelationshipRow>): Promise<void> {
  if (moving.old.length === 0) return;
  const { rows } = moving;
  await upsertRows(tx, entityRelationships, rows, 'unnest', RELATIONSHIP_MERGE);
  const kept = new Set(rows.map((r) => r.id));
  await tx.query('DELETE FROM entity_relationships WHERE id = ANY($1::uuid[])', [
    moving.old.map((r) => r.id).filter((id) => !kept.has(id)),
  ]);
}
