// The bid-worker's statements on processing_queue (docs/behaviour/states.md#bid-worker-job). The
// table is the platform's own, so it is claimed directly: FOR UPDATE SKIP LOCKED in one short
// statement that also sets the lease, never a transaction held while a job works.
//
// A claim mints a claim_token (schema/0014); every later write of that job (lease renewal,
// result, error, give-back) names it, so a worker that lost its lease (it stalled, the lease
// expired, another worker claimed the job) changes nothing: it finds no row and drops the job.
// That is what makes "done exactly once" hold when a worker is killed mid-job.

import type { Queryable } from '../lib/db/database.ts';

export type JobName = 'analyse_form' | 'template_fill';
export const JOB_NAMES: readonly JobName[] = ['analyse_form', 'template_fill'];
export type JobStatus = 'queued' | 'running' | 'done' | 'failed';
export const JOB_STATUSES: readonly JobStatus[] = ['queued', 'running', 'done', 'failed'];

/** A job as the worker holds it after a claim. */
export interface ClaimedJob {
  id: string;
  job: string;
  payload: unknown;
  attempts: number;
  maxAttempts: number;
  claimToken: string;
}

/** A row of processing_queue as operators see it. */
export interface QueueRow {
  id: string;
  job: string;
  payload: unknown;
  status: JobStatus;
  attempts: number;
  max_attempts: number;
  lease_until: string | null;
  run_after: string | null;
  claimed_by: string | null;
  result: unknown;
  error: string | null;
  created_at: string;
  updated_at: string;
}

const ms = (n: number) => Math.max(0, Math.round(n));

/**
 * Ends the jobs whose lease expired on their last attempt (their worker died holding it): they
 * are failed with the last error, never claimed again. Then claims up to `limit` jobs, oldest
 * first: queued ones past their backoff and running ones whose lease expired.
 */
export async function claimJobs(
  db: Queryable,
  options: { workerId: string; limit: number; leaseMs: number },
): Promise<ClaimedJob[]> {
  if (options.limit <= 0) return [];
  await db.query(
    `UPDATE processing_queue
        SET status = 'failed', lease_until = NULL, claim_token = NULL, updated_at = now(),
            error = 'lease_expired: the worker of attempt ' || attempts || ' of ' || max_attempts ||
                    ' stopped renewing its lease' || coalesce(' (last error: ' || error || ')', '')
      WHERE id IN (SELECT id FROM processing_queue
                    WHERE status = 'running' AND lease_until < now() AND attempts >= max_attempts
                    FOR UPDATE SKIP LOCKED)`,
  );
  const { rows } = await db.query<{
    id: string;
    job: string;
    payload: unknown;
    attempts: number;
    max_attempts: number;
    claim_token: string;
  }>(
    `WITH next AS (
       SELECT id FROM processing_queue
        WHERE (status = 'queued' AND (run_after IS NULL OR run_after <= now()))
           OR (status = 'running' AND lease_until < now() AND attempts < max_attempts)
        ORDER BY created_at, id
        LIMIT $1
        FOR UPDATE SKIP LOCKED)
     UPDATE processing_queue q
        SET status = 'running', attempts = q.attempts + 1, claim_token = gen_random_uuid(),
            claimed_by = $2, lease_until = now() + $3 * interval '1 millisecond', run_after = NULL,
            updated_at = now()
       FROM next WHERE q.id = next.id
     RETURNING q.id, q.job, q.payload, q.attempts, q.max_attempts, q.claim_token`,
    [options.limit, options.workerId, ms(options.leaseMs)],
  );
  return rows.map((r) => ({
    id: r.id,
    job: r.job,
    payload: r.payload,
    attempts: r.attempts,
    maxAttempts: r.max_attempts,
    claimToken: r.claim_token,
  }));
}

