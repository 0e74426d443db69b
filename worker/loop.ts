// The bid-worker's poll loop (docs/behaviour/stages.md#the-bid-worker): claim jobs
// (worker/queue.ts), run each outside any transaction while a timer renews its lease, then write
// its result or error under its claim. Up to `concurrency` jobs run at once; a freed slot is
// refilled at once, an idle queue is polled every `pollMs` (with jitter, so workers started
// together spread out).
//
// Reliability, in one place:
//   - a job whose lease cannot be renewed (claimed again after a stall) is aborted and never
//     written; a result that cannot be written before the lease ends is dropped the same way,
//     and the job's next holder redoes it;
//   - a failed attempt waits an exponential backoff before the next one; max_attempts ends it;
//   - a database that cannot be reached is retried with capped backoff, never a crash: the
//     loop keeps beating and says database_unreachable;
//   - stop() (SIGTERM) claims nothing more, lets running jobs finish within `graceMs`, then
//     aborts the rest and gives them back to the queue unfinished.

import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import PQueue from 'p-queue';
import type { Database, Queryable } from '../lib/db/database.ts';
import { isDatabaseUnavailable } from '../lib/db/database.ts';
import { equalJitter, retry, RetryGaveUp } from '../lib/retry.ts';
import type { Logger } from '../lib/log.ts';
import { asJobError, errorText, JobError } from './errors.ts';
import type { Heartbeat } from './heartbeat.ts';
import { claimJobs, completeJob, failJob, giveBackJob, renewLease, type ClaimedJob } from './queue.ts';

export interface JobContext {
  job: ClaimedJob;
  /** The worker's database (reopened after the embedded one died, so never kept across jobs). */
  db: Queryable;
  /** Aborted when the lease is lost or the worker gives the job back. */
  signal: AbortSignal;
  log: Logger;
}

export type JobHandler = (payload: unknown, context: JobContext) => Promise<unknown>;

export interface WorkerOptions {
  /** Names this worker in claimed_by; unique per process. */
  id?: string;
  concurrency: number;
  /**
   * Jobs claimed ahead of a free slot, so a slot that frees starts its next job at once instead
   * of after a claim's round trips. They hold a lease (and an attempt) while they wait.
   */
  prefetch?: number;
  leaseMs: number;
  pollMs: number;
  graceMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
  heartbeat?: Heartbeat;
}

export interface WorkerStats {
  claimed: number;
  done: number;
  failed: number;
  retried: number;
  lost: number;
  givenBack: number;
  databaseErrors: number;
}

export interface RunningWorker {
  readonly id: string;
  readonly stats: WorkerStats;
  /** The database it works on now: another than it was given once the embedded one was reopened. */
  readonly db: Database;
  /** Stops claiming, waits for running jobs up to the grace period, gives back the rest. */
  stop(): Promise<void>;
}

/**
 * Waits `ms`, or less once `wake` aborts (an abort is the point, not a failure); the timer holds
 * the process open, as a poller must.
 */
async function pause(ms: number, wake?: AbortSignal): Promise<void> {
  await sleep(ms, undefined, { signal: wake }).catch(() => {});
}

type Outcome = { ok: true; result: unknown } | { ok: false; error: JobError };

type WorkerState = 'polling' | 'database_unreachable' | 'stopping';

interface Running {
  job: ClaimedJob;
  controller: AbortController;
  /** Our last known end of the lease (local clock): past it, the job may be someone else's. */
  leaseEnds: number;
  /** Lost its lease or given back: nothing more may be written for it. */
  released: boolean;
  /** When its handler began (Date.now()); null while a prefetched job waits for a slot. */
  startedAt: number | null;
  renewal: NodeJS.Timeout;
  settled: Promise<void>;
}

/** The poll loop's state and steps; `start()` begins polling, `stop()` ends it (once). */
export class JobWorker implements RunningWorker {
  readonly id: string;
  readonly stats: WorkerStats = {
    claimed: 0,
    done: 0,
    failed: 0,
    retried: 0,
    lost: 0,
    givenBack: 0,
    databaseErrors: 0,
  };
  /** Replaced by #reopen when the embedded database's process died. */
  #db: Database;
  readonly #handlers: Readonly<Record<string, JobHandler>>;
  readonly #options: WorkerOptions;
  readonly #log: Logger;
  readonly #reopen: (() => Promise<Database>) | undefined;
  /** Every job this worker holds: running, or prefetched and waiting for a slot. */
  readonly #running = new Map<string, Running>();
  readonly #slots: PQueue;
  /** Jobs held at most: the slots and the prefetch. */
  readonly #capacity: number;
  /** Free places a refill waits for while prefetched jobs still wait for a slot. */
  readonly #refillBatch: number;
  #state: WorkerState = 'polling';
  #stopping = false;
  /** Claims failed in a row: the exponent of the claim backoff. */
  #claimFailures = 0;
  /** Aborted (and replaced) to cut the loop's current wait short: a slot freed, or stop(). */
  #wake = new AbortController();
  #polling: Promise<void> | null = null;
  #stopped: Promise<void> | null = null;

