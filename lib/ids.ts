// Row identity (docs/behaviour/tables.md#row-keys). Derived rows are keyed by uuid5 over a seed
// text in one frozen namespace, so the same document always yields the same keys and a re-walk
// lands as idempotent ON CONFLICT (id) upserts. The seed texts and the namespace are frozen once a
// bundle is published: changing either orphans every citation
// (docs/behaviour/versioning.md#frozen-keys-and-citations).

import { randomUUID } from 'node:crypto';
import { parse as uuidParse, v5 as uuidv5 } from 'uuid';

/** The uuid5 namespace of every derived key. Never change it. */
export const RECORD_NAMESPACE = 'deb89df4-ce26-4f09-a87d-3f390dea4d44';

// The namespace parsed once, and the seed handed over as UTF-8 bytes: given strings, uuid parses
// the namespace on every call and encodes the seed through encodeURIComponent, which was most of
// a key's cost and of its garbage (bench/README.md "CPU per document"). The bytes are the same;
// a seed that is not well-formed UTF-16 still takes the string path, and still throws there.
const NAMESPACE_BYTES = uuidParse(RECORD_NAMESPACE);

const key = (seed: string): string => uuidv5(seed.isWellFormed() ? Buffer.from(seed, 'utf8') : seed, NAMESPACE_BYTES);

/** source_documents ids are minted at admission and stored, never re-derived. */
export const mintSourceDocumentId = (): string => randomUUID();

export const qaKey = (sourceDocumentId: string, idx: number): string => key(`qa:${sourceDocumentId}:${idx}`);

export const entityMentionKey = (sourceDocumentId: string, canonicalName: string, entityType: string): string =>
  key(`em:${sourceDocumentId}:${canonicalName}:${entityType}`);

export const entityRelationshipKey = (
  sourceDocumentId: string,
  sourceCanonical: string,
  predicate: string,
  targetCanonical: string,
): string => key(`er:${sourceDocumentId}:${sourceCanonical}:${predicate}:${targetCanonical}`);

/** A chunk of a source document or of a reference item: the owner id keeps the two apart. */
export const chunkKey = (ownerId: string, idx: number): string => key(`chunk:${ownerId}:${idx}`);

export const referenceItemKey = (url: string): string => key(`ref:${url}`);

/** A Q&A dedup proposal is one per unordered pair. */
export const dedupKey = (qaA: string, qaB: string): string => {
  const [a, b] = qaA < qaB ? [qaA, qaB] : [qaB, qaA];
  return key(`dedup:${a}:${b}`);
};

/**
 * A concept of the knowledge bundle (stages/producer/): an entity under its resolved root name,
 * or a classifier topic (entityType ''). Cited as record://concept/<id>.
 */
export const conceptKey = (kind: 'entity' | 'topic', entityType: string, name: string): string =>
  key(`concept:${kind}:${entityType}:${name}`);

/**
 * A question of a form (the bid-worker's analyse_form): the form's bytes, the block holding the
 * question and its order within that block, so re-analysing the same form keeps every id.
 */
export const formQuestionKey = (formSha256: string, block: string, ordinal: number): string =>
  key(`formq:${formSha256}:${block}:${ordinal}`);

/** The job of one item of a distributed walk: enqueued again, it adds nothing (engine/walk/distributed.ts). */
export const walkItemJobKey = (opId: string, path: string): string => key(`walk-item:${opId}:${path}`);
