// One file's life in a walk, once the stat check could not clear it (engine/walk/walk.ts):
//
//   size limit -> admit (read, sha256, memo check) -> convert (stage 2) -> identity -> chunk ->
//   extract (stage 3) -> embed (stage 4) -> commit (rows durable, stale keys deleted, memo)
//
// A file is read in batches of chunks (config walk.itemBatchChunks, with the extraction windows
// over the same text): each batch is chunked, extracted, embedded and written, and the next is
// prepared while it lands; each batch writes the names it found, merging into the rows of those
// an earlier batch wrote. So a large file's memory and transactions stay bounded whatever its
// size (what grows is the keys of its rows and of its distinct names); a small file is one
// batch, one write, as before. The last batch is written by the commit (engine/item/commit.ts),
// with the memo after it or in its transaction, and the stale rows are deleted only then, so a
// walk killed half-way leaves its old rows and some new ones, and the redo (whose keys are the
// same: derived from the document id, which the first batch made durable) ends with exactly the
// rows of an unbroken walk.
//
// `ingestFile` is the middle, (item, bytes, run context) -> batches of rows: the seam along
// which items can later fan out to other machines (docs/ARCHITECTURE.md "The walk").

import type { ConversionWarning, Converter, MediaType } from '../../stages/convert/index.ts';
import type { Converted, OcrReport } from '../../stages/convert/types.ts';
import type { FileItem } from '../../lib/corpus/files.ts';
import { ConversionError } from '../../stages/convert/index.ts';
import { TextStream } from '../../stages/convert/text.ts';
import { isOcrDeferred, type OcrAsk } from '../../stages/ocr/index.ts';
import type { Config } from '../../lib/config.ts';
import type { Sink } from '../../lib/db/sink.ts';
import { fileIdentity } from '../../lib/state/keys.ts';
import { admitFile, type ChangedFile, type FileContent } from './admit.ts';
import { atStage, StageError } from './at-stage.ts';
import { commitItem, writeItemRows, type CommitDeps } from './commit.ts';
import { ItemMemos } from './item-memos.ts';
import type { ItemSlot } from './slot.ts';
import { failedOutcome, stopsTheWalk, type ItemOutcome } from './outcome.ts';
import { extractDeps, extractWindows, isAnswered, type WindowsExtraction } from '../../stages/extract/index.ts';
import { embedOwners, type EmbeddingInput } from '../../stages/embed.ts';
import type { ItemRows } from '../../stages/upsert.ts';
import { qaKey } from '../../lib/ids.ts';
import type { Database } from '../../lib/db/database.ts';
import {
  contentChunks,
  entityMentions,
  entityMentionsMerged,
  entityRelationships,
  entityRelationshipsMerged,
  qaExtractions,
  recordEmbeddings,
  sourceDocuments,
  type Row,
  type TableSpec,
} from '../../lib/db/tables.ts';
import type { AliasSnapshot } from '../../lib/aliases.ts';
import type { DocumentIdentity } from './identity.ts';
import {
  chunkRowsOf,
  embeddingInputs,
  namedRowsOf,
  OwnedKeys,
  relationshipRowsOf,
  textBatches,
  WrittenOnce,
  type RowOwner,
  type TextBatch,
} from './item-rows.ts';
import type { Models } from '../../lib/models.ts';
import type { WalkDebt } from '../../lib/state/producer-debt.ts';
import type { ItemMemo, StateStore } from '../../lib/state/store.ts';
import { currentRunContext } from '../../lib/run-context.ts';

export interface FileIngestDeps {
  converter: Converter;
  identity: DocumentIdentity;
  models: Models;
  store: StateStore;
  db: Database;
  aliases: AliasSnapshot;
  /** Chunks extracted, embedded and written at a time (config walk.itemBatchChunks). */
  batchChunks: number;
  /**
   * Asked when the file needs OCR and the OCR line is full: true, and the file's life ends in
   * OcrDeferred, for the walk to bring it back (engine/walk/corpus-walk.ts). Unset: it waits.
   */
  mayDeferOcr?: () => boolean;
}

export interface FileWalkDeps extends FileIngestDeps {
  sink: Sink;
  debt: WalkDebt;
  limits: Config['convert'];
  /** Told after each durable batch of a file written in several. */
  onItemProgress?: (progress: ItemProgress) => void;
}

