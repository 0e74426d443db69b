// `ingest reembed`: every vector of the database made again by the configured embedding model
// (docs/DECISIONS.md "An embedder of the user's choosing"), then that model recorded
// (schema/0023_embedding_model.sql). Inside the writer fence, as a walk: it rewrites rows a walk
// writes. No extraction call: the texts embedded are those the rows already hold, as stage 4
// and stage 5 made them (engine/item/item-rows.ts embeddingInputs, the roots' names).
//
// Each distinct text is sent to the model once in a run: one an earlier batch embedded is copied
// from its row, and a root's from a mention of its name.
//
// Resumable: each batch commits alone. A record_embeddings row carries its model, so a re-run
// skips the rows already of the configured model; entity_names carries none, so the last root
// re-embedded is kept with the batch that re-embedded it, and a re-run goes on after it. While
// it runs, the record names both models, and walks, searches and template_fill refuse to start
// (lib/embed/recorded-model.ts).

import type { Database, Queryable } from '../../lib/db/database.ts';
import { recordEmbeddings, VectorCopy, type Row } from '../../lib/db/tables.ts';
import { upsertRows } from '../../lib/db/upsert-rows.ts';
import type { EmbeddingClient } from '../../lib/embed/client.ts';
import { recordedModel } from '../../lib/embed/recorded-model.ts';
import { sha256Hex } from '../../lib/hash.ts';
import { embeddable, embedDistinct, embedTexts, knownTexts, type EmbeddingInput } from '../../stages/embed.ts';
import { vectorLiteral } from '../../stages/resolve/roots.ts';
import { embeddingInputs } from '../item/item-rows.ts';
import type { Lifespan } from '../lifespan.ts';
import { underWriterFence } from './under-fence.ts';
import type PQueue from 'p-queue';

/** Owners (or roots) re-embedded a batch: one commit each, so a stop loses at most one batch. */
export const REEMBED_BATCH = 256;

export interface ReembedReport {
  /** The model the vectors were of (null: none yet), and the one they are of now. */
  from: string | null;
  model: string;
  /** record_embeddings rows re-embedded by this run, and those a run before had done. */
  owners: number;
  ownersAlreadyDone: number;
  /** Rows of an owner gone, or of no text to embed (the owner kind reference_item): deleted. */
  ownersDeleted: number;
  /** entity_names roots re-embedded (stage 5's candidate vectors). */
  roots: number;
  /** Distinct texts sent to the model. */
  textsEmbedded: number;
}

interface Embedding {
  client: EmbeddingClient;
  queue: PQueue;
}

export async function reembedUnderFence(lifespan: Lifespan, batch = REEMBED_BATCH): Promise<ReembedReport> {
  const embedding = { client: lifespan.models.embedder, queue: lifespan.models.queue };
  const { result, counters } = await underWriterFence(lifespan, (db, opId) => reembed(db, embedding, opId, batch));
  lifespan.log.info({ ...result, counters }, 'reembed done');
  return result;
}

async function reembed(db: Database, embedding: Embedding, opId: string, batch: number): Promise<ReembedReport> {
  const model = embedding.client.embeddingModel.name;
  const recorded = await recordedModel(db);
  const report: ReembedReport = {
    from: recorded.model,
    model,
    owners: 0,
    ownersAlreadyDone: 0,
    ownersDeleted: 0,
    roots: 0,
    textsEmbedded: 0,
  };
  // Already of this model, and no run unfinished: nothing to read, nothing to send.
  if (recorded.model === model && recorded.reembedTo === null) return report;
  // Another target than the unfinished run's: its roots are all to do again.
  const rootsAfter = recorded.reembedTo === model ? recorded.rootsAfter : null;
  await db.query(
    `INSERT INTO embedding_model (model, reembed_to, reembed_after_type, reembed_after_name) VALUES ($1, $2, $3, $4)
     ON CONFLICT (singleton) DO UPDATE SET reembed_to = $2, reembed_after_type = $3, reembed_after_name = $4`,
    [recorded.model ?? model, model, rootsAfter?.type ?? null, rootsAfter?.name ?? null],
  );
  await reembedOwners(db, embedding, opId, batch, report);
  await reembedRoots(db, embedding, batch, rootsAfter, report);
  await db.query(
    `UPDATE embedding_model SET model = $1, reembed_to = NULL, reembed_after_type = NULL, reembed_after_name = NULL,
            recorded_at = now()`,
    [model],
  );
  return report;
}

/**
 * Walks record_embeddings in key order, a batch at a time, re-embedding the rows of another
 * model. The model is compared here, not in SQL (as stages/embed.ts does, for the same planner).
 */
