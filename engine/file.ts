// One changed file, from bytes to rows: convert (stage 2), resolve its document identity,
// chunk, extract (stage 3), embed (stage 4). A function of (item, run context) that returns
// rows: the seam along which items can later fan out to other machines (DESIGN.md 15).

import type { Converter, MediaType } from '../stages/convert/index.ts';
import { chunkText } from '../stages/chunk.ts';
import type { FileItem } from '../stages/source.ts';
import { extractDeps, extractDocument, isAnswered } from '../stages/extract/index.ts';
import { embedOwners } from '../stages/embed.ts';
import type { RowKeys } from '../stages/upsert.ts';
import { entityRelationshipKey, qaKey } from '../lib/ids.ts';
import type { Database } from '../lib/db/database.ts';
import {
  contentChunks, entityMentions, entityRelationships, qaExtractions, recordEmbeddings, sourceDocuments, type Row, type TableSpec,
} from '../lib/db/tables.ts';
import type { AliasSnapshot } from '../lib/aliases.ts';
import type { DocumentIdentity } from './identity.ts';
import { chunkRowsOf, embeddingInputs, itemKeys, mentionRowsOf, type ItemRows, type RowOwner } from './item-rows.ts';
import type { Models } from './models.ts';
import type { StateStore } from '../lib/state/store.ts';
import { currentRunContext } from '../lib/run-context.ts';

/** A failure pinned to the stage where it happened, for the walk's tally. */
export class StageError extends Error {
  readonly stage: string;
  readonly code: string;
  constructor(stage: string, cause: unknown) {
    const code = (cause as { code?: unknown })?.code;
    super(cause instanceof Error ? cause.message : String(cause), { cause });
    this.name = 'StageError';
    this.stage = stage;
    this.code = typeof code === 'string' ? code : cause instanceof Error ? cause.name : 'error';
  }
}

/** Told how long each stage of each item took (the walk benchmark's per-stage p50/p99). */
export type StageObserver = (stage: string, milliseconds: number) => void;
let stageObserver: StageObserver | null = null;

export function observeStages(observer: StageObserver | null): void {
  stageObserver = observer;
}

export async function atStage<T>(stage: string, work: () => Promise<T> | T): Promise<T> {
  const started = stageObserver === null ? 0 : performance.now();
  try {
    return await work();
  } catch (error) {
    throw error instanceof StageError ? error : new StageError(stage, error);
  } finally {
    stageObserver?.(stage, performance.now() - started);
  }
}

export interface FileIngestDeps {
  converter: Converter;
  identity: DocumentIdentity;
  models: Models;
  store: StateStore;
  db: Database;
  aliases: AliasSnapshot;
}

export interface IngestedFile {
  sourceDocumentId: string;
  rows: ItemRows;
  /** Keys of every row the item owns per table, including embeddings kept unchanged. */
  keys: RowKeys;
}

export async function ingestFile(
  item: FileItem,
  mediaType: MediaType,
  bytes: Buffer,
  sha256: string,
  deps: FileIngestDeps,
): Promise<IngestedFile> {
  const { opId } = currentRunContext();
  const converted = await atStage('convert', () => deps.converter.convert(bytes, mediaType));
  const sourceDocumentId = await atStage('identity', () => deps.identity.resolve(sha256, item.relPath));
  const chunks = await atStage('chunk', () => chunkText(converted.text));
  const { models } = deps;
  const extraction = await atStage('extract', () =>
    extractDocument(converted.text, extractDeps(models, deps.store, deps.aliases)),
  );

  const owner: RowOwner = { column: 'source_document_id', id: sourceDocumentId };
  const chunkRows = chunkRowsOf(owner, chunks, opId);
  // The blank-form gate (SPEC.md 1 rule 7): no row for a blank answer, but its idx is spent,
  // so answered pairs keep their keys when a blank one is filled in or emptied.
  const qaRows = extraction.qa.filter((pair) => isAnswered(pair.answer)).map((pair) => ({
    id: qaKey(sourceDocumentId, pair.idx), source_document_id: sourceDocumentId, idx: pair.idx,
    question_text: pair.question, answer_text: pair.answer, metadata: {}, op_id: opId,
  }));
  const mentionRows = mentionRowsOf(owner, extraction.entities, opId);
  const relationshipRows = extraction.relationships.map((r) => ({
    id: entityRelationshipKey(sourceDocumentId, r.source, r.predicate, r.target), source_document_id: sourceDocumentId,
    source_canonical: r.source, predicate: r.predicate, target_canonical: r.target, confidence: r.confidence, metadata: {}, op_id: opId,
  }));
  const toEmbed = embeddingInputs({ chunks: chunkRows, qa: qaRows, mentions: mentionRows });
  const embeddingRows = await atStage('embed', () => embedOwners(toEmbed, opId, { client: models.embedder, db: deps.db, queue: models.queue }));

  const rows: ItemRows = new Map<TableSpec, Row[]>([
    [
      sourceDocuments,
      [{
        id: sourceDocumentId, rel_path: item.relPath, content_sha256: sha256, byte_size: bytes.length,
        media_type: mediaType, title: converted.title, classification: extraction.classification, op_id: opId,
      }],
    ],
    [contentChunks, chunkRows],
    [qaExtractions, qaRows],
    [entityMentions, mentionRows],
    [entityRelationships, relationshipRows],
    [recordEmbeddings, embeddingRows],
  ]);
  return { sourceDocumentId, rows, keys: itemKeys(rows, toEmbed) };
}
