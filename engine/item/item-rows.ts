// Rows any source item derives the same way from its text, whoever owns them: content chunks
// and entity mentions belong to a source document (a file) or to a reference item (a feed
// URL), and the embeddings of both are owned like the rows they embed. A large text is read in
// batches (textBatches) as its pieces arrive, so that an item's memory and transactions stay
// bounded whatever its size.

import { ChunkStream, type Chunk } from '../../stages/chunk.ts';
import type { EmbeddingInput } from '../../stages/embed.ts';
import type { AliasSnapshot } from '../../lib/aliases.ts';
import type { Queryable } from '../../lib/db/database.ts';
import { WINDOW_CHUNKING, type DocumentExtraction } from '../../stages/extract/index.ts';
import { chainUnderRoots, pinnedMentions } from '../../stages/resolve/known.ts';
import type { ItemRows, RowKeys } from '../../stages/upsert.ts';
import type { ItemMemo } from '../../lib/state/store.ts';
import { chunkKey, entityMentionKey, entityRelationshipKey } from '../../lib/ids.ts';
import {
  contentChunks,
  embeddingKey,
  recordEmbeddings,
  rowKey,
  type Row,
  type TableSpec,
} from '../../lib/db/tables.ts';

/** Whose derived rows these are: the owner's id in its own column, the other owner column null. */
export interface RowOwner {
  column: 'source_document_id' | 'reference_item_id';
  id: string;
}

const ownedBy = (owner: RowOwner) => ({ source_document_id: null, reference_item_id: null, [owner.column]: owner.id });

export function chunkRowsOf(owner: RowOwner, chunks: readonly Chunk[], opId: string) {
  return chunks.map((c) => ({
    id: chunkKey(owner.id, c.idx),
    ...ownedBy(owner),
    idx: c.idx,
    text: c.text,
    char_start: c.charStart,
    char_end: c.charEnd,
    op_id: opId,
  }));
}

/**
 * The owner's mention rows: its pinned ones as they stand, then a row per extracted entity
 * that no pinned row already stands for (same id, or same canonical name and type).
 */
export function mentionRowsOf(
  owner: RowOwner,
  entities: DocumentExtraction['entities'],
  pinned: readonly Record<string, unknown>[],
  opId: string,
) {
  const standsFor = new Set(pinned.flatMap((p) => [String(p.id), `${p.canonical_name}\u0000${p.entity_type}`]));
  const fresh = entities
    .map((e) => ({
      id: entityMentionKey(owner.id, e.canonical_name, e.type),
      ...ownedBy(owner),
      canonical_name: e.canonical_name,
      entity_type: e.type,
      surface_form: e.surface_form,
      confidence: e.confidence,
      metadata: {},
      op_id: opId,
    }))
    .filter((row) => !standsFor.has(row.id) && !standsFor.has(`${row.canonical_name}\u0000${row.entity_type}`));
  return [...(pinned as typeof fresh), ...fresh];
}

/** The owner's mention rows and its relationships, each name under its root canonical. */
export async function namedRowsOf(
  deps: { db: Queryable; aliases: AliasSnapshot },
  owner: RowOwner,
  extraction: Pick<DocumentExtraction, 'entities' | 'relationships'>,
  opId: string,
) {
  const [named, pinned] = await Promise.all([
    chainUnderRoots(deps.db, deps.aliases, extraction),
    pinnedMentions(deps.db, owner),
  ]);
  return { mentionRows: mentionRowsOf(owner, named.entities, pinned, opId), relationships: named.relationships };
}

/** A document's relationship rows, one per (source, predicate, target). */
export function relationshipRowsOf(
  sourceDocumentId: string,
  relationships: DocumentExtraction['relationships'],
  opId: string,
) {
  return relationships.map((r) => ({
    id: entityRelationshipKey(sourceDocumentId, r.source, r.predicate, r.target),
    source_document_id: sourceDocumentId,
    source_canonical: r.source,
    predicate: r.predicate,
    target_canonical: r.target,
    confidence: r.confidence,
    metadata: {},
    op_id: opId,
  }));
}

/**
 * The keys of the rows an item has written so far, of one kind of row met in batch after batch
 * (a large file's names): a row first met is written as it is, one met again is merged into it.
 */
export class WrittenOnce {
  readonly #keys = new Set<string>();

