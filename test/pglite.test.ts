// The embedded engine's process (lib/db/pglite.ts, lib/db/pglite-process.ts): one session
// shared in turns, database errors that keep their fields across the process boundary, a clear
// error once the database is closed, and a data directory that only one live process has open,
// whatever happens to the ingest process that opened it. PGlite only: PostgreSQL has sessions
// and a server of its own.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Database } from '../lib/db/database.ts';
import { openPglite } from '../lib/db/pglite.ts';
import { DatabaseBusyError, EmbeddedDatabaseGoneError } from '../lib/db/pglite-protocol.ts';
import { DataDirOwnershipError } from '../lib/db/pglite-owner.ts';
import { alive, type Lease } from '../lib/lease.ts';
import { targetEngine } from './helpers/db.ts';
import { inTempDir } from './helpers/temp-dir.ts';

const PGLITE = path.resolve(import.meta.dirname, '..', 'lib', 'db', 'pglite.ts');

/** The pid of the process that has `dir` open, from its lock. */
function databasePid(dir: string): number {
  return (JSON.parse(readFileSync(path.join(dir, 'ingest.lock'), 'utf8')) as Lease).pid;
}

async function waitForExit(pid: number, ms: number): Promise<boolean> {
  for (const until = Date.now() + ms; Date.now() < until; await sleep(25)) if (!alive(pid)) return true;
  return false;
}

/**
 * Another ingest process: opens `dir`, creates table t with one row, then sends `statement`
 * without waiting for it, says 'ready' and idles until killed.
 */
