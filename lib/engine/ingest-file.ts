// One changed file, from bytes to rows: convert (stage 2), resolve its document identity,
// chunk. A function of (item, run context) that returns rows: the seam along which items
// can later fan out to other machines (DESIGN.md 15). Model stages join here as they land.

import type { Converter, MediaType } from '../../stages/convert/index.ts';
import { chunkText } from '../../stages/chunk.ts';
import type { FileItem } from '../../stages/source.ts';
import { chunkKey } from '../ids.ts';
import { contentChunks, sourceDocuments, type Row, type TableSpec } from '../db/tables.ts';
import type { DocumentIdentity } from './identity.ts';
import { currentRunContext } from './run-context.ts';

export type ItemRows = Map<TableSpec, Row[]>;

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

export async function atStage<T>(stage: string, work: () => Promise<T> | T): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw error instanceof StageError ? error : new StageError(stage, error);
  }
}

export interface FileIngestDeps {
  converter: Converter;
  identity: DocumentIdentity;
}

export interface IngestedFile {
  sourceDocumentId: string;
  rows: ItemRows;
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
  const rows: ItemRows = new Map<TableSpec, Row[]>([
    [
      sourceDocuments,
      [{
        id: sourceDocumentId, rel_path: item.relPath, content_sha256: sha256, byte_size: bytes.length,
        media_type: mediaType, title: converted.title, classification: null, op_id: opId,
      }],
    ],
    [
      contentChunks,
      chunks.map((c) => ({
        id: chunkKey(sourceDocumentId, c.idx), source_document_id: sourceDocumentId, reference_item_id: null,
        idx: c.idx, text: c.text, char_start: c.charStart, char_end: c.charEnd, op_id: opId,
      })),
    ],
  ]);
  return { sourceDocumentId, rows };
}