  split<R extends { id: string }>(rows: readonly R[]): { first: R[]; again: R[] } {
    const first: R[] = [];
    const again: R[] = [];
    for (const row of rows) (this.#keys.has(row.id) ? again : first).push(row);
    for (const row of first) this.#keys.add(row.id);
    return { first, again };
  }
}

/** What is embedded: each chunk's text, each answered Q&A pair, each mention's canonical name. */
export function embeddingInputs(rows: {
  chunks: readonly { id: string; text: string }[];
  qa?: readonly { id: string; question_text: string; answer_text: string | null }[];
  mentions: readonly { id: string; canonical_name: string }[];
}): EmbeddingInput[] {
  return [
    ...rows.chunks.map((r) => ({ ownerKind: 'content_chunk' as const, ownerId: r.id, text: r.text })),
    ...(rows.qa ?? []).map((r) => ({
      ownerKind: 'q_a_extraction' as const,
      ownerId: r.id,
      text: `Q: ${r.question_text}\nA: ${r.answer_text}`,
    })),
    ...rows.mentions.map((r) => ({ ownerKind: 'entity_mention' as const, ownerId: r.id, text: r.canonical_name })),
  ];
}

/**
 * What the memo keeps of every row the item owns, embeddings kept because their text did not
 * change included: each row's key, but the chunks and their embeddings, which are counted
 * (ItemStamp.chunks).
 */
export class OwnedKeys {
  readonly #keys: RowKeys;
  #chunks = 0;

  constructor(tables: readonly TableSpec[]) {
    this.#keys = Object.fromEntries(tables.map((spec) => [spec.name, []]));
  }

  /** Rows merged into ones the item already wrote (a spec with a merge) were counted then. */
  add(rows: ItemRows, embedded: readonly EmbeddingInput[]): void {
    for (const [spec, list] of rows) {
      if (spec.merge !== undefined || spec === recordEmbeddings) continue;
      if (spec === contentChunks) this.#countChunks(list);
      else this.#keys[spec.name]!.push(...list.map((row) => rowKey(spec, row)));
    }
    for (const e of embedded)
      if (e.ownerKind !== 'content_chunk')
        this.#keys[recordEmbeddings.name]!.push(embeddingKey(e.ownerKind, e.ownerId));
  }

  /** The count stands for chunks 0 to n - 1: every batch must carry the next ones, in order. */
  #countChunks(chunks: readonly Row[]): void {
    for (const chunk of chunks) {
      if (chunk.idx !== this.#chunks) throw new Error(`chunk ${String(chunk.idx)} came where ${this.#chunks} was due`);
      this.#chunks += 1;
    }
  }

  get owned(): Pick<ItemMemo, 'rows' | 'chunks'> {
    return { rows: this.#keys, chunks: this.#chunks };
  }
}

/** Some consecutive chunks of a text, with the extraction windows that start among them. */
export interface TextBatch {
  chunks: Chunk[];
  windows: string[];
  /** The batch begins the text (its first window is the one classification reads). */
  first: boolean;
  /** No chunk or window follows. */
  last: boolean;
  /** Where in the text the next batch begins (the text's length for the last). */
  end: number;
}

/**
 * The chunks of a text that arrives in pieces, `size` at a time, each batch with the windows
 * that start before the next batch's first chunk; chunked as the pieces come, so only about one
 * batch of chunks (and the windows ahead of it) is ever held. An empty text is one empty batch
 * (its document still gets its row).
 */
export async function* textBatches(
  pieces: AsyncIterable<string> | Iterable<string>,
  size: number,
): AsyncGenerator<TextBatch, void, undefined> {
  const chunking = new ChunkStream();
  const windowing = new ChunkStream(WINDOW_CHUNKING);
  const chunks: Chunk[] = [];
  const windows: Chunk[] = [];
  let first = true;
  const take = (end: number, ended: boolean): TextBatch => {
    const batch = chunks.splice(0, size);
    const taken = windows.findIndex((w) => w.charStart >= end);
    const texts = windows.splice(0, taken === -1 ? windows.length : taken).map((w) => w.text);
    const last = ended && chunks.length === 0 && windows.length === 0;
    const span = { chunks: batch, windows: texts, first, last, end };
    first = false;
    return span;
  };
  for await (const piece of pieces) {
    for (const chunk of chunking.push(piece)) chunks.push(chunk);
    for (const window of windowing.push(piece)) windows.push(window);
    // A batch is cut once the chunk after it is known, and a window starting past it.
    while (chunks.length > size && windows.length > 0 && windows.at(-1)!.charStart >= chunks[size]!.charStart)
      yield take(chunks[size]!.charStart, false);
  }
  for (const chunk of chunking.end()) chunks.push(chunk);
  for (const window of windowing.end()) windows.push(window);
  for (;;) {
    const span = take(chunks.length > size ? chunks[size]!.charStart : chunking.length, true);
    yield span;
    if (span.last) return;
  }
}