/** How far a file written in several batches has come. */
export interface ItemProgress {
  path: string;
  /** Chunks durable so far. */
  chunks: number;
  /** Share of the file's text whose rows are durable, 0-100. */
  percent: number;
}

/**
 * Walks one file through its life to its outcome: unchanged, changed, or failed at a stage (a
 * failure that stops the walk is thrown). Whatever happens, the outcome names the document the
 * file resolves to, so the cleanup pass keeps its rows.
 */
export async function walkFile(
  item: FileItem,
  mediaType: MediaType,
  deps: FileWalkDeps,
  slot?: ItemSlot,
): Promise<ItemOutcome> {
  const { opId, fullReprocess } = currentRunContext();
  const key = fileIdentity(item.relPath);
  let previous: ItemMemo | undefined;
  const memos = new ItemMemos(deps.store);
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
    const admission = await atStage('admit', () =>
      admitFile(item, deps.store, { fullReprocess, textual: isText(mediaType) }),
    );
    if (admission.kind === 'unchanged') {
      return { path: item.relPath, kind: 'unchanged', liveDocumentId: admission.memo.sourceDocumentId };
    }
    previous = admission.previous;
    const { sha256, mtimeNs } = admission;
    const report = (batch: RowBatch) => {
      if (batch.progress !== null) deps.onItemProgress?.({ path: item.relPath, ...batch.progress });
    };
    const { ingested, last } = await writeBatches(
      deps,
      memos,
      ingestFile(item, mediaType, admission, deps, memos),
      report,
    );
    const sameDocument = previous?.sourceDocumentId === ingested.sourceDocumentId;
    const memo: ItemMemo = {
      sha256,
      size: item.size,
      mtimeNs,
      ino: String(item.ino),
      sourceDocumentId: ingested.sourceDocumentId,
      mediaType,
      opId,
      ...ingested.owned,
      ...(ingested.unreadPages === undefined ? {} : { unreadPages: ingested.unreadPages }),
    };
    await commitItem(deps, memos, {
      key,
      rows: last?.rows ?? new Map(),
      memo,
      previous: sameDocument ? previous : undefined,
      // The item moved to another document.
      retired: sameDocument ? undefined : previous,
      onRowsDurable: () => {
        if (last !== undefined) report(last);
        deps.identity.settled(sha256);
      },
      slot,
    });
    return {
      path: item.relPath,
      kind: 'changed',
      liveDocumentId: ingested.sourceDocumentId,
      ...(ingested.warnings.length > 0 ? { warnings: ingested.warnings } : {}),
      ...(ingested.ocr === undefined ? {} : { ocr: ingested.ocr }),
    };
  } catch (error) {
    await memos.keepAnswered();
    // Put back for later in the walk, it wrote nothing: no row, no memo.
    if (stopsTheWalk(error) || isOcrDeferred(error)) throw error;
    // The item's earlier rows stay as they were: its document is still live.
    return failedOutcome(item.relPath, error, previous?.sourceDocumentId);
  }
}

/**
 * Writes each batch while the next is prepared (its model calls overlap the write), but the
 * last, which goes with the item's memo (engine/item/commit.ts); resolves with what the batches
 * add up to, and that last batch, once every other is durable, in order.
 */
async function writeBatches(
  deps: CommitDeps,
  memos: ItemMemos,
  batches: AsyncGenerator<RowBatch, IngestedFile, undefined>,
  onDurable: (batch: RowBatch) => void,
): Promise<{ ingested: IngestedFile; last: RowBatch | undefined }> {
  let writing: Promise<void> | null = null;
  let last: RowBatch | undefined;
  try {
    for (;;) {
      const next = await batches.next();
      await writing;
      if (next.done === true) return { ingested: next.value, last };
      const batch = next.value;
      if (batch.last) {
        last = batch;
        continue;
      }
      writing = writeItemRows(deps, memos, batch.rows).then(() => onDurable(batch));
      // Awaited before the next batch is written; if preparing that one fails first, below.
      writing.catch(() => {});
    }
  } catch (error) {
    // No write of the item is left in flight when its failure is told.
    await writing?.catch(() => {});
    throw error;
  }
}

/** Some of a file's rows, written in one transaction. */
export interface RowBatch {
  rows: ItemRows;
  /** The file's last batch: written with its memo. */
  last: boolean;
  /** How far the file has come once these rows are durable; null for a file that is one batch. */
  progress: Omit<ItemProgress, 'path'> | null;
}

