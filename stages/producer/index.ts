// The producer (docs/behaviour/stages.md#producer; docs/DECISIONS.md "The
// producer"): the knowledge bundle drafted from what the walks built.
//
//   the delta gate     concepts.ts: the concepts whose feeding rows moved since the last run
//                      (every concept with `all`)
//   evidence           evidence.ts, a batch at a time; a concept whose evidence text is the one
//                      it was drafted from keeps its draft (no model call)
//   draft              draft.ts: the producer model through the extractor memo, so evidence met
//                      before is served without a call (unless `redraft`)
//   rows               bundle_concepts, a batch per statement: the pages are rendered from these
//   vanished           concepts no longer qualifying are marked, left out of the next bundle and
//                      logged, then deleted
//   the bundle         bundle-dir.ts: a new version from the rows, switched in atomically;
//                      log.md records what was drafted and removed since the last switch; an
//                      unchanged bundle keeps its version
//   write-through      the changed and removed files, to the corpus bucket's bundle prefix
//
// One concept's failed draft fails it alone: it keeps its earlier page and is tried again by
// the next run (its fingerprint is not recorded).

import type { Database, Queryable } from '../../lib/db/database.ts';
import type { ExtractorContext } from '../../lib/llm/run-extractor.ts';
import type { Logger } from '../../lib/log.ts';
import type { StateStore } from '../../lib/state/store.ts';
import { assembleBundle, filesUnder, type Assembly } from './bundle-dir.ts';
import { changedConcepts, conceptPaths, MIN_SOURCES, type ConceptChange } from './concepts.ts';
import { draftConcept, type Drafted } from './draft.ts';
import { loadEvidence, type Evidence } from './evidence.ts';
import type { LogEntry } from './okf.ts';
import type { ConceptDocument } from './render.ts';

/** Concepts whose evidence is read and drafted together. */
export const BATCH_CONCEPTS = 50;
/** State-store memos: when and by which run the bundle was last switched; whether the mirror missed a switch. */
const PUBLISHED_MEMO = 'producer:published';
const MIRROR_BEHIND_MEMO = 'producer:mirror-behind';

/** Where the bundle's changed files are copied after each switch (the corpus bucket's bundle prefix). */
export interface BundleMirror {
  readonly location: string;
  upload(relPath: string, file: string): Promise<void>;
  remove(relPath: string): Promise<void>;
}

export interface ProducerDeps {
  db: Database;
  store: StateStore;
  /** The producer model: client, model, identity, memo store, the queue bounding calls, its run. */
  model: ExtractorContext;
  bundleDir: string;
  mirror: BundleMirror | null;
  log: Logger;
}

export interface ProduceOptions {
  opId: string;
  /** Look at every concept, not only those whose rows moved (POST /producer-run, `ingest produce --all`). */
  all: boolean;
  /** Ask the model again even where the memo holds a draft of the same evidence. */
  redraft: boolean;
  now: Date;
}

export interface ProducerReport {
  /** Concepts in the published bundle. */
  concepts: number;
  /** Concepts whose evidence was read (the gate let them through). */
  examined: number;
  /** Concepts drafted: their evidence was new or changed (the model was asked unless the memo held it). */
  drafted: number;
  /** Concepts removed: their evidence vanished. */
  removed: number;
  /** Concepts whose draft failed; they keep their earlier page. */
  failed: number;
  /** Claims dropped for citing no source they were shown. */
  uncited_claims: number;
  /** Concept pages rendered from their rows; the others were carried over from the previous bundle. */
  pages_rendered: number;
  files_written: number;
  files_kept: number;
  files_removed: number;
}

export async function produceBundle(deps: ProducerDeps, options: ProduceOptions): Promise<ProducerReport> {
  const { db } = deps;
  const report: ProducerReport = {
    concepts: 0,
    examined: 0,
    drafted: 0,
    removed: 0,
    failed: 0,
    uncited_claims: 0,
    pages_rendered: 0,
    files_written: 0,
    files_kept: 0,
    files_removed: 0,
  };
  const changes = await changedConcepts(db, options.all);
  await draftBatches(
    deps,
    options,
    changes.filter((c) => c.fingerprint !== null),
    report,
  );
  report.removed = await markVanished(
    db,
    changes.filter((c) => c.fingerprint === null && c.known),
    options.now,
  );

  const published = (await deps.store.getMemo(PUBLISHED_MEMO)) as { at: string } | undefined;
  const assembly = await assembleBundle(db, deps.bundleDir, {
    opId: options.opId,
    now: options.now,
    log: await logEntries(db, published?.at ?? null),
    whole: options.all,
  });
  if (assembly.switched)
    await deps.store.putMemo(PUBLISHED_MEMO, { at: options.now.toISOString(), opId: options.opId });
  await db.query('UPDATE bundle_concepts SET pending = false WHERE pending');
  await db.query('DELETE FROM bundle_concepts WHERE vanished_at IS NOT NULL');
  report.concepts = assembly.concepts;
  report.files_written = assembly.written.length;
  report.files_kept = assembly.kept;
  report.files_removed = assembly.removed.length;
  report.pages_rendered = assembly.rendered;
  if (deps.mirror !== null) await mirrorBundle(deps.mirror, deps.store, assembly);
  return report;
}

