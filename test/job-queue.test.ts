// @engine
// The job queue of issue 43 on pg-boss (lib/queue/job-queue.ts, schema/0017_job_queue.sql): the
// migration installs pg-boss's schema at the pinned version with the walk_item queue, on both
// engines; on PostgreSQL a role without the CREATE privilege enqueues and works jobs, each done
// exactly once across two pools, and a job whose worker never completes it comes back and, past
// its retry limit, ends failed. A database without the schema, or with another version of it, is
// refused by name with the command that fixes it.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { PgBoss } from 'pg-boss';
import { pino } from 'pino';
import { loadMigrations } from '../lib/db/migrate.ts';
import { openPostgres } from '../lib/db/postgres.ts';
import { requireJobQueue } from '../lib/db/schema-check.ts';
import { codeOf } from '../lib/errors.ts';
import { EXPECTED_SCHEMA_VERSION, JobQueue, WALK_ITEM_QUEUE } from '../lib/queue/job-queue.ts';
import { runIngest } from './helpers/cli.ts';
import { openTestDatabase, targetEngine, type TestDatabase } from './helpers/db.ts';
import { createNoCreateRole, type NoCreateRole } from './helpers/no-create-role.ts';

const log = pino({ level: 'silent' });

async function refusal(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a refusal');
}

test('migrating installs pg-boss at the pinned schema version with walk_item, once per database', async () => {
  const first = await openTestDatabase();
  const second = await openTestDatabase();
  try {
    // Two application schemas on one database each record 0017; pgboss is the database's, once.
    for (const t of [first, second]) {
      assert.is(await requireJobQueue(t.db, [WALK_ITEM_QUEUE]), EXPECTED_SCHEMA_VERSION);
      const { rows } = await t.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM schema_migrations WHERE version = 17',
      );
      assert.is(rows[0]!.n, 1);
    }
    const { rows } = await first.db.query<Record<string, unknown>>(
      `SELECT policy, partition, table_name, retry_limit, retry_delay, heartbeat_seconds, expire_seconds,
              (SELECT count(*)::int FROM pgboss.version) AS versions
         FROM pgboss.queue WHERE name = $1`,
      [WALK_ITEM_QUEUE],
    );
    assert.equal(rows[0], {
      policy: 'standard',
      partition: false,
      table_name: 'job_common',
      retry_limit: 2,
      retry_delay: 0,
      heartbeat_seconds: 30,
      expire_seconds: 3600,
      versions: 1,
    });
    const absent = await refusal(requireJobQueue(first.db, ['no_such_queue']));
    assert.is(codeOf(absent), 'job_queue_missing');
    assert.match(absent.message, /the queue no_such_queue.*`ingest db migrate`/s);
  } finally {
    await second.dispose();
    await first.dispose();
  }
});

