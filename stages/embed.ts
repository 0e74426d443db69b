// Stage 4, embedding (docs/behaviour/stages.md#stage-4-embedding): text-embedding-3-large at 1024
// dimensions into record_embeddings, keyed (owner_kind, owner_id); or the model the operator
// chose (INGEST_EMBEDDING_MODEL, docs/DECISIONS.md "An embedder of the user's choosing"), whose
// vectors must be 1024 long too: the first answer of another length stops its caller. What is embedded: each content
// chunk's text, each answered Q&A pair as "Q: ... A: ...", and each entity mention's canonical
// name.
//
// The table is the memo, keyed by (model, dimensions, text hash): an owner whose row already
// holds the vector of its text is only restamped (its item changed); an owner whose text some
// other row already embeds gets a copy of that vector (made inside the database when its rows
// are written); only texts the table has never seen are sent to the model. Vectors are stored
// once, in record_embeddings, never again in the engine state store. full_reprocess re-embeds
// everything.
// Requests are batched (many inputs each, bounded in count and size) and retried by the
// service's wrapper. Vectors arrive as base64 float32s and stay Float32Arrays on their way to the
// sink (bench/README.md "CPU per document"): the SDK's own decoding, used when no encoding is
// asked for, turns each into an array of 1,024 boxed numbers, and those arrays were the largest
// share of the walk's garbage.

import type PQueue from 'p-queue';
import type { Database, Queryable } from '../lib/db/database.ts';
import { embeddingKey, VectorCopy, type Row } from '../lib/db/tables.ts';
import { EMBEDDING_DIMENSIONS, type EmbeddingClient } from '../lib/embed/client.ts';
import { IngestError } from '../lib/errors.ts';
import { sha256Hex } from '../lib/hash.ts';
import { countEvent, currentRunContext } from '../lib/run-context.ts';
import { withRetry, type RetryPolicy } from '../lib/llm/retry.ts';

export type OwnerKind = 'content_chunk' | 'q_a_extraction' | 'entity_mention' | 'reference_item';

export interface EmbeddingInput {
  ownerKind: OwnerKind;
  ownerId: string;
  text: string;
}

export interface EmbedDeps {
  client: EmbeddingClient;
  db: Database;
  queue: PQueue;
  retry?: RetryPolicy;
  /** Hears each retry; a walk counts them as model_retry (the default), other callers as they like. */
  onRetry?: () => void;
}

const MAX_INPUTS_PER_REQUEST = 256;
const MAX_CHARS_PER_REQUEST = 400_000;
/** ~6k tokens: under the 8,192-token input limit for any script. */
const MAX_CHARS_PER_INPUT = 24_000;

/** The model answered vectors of another length than the schema's (EMBEDDING_DIMENSIONS). */
export class EmbeddingDimensionsError extends IngestError {
  constructor(model: string, length: number, sentDimensions: boolean) {
    super(
      'embedding_dimensions',
      `the embedding model ${model} answered vectors of ${length} dimensions, where the database holds ` +
        `${EMBEDDING_DIMENSIONS}; nothing was written. Serve a model of ${EMBEDDING_DIMENSIONS} dimensions` +
        (sentDimensions
          ? ' (this request asked for them: the server ignored `dimensions`)'
          : ', or set INGEST_EMBEDDING_SEND_DIMENSIONS=true if the server can shorten its vectors'),
    );
  }
}

/** True when `error`, or one it was caused by, is a model answering the wrong length: no later call would do better. */
export function isWrongDimensions(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) if (e instanceof EmbeddingDimensionsError) return true;
  return false;
}

/** The inputs as they are embedded: cut to the model's limit, blank ones left out, each with its text's hash. */
export function embeddable<I extends EmbeddingInput>(inputs: readonly I[]): (I & { hash: string })[] {
  return inputs
    .map((input) => ({ ...input, text: input.text.slice(0, MAX_CHARS_PER_INPUT) }))
    .filter((input) => /\S/.test(input.text))
    .map((input) => ({ ...input, hash: sha256Hex(input.text) }));
}

