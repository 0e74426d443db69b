// The worker's side of a distributed walk (engine/walk/distributed.ts): one job is one item's
// life, run exactly as a walk in one process runs it (engine/item/file.ts, engine/item/url.ts),
// in the walk's run context, on bytes read from the corpus bucket or a shared volume (never the
// coordinator's disk: engine/walk/worker-corpus.ts), every write through the walk's fencing
// token, then its outcome written as a row for the coordinator. An item's own failure is its
// outcome, and completes the job; what stops a walk (the database gone, the fence passed on)
// fails the job, which pg-boss tries again while the queue's retry limit allows, so a walk that
// lost its fence lands nothing late.

import { hostname } from 'node:os';
import { Sink } from '../../lib/db/sink.ts';
import { EmbeddingModelMismatchError } from '../../lib/embed/recorded-model.ts';
import type { Database } from '../../lib/db/database.ts';
import { emptyRunCounters, inRunContext, type RunContext } from '../../lib/run-context.ts';
import { ProducerDebt, WalkDebt } from '../../lib/state/producer-debt.ts';
import { walkFile } from '../item/file.ts';
import { DocumentIdentity } from '../item/identity.ts';
import { failedOutcome, stopsTheWalk, type ItemOutcome } from '../item/outcome.ts';
import { ingestUrl } from '../item/url.ts';
import type { WalkLifespan } from './walk-lifespan.ts';
import { fencedByToken } from './fence.ts';
import { itemPath, type RemoteOutcome, type WalkItemJob } from './distributed.ts';
import type { WorkerCorpus } from './worker-corpus.ts';

/** What a worker keeps of one walk between its items: its debt to the producer and its resolutions in flight. */
interface WalkShare {
  debt: WalkDebt;
  identity: DocumentIdentity;
}

/** This worker as /metrics names it. */
const WORKER = `${hostname()}:${process.pid}`;

/** The walks a worker remembers at once; an older walk's items start a new share. */
const WALKS_KEPT = 4;

export class WalkWorker {
  readonly #lifespan: WalkLifespan;
  readonly #corpus: WorkerCorpus;
  readonly #walks = new Map<string, Promise<WalkShare>>();

  /** `corpus`: where this worker reads an item's bytes (the corpus bucket, or a shared volume). */
  constructor(lifespan: WalkLifespan, corpus: WorkerCorpus) {
    this.#lifespan = lifespan;
    this.#corpus = corpus;
  }

  /** Runs the item's life and records its outcome; resolves with it. */
  async run(job: WalkItemJob): Promise<ItemOutcome> {
    const lifespan = this.#lifespan;
    const db = job.fenceToken === null ? lifespan.db : fencedByToken(lifespan.db, job.fenceToken);
    const run: RunContext = { opId: job.opId, fullReprocess: job.fullReprocess, counters: emptyRunCounters() };
    const sink = new Sink(db, lifespan.config.sink);
    const outcome = await inRunContext(run, async () => {
      try {
        return await this.#life(job, db, sink);
      } finally {
        await sink.close();
      }
    });
    await recordOutcome(db, job.opId, {
      outcome,
      rowsWritten: Object.fromEntries(sink.rowsWritten),
      counters: run.counters,
      worker: WORKER,
    });
    return outcome;
  }

  async #life(job: WalkItemJob, db: Database, sink: Sink): Promise<ItemOutcome> {
    const lifespan = this.#lifespan;
    const share = await this.#share(job.opId, db);
    const deps = { ...lifespan, db, sink, debt: share.debt };
    const { item } = job;
    const model = lifespan.config.models.embedding.name;
    if (job.embeddingModel !== undefined && job.embeddingModel !== model)
      return failedOutcome(itemPath(item), new EmbeddingModelMismatchError(WORKER, model, job.embeddingModel));
    try {
      // A URL's life throws its failure; a file's returns it (as in a walk in one process).
      if (item.kind === 'url')
        return await ingestUrl(item.url, { ...deps, fetch: lifespan.config.fetch, log: lifespan.log });
      const held = await this.#corpus.hold(item.relPath, item.seen);
      try {
        return await walkFile(held.file, item.mediaType, {
          ...deps,
          identity: share.identity,
          limits: lifespan.config.convert,
          batchChunks: lifespan.config.walk.itemBatchChunks,
        });
      } finally {
        await held.release();
      }
    } catch (error) {
      if (stopsTheWalk(error)) throw error;
      return failedOutcome(itemPath(item), error);
    }
  }

  /** The walk's share, made at its first item here: the curated aliases read afresh, as the walk read them. */
  #share(opId: string, db: Database): Promise<WalkShare> {
    let share = this.#walks.get(opId);
    if (share === undefined) {
      const { store, aliases } = this.#lifespan;
      share = aliases.refresh(db).then(() => ({
        debt: new WalkDebt(new ProducerDebt(store)),
        identity: new DocumentIdentity(db, store, { shared: true }),
      }));
      // A failed start is not kept: the item's next try starts the share again.
      share.catch(() => this.#walks.delete(opId));
      this.#walks.set(opId, share);
      if (this.#walks.size > WALKS_KEPT) this.#walks.delete(this.#walks.keys().next().value!);
    }
    return share;
  }
}

/** The item's outcome for the coordinator; an item's first row stands until the coordinator takes it. */
async function recordOutcome(db: Database, opId: string, remote: RemoteOutcome): Promise<void> {
  await db.query(
    `INSERT INTO walk_item_outcomes (op_id, path, outcome, rows_written, counters, worker)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (op_id, path) DO NOTHING`,
    [
      opId,
      remote.outcome.path,
      JSON.stringify(remote.outcome),
      JSON.stringify(remote.rowsWritten),
      JSON.stringify(remote.counters),
      remote.worker,
    ],
  );
}