async function reembedOwners(
  db: Database,
  embedding: Embedding,
  opId: string,
  batch: number,
  report: ReembedReport,
): Promise<void> {
  const model = embedding.client.embeddingModel.name;
  let after: { kind: string; id: string } | null = null;
  for (;;) {
    const { rows } = await db.query<{ owner_kind: string; owner_id: string; model: string }>(
      `SELECT owner_kind, owner_id::text AS owner_id, model FROM record_embeddings
        WHERE $1::text IS NULL OR (owner_kind, owner_id) > ($1::text, $2::uuid)
        ORDER BY owner_kind, owner_id LIMIT $3`,
      [after?.kind ?? null, after?.id ?? null, batch],
    );
    if (rows.length === 0) return;
    const last: { owner_kind: string; owner_id: string } = rows[rows.length - 1]!;
    after = { kind: last.owner_kind, id: last.owner_id };
    const pending = rows.filter((r) => r.model !== model);
    report.ownersAlreadyDone += rows.length - pending.length;
    if (pending.length === 0) continue;
    const inputs = embeddable(await ownerTexts(db, pending));
    // A text an earlier batch embedded with this model is copied from its row, inside the
    // database, as a walk does: each distinct text goes to the model once in the whole run.
    const known = await knownTexts(
      db,
      inputs.map((i) => i.hash),
      model,
    );
    const vectors = await embedDistinct(
      inputs.filter((i) => !known.has(i.hash)),
      embedding,
    );
    report.textsEmbedded += vectors.size;
    const kept = new Set(inputs.map((i) => `${i.ownerKind}:${i.ownerId}`));
    const gone = pending.filter((r) => !kept.has(`${r.owner_kind}:${r.owner_id}`));
    const written: Row[] = inputs.map((i) => ({
      owner_kind: i.ownerKind,
      owner_id: i.ownerId,
      model,
      embedding: vectors.get(i.hash) ?? new VectorCopy(i.text),
      content_sha256: i.hash,
      op_id: opId,
    }));
    await db.transaction(async (tx) => {
      await upsertRows(tx, recordEmbeddings, written, 'unnest');
      if (gone.length > 0)
        await tx.query(
          `DELETE FROM record_embeddings e USING unnest($1::text[], $2::uuid[]) AS u(k, i)
            WHERE e.owner_kind = u.k AND e.owner_id = u.i`,
          [gone.map((r) => r.owner_kind), gone.map((r) => r.owner_id)],
        );
    });
    report.owners += written.length;
    report.ownersDeleted += gone.length;
  }
}

/** The text each owner's vector is of, as stage 4 makes it; an owner gone (or of no text) has none. */
async function ownerTexts(
  db: Queryable,
  owners: readonly { owner_kind: string; owner_id: string }[],
): Promise<EmbeddingInput[]> {
  const ids = (kind: string) => owners.filter((o) => o.owner_kind === kind).map((o) => o.owner_id);
  const [chunks, qa, mentions] = await Promise.all([
    db.query<{ id: string; text: string }>(
      `SELECT id::text AS id, text FROM content_chunks WHERE id = ANY($1::uuid[])`,
      [ids('content_chunk')],
    ),
    db.query<{ id: string; question_text: string; answer_text: string | null }>(
      `SELECT id::text AS id, question_text, answer_text FROM q_a_extractions WHERE id = ANY($1::uuid[])`,
      [ids('q_a_extraction')],
    ),
    db.query<{ id: string; canonical_name: string }>(
      `SELECT id::text AS id, canonical_name FROM entity_mentions WHERE id = ANY($1::uuid[])`,
      [ids('entity_mention')],
    ),
  ]);
  return embeddingInputs({ chunks: chunks.rows, qa: qa.rows, mentions: mentions.rows });
}

/** Stage 5's roots (entity_names rows naming themselves, with a vector of their name), after `after`. */
async function reembedRoots(
  db: Database,
  embedding: Embedding,
  batch: number,
  after: { type: string; name: string } | null,
  report: ReembedReport,
): Promise<void> {
  const model = embedding.client.embeddingModel.name;
  for (;;) {
    const { rows } = await db.query<{ entity_type: string; name: string }>(
      `SELECT entity_type, name FROM entity_names
        WHERE name = canonical_name AND embedding IS NOT NULL
          AND ($1::text IS NULL OR (entity_type, name) > ($1::text, $2::text))
        ORDER BY entity_type, name LIMIT $3`,
      [after?.type ?? null, after?.name ?? null, batch],
    );
    if (rows.length === 0) return;
    // A root's vector is of its name, the text of its mentions' vectors: those re-embedded above are copied.
    const named = rows.map((r) => ({ ...r, hash: sha256Hex(r.name) }));
    const known = await knownTexts(
      db,
      named.map((r) => r.hash),
      model,
    );
    const copied = named.filter((r) => known.has(r.hash));
    const fresh = named.filter((r) => !known.has(r.hash));
    const vectors = await embedTexts(
      fresh.map((r) => r.name),
      embedding,
    );
    report.textsEmbedded += fresh.length;
    const last = rows[rows.length - 1]!;
    after = { type: last.entity_type, name: last.name };
    const resumeAt = after;
    await db.transaction(async (tx) => {
      await tx.query(
        `UPDATE entity_names n SET embedding = u.v::vector, updated_at = now()
           FROM unnest($1::text[], $2::text[], $3::text[]) AS u(t, n, v)
          WHERE n.entity_type = u.t AND n.name = u.n`,
        [fresh.map((r) => r.entity_type), fresh.map((r) => r.name), vectors.map(vectorLiteral)],
      );
      await tx.query(
        `UPDATE entity_names n SET updated_at = now(),
                embedding = (SELECT e.embedding FROM record_embeddings e WHERE e.model = $1 AND e.content_sha256 = u.h LIMIT 1)
           FROM unnest($2::text[], $3::text[], $4::text[]) AS u(t, n, h)
          WHERE n.entity_type = u.t AND n.name = u.n`,
        [model, copied.map((r) => r.entity_type), copied.map((r) => r.name), copied.map((r) => r.hash)],
      );
      await tx.query(`UPDATE embedding_model SET reembed_after_type = $1, reembed_after_name = $2`, [
        resumeAt.type,
        resumeAt.name,
      ]);
    });
    report.roots += rows.length;
  }
}