/** The record_embeddings rows to write for these owners (unchanged ones are only restamped). */
export async function embedOwners(inputs: readonly EmbeddingInput[], opId: string, deps: EmbedDeps): Promise<Row[]> {
  const model = deps.client.embeddingModel.name;
  const wanted = embeddable(inputs);
  if (wanted.length === 0) return [];
  const current = currentRunContext().fullReprocess
    ? new Map<string, string>()
    : await existingHashes(deps.db, wanted, model);
  const changed = wanted.filter((w) => current.get(embeddingKey(w.ownerKind, w.ownerId)) !== w.hash);
  const kept = wanted.filter((w) => current.get(embeddingKey(w.ownerKind, w.ownerId)) === w.hash);
  if (kept.length > 0) await restamp(deps.db, kept, opId);
  const known = currentRunContext().fullReprocess
    ? new Set<string>()
    : await knownTexts(
        deps.db,
        changed.map((w) => w.hash),
        model,
      );
  const vectors = await embedDistinct(
    changed.filter((w) => !known.has(w.hash)),
    deps,
  );
  return changed.map((w) => ({
    owner_kind: w.ownerKind,
    owner_id: w.ownerId,
    model,
    embedding: vectors.get(w.hash) ?? new VectorCopy(w.text),
    content_sha256: w.hash,
    op_id: opId,
  }));
}

/** Each distinct text embedded once, whatever the number of owners sharing it; vectors by text hash. */
export async function embedDistinct(
  inputs: readonly { text: string; hash: string }[],
  deps: Pick<EmbedDeps, 'client' | 'queue' | 'retry'>,
): Promise<Map<string, Float32Array>> {
  const texts = new Map(inputs.map((w) => [w.hash, w.text]));
  const vectors = await embedVectors([...texts.values()], deps);
  return new Map([...texts.keys()].map((hash, i) => [hash, vectors[i]!]));
}

/**
 * The rows with every VectorCopy replaced by a vector embedded now: for an item whose copies
 * found no source row at commit (another item's edit deleted the last owner of that text
 * meanwhile). Rare, and it costs only those texts' embedding.
 */
export async function embedVectorCopies(
  rows: readonly Row[],
  deps: Pick<EmbedDeps, 'client' | 'queue' | 'retry'>,
): Promise<Row[]> {
  const copies = rows.flatMap((row) =>
    row.embedding instanceof VectorCopy ? [{ text: row.embedding.text, hash: String(row.content_sha256) }] : [],
  );
  const vectors = await embedDistinct(copies, deps);
  return rows.map((row) =>
    row.embedding instanceof VectorCopy ? { ...row, embedding: vectors.get(String(row.content_sha256)) } : row,
  );
}

// The model is compared here, not in SQL: an owner has one row, and with `model = $3` in the
// statement a planner without statistics (PGlite never analyses; nor does a server with
// autovacuum off) ANDed the primary key with the whole (model, content_sha256) index, 20-40 s
// per document over 6.1 million embeddings.
async function existingHashes(
  db: Database,
  wanted: readonly EmbeddingInput[],
  model: string,
): Promise<Map<string, string>> {
  const { rows } = await db.query<{ key: string; model: string; content_sha256: string | null }>(
    `SELECT owner_kind || ':' || owner_id AS key, model, content_sha256 FROM record_embeddings
      WHERE (owner_kind, owner_id) IN (SELECT k, i::uuid FROM unnest($1::text[], $2::text[]) AS u(k, i))`,
    [wanted.map((w) => w.ownerKind), wanted.map((w) => w.ownerId)],
  );
  return new Map(
    rows.filter((r) => r.model === model && r.content_sha256 !== null).map((r) => [r.key, r.content_sha256!]),
  );
}

/**
 * The texts whose vector the table already holds. Their owners' rows carry a VectorCopy: the
 * sink copies the vector inside the database, in the transaction that writes the owners, so an
 * embedding never becomes durable before (or without) the row it embeds.
 */
export async function knownTexts(db: Queryable, hashes: readonly string[], model: string): Promise<Set<string>> {
  if (hashes.length === 0) return new Set();
  const { rows } = await db.query<{ h: string }>(
    `SELECT u.h FROM unnest($2::text[]) AS u(h)
      WHERE EXISTS (SELECT 1 FROM record_embeddings WHERE model = $1 AND content_sha256 = u.h)`,
    [model, [...new Set(hashes)]],
  );
  return new Set(rows.map((r) => r.h));
}