/**
 * Drafts the live concepts a batch at a time, the next batch's drafts asked while the last ones of
 * the batch before are in flight, so the model's queue stays full across batch boundaries (a
 * batch waited for its slowest draft before the next was read, and the queue ran short at every
 * boundary). Batches are written in order, one at a time (a new concept's path depends on the
 * paths written before it), and at most two are drafted at once, so memory holds two batches'
 * evidence.
 */
async function draftBatches(
  deps: ProducerDeps,
  options: ProduceOptions,
  live: readonly ConceptChange[],
  report: ProducerReport,
): Promise<void> {
  const { db } = deps;
  // A batch's write is held as a promise that never rejects (its failure kept here), so that a
  // failed write is not left unheard while the next batch's evidence is read.
  let failure: { error: unknown } | null = null;
  let written: Promise<void> = Promise.resolve();
  const write = async (batch: readonly ConceptChange[], outcomes: Promise<Outcome[]>) => {
    try {
      const done = await outcomes;
      report.examined += batch.length;
      for (const o of done) {
        if (o.failed) report.failed += 1;
        else if (o.drafted !== null) {
          report.drafted += 1;
          report.uncited_claims += o.drafted.uncited;
        }
      }
      await writeConcepts(db, done, options);
    } catch (error) {
      failure ??= { error };
    }
  };
  try {
    for (let i = 0; i < live.length && failure === null; i += BATCH_CONCEPTS) {
      const batch = live.slice(i, i + BATCH_CONCEPTS);
      const stored = await storedEvidence(db, batch);
      const outcomes = Promise.all((await loadEvidence(db, batch)).map((e) => draftOrKeep(e, stored, deps, options)));
      // The batch before this one is written once its drafts are in; this one's write comes after.
      await written;
      written = write(batch, outcomes);
    }
  } finally {
    // Held to the end whatever stopped the loop: no draft or write runs on past the run.
    await written;
  }
  if (failure !== null) throw (failure as { error: unknown }).error;
}

/** A concept's draft: kept when its evidence is the one it was drafted from, else asked of the model; a failure fails it alone. */
async function draftOrKeep(
  evidence: Evidence,
  stored: ReadonlyMap<string, string>,
  { model, log }: Pick<ProducerDeps, 'model' | 'log'>,
  options: ProduceOptions,
): Promise<Outcome> {
  if (!options.redraft && stored.get(evidence.concept.id) === evidence.sha256) return { evidence, drafted: null };
  try {
    return { evidence, drafted: await draftConcept(evidence, model) };
  } catch (error) {
    log.warn(
      { concept: evidence.concept.name, err: error },
      'producer: concept not drafted; it keeps its earlier page',
    );
    return { evidence, failed: true };
  }
}

/**
 * The switch's written files uploaded, its dropped ones deleted; every file uploaded when an
 * earlier run's mirroring failed (the files that run dropped may then linger in the bucket).
 */
async function mirrorBundle(mirror: BundleMirror, store: StateStore, assembly: Assembly): Promise<void> {
  const behind = (await store.getMemo(MIRROR_BEHIND_MEMO)) !== undefined;
  await store.putMemo(MIRROR_BEHIND_MEMO, true);
  const upload = behind ? await filesUnder(assembly.version) : assembly.written;
  for (const relPath of upload) await mirror.upload(relPath, `${assembly.version}/${relPath}`);
  for (const relPath of assembly.removed) await mirror.remove(relPath);
  await store.removeMemo(MIRROR_BEHIND_MEMO);
}

type Outcome =
  | { evidence: Evidence; drafted: Drafted | null; failed?: undefined }
  | { evidence: Evidence; failed: true; drafted?: undefined };

/** The evidence digests the batch's concepts were last drafted from, by id. */
async function storedEvidence(db: Queryable, batch: readonly ConceptChange[]): Promise<Map<string, string>> {
  const { rows } = await db.query<{ id: string; evidence_sha256: string }>(
    `SELECT id::text, evidence_sha256 FROM bundle_concepts WHERE id = ANY($1::uuid[])`,
    [batch.map((c) => c.id)],
  );
  return new Map(rows.map((r) => [r.id, r.evidence_sha256]));
}

/**
 * One batch's rows: a new draft replaces the document (drafted_at moves); unchanged evidence
 * keeps the draft and takes the related concepts and the fingerprint as they are now; a failed
 * draft writes nothing. A new concept takes its readable path unless another holds it.
 */
