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
import PQueue from 'p-queue';
import type { Database, Queryable } from '../lib/db/database.ts';
import { isDatabaseUnavailable } from '../lib/db/database.ts';
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

/** Backoff of `attempt` (1-based) with equal jitter: half fixed, half random, capped. */
export function backoffMs(attempt: number, baseMs: number, maxMs: number): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

const NEVER = new Promise<void>(() => {});

/** Waits `ms` or until `wake` settles; the timer holds the process open, as a poller must. */
async function sleep(ms: number, wake: Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))), wake]);
  clearTimeout(timer);
}

type Outcome = { ok: true; result: unknown } | { ok: false; error: JobError };

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

export function startWorker(
  db: Database,
  handlers: Readonly<Record<string, JobHandler>>,
  options: WorkerOptions,
  log: Logger,
  /** Opens the database again when the embedded one is gone (its process died). */
  reopen?: () => Promise<Database>,
): RunningWorker {
  const id = options.id ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const stats: WorkerStats = { claimed: 0, done: 0, failed: 0, retried: 0, lost: 0, givenBack: 0, databaseErrors: 0 };
  /** Every job this worker holds: running, or prefetched and waiting for a slot. */
  const running = new Map<string, Running>();
  const slots = new PQueue({ concurrency: options.concurrency });
  const capacity = options.concurrency + (options.prefetch ?? 0);
  const refillBatch = Math.max(1, Math.ceil((options.prefetch ?? 0) / 2));
  let stopping = false;
  let state: 'polling' | 'database_unreachable' | 'stopping' = 'polling';
  let wakeUp: () => void = () => {};
  let wake = new Promise<void>((resolve) => (wakeUp = resolve));
  const nudge = () => {
    wakeUp();
    wake = new Promise<void>((resolve) => (wakeUp = resolve));
  };
  const beat = (force = false) =>
    options.heartbeat?.beat(
      { workerId: id, state, running: running.size, done: stats.done, failed: stats.failed },
      force,
    );

  /** Runs a write of a claimed job, retrying a database outage until the lease would end. */
  async function write<T>(entry: Running, statement: () => Promise<T>): Promise<T | null> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await statement();
      } catch (error) {
        stats.databaseErrors += 1;
        const wait = backoffMs(attempt, 200, 5_000);
        if (Date.now() + wait >= entry.leaseEnds) {
          log.warn({ job: entry.job.id, err: error }, 'job outcome not written before its lease ended; dropped');
          return null;
        }
        log.warn({ job: entry.job.id, err: error }, 'job outcome write failed; retrying');
        await sleep(wait, NEVER);
      }
    }
  }

  function renewer(entry: Running): NodeJS.Timeout {
    const timer = setInterval(() => {
      const asked = Date.now();
      renewLease(db, entry.job, options.leaseMs).then(
        (held) => {
          if (held) entry.leaseEnds = asked + options.leaseMs;
          else release(entry, 'lease lost: the job was claimed again');
        },
        (error: unknown) => {
          stats.databaseErrors += 1;
          log.warn({ job: entry.job.id, err: error }, 'lease renewal failed');
          if (Date.now() >= entry.leaseEnds) release(entry, 'lease expired while the database was unreachable');
        },
      );
    }, options.leaseMs / 3);
    return timer;
  }

  function release(entry: Running, why: string): void {
    if (entry.released) return;
    entry.released = true;
    stats.lost += 1;
    log.warn({ job: entry.job.id, why }, 'job abandoned');
    entry.controller.abort(new JobError('lease_lost', why, { final: false }));
  }

  /** Runs the job's handler: the part that holds a slot. */
  async function execute(entry: Running): Promise<Outcome | null> {
    const { job } = entry;
    if (entry.released) return null;
    entry.startedAt = Date.now();
    try {
      const handler = handlers[job.job];
      if (handler === undefined) throw new JobError('unknown_job', `no handler for job "${job.job}"`, { final: true });
      return {
        ok: true,
        result: await handler(job.payload, {
          job,
          db,
          signal: entry.controller.signal,
          log: log.child({ job: job.id }),
        }),
      };
    } catch (error) {
      return { ok: false, error: asJobError(error) };
    }
  }

  /** Writes a job's outcome under its claim, after its slot went to the next job; then says how it ended, in one line. */
  async function record(entry: Running, outcome: Outcome | null): Promise<void> {
    // Renewed no more: a renewal racing the outcome's write would find the job done and call it lost.
    clearInterval(entry.renewal);
    if (outcome === null || entry.released) return;
    const { job } = entry;
    const finished = { job: job.id, kind: job.job, attempt: job.attempts, durationMs: Date.now() - entry.startedAt! };
    if (outcome.ok) {
      const written = await write(entry, () => completeJob(db, job, outcome.result));
      if (written === true) stats.done += 1;
      else stats.lost += 1;
      // lost: claimed again meanwhile; dropped: not written before its lease ended. Its next holder redoes it.
      const ended = written === true ? 'done' : written === false ? 'lost' : 'dropped';
      log[ended === 'done' ? 'info' : 'warn']({ ...finished, outcome: ended }, 'job finished');
      return;
    }
    const { error } = outcome;
    const retryInMs = backoffMs(job.attempts, options.retryBaseMs, options.retryMaxMs);
    const status = await write(entry, () => failJob(db, job, errorText(error), { final: error.final, retryInMs }));
    if (status === 'failed') stats.failed += 1;
    else if (status === 'retrying') stats.retried += 1;
    else stats.lost += 1;
    log[status === 'failed' ? 'error' : 'warn'](
      { ...finished, outcome: status ?? 'dropped', code: error.code, err: error.message },
      'job finished',
    );
  }

  function launch(job: ClaimedJob): void {
    const entry = {
      job,
      controller: new AbortController(),
      leaseEnds: Date.now() + options.leaseMs,
      released: false,
      startedAt: null,
      settled: Promise.resolve(),
    } as Running;
    // The lease is renewed from the claim on: a prefetched job waiting for a slot keeps it too.
    entry.renewal = renewer(entry);
    running.set(job.id, entry);
    entry.settled = slots
      .add(() => execute(entry))
      .then((outcome) => record(entry, outcome ?? null))
      .catch((error: unknown) => log.error({ job: job.id, err: error }, 'job bookkeeping failed'))
      .finally(() => {
        clearInterval(entry.renewal);
        running.delete(job.id);
        nudge();
      });
  }

  /** Aborts a job and hands it back to the queue unfinished. */
  async function giveBack(entry: Running): Promise<void> {
    entry.released = true;
    entry.controller.abort(new JobError('given_back', 'the worker is stopping', { final: false }));
    clearInterval(entry.renewal);
    const given = await giveBackJob(db, entry.job).catch(() => false);
    if (given) stats.givenBack += 1;
    log.warn({ job: entry.job.id, given, started: entry.startedAt !== null }, 'job given back at shutdown');
  }

  async function loop(): Promise<void> {
    let failures = 0;
    while (!stopping) {
      void beat();
      const free = capacity - running.size;
      // While prefetched jobs still wait for a slot, refills wait until half the prefetch is
      // free: one claim's round trips then serve several jobs instead of each one.
      const claiming = free > 0 && (slots.size === 0 || free >= refillBatch);
      let filled = !claiming;
      if (claiming) {
        try {
          const jobs = await db.transaction((tx) =>
            claimJobs(tx, { workerId: id, limit: free, leaseMs: options.leaseMs }),
          );
          failures = 0;
          state = 'polling';
          stats.claimed += jobs.length;
          for (const job of jobs) launch(job);
          filled = jobs.length === free;
        } catch (error) {
          failures += 1;
          stats.databaseErrors += 1;
          state = 'database_unreachable';
          const wait = backoffMs(failures, 500, 30_000);
          log.error({ err: error, retryInMs: Math.round(wait) }, 'cannot claim jobs; retrying');
          if (reopen !== undefined && isDatabaseUnavailable(error)) {
            await db.close().catch(() => {});
            db = await reopen().catch((reopenError: unknown) => {
              log.error({ err: reopenError }, 'cannot reopen the database');
              return db;
            });
          }
          await sleep(wait, wake);
          continue;
        }
      }
      // Every slot busy: wait for one to free (or a beat's worth of time); queue empty: poll later.
      if (filled) await sleep(options.pollMs, wake);
      else await sleep(options.pollMs * (0.75 + Math.random() / 2), wake);
    }
  }

  const loopDone = loop();
  let stopped: Promise<void> | null = null;

  async function shutdown(): Promise<void> {
    stopping = true;
    state = 'stopping';
    nudge();
    await loopDone;
    state = 'stopping'; // a claim in flight at stop() may have set it back
    await beat(true);
    // Prefetched jobs that never started go back at once; running ones get the grace period.
    await Promise.all([...running.values()].filter((r) => r.startedAt === null).map(giveBack));
    let finishedInGrace = false;
    const all = Promise.all([...running.values()].map((r) => r.settled)).then(() => {
      finishedInGrace = true;
    });
    await sleep(options.graceMs, all);
    if (!finishedInGrace) {
      await Promise.all([...running.values()].filter((r) => !r.released).map(giveBack));
      await all;
    }
    log.info({ worker: id, ...stats }, 'worker stopped');
  }

  return {
    id,
    stats,
    get db() {
      return db;
    },
    stop: () => (stopped ??= shutdown()),
  };
}