if (targetEngine === 'postgres') {
  /** A database of its own on the run's server, dropped at the end. */
  async function freshDatabase<T>(fn: (dsn: string) => Promise<T>): Promise<T> {
    const base = new URL(process.env.ENGINE_DB_DSN!);
    const name = `jobq_${randomBytes(4).toString('hex')}`;
    const admin = await openPostgres(base.toString(), { max: 1 });
    await admin.exec(`CREATE DATABASE ${name}`);
    const url = new URL(base);
    url.pathname = `/${name}`;
    try {
      return await fn(url.toString());
    } finally {
      await admin.exec(`DROP DATABASE ${name} WITH (FORCE)`);
      await admin.close();
    }
  }

  test('ingest db migrate installs the queue on a fresh database, then applies nothing; a schema it did not make is refused', async () => {
    await freshDatabase(async (dsn) => {
      const db = await openPostgres(dsn, { max: 1 });
      try {
        const missing = await refusal(JobQueue.open(db, { dsn, supervise: false, queues: [WALK_ITEM_QUEUE], log }));
        assert.is(codeOf(missing), 'job_queue_missing');
        assert.match(missing.message, /lacks the schema pgboss.*schema\/0017_job_queue\.sql.*`ingest db migrate`/s);

        await db.exec('CREATE EXTENSION IF NOT EXISTS vector');
        const env = { ENGINE_DB_DSN: dsn };
        const first = await runIngest(['db', 'migrate'], env);
        assert.is(first.status, 0, first.stderr);
        const total = (await loadMigrations()).length;
        assert.match(first.stdout, new RegExp(`migrations: ${total} applied now, 0 already applied`));
        const second = await runIngest(['db', 'migrate'], env);
        assert.match(second.stdout, new RegExp(`migrations: 0 applied now, ${total} already applied`));

        // The frozen SQL is what the pinned pg-boss expects, table by table, index by index.
        const boss = new PgBoss({
          connectionString: dsn,
          migrate: false,
          createSchema: false,
          supervise: false,
          schedule: false,
        });
        await boss.start();
        const drift = await boss.detectSchemaDrift();
        await boss.stop();
        assert.ok(drift.ok, JSON.stringify(drift));

        await db.exec('UPDATE pgboss.version SET version = version - 1');
        const old = await refusal(JobQueue.open(db, { dsn, supervise: false, queues: [WALK_ITEM_QUEUE], log }));
        assert.is(codeOf(old), 'job_queue_version');
        assert.match(
          old.message,
          new RegExp(
            `version ${EXPECTED_SCHEMA_VERSION - 1}.*expects ${EXPECTED_SCHEMA_VERSION}.*\`ingest db migrate\``,
            's',
          ),
        );
      } finally {
        await db.close();
      }
    });
  });

  let t: TestDatabase;
  let role: NoCreateRole;
  const opened: JobQueue[] = [];
  // pg-boss's background errors, each of which the module logs as a warning.
  let warnings: string[];
  const queueLog = () => pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });
  const open = async (options: { supervise: boolean; queues: string[] }) => {
    const q = await JobQueue.open(t.db, { dsn: role.dsn, superviseIntervalSeconds: 1, log: queueLog(), ...options });
    opened.push(q);
    return q;
  };
  const states = async (queue: string) => {
    const { rows } = await t.db.query<{ state: string; retry_count: number }>(
      'SELECT state::text, retry_count FROM pgboss.job WHERE name = $1 ORDER BY created_on',
      [queue],
    );
    return rows;
  };
  // A queue of the test's own, so no other test's jobs are seen: created as the owner, as the
  // migration creates walk_item, with the timing a test can wait out.
  const testQueue = async (options: Record<string, unknown>) => {
    const name = `test_${randomBytes(4).toString('hex')}`;
    await t.db.query(`SELECT pgboss.create_queue($1, $2::jsonb)`, [
      name,
      JSON.stringify({ policy: 'standard', ...options }),
    ]);
    return name;
  };

  test.before.each(async () => {
    warnings = [];
    t = await openTestDatabase();
    role = await createNoCreateRole(t.dsn!);
  });
  test.after.each(async () => {
    await Promise.all(opened.splice(0).map((q) => q.stop(1_000)));
    await t.db.query(`SELECT pgboss.delete_queue(name) FROM pgboss.queue WHERE name LIKE 'test\\_%'`);
    await role.dispose();
    await t.dispose();
  });

  test('under a role without CREATE: 1,000 jobs enqueued in one batch are each done exactly once by two pools', async () => {
    const privileges = await t.db.query<{ db: boolean; boss: boolean; own: boolean }>(
      `SELECT has_database_privilege($1, current_database(), 'CREATE') AS db,
              has_schema_privilege($1, 'pgboss', 'CREATE') AS boss,
              has_schema_privilege($1, current_schema(), 'CREATE') AS own`,
      [role.name],
    );
    assert.equal(privileges.rows[0], { db: false, boss: false, own: false });

    const queue = await testQueue({ retryLimit: 2, expireInSeconds: 60 });
    const supervisor = await open({ supervise: true, queues: [queue] });
    const jobs = Array.from({ length: 1_000 }, (_, i) => ({ data: { item: i } }));
    const started = performance.now();
    await supervisor.enqueue(queue, jobs);
    const enqueueMs = performance.now() - started;
    assert.is((await states(queue)).length, 1_000);

    const runs = new Map<number, number>();
    const byWorker = [0, 0];
    for (const w of [0, 1]) {
      const worker = await open({ supervise: false, queues: [queue] });
      await worker.work<{ item: number }>(queue, { concurrency: 25, pollingIntervalSeconds: 0.5 }, async (job) => {
        runs.set(job.data.item, (runs.get(job.data.item) ?? 0) + 1);
        byWorker[w]! += 1;
      });
    }
    while (runs.size < 1_000 && performance.now() - started < 60_000) await sleep(100);
    const workMs = performance.now() - started;
    await sleep(300);
    assert.is(runs.size, 1_000);
    assert.ok(
      [...runs.values()].every((n) => n === 1),
      'no job ran twice',
    );
    assert.ok(byWorker[0]! > 0 && byWorker[1]! > 0, `both pools worked: ${byWorker}`);
    const settled = await states(queue);
    assert.ok(settled.every((s) => s.state === 'completed' && s.retry_count === 0));
    assert.equal(warnings, [], 'nothing failed for lack of a privilege');
    process.stderr.write(
      `job-queue: enqueue 1000 in ${enqueueMs.toFixed(0)} ms; all done in ${workMs.toFixed(0)} ms (${byWorker})\n`,
    );
  });

  test('a job its worker never completes comes back past its expiry, runs again, and past its retry limit ends failed', async () => {
    const queue = await testQueue({ retryLimit: 1, expireInSeconds: 1 });
    await open({ supervise: true, queues: [queue] });
    const worker = await open({ supervise: false, queues: [queue] });
    await worker.enqueue(queue, [{ data: { item: 'lost' } }]);
    const attempts: number[] = [];
    let aborted = 0;
    // The handler hangs as a dead worker's would: only pg-boss's expiry ends its claim.
    await worker.work(queue, { concurrency: 1, pollingIntervalSeconds: 0.5 }, async (job) => {
      attempts.push(job.retryCount);
      await new Promise((resolve) => job.signal.addEventListener('abort', resolve));
      aborted += 1;
    });
    const deadline = performance.now() + 30_000;
    while ((await states(queue))[0]?.state !== 'failed' && performance.now() < deadline) await sleep(200);
    assert.equal(await states(queue), [{ state: 'failed', retry_count: 1 }]);
    assert.equal(attempts, [0, 1], 'ran once, then once again, then no more');
    assert.is(aborted, 2, 'each hung run was told its claim ended');
    assert.equal(warnings, []);
  });

  test('kill -9 a worker holding a job: its heartbeat kept the job past heartbeatSeconds, its death gives the job to another worker', async () => {
    const queue = await testQueue({ retryLimit: 1, heartbeatSeconds: 10, expireInSeconds: 120 });
    await open({ supervise: true, queues: [queue] });
    await (await open({ supervise: false, queues: [queue] })).enqueue(queue, [{ data: { item: 'held' } }]);
    const lib = (file: string) => JSON.stringify(path.resolve(import.meta.dirname, '..', 'lib', file));
    const script = `
      const { pino } = await import('pino');
      const { openPostgres } = await import(${lib('db/postgres.ts')});
      const { JobQueue } = await import(${lib('queue/job-queue.ts')});
      const dsn = ${JSON.stringify(role.dsn)};
      const q = await JobQueue.open(await openPostgres(dsn, { max: 1 }), { dsn, supervise: false, queues: [${JSON.stringify(queue)}], log: pino({ level: 'silent' }) });
      await q.work(${JSON.stringify(queue)}, { concurrency: 1, pollingIntervalSeconds: 0.5 }, async (job) => {
        process.stdout.write('fetched ' + job.retryCount + '\\n');
        await new Promise(() => {});
      });`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const fetched = await new Promise<string>((resolve) =>
      child.stdout.once('data', (chunk) => resolve(String(chunk))),
    );
    assert.is(fetched.trim(), 'fetched 0');
    // Longer than heartbeatSeconds: only the live worker's heartbeat keeps the job its own.
    await sleep(13_000);
    assert.equal(await states(queue), [{ state: 'active', retry_count: 0 }]);
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    const killedAt = performance.now();
    const reruns: number[] = [];
    const worker = await open({ supervise: false, queues: [queue] });
    await worker.work(queue, { concurrency: 1, pollingIntervalSeconds: 0.5 }, async (job) => {
      reruns.push(job.retryCount);
    });
    while ((await states(queue))[0]?.state !== 'completed' && performance.now() - killedAt < 30_000) await sleep(200);
    assert.equal(await states(queue), [{ state: 'completed', retry_count: 1 }]);
    assert.equal(reruns, [1]);
    assert.equal(warnings, []);
    process.stderr.write(
      `job-queue: the killed worker's job ran again ${((performance.now() - killedAt) / 1000).toFixed(1)} s after the kill\n`,
    );
  });
}

test.run();
