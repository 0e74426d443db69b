// The coordinator's side of a distributed walk (INGEST_WALK_MODE=distributed, docs/OPERATIONS.md
// "A walk on several machines"). The walk is the same walk: it enumerates, settles unchanged
// files by stat, runs the flow-scope passes and records its run as ever; only each remaining
// item's life runs elsewhere, as a job of the walk_item queue on a walk worker
// (engine/walk/walk-worker.ts). Jobs are enqueued in batches as the enumeration goes; each
// comes back as a row of walk_item_outcomes (schema/0021_distributed_walk.sql), taken here as it
// lands, and the barrier is the last of them: every item the walk queued has an
// outcome, or its job failed for good (a worker lost on every try: worker_lost).

import type { Database } from '../../lib/db/database.ts';
import { IngestError } from '../../lib/errors.ts';
import { metrics } from '../../lib/metrics.ts';
import { walkItemJobKey } from '../../lib/ids.ts';
import { failedJobData, JobQueue, walkItemQueue } from '../../lib/queue/job-queue.ts';
import type { WalkLifespan } from './walk-lifespan.ts';
import type { RunContext, RunCounters } from '../../lib/run-context.ts';
import type { MediaType } from '../../stages/convert/index.ts';
import type { UrlItem } from '../../stages/source.ts';
import type { FileItem } from '../../lib/corpus/files.ts';
import { StageError } from '../item/at-stage.ts';
import { failedOutcome, stopsTheWalk, type ItemOutcome } from '../item/outcome.ts';
import { seenFile, type SeenFile } from './worker-corpus.ts';

/** One item of a distributed walk, as its job carries it. */
export interface WalkItemJob {
  opId: string;
  fullReprocess: boolean;
  /** The coordinator's fencing token: every write of the item checks it (engine/walk/fence.ts fencedByToken). */
  fenceToken: string | null;
  /**
   * The coordinator's embedding model (INGEST_EMBEDDING_MODEL): a worker configured with another
   * fails the item by name rather than mix two models' vectors. Absent from jobs queued by a build
   * before it.
   */
  embeddingModel?: string;
  item:
    | {
        kind: 'file';
        relPath: string;
        mediaType: MediaType;
        /** The file as the coordinator pulled it from the corpus bucket; null when there is none. */
        seen: SeenFile | null;
      }
    | { kind: 'url'; url: UrlItem };
}

/** What a worker reports of one item: its outcome, what it added to the walk's counts, and who ran it. */
export interface RemoteOutcome {
  outcome: ItemOutcome;
  rowsWritten: Record<string, number>;
  counters: RunCounters;
  /** The worker's host:pid. */
  worker: string;
}

/** The job of an item ran on every try and no worker finished it. */
export class WorkerLostError extends IngestError {
  constructor(path: string) {
    super(
      'worker_lost',
      `the walk worker running ${path} was lost on every try (no heartbeat, or past its expiry); ` +
        'the next walk tries the item again',
    );
  }
}

/** Jobs enqueued per round trip. */
const ENQUEUE_BATCH = 500;
/** How often the barrier reads the outcomes that landed. */
const POLL_MS = 200;

export class RemoteItems {
  readonly #db: Database;
  readonly #queue: JobQueue;
  readonly #queueName: string;
  readonly #run: RunContext;
  readonly #fenceToken: string | null;
  readonly #embeddingModel: string;
  /** True when the corpus bucket is the source: workers read it, and check it against the coordinator's hash. */
  readonly #bucketed: boolean;
  /** Items that failed here, before any worker saw them: settled with the others. */
  readonly #failedHere: ItemOutcome[] = [];
  /** Rows the workers wrote for this walk, per table: the walk's row counts. */
  readonly rowsWritten = new Map<string, number>();
  #waiting: { id: string; data: WalkItemJob }[] = [];
  readonly #queued = new Set<string>();

