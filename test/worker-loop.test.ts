// @engine
// The bid-worker's poll loop on the engine the run targets (PGlite, or PostgreSQL under
// scripts/pg-with-vector.sh): claims under a lease, re-claims after expiry, max_attempts with
// backoff, a final error failing at once, SIGTERM's grace and give-back, two workers never
// running one job at once, the fencing of a stale claim, and the heartbeat.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import type { Database } from '../lib/db/database.ts';
import { openPostgres } from '../lib/db/postgres.ts';
import { JobError } from '../worker/errors.ts';
import { Heartbeat, readHeartbeat } from '../worker/heartbeat.ts';
import { startWorker, type JobHandler, type WorkerOptions } from '../worker/loop.ts';
import { claimJobs, completeJob, enqueueJob, getJob } from '../worker/queue.ts';
import { openTestDatabase, type TestDatabase } from './helpers/db.ts';

const log = pino({ level: process.env.TEST_LOG ?? 'silent' });
const OPTIONS: WorkerOptions = {
  concurrency: 4,
  leaseMs: 2_000,
  pollMs: 20,
  graceMs: 2_000,
  retryBaseMs: 10,
  retryMaxMs: 40,
};

let t: TestDatabase;
test.before.each(async () => {
  t = await openTestDatabase();
});
test.after.each(async () => {
  await t.dispose();
});

async function enqueue(db: Database, n: number, maxAttempts = 3): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = randomUUID();
    await enqueueJob(db, { id, job: 'analyse_form', payload: { n: i }, maxAttempts });
    ids.push(id);
  }
  return ids;
}

