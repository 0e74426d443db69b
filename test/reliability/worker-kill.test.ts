// @engine
// Reliability of the bid-worker: kill -9 a worker process during a run of 1,000 jobs. Every job
// ends done exactly once (a trigger logs every write of a done row: one per job), the jobs the
// killed worker held show the re-claim in their attempts, none stays running, and two poison
// forms among them fail alone with a named error. On PostgreSQL two workers share the queue
// and one of them is killed; on the embedded database one process holds it (docs/DECISIONS.md),
// so the killed worker is followed by a fresh one, as a container restart would.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../lib/config.ts';
import type { Database } from '../../lib/db/database.ts';
import { openDatabase } from '../../lib/db/open.ts';
import { alive, leaseHolder } from '../../lib/lease.ts';
import { startMockServer, type MockServer } from '../../mock/server.ts';
import { mockTierEnv } from '../helpers/mock-tier.ts';
import { readHeartbeat } from '../../worker/heartbeat.ts';
import { BIN } from '../helpers/cli.ts';
import { openTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { docxBomb } from '../helpers/documents.ts';

const JOBS = 1_000;
const LEASE_MS = 2_000;
const onPostgres = Boolean(process.env.ENGINE_DB_DSN);

let root: string;
let mock: MockServer;
let target: TestDatabase | null = null;
test.before(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'ingest-worker-kill-'));
  mock = await startMockServer({ latencyMs: 10 });
});
test.after(async () => {
  await mock.close();
  await target?.dispose();
  rmSync(root, { recursive: true, force: true });
});

function workerEnv(name: string): Record<string, string> {
  return {
    INGEST_DATA_DIR: root,
    ...(target?.dsn ? { ENGINE_DB_DSN: target.dsn } : {}),
    ...mockTierEnv(mock.url),
    INGEST_WORKER_CONCURRENCY: '8',
    INGEST_WORKER_LEASE_MS: String(LEASE_MS),
    INGEST_WORKER_POLL_MS: '50',
    INGEST_WORKER_HEARTBEAT_MS: '100',
    INGEST_WORKER_HEARTBEAT_FILE: path.join(root, `${name}.heartbeat`),
    INGEST_LOG_LEVEL: 'error',
  };
}