/** Extends the lease; false when the job is no longer this claim's (expired and claimed again). */
export async function renewLease(db: Queryable, job: ClaimedJob, leaseMs: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE processing_queue SET lease_until = now() + $3 * interval '1 millisecond', updated_at = now()
      WHERE id = $1 AND claim_token = $2 AND status = 'running'`,
    [job.id, job.claimToken, ms(leaseMs)],
  );
  return rowCount === 1;
}

/** Records the result; false when the claim was lost, and then nothing was written. */
export async function completeJob(db: Queryable, job: ClaimedJob, result: unknown): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE processing_queue
        SET status = 'done', result = $3::jsonb, error = NULL, lease_until = NULL, claim_token = NULL,
            updated_at = now()
      WHERE id = $1 AND claim_token = $2 AND status = 'running'`,
    [job.id, job.claimToken, JSON.stringify(result)],
  );
  return rowCount === 1;
}

/**
 * Records a failed attempt: the job waits `retryInMs` and is tried again while attempts remain,
 * else (or when `final`, an error no retry can heal) it ends failed with this error.
 */
export async function failJob(
  db: Queryable,
  job: ClaimedJob,
  error: string,
  options: { final: boolean; retryInMs: number },
): Promise<'retrying' | 'failed' | 'lost'> {
  const { rows } = await db.query<{ status: JobStatus }>(
    `UPDATE processing_queue
        SET status = CASE WHEN $4 OR attempts >= max_attempts THEN 'failed' ELSE 'queued' END,
            run_after = CASE WHEN $4 OR attempts >= max_attempts THEN NULL
                             ELSE now() + $5 * interval '1 millisecond' END,
            error = $3, lease_until = NULL, claim_token = NULL, updated_at = now()
      WHERE id = $1 AND claim_token = $2 AND status = 'running'
      RETURNING status`,
    [job.id, job.claimToken, error, options.final, ms(options.retryInMs)],
  );
  if (rows.length === 0) return 'lost';
  return rows[0]!.status === 'failed' ? 'failed' : 'retrying';
}

/**
 * Hands a job back unfinished (the worker is stopping): queued again at once, and the attempt
 * it was on does not count, since the job did not fail.
 */
export async function giveBackJob(db: Queryable, job: ClaimedJob): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE processing_queue
        SET status = 'queued', attempts = greatest(attempts - 1, 0), lease_until = NULL,
            claim_token = NULL, claimed_by = NULL, updated_at = now()
      WHERE id = $1 AND claim_token = $2 AND status = 'running'`,
    [job.id, job.claimToken],
  );
  return rowCount === 1;
}

export async function enqueueJob(
  db: Queryable,
  job: { id: string; job: JobName; payload: unknown; maxAttempts?: number },
): Promise<void> {
  await db.query(`INSERT INTO processing_queue (id, job, payload, max_attempts) VALUES ($1, $2, $3::jsonb, $4)`, [
    job.id,
    job.job,
    JSON.stringify(job.payload),
    job.maxAttempts ?? 3,
  ]);
}

const ROW_COLUMNS = `id, job, payload, status, attempts, max_attempts, lease_until, run_after, claimed_by,
  result, error, created_at, updated_at`;

export async function getJob(db: Queryable, id: string): Promise<QueueRow | null> {
  const { rows } = await db.query<QueueRow>(`SELECT ${ROW_COLUMNS} FROM processing_queue WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

/** The newest jobs first, optionally of one status. */
export async function listJobs(
  db: Queryable,
  options: { status?: JobStatus; limit: number },
): Promise<Omit<QueueRow, 'payload' | 'result'>[]> {
  const { rows } = await db.query<QueueRow>(
    `SELECT id, job, status, attempts, max_attempts, lease_until, run_after, claimed_by, error, created_at, updated_at
       FROM processing_queue WHERE $1::text IS NULL OR status = $1
      ORDER BY created_at DESC, id LIMIT $2`,
    [options.status ?? null, options.limit],
  );
  return rows;
}

/**
 * Puts a failed job back in the queue with its attempts reset; a done, queued or running job is
 * left alone (null), so a retry never runs a job twice at once or redoes a result.
 */
export async function retryJob(db: Queryable, id: string): Promise<QueueRow | null> {
  const { rows } = await db.query<QueueRow>(
    `UPDATE processing_queue
        SET status = 'queued', attempts = 0, run_after = NULL, lease_until = NULL, claim_token = NULL,
            claimed_by = NULL, updated_at = now()
      WHERE id = $1 AND status = 'failed'
      RETURNING ${ROW_COLUMNS}`,
    [id],
  );
  return rows[0] ?? null;
}