async function until(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const countByStatus = async (db: Database, status: string) =>
  Number(
    (await db.query<{ n: string }>(`SELECT count(*) AS n FROM processing_queue WHERE status = $1`, [status])).rows[0]!
      .n,
  );

test('jobs are claimed, run and completed with their result; attempts count the claim', async () => {
  const ids = await enqueue(t.db, 10);
  const worker = startWorker(t.db, { analyse_form: async (p) => ({ echoed: p }) }, OPTIONS, log);
  await until(async () => (await countByStatus(t.db, 'done')) === 10);
  await worker.stop();
  const job = await getJob(t.db, ids[3]!);
  assert.equal(job?.status, 'done');
  assert.equal(job?.attempts, 1);
  assert.equal(job?.result, { echoed: { n: 3 } });
  assert.equal(job?.lease_until, null);
  assert.equal(worker.stats.done, 10);
});

test('a job whose lease expired (its worker died) is claimed again; the stale claim can write nothing', async () => {
  const [id] = await enqueue(t.db, 1);
  const [dead] = await claimJobs(t.db, { workerId: 'dead', limit: 1, leaseMs: 60_000 });
  assert.equal(dead?.id, id);
  // Still leased: nobody else may take it.
  assert.equal(await claimJobs(t.db, { workerId: 'other', limit: 1, leaseMs: 60_000 }), []);
  await t.db.query(`UPDATE processing_queue SET lease_until = now() - interval '1 second' WHERE id = $1`, [id]);
  const worker = startWorker(t.db, { analyse_form: async () => ({ by: 'second' }) }, OPTIONS, log);
  await until(async () => (await getJob(t.db, id!))?.status === 'done');
  await worker.stop();
  assert.is(await completeJob(t.db, dead!, { by: 'dead' }), false, 'the stale claim is fenced off');
  const job = await getJob(t.db, id!);
  assert.equal(job?.attempts, 2);
  assert.equal(job?.result, { by: 'second' });
});

test('a lease lost while the job runs aborts it and its result is never written', async () => {
  const [id] = await enqueue(t.db, 1);
  let aborted = false;
  const worker = startWorker(
    t.db,
    {
      analyse_form: (_p, { signal }) =>
        new Promise((resolve) => {
          signal.addEventListener('abort', () => {
            aborted = true;
            resolve({ late: true });
          });
        }),
    },
    { ...OPTIONS, leaseMs: 300 },
    log,
  );
  await until(async () => (await getJob(t.db, id!))?.status === 'running');
  // Another claim takes the job over (as after an expiry the renewal missed).
  await t.db.query(`UPDATE processing_queue SET claim_token = gen_random_uuid() WHERE id = $1`, [id]);
  await until(async () => aborted);
  await worker.stop();
  const job = await getJob(t.db, id!);
  assert.equal(job?.status, 'running');
  assert.equal(job?.result, null);
  assert.ok(worker.stats.lost >= 1);
});

test('retries back off and max_attempts ends the job failed with the last error', async () => {
  const [id] = await enqueue(t.db, 1, 3);
  const started: number[] = [];
  const worker = startWorker(
    t.db,
    {
      analyse_form: async (_p, { job }) => {
        started.push(Date.now());
        throw new Error(`model down on attempt ${job.attempts}`);
      },
    },
    { ...OPTIONS, retryBaseMs: 200, retryMaxMs: 1_000 },
    log,
  );
  await until(async () => (await getJob(t.db, id!))?.status === 'failed');
  await worker.stop();
  const job = await getJob(t.db, id!);
  assert.equal(job?.attempts, 3);
  assert.equal(job?.error, 'job_failed: model down on attempt 3');
  assert.equal(started.length, 3);
  // Backoff of attempt n is at least half of base * 2^(n-1).
  assert.ok(started[1]! - started[0]! >= 100, `first wait ${started[1]! - started[0]!} ms`);
  assert.ok(started[2]! - started[1]! >= 200, `second wait ${started[2]! - started[1]!} ms`);
});

test('a final error (a bad payload) fails its job at once and the other jobs go on', async () => {
  const ids = await enqueue(t.db, 5);
  const worker = startWorker(
    t.db,
    {
      analyse_form: async (p) => {
        if ((p as { n: number }).n === 2)
          throw new JobError('bad_payload', 'payload.form is required', { final: true });
        return { ok: true };
      },
    },
    OPTIONS,
    log,
  );
  await until(async () => (await countByStatus(t.db, 'done')) === 4 && (await countByStatus(t.db, 'failed')) === 1);
  await worker.stop();
  const bad = await getJob(t.db, ids[2]!);
  assert.equal(bad?.attempts, 1);
  assert.equal(bad?.error, 'bad_payload: payload.form is required');
});

test('the last attempt lost with its worker ends the job failed as lease_expired, with the error before it', async () => {
  const [id] = await enqueue(t.db, 1, 1);
  await claimJobs(t.db, { workerId: 'dead', limit: 1, leaseMs: 60_000 });
  await t.db.query(
    `UPDATE processing_queue SET lease_until = now() - interval '1 second', error = 'job_failed: x' WHERE id = $1`,
    [id],
  );
  let ran = false;
  const worker = startWorker(t.db, { analyse_form: async () => (ran = true) }, OPTIONS, log);
  await until(async () => (await getJob(t.db, id!))?.status === 'failed');
  await worker.stop();
  assert.is(ran, false);
  assert.match((await getJob(t.db, id!))!.error!, /^lease_expired: .*attempt 1 of 1.*last error: job_failed: x/);
});

test('stop (SIGTERM) lets a job finish within the grace period', async () => {
  const [id] = await enqueue(t.db, 1);
  let started = false;
  const worker = startWorker(
    t.db,
    {
      analyse_form: async () => {
        started = true;
        await new Promise((r) => setTimeout(r, 300));
        return { finished: true };
      },
    },
    OPTIONS,
    log,
  );
  await until(async () => started);
  await worker.stop();
  assert.equal((await getJob(t.db, id!))?.status, 'done');
});

test('stop (SIGTERM) gives back a job that outlasts the grace period, its attempt not counted', async () => {
  const [id] = await enqueue(t.db, 1);
  let aborted = false;
  const worker = startWorker(
    t.db,
    {
      analyse_form: (_p, { signal }) =>
        new Promise((_resolve, reject) => {
          signal.addEventListener('abort', () => {
            aborted = true;
            reject(signal.reason);
          });
        }),
    },
    { ...OPTIONS, graceMs: 200 },
    log,
  );
  await until(async () => (await getJob(t.db, id!))?.status === 'running');
  await worker.stop();
  assert.ok(aborted);
  const job = await getJob(t.db, id!);
  assert.equal(job?.status, 'queued');
  assert.equal(job?.attempts, 0);
  assert.equal(job?.error, null);
  assert.equal(worker.stats.givenBack, 1);
});

test('prefetched jobs hold a lease while they wait, and go back at once at stop', async () => {
  const ids = await enqueue(t.db, 3);
  let started = 0;
  const worker = startWorker(
    t.db,
    {
      analyse_form: async () => {
        started += 1;
        await new Promise((r) => setTimeout(r, 300));
        return { ok: true };
      },
    },
    { ...OPTIONS, concurrency: 1, prefetch: 2 },
    log,
  );
  await until(async () => (await countByStatus(t.db, 'running')) === 3);
  assert.is(started, 1, 'one slot, one job working');
  await worker.stop();
  const jobs = await Promise.all(ids.map((id) => getJob(t.db, id)));
  // Jobs enqueued within one clock tick tie on created_at and the claim breaks the tie by id, so
  // which of the three the slot took is not fixed.
  const outcomes = jobs.map((j) => `${j?.status}/${j?.attempts}`).sort();
  assert.equal(outcomes, ['done/1', 'queued/0', 'queued/0']);
  assert.is(worker.stats.givenBack, 2);
});

test('two workers on one queue never run one job at once, and each job runs once', async () => {
  const ids = await enqueue(t.db, 120);
  // On PostgreSQL the second worker has its own pool, as a second machine would.
  const second: Database = t.dsn === null ? t.db : await openPostgres(t.dsn);
  const runs = new Map<string, number>();
  let overlap = 0;
  const active = new Set<string>();
  const handler: JobHandler = async (_p, { job }) => {
    if (active.has(job.id)) overlap += 1;
    active.add(job.id);
    runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
    await new Promise((r) => setTimeout(r, 5));
    active.delete(job.id);
    return { ok: true };
  };
  const a = startWorker(t.db, { analyse_form: handler }, { ...OPTIONS, prefetch: 4 }, log);
  const b = startWorker(second, { analyse_form: handler }, { ...OPTIONS, prefetch: 4 }, log);
  await until(async () => (await countByStatus(t.db, 'done')) === ids.length);
  await Promise.all([a.stop(), b.stop()]);
  if (second !== t.db) await second.close();
  assert.is(overlap, 0);
  assert.is(runs.size, ids.length);
  assert.ok([...runs.values()].every((n) => n === 1));
  assert.ok(a.stats.done > 0 && b.stats.done > 0, `both worked: ${a.stats.done} + ${b.stats.done}`);
});

test('the heartbeat says the loop is polling, and a stale one fails the health check', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'ingest-heartbeat-'));
  try {
    const file = path.join(dir, 'worker.heartbeat');
    const worker = startWorker(
      t.db,
      { analyse_form: async () => ({}) },
      { ...OPTIONS, heartbeat: new Heartbeat(file, 100) },
      log,
    );
    await until(async () => (await readHeartbeat(file, 1_000)).ok);
    const live = await readHeartbeat(file, 1_000);
    assert.equal(live.ok && live.beat.state, 'polling');
    assert.equal(live.ok && live.beat.workerId, worker.id);
    await worker.stop();
    const stopped = await readHeartbeat(file, 1_000);
    assert.equal(stopped.ok && stopped.beat.state, 'stopping');
    await new Promise((r) => setTimeout(r, 120));
    const stale = await readHeartbeat(file, 100);
    assert.is(stale.ok, false);
    assert.is((await readHeartbeat(path.join(dir, 'none'), 1_000)).ok, false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
