// @engine
// Reliability of the bid-worker when its database goes away mid-run: PostgreSQL behind a loopback
// proxy that is cut for a while (connections reset, then refused), the embedded database by
// killing its process. The worker neither crashes nor gives up: it retries with backoff, says
// database_unreachable in its heartbeat meanwhile, and once the database is back every job is
// done, each exactly once.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { loadConfig } from '../../lib/config.ts';
import type { Database } from '../../lib/db/database.ts';
import { openDatabase } from '../../lib/db/open.ts';
import { openPostgres } from '../../lib/db/postgres.ts';
import { leaseHolder } from '../../lib/lease.ts';
import { Heartbeat, readHeartbeat } from '../../worker/heartbeat.ts';
import { startWorker, type JobHandler } from '../../worker/loop.ts';
import { enqueueJob } from '../../worker/queue.ts';
import { openTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';

const JOBS = 60;
const log = pino({ level: 'silent' });

test('a database lost mid-run is retried; every job ends done exactly once when it is back', async () => {
  const root = mkdtempSync(path.join(tmpdir(), 'ingest-worker-db-down-'));
  let target: TestDatabase | null = null;
  let proxy: TcpProxy | null = null;
  let db: Database;
  let stop: () => Promise<void>;
  let restart: () => Promise<void>;
  const config = loadConfig({ INGEST_DATA_DIR: root }, root);
  if (process.env.ENGINE_DB_DSN) {
    target = await openTestDatabase();
    const dsn = new URL(target.dsn!);
    proxy = await startTcpProxy({ host: dsn.hostname, port: Number(dsn.port || 5432) });
    dsn.host = `127.0.0.1:${proxy.port}`;
    db = await openPostgres(dsn.toString());
    stop = () => proxy!.cut();
    restart = () => proxy!.resume();
  } else {
    db = await openDatabase(config);
    const lock = path.join(config.database.embeddedDir, 'ingest.lock');
    stop = async () => {
      const holder = await leaseHolder(lock, Number.POSITIVE_INFINITY);
      process.kill(holder!.pid, 'SIGKILL');
    };
    restart = async () => {};
  }
  for (let i = 0; i < JOBS; i++) await enqueueJob(db, { id: randomUUID(), job: 'analyse_form', payload: { i } });
  const runs = new Map<string, number>();
  let done = 0;
  // Set inside the callback: typed by the initializer, so that `await outage` is not narrowed to null.
  let outage = null as Promise<void> | null;
  const handler: JobHandler = async (_p, { job }) => {
    runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
    await new Promise((r) => setTimeout(r, 20));
    if (++done === JOBS / 3) outage ??= stop();
    return { ok: true };
  };
  const heartbeatFile = path.join(root, 'worker.heartbeat');
  const worker = startWorker(
    db,
    { analyse_form: handler },
    {
      concurrency: 4,
      leaseMs: 5_000,
      pollMs: 20,
      graceMs: 2_000,
      retryBaseMs: 10,
      retryMaxMs: 50,
      heartbeat: new Heartbeat(heartbeatFile, 40),
    },
    log,
    target === null ? () => openDatabase(config) : undefined,
  );
  try {
    const until = async (check: () => Promise<boolean>, what: string) => {
      const end = Date.now() + 60_000;
      while (!(await check())) {
        if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    await until(async () => outage !== null, 'the outage');
    await outage;
    await until(async () => {
      const beat = await readHeartbeat(heartbeatFile, 10_000);
      return beat.ok && beat.beat.state === 'database_unreachable';
    }, 'the heartbeat to say database_unreachable');
    await new Promise((r) => setTimeout(r, 500));
    await restart();
    const doneRows = async () =>
      Number(
        (await worker.db.query<{ n: string }>(`SELECT count(*) AS n FROM processing_queue WHERE status = 'done'`))
          .rows[0]!.n,
      );
    await until(async () => (await doneRows().catch(() => 0)) === JOBS, 'every job done');
    assert.ok(worker.stats.databaseErrors > 0, 'the outage was seen');
    const beat = await readHeartbeat(heartbeatFile, 10_000);
    assert.is(beat.ok && beat.beat.state, 'polling', 'and the loop is back to polling');
    // A job whose result could not be written during the outage is redone at most once more.
    assert.ok([...runs.values()].every((n) => n <= 2));
    assert.is(runs.size, JOBS);
  } finally {
    await worker.stop();
    await worker.db.close();
    await proxy?.close();
    await target?.dispose();
    rmSync(root, { recursive: true, force: true });
  }
});

test.run();