export interface IngestedFile {
  sourceDocumentId: string;
  /** What the memo keeps of every row the item owns, embeddings kept unchanged included. */
  owned: Pick<ItemMemo, 'rows' | 'chunks'>;
  warnings: ConversionWarning[];
  ocr?: OcrReport;
  unreadPages?: number;
}

/** Batches whose windows are extracted ahead of the one being embedded and written. */
const EXTRACT_AHEAD = 2;

const FILE_TABLES: readonly TableSpec[] = [
  sourceDocuments,
  contentChunks,
  qaExtractions,
  entityMentions,
  entityRelationships,
  recordEmbeddings,
];

/** The file's rows, a batch at a time (textBatches); returns its document and the keys of all it wrote. */
export async function* ingestFile(
  item: FileItem,
  mediaType: MediaType,
  { content, sha256, previous }: Pick<ChangedFile, 'content' | 'sha256' | 'previous'>,
  deps: FileIngestDeps,
  memos: ItemMemos,
): AsyncGenerator<RowBatch, IngestedFile, undefined> {
  const { opId, fullReprocess } = currentRunContext();
  const { models } = deps;
  const byteSize = content.length;
  const ask = { opId, readAgain: fullReprocess, ...(deps.mayDeferOcr ? { mayDefer: deps.mayDeferOcr } : {}) };
  const converted = await atStage('convert', () => convertedText(deps.converter, content, mediaType, ask));
  const sourceDocumentId = await atStage('identity', () =>
    deps.identity.resolve(sha256, item.relPath, previous?.sourceDocumentId),
  );
  const owner: RowOwner = { column: 'source_document_id', id: sourceDocumentId };
  const keys = new OwnedKeys(FILE_TABLES);
  const names = new WrittenOnce();
  /** The rows and their embeddings, the embedded owners' keys counted as the item's. */
  const withEmbeddings = async (
    rows: [TableSpec, Row[]][],
    toEmbed: EmbeddingInput[],
    rewritten: [TableSpec, Row[]][] = [],
  ): Promise<ItemRows> => {
    const embeddingRows = await atStage('embed', () =>
      embedOwners(toEmbed, opId, { client: models.embedder, db: deps.db, queue: models.queue }),
    );
    const batch: ItemRows = new Map([...rows, [recordEmbeddings, embeddingRows]]);
    keys.add(batch, toEmbed);
    // Rows written again (their keys already counted) go first: parents before their children.
    return new Map([...rewritten, ...batch]);
  };
  let qaIdx = 0;
  let chunksDone = 0;
  // The windows of the next batches are extracted while this one is embedded and written, so
  // that the model calls of a large file keep the model queue busy, as a small file's all do.
  // Reading and decoding a streamed text file happens here, as its batches are cut.
  const spans = textBatches(converted.pieces, deps.batchChunks);
  const extracting: { span: TextBatch; found: Promise<WindowsExtraction> }[] = [];
  let document: Row | null = null;
  const extractNext = async () => {
    // Its own stage: cutting a batch reads and decodes a streamed text's next pieces, and is
    // timed apart from the conversion, which runs once an item.
    const next = await atStage('chunk', () => spans.next());
    if (next.done === true) return;
    const span = next.value;
    const found = atStage('extract', () =>
      extractWindows(span.windows, extractDeps(models, memos), { first: span.first }),
    );
    found.catch(() => {}); // awaited in order below
    extracting.push({ span, found });
  };
  for (let i = 0; i <= EXTRACT_AHEAD; i++) await extractNext();
  for (let current = extracting.shift(); current !== undefined; current = extracting.shift()) {
    await extractNext();
    const { span } = current;
    const found = await current.found;
    const chunkRows = chunkRowsOf(owner, span.chunks, opId);
    const qaRows = qaRowsOf(sourceDocumentId, found.qa, qaIdx, opId);
    qaIdx += found.qa.length;
    // Each batch writes the names its windows found; one met again in a later batch is merged
    // into its row by the rule the merge in memory follows, so the rows end as if the whole
    // text had been merged first, while only the names' keys stay in memory.
    const named = await atStage('resolve', () => namedRowsOf(deps, owner, found, opId));
    const mentions = names.split(named.mentionRows);
    const relationships = names.split(relationshipRowsOf(sourceDocumentId, named.relationships, opId));
    const rows: [TableSpec, Row[]][] = [
      [contentChunks, chunkRows],
      [qaExtractions, qaRows],
      [entityMentions, mentions.first],
      [entityMentionsMerged, mentions.again],
      [entityRelationships, relationships.first],
      [entityRelationshipsMerged, relationships.again],
    ];
    if (span.first) {
      document = {
        id: sourceDocumentId,
        rel_path: item.relPath,
        content_sha256: sha256,
        byte_size: byteSize,
        media_type: mediaType,
        title: converted.title(),
        classification: found.classification,
        op_id: opId,
      };
      rows.unshift([sourceDocuments, [document]]);
    }
    // A markdown title first met past the first batch (read before the whole text was) is
    // written with the last.
    const retitled: [TableSpec, Row[]][] =
      span.last && document !== null && !span.first && document.title !== converted.title()
        ? [[sourceDocuments, [{ ...document, title: converted.title() }]]]
        : [];
    const toEmbed = embeddingInputs({ chunks: chunkRows, qa: qaRows, mentions: mentions.first });
    chunksDone += chunkRows.length;
    yield {
      rows: await withEmbeddings(rows, toEmbed, retitled),
      last: span.last,
      progress:
        span.first && span.last ? null : { chunks: chunksDone, percent: Math.floor(100 * converted.share(span.end)) },
    };
  }
  const { ocr, unreadPages } = converted.scan?.() ?? {};
  return {
    sourceDocumentId,
    owned: keys.owned,
    warnings: converted.warnings(),
    ...(ocr === undefined ? {} : { ocr }),
    ...(unreadPages === undefined ? {} : { unreadPages }),
  };
}