  constructor(
    db: Database,
    handlers: Readonly<Record<string, JobHandler>>,
    options: WorkerOptions,
    log: Logger,
    /** Opens the database again when the embedded one is gone (its process died). */
    reopen?: () => Promise<Database>,
  ) {
    this.id = options.id ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.#db = db;
    this.#handlers = handlers;
    this.#options = options;
    this.#log = log;
    this.#reopen = reopen;
    this.#slots = new PQueue({ concurrency: options.concurrency });
    this.#capacity = options.concurrency + (options.prefetch ?? 0);
    this.#refillBatch = Math.max(1, Math.ceil((options.prefetch ?? 0) / 2));
  }

  get db(): Database {
    return this.#db;
  }

  start(): this {
    this.#polling ??= this.#poll();
    return this;
  }

  stop(): Promise<void> {
    return (this.#stopped ??= this.#shutdown());
  }

  #nudge(): void {
    this.#wake.abort();
    this.#wake = new AbortController();
  }

  #beat(force = false): Promise<void> | undefined {
    return this.#options.heartbeat?.beat(
      {
        workerId: this.id,
        state: this.#state,
        running: this.#running.size,
        done: this.stats.done,
        failed: this.stats.failed,
      },
      force,
    );
  }

  async #poll(): Promise<void> {
    while (!this.#stopping) {
      void this.#beat();
      const waitMs = await this.#claimTurn();
      await pause(waitMs, this.#wake.signal);
    }
  }

  /** Claims what fits, if it is time to; says how long the loop then waits. */
  async #claimTurn(): Promise<number> {
    const { pollMs, leaseMs } = this.#options;
    const free = this.#capacity - this.#running.size;
    // While prefetched jobs still wait for a slot, refills wait until half the prefetch is
    // free: one claim's round trips then serve several jobs instead of each one.
    const claiming = free > 0 && (this.#slots.size === 0 || free >= this.#refillBatch);
    // Every slot busy: wait for one to free (or a beat's worth of time).
    if (!claiming) return pollMs;
    try {
      const jobs = await this.#db.transaction((tx) => claimJobs(tx, { workerId: this.id, limit: free, leaseMs }));
      this.#claimFailures = 0;
      this.#state = 'polling';
      this.stats.claimed += jobs.length;
      for (const job of jobs) this.#launch(job);
      // Queue empty: poll later, with jitter so workers started together spread out.
      return jobs.length === free ? pollMs : pollMs * (0.75 + Math.random() / 2);
    } catch (error) {
      return this.#claimFailed(error);
    }
  }

  /** Backs off, and reopens the database when the embedded one is gone; says how long to wait. */
  async #claimFailed(error: unknown): Promise<number> {
    this.#claimFailures += 1;
    this.stats.databaseErrors += 1;
    this.#state = 'database_unreachable';
    const wait = equalJitter(500, 30_000)(this.#claimFailures);
    this.#log.error({ err: error, retryInMs: Math.round(wait) }, 'cannot claim jobs; retrying');
    if (this.#reopen !== undefined && isDatabaseUnavailable(error)) {
      await this.#db.close().catch(() => {});
      this.#db = await this.#reopen().catch((reopenError: unknown) => {
        this.#log.error({ err: reopenError }, 'cannot reopen the database');
        return this.#db;
      });
    }
    return wait;
  }

  #launch(job: ClaimedJob): void {
    const entry = {
      job,
      controller: new AbortController(),
      leaseEnds: Date.now() + this.#options.leaseMs,
      released: false,
      startedAt: null,
      settled: Promise.resolve(),
    } as Running;
    // The lease is renewed from the claim on: a prefetched job waiting for a slot keeps it too.
    entry.renewal = this.#renewer(entry);
    this.#running.set(job.id, entry);
    entry.settled = this.#slots
      .add(() => this.#execute(entry))
      .then((outcome) => this.#record(entry, outcome ?? null))
      .catch((error: unknown) => this.#log.error({ job: job.id, err: error }, 'job bookkeeping failed'))
      .finally(() => {
        clearInterval(entry.renewal);
        this.#running.delete(job.id);
        this.#nudge();
      });
  }

  #renewer(entry: Running): NodeJS.Timeout {
    const { leaseMs } = this.#options;
    return setInterval(() => {
      const asked = Date.now();
      renewLease(this.#db, entry.job, leaseMs).then(
        (held) => {
          if (held) entry.leaseEnds = asked + leaseMs;
          else this.#release(entry, 'lease lost: the job was claimed again');
        },
        (error: unknown) => {
          this.stats.databaseErrors += 1;
          this.#log.warn({ job: entry.job.id, err: error }, 'lease renewal failed');
          if (Date.now() >= entry.leaseEnds) this.#release(entry, 'lease expired while the database was unreachable');
        },
      );
    }, leaseMs / 3);
  }

  #release(entry: Running, why: string): void {
    if (entry.released) return;
    entry.released = true;
    this.stats.lost += 1;
    this.#log.warn({ job: entry.job.id, why }, 'job abandoned');
    entry.controller.abort(new JobError('lease_lost', why, { final: false }));
  }

  /** Runs the job's handler: the part that holds a slot. */
  async #execute(entry: Running): Promise<Outcome | null> {
    const { job } = entry;
    if (entry.released) return null;
    entry.startedAt = Date.now();
    try {
      const handler = this.#handlers[job.job];
      if (handler === undefined) throw new JobError('unknown_job', `no handler for job "${job.job}"`, { final: true });
      const context = { job, db: this.#db, signal: entry.controller.signal, log: this.#log.child({ job: job.id }) };
      return { ok: true, result: await handler(job.payload, context) };
    } catch (error) {
      return { ok: false, error: asJobError(error) };
    }
  }

  /** Writes a job's outcome under its claim, after its slot went to the next job; then says how it ended, in one line. */
  async #record(entry: Running, outcome: Outcome | null): Promise<void> {
    // Renewed no more: a renewal racing the outcome's write would find the job done and call it lost.
    clearInterval(entry.renewal);
    if (outcome === null || entry.released) return;
    const { job } = entry;
    const finished = { job: job.id, kind: job.job, attempt: job.attempts, durationMs: Date.now() - entry.startedAt! };
    if (outcome.ok) {
      const written = await this.#write(entry, () => completeJob(this.#db, job, outcome.result));
      if (written === true) this.stats.done += 1;
      else this.stats.lost += 1;
      // lost: claimed again meanwhile; dropped: not written before its lease ended. Its next holder redoes it.
      const ended = written === true ? 'done' : written === false ? 'lost' : 'dropped';
      this.#log[ended === 'done' ? 'info' : 'warn']({ ...finished, outcome: ended }, 'job finished');
      return;
    }
    const { error } = outcome;
    const retryInMs = equalJitter(this.#options.retryBaseMs, this.#options.retryMaxMs)(job.attempts);
    const status = await this.#write(entry, () =>
      failJob(this.#db, job, errorText(error), { final: error.final, retryInMs }),
    );
    if (status === 'failed') this.stats.failed += 1;
    else if (status === 'retrying') this.stats.retried += 1;
    else this.stats.lost += 1;
    this.#log[status === 'failed' ? 'error' : 'warn'](
      { ...finished, outcome: status ?? 'dropped', code: error.code, err: error.message },
      'job finished',
    );
  }

  /** Runs a write of a claimed job, retrying a database outage until its lease ends. */
  async #write<T>(entry: Running, statement: () => Promise<T>): Promise<T | null> {
    const job = entry.job.id;
    try {
      return await retry(statement, {
        attempts: Infinity,
        backoff: equalJitter(200, 5_000),
        maxDelayMs: 5_000,
        deadline: entry.leaseEnds,
        onRetry: (_attempt, error) => {
          this.stats.databaseErrors += 1;
          this.#log.warn({ job, err: error }, 'job outcome write failed; retrying');
        },
      });
    } catch (gaveUp) {
      this.stats.databaseErrors += 1;
      const err = gaveUp instanceof RetryGaveUp ? gaveUp.cause : gaveUp;
      this.#log.warn({ job, err }, 'job outcome not written before its lease ended; dropped');
      return null;
    }
  }

  /** Aborts a job and hands it back to the queue unfinished. */
  async #giveBack(entry: Running): Promise<void> {
    entry.released = true;
    entry.controller.abort(new JobError('given_back', 'the worker is stopping', { final: false }));
    clearInterval(entry.renewal);
    const given = await giveBackJob(this.#db, entry.job).catch(() => false);
    if (given) this.stats.givenBack += 1;
    this.#log.warn({ job: entry.job.id, given, started: entry.startedAt !== null }, 'job given back at shutdown');
  }

  async #shutdown(): Promise<void> {
    this.#stopping = true;
    this.#state = 'stopping';
    this.#nudge();
    await this.#polling;
    this.#state = 'stopping'; // a claim in flight at stop() may have set it back
    await this.#beat(true);
    const held = () => [...this.#running.values()];
    // Prefetched jobs that never started go back at once; running ones get the grace period.
    await Promise.all(
      held()
        .filter((r) => r.startedAt === null)
        .map((r) => this.#giveBack(r)),
    );
    const allSettled = new AbortController();
    const all = Promise.all(held().map((r) => r.settled)).then(() => allSettled.abort());
    await pause(this.#options.graceMs, allSettled.signal);
    if (!allSettled.signal.aborted) {
      await Promise.all(
        held()
          .filter((r) => !r.released)
          .map((r) => this.#giveBack(r)),
      );
      await all;
    }
    this.#log.info({ worker: this.id, ...this.stats }, 'worker stopped');
  }
}

/** A worker, polling from now on. */
export function startWorker(
  db: Database,
  handlers: Readonly<Record<string, JobHandler>>,
  options: WorkerOptions,
  log: Logger,
  /** Opens the database again when the embedded one is gone (its process died). */
  reopen?: () => Promise<Database>,
): RunningWorker {
  return new JobWorker(db, handlers, options, log, reopen).start();
}
