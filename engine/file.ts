// One file's life in a walk, once the stat check could not clear it (engine/walk.ts):
//
//   size limit -> admit (read, sha256, memo check) -> convert (stage 2) -> identity -> chunk ->
//   extract (stage 3) -> embed (stage 4) -> commit (rows durable, stale keys deleted, memo)
//
// `ingestFile` is the middle, (item, bytes, run context) -> rows: the seam along which items
// can later fan out to other machines (DESIGN.md 15).

import type { ConversionWarning, Converter, MediaType } from '../stages/convert/index.ts';
import { chunkText } from '../stages/chunk.ts';
import type { FileItem } from '../lib/corpus/files.ts';
import { ConversionError } from '../stages/convert/index.ts';
import type { Config } from '../lib/config.ts';
import type { Sink } from '../lib/db/sink.ts';
import { fileIdentity, retiredIdentity } from '../lib/state/keys.ts';
import { admitFile, type ChangedFile } from './admit.ts';
import { atStage, StageError } from './at-stage.ts';
import { commitItem } from './commit.ts';
import type { LiveItems } from './live-items.ts';
import { extractDeps, extractDocument, isAnswered } from '../stages/extract/index.ts';
import { embedOwners } from '../stages/embed.ts';
import type { ItemRows, RowKeys } from '../stages/upsert.ts';
import { entityRelationshipKey, qaKey } from '../lib/ids.ts';
import type { Database } from '../lib/db/database.ts';
import {
  contentChunks,
  entityMentions,
  entityRelationships,
  qaExtractions,
  recordEmbeddings,
  sourceDocuments,
  type Row,
  type TableSpec,
} from '../lib/db/tables.ts';
import type { AliasSnapshot } from '../lib/aliases.ts';
import type { DocumentIdentity } from './identity.ts';
import { chunkRowsOf, embeddingInputs, itemKeys, namedRowsOf, type RowOwner } from './item-rows.ts';
import type { Models } from '../lib/models.ts';
import type { WalkDebt } from '../lib/state/producer-debt.ts';
import type { ItemMemo, StateStore } from '../lib/state/store.ts';
import { currentRunContext } from '../lib/run-context.ts';

export interface FileIngestDeps {
  converter: Converter;
  identity: DocumentIdentity;
  models: Models;
  store: StateStore;
  db: Database;
  aliases: AliasSnapshot;
}

export interface FileWalkDeps extends FileIngestDeps {
  sink: Sink;
  debt: WalkDebt;
  live: LiveItems;
  limits: Config['convert'];
  /** Hears what an item that landed has to say about its document (the walk's summary shows it). */
  warn: (path: string, warning: ConversionWarning) => void;
}

/**
 * Walks one file through its life; resolves 'unchanged' or 'changed', throws a StageError. Whatever
 * happens, the document the file resolves to is marked live, so the cleanup pass keeps its rows.
 */
export async function walkFile(
  item: FileItem,
  mediaType: MediaType,
  deps: FileWalkDeps,
): Promise<'changed' | 'unchanged'> {
  const { opId, fullReprocess } = currentRunContext();
  const key = fileIdentity(item.relPath);
  let previous: ItemMemo | undefined;
  try {
    if (item.size > deps.limits.maxDocumentBytes) {
      // Refused before reading: a huge file must not be pulled into memory to be rejected.
      throw new StageError(
        'admit',
        new ConversionError(
          'too_large',
          `the file is ${item.size} bytes, over the limit of ${deps.limits.maxDocumentBytes}`,
        ),
      );
    }
    const admission = await atStage('admit', () => admitFile(item, deps.store, fullReprocess));
    if (admission.kind === 'unchanged') {
      deps.live.liveDocumentIds.add(admission.memo.sourceDocumentId);
      return 'unchanged';
    }
    previous = admission.previous;
    const ingested = await ingestFile(item, mediaType, admission, deps);
    const sameDocument = previous?.sourceDocumentId === ingested.sourceDocumentId;
    const memo: ItemMemo = {
      sha256: admission.sha256,
      size: item.size,
      mtimeNs: admission.mtimeNs,
      ino: String(item.ino),
      sourceDocumentId: ingested.sourceDocumentId,
      mediaType,
      opId,
      rows: ingested.keys,
    };
    await commitItem(
      deps,
      { key, rows: ingested.rows, memo, previousKeys: sameDocument ? previous?.rows : undefined },
      async () => {
        deps.identity.settled(admission.sha256);
        if (previous !== undefined && !sameDocument) {
          // The item moved to another document. Its old memo is kept under a key no walk will
          // enumerate, so the cleanup pass (this walk's, or the next one's after a crash)
          // retires the old document's rows unless another item still resolves to it.
          const retired = previous;
          await atStage('memo', () => deps.store.putItem(retiredIdentity(key, opId), retired));
        }
      },
    );
    deps.live.liveDocumentIds.add(ingested.sourceDocumentId);
    for (const warning of ingested.warnings) deps.warn(item.relPath, warning);
    return 'changed';
  } catch (error) {
    // The item's earlier rows stay as they were: its document is still live.
    if (previous !== undefined) deps.live.liveDocumentIds.add(previous.sourceDocumentId);
    throw error;
  }
}