/**
 * A batch's Q&A rows, numbered from `first`. The blank-form gate
 * (docs/behaviour/stages.md#blank-form-gate): no row for a blank answer, but its idx is spent, so
 * answered pairs keep their keys when a blank one is filled in or emptied.
 */
function qaRowsOf(
  sourceDocumentId: string,
  pairs: readonly { question: string; answer: string | null }[],
  first: number,
  opId: string,
) {
  return pairs
    .map((pair, i) => ({ idx: first + i, ...pair }))
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
}

/** A document's text as its batches read it: in pieces, with what its conversion says of it. */
export interface ConvertedText {
  pieces: AsyncIterable<string> | Iterable<string>;
  /** As far as the text is read: final once the pieces are. */
  title(): string | null;
  /** Final once the pieces are. */
  warnings(): ConversionWarning[];
  /** What OCR read of a converted PDF, and the pages it left unread. */
  scan?: () => Pick<Converted, 'ocr' | 'unreadPages'>;
  /** The share (0-1) of the document that its text up to `chars` stands for. */
  share(chars: number): number;
}

export const isText = (mediaType: MediaType): mediaType is 'text/markdown' | 'text/plain' =>
  mediaType === 'text/markdown' || mediaType === 'text/plain';

/**
 * A text file is decoded as its bytes are read (stages/convert/text.ts TextStream), never held
 * whole; any other type is converted whole and its text handed on in pieces all the same.
 */
export async function convertedText(
  converter: Converter,
  content: FileContent,
  mediaType: MediaType,
  ocrAsk: OcrAsk = {},
): Promise<ConvertedText> {
  if (content.plan !== null && isText(mediaType)) {
    const stream = new TextStream(content.plan, mediaType);
    return {
      pieces: stream.decode(content.pieces()),
      title: () => stream.title,
      warnings: () => stream.warnings,
      share: (chars) => stream.shareBefore(chars, content.length),
    };
  }
  const { text, title, warnings = [], ocr, unreadPages } = await converter.convert(content.whole(), mediaType, ocrAsk);
  return {
    pieces: piecesOf(text),
    title: () => title,
    warnings: () => warnings,
    scan: () => ({ ocr, unreadPages }),
    share: (chars) => chars / Math.max(1, text.length),
  };
}

/** Characters of a whole converted text handed to the chunker at a time. */
const PIECE_CHARS = 256 * 1024;

function* piecesOf(text: string): Generator<string, void, undefined> {
  for (let start = 0; start < text.length; start += PIECE_CHARS) yield text.slice(start, start + PIECE_CHARS);
}
