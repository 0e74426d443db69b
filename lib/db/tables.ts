// What the sink knows of each table the walk writes: columns with their SQL types, the
// conflict key, and the order in which tables are flushed so that a row lands after the rows
// its foreign keys point at. Columns with database defaults that an upsert must not overwrite
// (created_at) are simply not listed.

/**
 * What an upsert sets on a row already holding the key: column -> SQL expression over
 * EXCLUDED (the new row) and the table's name (the row there). Columns not named keep their values.
 */
export type ConflictMerge = Readonly<Record<string, string>>;

export type ColumnType =
  'uuid' | 'text' | 'integer' | 'bigint' | 'real' | 'boolean' | 'jsonb' | 'timestamptz' | 'vector';

export interface Column {
  readonly name: string;
  readonly type: ColumnType;
}

export interface TableSpec {
  readonly name: string;
  readonly columns: readonly Column[];
  /** The ON CONFLICT target: the primary key. */
  readonly key: readonly string[];
  /**
   * Rows matching this predicate are curated: a walk never updates or deletes them
   * (docs/behaviour/states.md#curation-pins). Written against the table's own name.
   */
  readonly pinned?: string;
  /**
   * The columns naming what a vector was computed from. A row whose vector is a VectorCopy gets
   * the vector of a row of the same table that matches it on these columns, copied inside the
   * database: the vector never travels to this process and back.
   */
  readonly vectorSource?: readonly string[];
  /**
   * On a key already held, what the upsert sets instead of every column taking the new value.
   * A spec with a merge writes rows into ones the same walk already wrote (a large file's names,
   * met again in a later batch): the sink counts them once, when first written.
   */
  readonly merge?: ConflictMerge;
}

export type Row = Readonly<Record<string, unknown>>;

/** The value of a vector column to be copied (see TableSpec.vectorSource); `text` is what it embeds. */
export class VectorCopy {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/** The metadata key that marks an entity_mentions row curated (an admin merge sets it). */
export const CURATION_PIN = 'curation_pinned';

/**
 * "The mention row `alias` is pinned", as SQL: the very expression of the partial index
 * entity_mentions_pinned_idx, so that a WHERE holding it reads that index (`... IS TRUE` does
 * not match the index). It is NULL, not false, for a row never pinned: for a negation or a
 * column, use isPinnedMention.
 */
export function pinnedMention(alias = 'entity_mentions'): string {
  return `(${alias}.metadata ->> '${CURATION_PIN}')::boolean`;
}

/** pinnedMention as a plain true or false: for NOT (...) and for a column. */
export function isPinnedMention(alias = 'entity_mentions'): string {
  return `${pinnedMention(alias)} IS TRUE`;
}

function table(name: string, key: readonly string[], columns: Record<string, ColumnType>, pinned?: string): TableSpec {
  return Object.freeze({
    name,
    key: Object.freeze([...key]),
    columns: Object.freeze(Object.entries(columns).map(([column, type]) => Object.freeze({ name: column, type }))),
    ...(pinned === undefined ? {} : { pinned }),
  });
}

export const sourceDocuments = table('source_documents', ['id'], {
  id: 'uuid',
  rel_path: 'text',
  content_sha256: 'text',
  byte_size: 'bigint',
  media_type: 'text',
  title: 'text',
  classification: 'jsonb',
  op_id: 'uuid',
});

export const referenceItems = table('reference_items', ['id'], {
  id: 'uuid',
  url: 'text',
  title: 'text',
  content_sha256: 'text',
  classification: 'jsonb',
  fetched_at: 'timestamptz',
  op_id: 'uuid',
});

export const contentChunks = table('content_chunks', ['id'], {
  id: 'uuid',
  source_document_id: 'uuid',
  reference_item_id: 'uuid',
  idx: 'integer',
  text: 'text',
  char_start: 'integer',
  char_end: 'integer',
  op_id: 'uuid',
});

export const qaExtractions = table('q_a_extractions', ['id'], {
  id: 'uuid',
  source_document_id: 'uuid',
  idx: 'integer',
  question_text: 'text',
  answer_text: 'text',
  metadata: 'jsonb',
  op_id: 'uuid',
});

export const entityMentions = table(
  'entity_mentions',
  ['id'],
  {
    id: 'uuid',
    source_document_id: 'uuid',
    reference_item_id: 'uuid',
    canonical_name: 'text',
    entity_type: 'text',
    surface_form: 'text',
    confidence: 'real',
    metadata: 'jsonb',
    op_id: 'uuid',
  },
  isPinnedMention(),
);

export const entityRelationships = table('entity_relationships', ['id'], {
  id: 'uuid',
  source_document_id: 'uuid',
  source_canonical: 'text',
  predicate: 'text',
  target_canonical: 'text',
  confidence: 'real',
  metadata: 'jsonb',
  op_id: 'uuid',
});

export const recordEmbeddings: TableSpec = Object.freeze({
  ...table('record_embeddings', ['owner_kind', 'owner_id'], {
    owner_kind: 'text',
    owner_id: 'uuid',
    model: 'text',
    embedding: 'vector',
    content_sha256: 'text',
    op_id: 'uuid',
  }),
  vectorSource: Object.freeze(['model', 'content_sha256']),
});

/**
 * Two mentions on one key keep the better surface form (higher confidence, then the first in
 * byte order) and the higher confidence, whichever came first (stages/extract/index.ts
 * outranks is the same rule in memory); a pinned holder is left as it is (the table's rule).
 */
export const MENTION_MERGE: ConflictMerge = {
  surface_form: `CASE WHEN EXCLUDED.confidence > entity_mentions.confidence
                        OR (EXCLUDED.confidence = entity_mentions.confidence
                            AND EXCLUDED.surface_form < entity_mentions.surface_form COLLATE "C")
                      THEN EXCLUDED.surface_form ELSE entity_mentions.surface_form END`,
  confidence: 'GREATEST(entity_mentions.confidence, EXCLUDED.confidence)',
};

/** Two relationships on one key keep the higher confidence. */
export const RELATIONSHIP_MERGE: ConflictMerge = {
  confidence: 'GREATEST(entity_relationships.confidence, EXCLUDED.confidence)',
};

/** Mentions merged into the ones an item already wrote this walk (a large file's later batches). */
export const entityMentionsMerged: TableSpec = Object.freeze({ ...entityMentions, merge: MENTION_MERGE });

/** Relationships merged into the ones an item already wrote this walk. */
export const entityRelationshipsMerged: TableSpec = Object.freeze({
  ...entityRelationships,
  merge: RELATIONSHIP_MERGE,
});

/** Rows per table, as one unit: an item's rows land together or not at all. */
export type TableRows = ReadonlyMap<TableSpec, readonly Row[]>;

/** The text form of a row's key, as item memos store it ("owner_kind:owner_id" for composite keys). */
export function rowKey(spec: TableSpec, row: Row): string {
  return spec.key.map((k) => String(row[k])).join(':');
}

/** The key of an owner's embedding row, as rowKey gives it. */
export const embeddingKey = (ownerKind: string, ownerId: string): string =>
  rowKey(recordEmbeddings, { owner_kind: ownerKind, owner_id: ownerId });

/** Flush order: parents before the rows that reference them. */
export const WALK_TABLES: readonly TableSpec[] = Object.freeze([
  sourceDocuments,
  referenceItems,
  contentChunks,
  qaExtractions,
  entityMentions,
  entityMentionsMerged,
  entityRelationships,
  entityRelationshipsMerged,
  recordEmbeddings,
]);
