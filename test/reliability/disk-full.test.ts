// @engine
// A full disk (docs/OPERATIONS.md "When the disk is full"), injected where each store raises it.
// Under the database: a trigger that fails inserts into content_chunks with SQLSTATE disk_full
// once a number of rows landed, as PostgreSQL and the embedded database do when a file cannot
// grow. Under the state store: its lmdb databases' writes fail as lmdb fails a commit that
// finds the disk full. Either way the walk stops with a named error, blaming no item; once space
// is back the next walk leaves exactly the rows (and state) of an uninterrupted walk.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { FlowPass } from '../../engine/walk/passes.ts';
import { walk } from '../../engine/walk/walk.ts';
import { rowsInContentTerms, WALKED_TABLES } from '../helpers/content.ts';
import { corpusAndTier } from '../helpers/corpus-and-tier.ts';
import { lmdbDatabasesOf, stateInContentTerms } from '../helpers/lmdb-store.ts';
import { uninterruptedRows, uninterruptedWalk, walkFixture, type WalkFixture } from '../helpers/walk.ts';

const DOCS = 120;
/** Chunk rows that land before the disk is full: about a third of the corpus's. */
const ROOM = 250;

const files = corpusAndTier(test, 'disk-full', DOCS, { mix: 'md:100', seed: 4 });

test('the database disk full mid-walk: the walk stops with disk_full; with space back the next walk lands every row', async () => {
  const expected = await uninterruptedRows(files.corpus);

  const f = await walkFixture();
  try {
    await f.target.db.exec(`
      CREATE SEQUENCE test_disk_room;
      CREATE FUNCTION test_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF nextval('test_disk_room') > ${ROOM} THEN
          RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full';
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER test_disk_full BEFORE INSERT ON content_chunks FOR EACH ROW EXECUTE FUNCTION test_disk_full();`);
    const full = await walk(f.lifespan, { sourcePath: files.corpus });
    assert.is(full.status, 'failed');
    assert.match(full.error ?? '', /a disk is full \(could not extend file: No space left on device\)/);
    assert.is(full.items.failed, 0, 'no item is blamed for the disk');
    assert.ok(full.items.changed < DOCS, 'the walk stopped short');

    await f.target.db.exec('DROP TRIGGER test_disk_full ON content_chunks; DROP FUNCTION test_disk_full();');
    const next = await walk(f.lifespan, { sourcePath: files.corpus });
    assert.is(next.status, 'completed', next.error);
    const got = await rowsInContentTerms(f.target.db);
    for (const table of WALKED_TABLES) assert.equal(got[table], expected[table], table);
  } finally {
    await f.dispose();
  }
});

/**
 * A write of a commit that failed on a full disk, in lmdb-js 3's shape (write.js rejectCommit):
 * rejected with "Commit failed", the reason in `commitError`, a promise rejected with the errno
 * as lmdb's native side reports it. lmdb shares one `commitError` among a failed batch's writes,
 * and the store reads it from the write it awaits; here each write has its own, and a write made
 * inside a transaction begun before the disk filled is awaited by nobody, so each reason is
 * marked heard as it is made (unheard, it would end this process). The walk's error naming the
 * errno shows that the store read it.
 */
function failedCommit(): Promise<never> {
  const commitError = Promise.reject(Object.assign(new Error('No space left on device'), { code: 28 }));
  commitError.catch(() => {});
  return Promise.reject(Object.assign(new Error('Commit failed (see commitError for details)'), { commitError }));
}

/** Fails every write of the fixture's lmdb state store while `disk.full` holds. */
function fillStateStoreDisk(f: WalkFixture): { full: boolean } {
  const disk = { full: false };
  for (const db of Object.values(lmdbDatabasesOf(f.lifespan.store))) {
    const lmdbDb = db as unknown as Record<'put' | 'remove' | 'transaction', (...args: unknown[]) => unknown>;
    for (const method of ['put', 'remove', 'transaction'] as const) {
      const write = lmdbDb[method]!.bind(db);
      lmdbDb[method] = (...args) => (disk.full ? failedCommit() : write(...args));
    }
  }
  return disk;
}

test('the state store disk full mid-walk: the walk stops with disk_full; with space back the next walk leaves every row and memo', async () => {
  const expected = await uninterruptedWalk(files.corpus);

  const f = await walkFixture();
  try {
    const disk = fillStateStoreDisk(f);
    const stopped = await walk(f.lifespan, {
      sourcePath: files.corpus,
      onProgress: ({ done }) => {
        if (done === DOCS / 3) disk.full = true;
      },
    });
    assert.ok(disk.full, 'the disk filled during the walk');
    assert.is(stopped.status, 'failed');
    assert.match(stopped.error ?? '', /a disk is full \(No space left on device\)/);
    assert.is(stopped.items.failed, 0, 'no item is blamed for the disk');
    assert.ok(stopped.items.changed < DOCS, 'the walk stopped short');

    disk.full = false;
    const next = await walk(f.lifespan, { sourcePath: files.corpus });
    assert.is(next.status, 'completed', next.error);
    const got = await rowsInContentTerms(f.target.db);
    for (const table of WALKED_TABLES) assert.equal(got[table], expected.rows[table], table);
    assert.equal(await stateInContentTerms(f.lifespan.store), expected.state, 'the state store');
  } finally {
    await f.dispose();
  }
});

test('the state store disk full during stage 5: the walk fails with disk_full, not a contained pass; the next walk finishes it', async () => {
  const expected = await uninterruptedWalk(files.corpus);

  const f = await walkFixture();
  try {
    const disk = fillStateStoreDisk(f);
    // The disk fills as the flow-scope passes begin: stage 5's answers and item keys find it full.
    const filling: FlowPass = {
      name: 'disk-fills',
      async run() {
        disk.full = true;
      },
    };
    const lifespan = f.lifespan as { passes: readonly FlowPass[] };
    const passes = lifespan.passes;
    lifespan.passes = [filling, ...passes];
    const stopped = await walk(f.lifespan, { sourcePath: files.corpus });
    assert.is(stopped.status, 'failed');
    assert.match(stopped.error ?? '', /a disk is full \(No space left on device\)/);
    assert.equal(
      stopped.passes.map((p) => [p.name, p.ok]),
      [
        ['disk-fills', true],
        ['entity_resolution', false],
      ],
      'no pass after it ran',
    );

    disk.full = false;
    lifespan.passes = passes;
    const next = await walk(f.lifespan, { sourcePath: files.corpus });
    assert.is(next.status, 'completed', next.error);
    assert.is(next.items.changed, 0, 'every item had committed');
    const got = await rowsInContentTerms(f.target.db);
    for (const table of WALKED_TABLES) assert.equal(got[table], expected.rows[table], table);
    assert.equal(await stateInContentTerms(f.lifespan.store), expected.state, 'the state store');
  } finally {
    await f.dispose();
  }
});

test.run();
