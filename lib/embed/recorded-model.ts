// Which model made the database's vectors (schema/0023_embedding_model.sql; docs/DECISIONS.md
// "An embedder of the user's choosing"). A vector is comparable only with vectors of its own
// model, so whatever reads or writes them (a walk, `ingest search`, template_fill) first checks
// that the configured model is the database's, and stops with a named error that says what to do.

import type { Queryable } from '../db/database.ts';
import { IngestError } from '../errors.ts';

export class EmbeddingModelChangedError extends IngestError {
  constructor(recorded: string, reembedTo: string | null, configured: string) {
    super(
      'embedding_model_changed',
      reembedTo === null
        ? `the database's vectors were made by the embedding model ${recorded}, and INGEST_EMBEDDING_MODEL names ` +
            `${configured}: vectors of two models never mix. Run \`ingest reembed\` to re-embed every owner with ` +
            `${configured} (no extraction call; a stopped run goes on where it stopped), or set ` +
            `INGEST_EMBEDDING_MODEL=${recorded}`
        : `an \`ingest reembed\` from ${recorded} to ${reembedTo} did not finish: the database holds vectors of both. ` +
            `Run \`ingest reembed\` again (INGEST_EMBEDDING_MODEL=${reembedTo} finishes it; ${recorded} goes back)`,
    );
  }
}

/** A walk worker configured with another embedding model than its walk's coordinator. */
export class EmbeddingModelMismatchError extends IngestError {
  constructor(worker: string, configured: string, walks: string) {
    super(
      'embedding_model_mismatch',
      `walk worker ${worker} embeds with ${configured} (INGEST_EMBEDDING_MODEL) and its walk with ${walks}: ` +
        `vectors of two models never mix, so it ran no item of this walk. Give every walk worker the ` +
        `coordinator's INGEST_EMBEDDING_MODEL; the next walk takes the item again`,
    );
  }
}

export interface RecordedModel {
  /** The model of the database's vectors; null: none yet. */
  model: string | null;
  /** The model an unfinished `ingest reembed` embeds with; null: none running. */
  reembedTo: string | null;
  /** Where that reembed goes on among the entity roots; null: from the first. */
  rootsAfter: { type: string; name: string } | null;
}

/**
 * The recorded model, else that of any vector already there (a database embedded before the
 * record, or by a walk stopped before it recorded), else none. COALESCE reads the table of
 * vectors only when nothing is recorded.
 */
export async function recordedModel(db: Queryable): Promise<RecordedModel> {
  const { rows } = await db.query<{
    model: string | null;
    reembed_to: string | null;
    after_type: string | null;
    after_name: string | null;
  }>(
    `SELECT coalesce((SELECT model FROM embedding_model), (SELECT model FROM record_embeddings LIMIT 1)) AS model,
            r.reembed_to, r.reembed_after_type AS after_type, r.reembed_after_name AS after_name
       FROM (SELECT 1) AS one LEFT JOIN embedding_model r ON true`,
  );
  const row = rows[0]!;
  return {
    model: row.model,
    reembedTo: row.reembed_to,
    rootsAfter:
      row.after_type === null || row.after_name === null ? null : { type: row.after_type, name: row.after_name },
  };
}

/** Throws EmbeddingModelChangedError unless the database's vectors are all of `configured` (or there are none). */
export async function assertEmbeddingModel(db: Queryable, configured: string): Promise<void> {
  const { model, reembedTo } = await recordedModel(db);
  if (reembedTo !== null || (model !== null && model !== configured))
    throw new EmbeddingModelChangedError(model ?? configured, reembedTo, configured);
}

/** After a walk: a database with vectors and no record records the model that made them. */
export async function recordFirstEmbedding(db: Queryable): Promise<void> {
  await db.query(
    `INSERT INTO embedding_model (model) SELECT model FROM record_embeddings LIMIT 1 ON CONFLICT (singleton) DO NOTHING`,
  );
}