async function restamp(db: Database, kept: readonly EmbeddingInput[], opId: string): Promise<void> {
  await db.query(
    `UPDATE record_embeddings SET op_id = $3, updated_at = now()
      WHERE (owner_kind, owner_id) IN (SELECT k, i::uuid FROM unnest($1::text[], $2::text[]) AS u(k, i))`,
    [kept.map((w) => w.ownerKind), kept.map((w) => w.ownerId), opId],
  );
}

/** embedTexts bound to a client, with the model its vectors are stamped with (stage 5's names). */
export interface TextEmbedder {
  (texts: string[]): Promise<number[][]>;
  readonly model: string;
}

export function textEmbedder(deps: Pick<EmbedDeps, 'client' | 'queue' | 'retry' | 'onRetry'>): TextEmbedder {
  return Object.assign((texts: string[]) => embedTexts(texts, deps), { model: deps.client.embeddingModel.name });
}

/** Embeds texts in batched requests; vectors come back in input order, as arrays of numbers. */
export async function embedTexts(
  texts: readonly string[],
  deps: Pick<EmbedDeps, 'client' | 'queue' | 'retry' | 'onRetry'>,
): Promise<number[][]> {
  return (await embedVectors(texts, deps)).map(numbersOf);
}

/** The vector's values as plain numbers (a loop: Array.from walks a typed array by iterator, an object per value). */
function numbersOf(vector: Float32Array): number[] {
  const numbers = new Array<number>(vector.length);
  for (let i = 0; i < vector.length; i++) numbers[i] = vector[i]!;
  return numbers;
}

/** embedTexts with each vector as the model sent it: float32s, with no array of numbers made. */
export async function embedVectors(
  texts: readonly string[],
  deps: Pick<EmbedDeps, 'client' | 'queue' | 'retry' | 'onRetry'>,
): Promise<Float32Array[]> {
  const batches: { start: number; texts: string[] }[] = [];
  let batch: string[] = [];
  let chars = 0;
  texts.forEach((text, i) => {
    if (batch.length === MAX_INPUTS_PER_REQUEST || (batch.length > 0 && chars + text.length > MAX_CHARS_PER_REQUEST)) {
      batches.push({ start: i - batch.length, texts: batch });
      batch = [];
      chars = 0;
    }
    batch.push(text);
    chars += text.length;
  });
  if (batch.length > 0) batches.push({ start: texts.length - batch.length, texts: batch });
  const out: Float32Array[] = new Array(texts.length);
  const { name: model, sendDimensions } = deps.client.embeddingModel;
  await Promise.all(
    batches.map((b) =>
      deps.queue.add(async () => {
        const response = await withRetry(
          (signal) =>
            deps.client.embeddings.create(
              {
                model,
                ...(sendDimensions ? { dimensions: EMBEDDING_DIMENSIONS } : {}),
                input: b.texts,
                encoding_format: 'base64',
              },
              { signal },
            ),
          deps.retry,
          deps.onRetry ?? (() => countEvent('model_retry')),
          'embedding',
        );
        for (const item of response.data) {
          const vector = float32Vector(item.embedding);
          // Checked before any vector leaves here: none of another length is ever written.
          if (vector.length !== EMBEDDING_DIMENSIONS)
            throw new EmbeddingDimensionsError(model, vector.length, sendDimensions);
          out[b.start + item.index] = vector;
        }
      }),
    ),
  );
  return out;
}

/**
 * A vector of the response. Asked for base64, the SDK hands the string on as it came (typed as
 * numbers all the same); an endpoint that answers with numbers anyway is taken as it is.
 */
function float32Vector(embedding: number[] | string): Float32Array {
  if (typeof embedding !== 'string') return Float32Array.from(embedding);
  // Little-endian float32s, as the SDK reads them too, decoded straight into the vector's memory.
  const bytes = Buffer.byteLength(embedding, 'base64');
  if (bytes % Float32Array.BYTES_PER_ELEMENT !== 0)
    throw new RangeError(`a base64 vector of ${bytes} bytes is not float32s`);
  const vector = new Float32Array(bytes / Float32Array.BYTES_PER_ELEMENT);
  Buffer.from(vector.buffer).write(embedding, 'base64');
  return vector;
}