function startWorkerProcess(name: string): ChildProcess {
  return spawn(process.execPath, [BIN, 'worker'], {
    env: { PATH: process.env.PATH ?? '', ...workerEnv(name) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

/** A worker's jobs done and running, by its heartbeat. */
const beatOf = async (name: string): Promise<{ done: number; running: number }> => {
  const beat = await readHeartbeat(path.join(root, `${name}.heartbeat`), 60_000);
  return beat.ok ? beat.beat : { done: 0, running: 0 };
};

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 120_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) =>
    child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', (code) => resolve(code)),
  );

async function openQueue(): Promise<Database> {
  if (onPostgres) return target!.db;
  return openDatabase(loadConfig({ INGEST_DATA_DIR: root }, root));
}

test('kill -9 of a worker mid-run: every job done exactly once, re-claims visible, nothing left running', async () => {
  if (onPostgres) target = await openTestDatabase();
  const bomb = Buffer.from(await docxBomb(600 * 1024 * 1024)).toString('base64');
  let db = await openQueue();
  await db.exec(`
    CREATE TABLE done_log (id uuid NOT NULL);
    CREATE FUNCTION log_done() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO done_log VALUES (NEW.id); RETURN NEW; END $$;
    CREATE TRIGGER processing_queue_done AFTER UPDATE ON processing_queue
      FOR EACH ROW WHEN (NEW.status = 'done') EXECUTE FUNCTION log_done();`);
  const poison = new Set<number>([137, 611]);
  await db.query(
    `INSERT INTO processing_queue (id, job, payload, created_at)
     SELECT id, 'analyse_form', payload::jsonb, now() + n * interval '1 microsecond'
       FROM unnest($1::uuid[], $2::text[]) WITH ORDINALITY AS u(id, payload, n)`,
    [
      Array.from({ length: JOBS }, () => randomUUID()),
      Array.from({ length: JOBS }, (_, i) =>
        JSON.stringify({
          form: poison.has(i)
            ? { inline: { filename: 'bomb.docx', base64: bomb } }
            : {
                inline: {
                  filename: `form-${i}.md`,
                  base64: Buffer.from(`# Form ${i}\n\nWho is supplier ${i}?\n`).toString('base64'),
                },
              },
        }),
      ),
    ],
  );
  if (!onPostgres) await db.close();

  const victim = startWorkerProcess('victim');
  const survivor = onPostgres ? startWorkerProcess('survivor') : null;
  // Killed while it holds jobs: on a loaded machine the survivor may drain the queue before the
  // victim's 250th job, and a victim that holds nothing has nothing to be re-claimed.
  await until(async () => {
    const { done, running } = await beatOf('victim');
    return done >= 100 && running >= 1;
  }, 'the victim to finish 100 jobs and hold one');
  victim.kill('SIGKILL');
  await exited(victim);
  /** The jobs the victim held when it died, by its claims (claimed_by: host:pid:...). */
  const heldByVictim = async (): Promise<string[]> => {
    const queue = await openQueue();
    try {
      const { rows } = await queue.query<{ id: string }>(
        `SELECT id::text AS id FROM processing_queue WHERE status = 'running' AND claimed_by LIKE $1`,
        [`${hostname()}:${victim.pid}:%`],
      );
      return rows.map((row) => row.id);
    } finally {
      if (!onPostgres) await queue.close();
    }
  };
  let second = survivor;
  if (second === null) {
    // The embedded database's process lets go of the directory once its parent is gone.
    const lock = path.join(loadConfig({ INGEST_DATA_DIR: root }, root).database.embeddedDir, 'ingest.lock');
    await until(async () => {
      const holder = await leaseHolder(lock, Number.POSITIVE_INFINITY);
      return holder === null || !alive(holder.pid);
    }, 'the embedded database to be released');
  }
  // On PostgreSQL at once (its leases outlive the kill by LEASE_MS); embedded, once the directory is free.
  const held = await heldByVictim();
  second ??= startWorkerProcess('survivor');
  // Idle and past every lease the victim held: whatever it had running has been re-claimed.
  let last = -1;
  await until(async () => {
    const beat = await readHeartbeat(path.join(root, 'survivor.heartbeat'), 60_000);
    const settled = beat.ok && beat.beat.running === 0 && beat.beat.done === last;
    last = beat.ok ? beat.beat.done : -1;
    if (!settled) return false;
    await new Promise((r) => setTimeout(r, LEASE_MS + 500));
    const after = await readHeartbeat(path.join(root, 'survivor.heartbeat'), 60_000);
    return after.ok && after.beat.done === last && after.beat.running === 0;
  }, 'the survivor to go idle');
  second.kill('SIGTERM');
  assert.is(await exited(second), 0, 'SIGTERM ends the worker cleanly');

  db = await openQueue();
  try {
    const count = async (sql: string) => Number((await db.query<{ n: string }>(sql)).rows[0]!.n);
    assert.is(await count(`SELECT count(*) AS n FROM processing_queue WHERE status = 'done'`), JOBS - poison.size);
    assert.is(await count(`SELECT count(*) AS n FROM processing_queue WHERE status IN ('running', 'queued')`), 0);
    assert.is(await count(`SELECT count(*) AS n FROM done_log`), JOBS - poison.size, 'one done write per job');
    assert.is(await count(`SELECT count(DISTINCT id) AS n FROM done_log`), JOBS - poison.size);
    assert.ok(held.length >= 1, 'the victim held jobs when it was killed');
    const retaken = await db.query<{ status: string; attempts: number }>(
      `SELECT status, attempts FROM processing_queue WHERE id = ANY($1::uuid[])`,
      [held],
    );
    for (const job of retaken.rows) {
      assert.ok(job.attempts > 1, 'each job the victim held was claimed again');
      assert.ok(job.status === 'done' || job.status === 'failed', `a held job ended ${job.status}`);
    }
    const reclaimed = await count(`SELECT count(*) AS n FROM processing_queue WHERE attempts > 1`);
    // The victim held at most its 8 running jobs and the 8 it had prefetched (prefetch defaults to the concurrency).
    assert.ok(reclaimed <= 16, `at most the victim's 16 held jobs were re-claimed, got ${reclaimed}`);
    const failed = await db.query<{ error: string; attempts: number }>(
      `SELECT error, attempts FROM processing_queue WHERE status = 'failed'`,
    );
    assert.is(failed.rows.length, poison.size);
    for (const row of failed.rows) assert.match(row.error, /^form_unreadable\/zip_bomb: /);
    const questions = await count(
      `SELECT count(*) AS n FROM processing_queue WHERE status = 'done' AND jsonb_array_length(result -> 'questions') = 1`,
    );
    assert.is(questions, JOBS - poison.size, 'every done job holds its analysis');
  } finally {
    if (!onPostgres) await db.close();
  }
});

test.run();
