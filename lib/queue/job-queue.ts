// The job queue of the distributed walk, on pg-boss (docs/DECISIONS.md "The job queue on pg-boss
// (issue 43)"). The only module that imports pg-boss. It runs no DDL: the schema `pgboss` and the
// queues come from schema/0017_job_queue.sql through `ingest db migrate`, so pg-boss's own
// migration and schema creation are off, and so is everything of it that would create or rebuild
// a table at run time (queue statistics' daily partitions, index rebuilds). A role without the
// CREATE privilege runs it (test/job-queue.test.ts).
//
// Supervision (expiring jobs past their heartbeat or expiry, retrying or failing them, deleting
// old ones) is an option because exactly one kind of process should run it; the others only
// enqueue and work. pg-boss takes a lock per pass, so two supervisors are safe, only wasted work.

import type { PgBoss, Job, JobInsert } from 'pg-boss';
import bossPackage from 'pg-boss/package.json' with { type: 'json' };
import type { Database, Queryable } from '../db/database.ts';
import { requireJobQueue } from '../db/schema-check.ts';
import { IngestError } from '../errors.ts';
import type { Logger } from '../log.ts';

/** The pgboss.version the pinned pg-boss reads and writes. */
export const EXPECTED_SCHEMA_VERSION: number = bossPackage.pgboss.schema;

/** The queue schema/0017_job_queue.sql made, and the prefix of each application schema's own (walkItemQueue). */
export const WALK_ITEM_QUEUE = 'walk_item';

/**
 * The queue of the distributed walks of `db`'s application schema (schema/0021): two deployments
 * on one database never work each other's items.
 */
export async function walkItemQueue(db: Queryable): Promise<string> {
  const { rows } = await db.query<{ name: string }>(`SELECT $1 || '_' || current_schema() AS name`, [WALK_ITEM_QUEUE]);
  return rows[0]!.name;
}

// Jobs per INSERT statement: one round trip each, and far under PostgreSQL's 1 GB parameter
// limit at the payloads of an item (a path and a few hashes).
const INSERT_BATCH = 5_000;

export class JobQueueVersionError extends IngestError {
  constructor(location: string, installed: number) {
    super(
      'job_queue_version',
      `the job queue schema pgboss at ${location} is at version ${installed}; this build's pg-boss ` +
        `${bossPackage.version} expects ${EXPECTED_SCHEMA_VERSION}. Apply schema/ with \`ingest db migrate\` ` +
        '(a newer schema than this build is a build older than the database: run a newer build).',
    );
  }
}

export interface JobQueueOptions {
  /** The PostgreSQL database the queue lives in (pg-boss opens a pool of its own on it). */
  dsn: string;
  /** Run pg-boss's supervision (expiry, retries, deletion) in this process. */
  supervise: boolean;
  /** The queues this process enqueues or works, each checked present at open. */
  queues: readonly string[];
  /** Connections of pg-boss's pool (default 4). */
  poolSize?: number;
  /** Seconds between supervision passes (default pg-boss's 60); a test shortens it. */
  superviseIntervalSeconds?: number;
  /** The longest wait for a connection of pg-boss's pool (INGEST_DB_CONNECT_TIMEOUT_S). */
  connectTimeoutMs?: number;
  log: Logger;
}

/** One job as a handler sees it: aborted when pg-boss gives the job up (expiry or stop). */
export interface QueueJob<T> {
  id: string;
  data: T;
  /** 0 on the first run; a job a lost worker left runs again with 1, then 2. */
  retryCount: number;
  signal: AbortSignal;
}

export interface WorkOptions {
  /** Jobs this process runs at once on the queue. */
  concurrency: number;
  /** Seconds between fetches when the queue is empty (default pg-boss's 2; at least 0.5). */
  pollingIntervalSeconds?: number;
}

/**
 * The data of the jobs of `queue` that failed for good (every retry spent) whose data contains
 * `match`: read from pg-boss's job table, which pg-boss's API lists only by id.
 */
export async function failedJobData<T>(db: Queryable, queue: string, match: object): Promise<T[]> {
  const { rows } = await db.query<{ data: T }>(
    "SELECT data FROM pgboss.job WHERE name = $1 AND state = 'failed' AND data @> $2::jsonb",
    [queue, JSON.stringify(match)],
  );
  return rows.map((r) => r.data);
}