function otherIngest(dir: string, statement: string): Promise<{ pid: number; kill(): void }> {
  const script = `import { openPglite } from ${JSON.stringify(PGLITE)};
const db = await openPglite(${JSON.stringify(dir)});
await db.exec('CREATE TABLE t (n int PRIMARY KEY); INSERT INTO t VALUES (1)');
void db.query(${JSON.stringify(statement)}).catch(() => {});
process.stdout.write('ready\\n');
setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) resolve({ pid: child.pid!, kill: () => child.kill('SIGKILL') });
    });
    child.once('exit', (code) => reject(new Error(`the other ingest process exited (code ${code})`)));
  });
}

/** Runs otherIngest, then SIGKILLs it; returns its database process's pid. */
async function killOtherIngest(dir: string, statement: string): Promise<number> {
  const other = await otherIngest(dir, statement);
  const pid = databasePid(dir);
  other.kill();
  return pid;
}

/** Opens `dir` again (running `onOpen` first thing) and finds the other ingest process's row. */
async function assertCommittedRowStays(dir: string, onOpen: () => void = () => {}): Promise<void> {
  const reopened = await openPglite(dir);
  try {
    onOpen();
    assert.equal((await reopened.query('SELECT n FROM t')).rows, [{ n: 1 }]);
  } finally {
    await reopened.close();
  }
}

if (targetEngine === 'pglite') {
  let db: Database;
  test.before(async () => {
    db = await openPglite('memory://');
    await db.exec('CREATE TABLE t (n int PRIMARY KEY)');
  });
  test.after(async () => {
    await db.close();
  });

  test('a database error crosses the process boundary with its SQLSTATE and detail', async () => {
    await db.query('INSERT INTO t (n) VALUES (1)');
    const error = (await db.query('INSERT INTO t (n) VALUES (1)').catch((e: unknown) => e)) as Error & {
      code?: string;
      detail?: string;
    };
    assert.instance(error, Error);
    assert.is(error.code, '23505');
    assert.match(error.detail ?? '', /already exists/);
    assert.is(
      (await db.query('SELECT count(*)::int AS n FROM t')).rows[0]?.n,
      1,
      'the session is usable after an error',
    );
    await db.query('DELETE FROM t');
  });

  test('a transaction has the session alone from BEGIN to COMMIT', async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const order: string[] = [];
    const tx = db.transaction(async (q) => {
      await q.query('INSERT INTO t (n) VALUES (2)');
      await gate;
      await q.query('INSERT INTO t (n) VALUES (3)');
      order.push('committed');
    });
    // Sent while the transaction waits: it must run after the COMMIT, and see both rows.
    const outside = db.query<{ n: number }>('SELECT count(*)::int AS n FROM t').then((r) => {
      order.push('outside');
      return r.rows[0]!.n;
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(order, [], 'the outside statement waits for the transaction');
    open();
    await tx;
    assert.is(await outside, 2);
    assert.equal(order, ['committed', 'outside']);
    await db.query('DELETE FROM t');
  });

  test("a transaction that throws is rolled back and its error is the caller's", async () => {
    const error = await db
      .transaction(async (q) => {
        await q.query('INSERT INTO t (n) VALUES (4)');
        throw new Error('changed my mind');
      })
      .catch((e: unknown) => e);
    assert.is((error as Error).message, 'changed my mind');
    assert.is((await db.query('SELECT count(*)::int AS n FROM t')).rows[0]?.n, 0);
  });

  test('binary COPY data reaches the database process intact', async () => {
    await db.exec('CREATE TABLE b (x int4)');
    // PGCOPY header, one row of one int4 (7), trailer.
    const header = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)]);
    const row = Buffer.from([0, 1, 0, 0, 0, 4, 0, 0, 0, 7]);
    await db.copyIn('b', ['x'], new Uint8Array(Buffer.concat([header, row, Buffer.from([0xff, 0xff])])));
    assert.equal((await db.query('SELECT x FROM b')).rows, [{ x: 7 }]);
  });

  test('after close, a statement fails with EmbeddedDatabaseGoneError', async () => {
    const other = await openPglite('memory://');
    await other.close();
    const error = await other.query('SELECT 1').catch((e: unknown) => e);
    assert.instance(error, EmbeddedDatabaseGoneError);
    await other.close();
  });

  test('the database process checkpoints, so its WAL does not grow for as long as it runs', () =>
    inTempDir(async (dir) => {
      // PostgreSQL's smallest max_wal_size, so that a few MB of statements reach it.
      const first = await openPglite(dir);
      await first.exec("ALTER SYSTEM SET max_wal_size = '32MB'");
      await first.exec('CREATE TABLE w (x text)');
      await first.close();
      const opened = await openPglite(dir);
      const walBytes = async (sql: string, params: unknown[] = []) =>
        (await opened.query<{ bytes: number }>(sql, params)).rows[0]!.bytes;
      try {
        const start = (await opened.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0]!.lsn;
        for (let i = 0; i < 70; i++)
          await opened.query("INSERT INTO w SELECT repeat('x', 1000) FROM generate_series(1, 500)");
        const written = await walBytes('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::float8 AS bytes', [start]);
        assert.ok(written > 32 * 2 ** 20, `the statements wrote ${written} bytes of WAL`);
        const sinceCheckpoint = await walBytes(
          'SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), redo_lsn)::float8 AS bytes FROM pg_control_checkpoint()',
        );
        assert.ok(sinceCheckpoint < 16 * 2 ** 20, `${sinceCheckpoint} bytes of WAL since the last checkpoint`);
      } finally {
        await opened.close();
      }
    }));

  test('a second opener of a directory gets DatabaseBusyError naming the ingest process that has it', () =>
    inTempDir(async (dir) => {
      const first = await openPglite(dir);
      const error = await openPglite(dir).catch((e: unknown) => e);
      assert.instance(error, DatabaseBusyError);
      assert.match((error as Error).message, `pid ${process.pid} on`);
      assert.is.not(databasePid(dir), process.pid, 'the lock is held by the database process itself');
      await first.close();
      await (await openPglite(dir)).close();
    }));

  test('SIGINT, which a terminal sends the whole process group, leaves the database process running', () =>
    inTempDir(async (dir) => {
      const opened = await openPglite(dir);
      try {
        process.kill(databasePid(dir), 'SIGINT');
        await sleep(100);
        assert.equal((await opened.query('SELECT 1 AS one')).rows, [{ one: 1 }]);
      } finally {
        await opened.close();
      }
    }));

  test('an ingest process killed with SIGKILL takes its database process with it, and its committed rows stay', () =>
    inTempDir(async (dir) => {
      const orphan = await killOtherIngest(dir, 'SELECT 1');
      assert.ok(await waitForExit(orphan, 5000), 'the database process exits when its ingest process dies');
      await assertCommittedRowStays(dir);
    }));

  test('an opener waits for an orphaned database process to finish its statement, rather than opening beside it', () =>
    inTempDir(async (dir) => {
      const orphan = await killOtherIngest(dir, 'SELECT pg_sleep(1.5)');
      await assertCommittedRowStays(dir, () =>
        assert.not.ok(alive(orphan), 'the orphan had exited before the directory was opened again'),
      );
    }));

  test('a directory holding a file another user owns fails by name before PGlite opens it, not in a bare Aborted()', () =>
    inTempDir(async (dir) => {
      await (await openPglite(dir)).close();
      const control = path.join(dir, 'global', 'pg_control');
      // Root may write anyone's files, so for root the file changes owner (what a container
      // whose user changed leaves); for anyone else, it loses its write permission.
      const root = process.getuid!() === 0;
      if (root) chownSync(control, 65534, 65534);
      else chmodSync(control, 0o444);
      const error = await openPglite(dir).then(
        (db) => db.close().then(() => null),
        (e: unknown) => e,
      );
      assert.instance(error, DataDirOwnershipError);
      const message = (error as Error).message;
      assert.ok(message.startsWith(`the embedded database directory ${dir} holds 1 entry `), message);
      if (root) {
        assert.match(message, 'owned by uid 65534 (first: global/pg_control), and this process runs as uid 0');
        assert.match(message, `Run ingest as uid 65534 again`);
        assert.match(message, `chown -R 0 ${dir}`);
      } else {
        assert.match(message, 'cannot write (first: global/pg_control)');
        assert.match(message, `chmod -R u+w ${dir}`);
      }
      assert.is(existsSync(path.join(dir, 'ingest.lock')), false, 'no database process was started');
    }));
}

test.run();