  private constructor(
    db: Database,
    queue: [JobQueue, string],
    run: RunContext,
    { fenceToken, bucketed, embeddingModel }: { fenceToken: string | null; bucketed: boolean; embeddingModel: string },
  ) {
    this.#db = db;
    [this.#queue, this.#queueName] = queue;
    this.#run = run;
    this.#fenceToken = fenceToken;
    this.#embeddingModel = embeddingModel;
    this.#bucketed = bucketed;
  }

  /**
   * The walk's side of the queue (the configuration says distributed, so the database is
   * PostgreSQL); its items' writes are fenced by `fenceToken`, the walk's fence.
   */
  static async open(
    { config, db, log }: Pick<WalkLifespan, 'config' | 'db' | 'log'>,
    run: RunContext,
    fenceToken: string | null,
  ): Promise<RemoteItems> {
    // The scratch of walks whose coordinator died (this walk holds the fence, so no other walk
    // is running): their outcomes were never taken, their claims never dropped.
    await db.query('DELETE FROM walk_item_outcomes WHERE op_id <> $1', [run.opId]);
    await db.query('DELETE FROM walk_document_claims WHERE op_id <> $1', [run.opId]);
    const name = await walkItemQueue(db);
    const queue = await JobQueue.open(db, {
      dsn: config.database.dsn!,
      supervise: true,
      superviseIntervalSeconds: config.walk.superviseSeconds,
      connectTimeoutMs: config.database.connectTimeoutMs,
      queues: [name],
      log,
    });
    return new RemoteItems(db, [queue, name], run, {
      fenceToken,
      bucketed: config.corpusBucket !== null,
      embeddingModel: config.models.embedding.name,
    });
  }

  /**
   * Queues a file's life. With a corpus bucket the job carries the sha256 of the copy this walk
   * pulled, so that the worker, which reads the bucket, knows whether it reads the same bytes
   * (engine/walk/worker-corpus.ts); a file that cannot be read here fails here.
   */
  async dispatchFile(file: FileItem, mediaType: MediaType, reprocess = false): Promise<void> {
    let seen: SeenFile | null = null;
    try {
      if (this.#bucketed) seen = await seenFile(file);
    } catch (error) {
      this.#failedHere.push(failedOutcome(file.relPath, new StageError('admit', error)));
      return;
    }
    await this.dispatch({ kind: 'file', relPath: file.relPath, mediaType, seen }, reprocess);
  }

  /**
   * Queues the item's life; its job id is the walk's and the item's, so a repeat adds nothing.
   * `reprocess`: this item alone as under --full-reprocess (a scan to read, --read-scans).
   */
  async dispatch(item: WalkItemJob['item'], reprocess = false): Promise<void> {
    const path = itemPath(item);
    const { opId } = this.#run;
    const fullReprocess = this.#run.fullReprocess || reprocess;
    this.#queued.add(path);
    this.#waiting.push({
      id: walkItemJobKey(opId, path),
      data: { opId, fullReprocess, fenceToken: this.#fenceToken, embeddingModel: this.#embeddingModel, item },
    });
    if (this.#waiting.length >= ENQUEUE_BATCH) await this.#enqueue();
  }

  /**
   * The barrier: hands each outcome to `settle` as it lands until every queued item has one.
   * `stopping` ends the wait early (the fence passed to another walk): the items still out are
   * not this walk's to count, and the next walk redoes them.
   */
  async settleAll(settle: (outcome: ItemOutcome) => void, stopping: () => boolean): Promise<void> {
    await this.#enqueue();
    for (const outcome of this.#failedHere.splice(0)) settle(outcome);
    while (this.#queued.size > 0 && !stopping()) {
      const landed = await this.#landed();
      for (const remote of landed) if (this.#queued.delete(remote.outcome.path)) settle(this.#counted(remote));
      if (landed.length > 0) continue;
      const failed = await failedJobData<WalkItemJob>(this.#db, this.#queueName, { opId: this.#run.opId });
      for (const lost of failed.map((job) => itemPath(job.item))) {
        if (this.#queued.delete(lost)) settle(failedOutcome(lost, new WorkerLostError(lost)));
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  /** The outcome, with its rows and counters added to the walk's. */
  #counted({ outcome, rowsWritten, counters, worker }: RemoteOutcome): ItemOutcome {
    metrics.walkWorkerItems.inc({ worker, outcome: outcome.kind });
    for (const [table, n] of Object.entries(rowsWritten))
      this.rowsWritten.set(table, (this.rowsWritten.get(table) ?? 0) + n);
    for (const [counter, n] of Object.entries(counters)) this.#run.counters[counter as keyof RunCounters] += n;
    return outcome;
  }

  /**
   * Once the walk has ended: its outcome and claim rows go (they are the walk's scratch), and the
   * queue closes. Jobs still queued (a walk that stopped early) are left to the workers, whose
   * writes the lost fence refuses. A walk that lost its database or its fence leaves its scratch
   * behind rather than a second error over the one that stopped it.
   */
  async close(): Promise<void> {
    try {
      await this.#db.query('DELETE FROM walk_item_outcomes WHERE op_id = $1', [this.#run.opId]);
      await this.#db.query('DELETE FROM walk_document_claims WHERE op_id = $1', [this.#run.opId]);
    } catch (error) {
      if (!stopsTheWalk(error)) throw error;
    } finally {
      await this.#queue.stop();
    }
  }

  async #enqueue(): Promise<void> {
    const jobs = this.#waiting;
    this.#waiting = [];
    if (jobs.length > 0) await this.#queue.enqueue(this.#queueName, jobs);
  }

  /** Takes the outcomes that have landed (deletes them as it reads them: see schema/0021). */
  async #landed(): Promise<RemoteOutcome[]> {
    const { rows } = await this.#db.query<RemoteOutcome>(
      `DELETE FROM walk_item_outcomes WHERE (op_id, path) IN
         (SELECT op_id, path FROM walk_item_outcomes WHERE op_id = $1 LIMIT 5000)
       RETURNING outcome, rows_written AS "rowsWritten", counters, worker`,
      [this.#run.opId],
    );
    return rows;
  }
}

export function itemPath(item: WalkItemJob['item']): string {
  return item.kind === 'file' ? item.relPath : item.url.url;
}