/** The jobs of `queue` per walk (the data's opId) and state, as pg-boss's job table holds them. */
export async function jobCountsByWalk(
  db: Queryable,
  queue: string,
): Promise<{ walk: string; state: string; jobs: number }[]> {
  const { rows } = await db.query<{ walk: string; state: string; jobs: number }>(
    `SELECT data->>'opId' AS walk, state::text AS state, count(*)::int AS jobs FROM pgboss.job
      WHERE name = $1 GROUP BY 1, 2`,
    [queue],
  );
  return rows;
}

export class JobQueue {
  readonly #boss: PgBoss;

  private constructor(boss: PgBoss) {
    this.#boss = boss;
  }

  /**
   * Checks the database's pgboss schema and queues against this build (named errors that say to
   * run `ingest db migrate`), then starts pg-boss on it. `db` is the command's own connection to
   * the same database, used for the check only.
   */
  static async open(db: Queryable & Pick<Database, 'location'>, options: JobQueueOptions): Promise<JobQueue> {
    const installed = await requireJobQueue(db, options.queues);
    if (installed !== EXPECTED_SCHEMA_VERSION) throw new JobQueueVersionError(db.location, installed);
    // Imported here, not with the module: every walk imports this one, few are distributed, and
    // pg-boss's import cost each of the others some 90 ms of start-up.
    const { PgBoss } = await import('pg-boss');
    const boss = new PgBoss({
      connectionString: options.dsn,
      schema: 'pgboss',
      max: options.poolSize ?? 4,
      ...(options.connectTimeoutMs === undefined ? {} : { connectionTimeoutMillis: options.connectTimeoutMs }),
      migrate: false,
      createSchema: false,
      schedule: false,
      supervise: options.supervise,
      persistQueueStats: false,
      reindex: false,
      ...(options.superviseIntervalSeconds === undefined
        ? {}
        : {
            superviseIntervalSeconds: options.superviseIntervalSeconds,
            monitorIntervalSeconds: options.superviseIntervalSeconds,
            queueCacheIntervalSeconds: options.superviseIntervalSeconds,
          }),
    });
    // Unheard, an 'error' event ends the process. pg-boss emits those of its background passes
    // (a lost connection, a supervision pass that failed), and tries again on the next tick.
    boss.on('error', (error) => options.log.warn({ err: error }, 'job queue: background pass failed'));
    boss.on('warning', (warning) => options.log.warn({ data: warning.data }, `job queue: ${warning.message}`));
    await boss.start();
    return new JobQueue(boss);
  }

  /**
   * Adds jobs to `queue`, INSERT_BATCH to a statement. A job whose id is already in the queue is
   * skipped (pg-boss inserts with ON CONFLICT DO NOTHING), so an enqueue repeated with the same
   * ids adds nothing twice.
   */
  async enqueue<T extends object>(queue: string, jobs: readonly { id?: string; data: T }[]): Promise<void> {
    for (let start = 0; start < jobs.length; start += INSERT_BATCH) {
      const batch: JobInsert<T>[] = jobs.slice(start, start + INSERT_BATCH).map((job) => ({ ...job }));
      await this.#boss.insert(queue, batch);
    }
  }

  /**
   * Runs `handler` on the jobs of `queue`, `concurrency` at a time, one job per fetch. While a
   * handler runs, pg-boss refreshes the job's heartbeat (every half of the queue's
   * heartbeatSeconds); its return completes the job, its throw fails it (to be retried while the
   * queue's retry limit allows). Returns the worker's id.
   */
  work<T extends object>(
    queue: string,
    options: WorkOptions,
    handler: (job: QueueJob<T>) => Promise<void>,
  ): Promise<string> {
    return this.#boss.work<T>(
      queue,
      {
        localConcurrency: options.concurrency,
        batchSize: 1,
        burstWhenReadyExceeds: 1,
        ...(options.pollingIntervalSeconds === undefined
          ? {}
          : { pollingIntervalSeconds: options.pollingIntervalSeconds }),
      },
      async ([job]: Job<T>[]) => {
        const { id, data, retryCount, signal } = job!;
        await handler({ id, data, retryCount, signal });
      },
    );
  }

  /**
   * Stops fetching, waits up to `timeoutMs` for the handlers running, fails the jobs still active
   * after it (so they are retried at once rather than after their heartbeat), and closes the pool.
   */
  async stop(timeoutMs = 30_000): Promise<void> {
    await this.#boss.stop({ graceful: true, timeout: timeoutMs });
  }
}
