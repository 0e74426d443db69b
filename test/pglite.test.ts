// The embedded engine's thread (lib/db/pglite.ts, lib/db/pglite-thread.ts): one session shared
// in turns, database errors that keep their fields across the thread, and a clear error once
// the database is closed. PGlite only: PostgreSQL has sessions of its own.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Database } from '../lib/db/database.ts';
import { EmbeddedDatabaseGoneError, openPglite } from '../lib/db/pglite.ts';
import { targetEngine } from './helpers/db.ts';

if (targetEngine === 'pglite') {
  let db: Database;
  test.before(async () => {
    db = await openPglite('memory://');
    await db.exec('CREATE TABLE t (n int PRIMARY KEY)');
  });
  test.after(async () => {
    await db.close();
  });

  test('a database error crosses the thread with its SQLSTATE and detail', async () => {
    await db.query('INSERT INTO t (n) VALUES (1)');
    const error = (await db.query('INSERT INTO t (n) VALUES (1)').catch((e: unknown) => e)) as Error & { code?: string; detail?: string };
    assert.instance(error, Error);
    assert.is(error.code, '23505');
    assert.match(error.detail ?? '', /already exists/);
    assert.is((await db.query('SELECT count(*)::int AS n FROM t')).rows[0]?.n, 1, 'the session is usable after an error');
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

  test('a transaction that throws is rolled back and its error is the caller\'s', async () => {
    const error = await db
      .transaction(async (q) => {
        await q.query('INSERT INTO t (n) VALUES (4)');
        throw new Error('changed my mind');
      })
      .catch((e: unknown) => e);
    assert.is((error as Error).message, 'changed my mind');
    assert.is((await db.query('SELECT count(*)::int AS n FROM t')).rows[0]?.n, 0);
  });

  test('binary COPY data reaches the thread intact', async () => {
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
}

test.run();