export interface IngestedFile {
  sourceDocumentId: string;
  rows: ItemRows;
  /** Keys of every row the item owns per table, including embeddings kept unchanged. */
  keys: RowKeys;
  warnings: ConversionWarning[];
}

export async function ingestFile(
  item: FileItem,
  mediaType: MediaType,
  { bytes, sha256, previous }: Pick<ChangedFile, 'bytes' | 'sha256' | 'previous'>,
  deps: FileIngestDeps,
): Promise<IngestedFile> {
  const { opId } = currentRunContext();
  const converted = await atStage('convert', () => deps.converter.convert(bytes, mediaType));
  const sourceDocumentId = await atStage('identity', () =>
    deps.identity.resolve(sha256, item.relPath, previous?.sourceDocumentId),
  );
  const chunks = await atStage('chunk', () => chunkText(converted.text));
  const { models } = deps;
  const extraction = await atStage('extract', () => extractDocument(converted.text, extractDeps(models, deps.store)));

  const owner: RowOwner = { column: 'source_document_id', id: sourceDocumentId };
  const chunkRows = chunkRowsOf(owner, chunks, opId);
  // The blank-form gate (SPEC.md 1 rule 7): no row for a blank answer, but its idx is spent,
  // so answered pairs keep their keys when a blank one is filled in or emptied.
  const qaRows = extraction.qa
    .filter((pair) => isAnswered(pair.answer))
    .map((pair) => ({
      id: qaKey(sourceDocumentId, pair.idx),
      source_document_id: sourceDocumentId,
      idx: pair.idx,
      question_text: pair.question,
      answer_text: pair.answer,
      metadata: {},
      op_id: opId,
    }));
  const { mentionRows, relationships } = await atStage('resolve', () => namedRowsOf(deps, owner, extraction, opId));
  const relationshipRows = relationships.map((r) => ({
    id: entityRelationshipKey(sourceDocumentId, r.source, r.predicate, r.target),
    source_document_id: sourceDocumentId,
    source_canonical: r.source,
    predicate: r.predicate,
    target_canonical: r.target,
    confidence: r.confidence,
    metadata: {},
    op_id: opId,
  }));
  const toEmbed = embeddingInputs({ chunks: chunkRows, qa: qaRows, mentions: mentionRows });
  const embeddingRows = await atStage('embed', () =>
    embedOwners(toEmbed, opId, { client: models.embedder, db: deps.db, queue: models.queue }),
  );

  const rows: ItemRows = new Map<TableSpec, Row[]>([
    [
      sourceDocuments,
      [
        {
          id: sourceDocumentId,
          rel_path: item.relPath,
          content_sha256: sha256,
          byte_size: bytes.length,
          media_type: mediaType,
          title: converted.title,
          classification: extraction.classification,
          op_id: opId,
        },
      ],
    ],
    [contentChunks, chunkRows],
    [qaExtractions, qaRows],
    [entityMentions, mentionRows],
    [entityRelationships, relationshipRows],
    [recordEmbeddings, embeddingRows],
  ]);
  return { sourceDocumentId, rows, keys: itemKeys(rows, toEmbed), warnings: converted.warnings ?? [] };
}