async function writeConcepts(db: Queryable, outcomes: readonly Outcome[], options: ProduceOptions): Promise<void> {
  const drafted = outcomes.filter((o) => o.drafted != null) as { evidence: Evidence; drafted: Drafted }[];
  const kept = outcomes.filter((o) => o.drafted === null);
  if (kept.length > 0) {
    await db.query(
      `UPDATE bundle_concepts b
          SET fingerprint = k.fingerprint, document = b.document || jsonb_build_object('related', k.related::jsonb),
              pending = b.pending OR b.vanished_at IS NOT NULL OR b.document -> 'related' IS DISTINCT FROM k.related::jsonb,
              vanished_at = NULL, updated_at = now()
         FROM unnest($1::uuid[], $2::text[], $3::text[]) AS k(id, fingerprint, related)
        WHERE b.id = k.id`,
      [
        kept.map((o) => o.evidence.concept.id),
        kept.map((o) => o.evidence.concept.fingerprint),
        kept.map((o) => JSON.stringify(o.evidence.related)),
      ],
    );
  }
  if (drafted.length === 0) return;
  const paths = await assignPaths(
    db,
    drafted.map((o) => o.evidence.concept),
  );
  await db.query(
    `INSERT INTO bundle_concepts (id, kind, entity_type, name, path, fingerprint, evidence_sha256, document, drafted_at, op_id,
                                  created_at)
     SELECT id, kind, entity_type, name, path, fingerprint, evidence, document::jsonb, $9::timestamptz, $10::uuid, $9::timestamptz
       FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
            AS u(id, kind, entity_type, name, path, fingerprint, evidence, document)
     ON CONFLICT (id) DO UPDATE SET
       fingerprint = EXCLUDED.fingerprint, evidence_sha256 = EXCLUDED.evidence_sha256, document = EXCLUDED.document,
       drafted_at = EXCLUDED.drafted_at, op_id = EXCLUDED.op_id, vanished_at = NULL, pending = true, updated_at = now()`,
    [
      drafted.map((o) => o.evidence.concept.id),
      drafted.map((o) => o.evidence.concept.kind),
      drafted.map((o) => o.evidence.concept.entityType),
      drafted.map((o) => o.evidence.concept.name),
      drafted.map((o) => paths.get(o.evidence.concept.id)),
      drafted.map((o) => o.evidence.concept.fingerprint),
      drafted.map((o) => o.evidence.sha256),
      drafted.map((o) => JSON.stringify(conceptDocument(o.evidence, o.drafted))),
      options.now.toISOString(),
      options.opId,
    ],
  );
}

function conceptDocument(evidence: Evidence, { draft }: Drafted): ConceptDocument {
  return { ...draft, citations: evidence.sources, related: evidence.related };
}

/** Each concept's path: the one it has, else its readable path, else that path with its id's prefix. */
async function assignPaths(db: Queryable, concepts: readonly ConceptChange[]): Promise<Map<string, string>> {
  const candidates = concepts.map((c) => conceptPaths(c, c.id));
  const { rows } = await db.query<{ id: string; path: string }>(
    `SELECT id::text, path FROM bundle_concepts WHERE id = ANY($1::uuid[]) OR path = ANY($2::text[])`,
    [concepts.map((c) => c.id), candidates.map(([preferred]) => preferred)],
  );
  const own = new Map(rows.map((r) => [r.id, r.path]));
  const taken = new Set(rows.map((r) => r.path));
  const out = new Map<string, string>();
  concepts.forEach((c, i) => {
    const [preferred, fallback] = candidates[i]!;
    const path = own.get(c.id) ?? (taken.has(preferred) ? fallback : preferred);
    taken.add(path);
    out.set(c.id, path);
  });
  return out;
}

async function markVanished(db: Queryable, gone: readonly ConceptChange[], now: Date): Promise<number> {
  if (gone.length === 0) return 0;
  const { rowCount } = await db.query(
    `UPDATE bundle_concepts SET vanished_at = $2::timestamptz WHERE id = ANY($1::uuid[]) AND vanished_at IS NULL`,
    [gone.map((c) => c.id), now.toISOString()],
  );
  return rowCount;
}

/** What log.md records for this switch: drafts and removals since the previous one (all, the first time). */
async function logEntries(db: Queryable, since: string | null): Promise<LogEntry[]> {
  const { rows } = await db.query<{ name: string; path: string; vanished: boolean; created: boolean; n: number }>(
    `SELECT name, path, vanished_at IS NOT NULL AS vanished, ($1::timestamptz IS NULL OR created_at > $1) AS created,
            jsonb_array_length(document -> 'citations') AS n
       FROM bundle_concepts
      WHERE $1::timestamptz IS NULL OR drafted_at > $1 OR created_at > $1 OR vanished_at IS NOT NULL
      ORDER BY path COLLATE "C"`,
    [since],
  );
  return rows.map((r): LogEntry => {
    const link = `[${r.name.replace(/([[\]\\])/g, '\\$1')}](/${encodeURI(r.path)})`;
    if (r.vanished)
      return { kind: 'Removal', text: `${r.name} (${r.path}) removed: no longer named by ${MIN_SOURCES} sources.` };
    return r.created
      ? { kind: 'Creation', text: `${link} drafted from ${r.n} sources.` }
      : { kind: 'Update', text: `${link} redrafted: its evidence changed.` };
  });
}
