// @engine
// A full disk under the database (docs/OPERATIONS.md "When the disk is full"), injected where the
// database raises it: a trigger that fails inserts into content_chunks with SQLSTATE disk_full
// once a number of rows landed, as PostgreSQL and the embedded database do when a file cannot
// grow. The walk stops with a named error, blaming no item; once the trigger is gone (space is
// back) the next walk lands exactly the rows of an uninterrupted walk.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { walk } from '../../engine/walk/walk.ts';
import { rowsInContentTerms, WALKED_TABLES } from '../helpers/content.ts';
import { corpusAndTier } from '../helpers/corpus-and-tier.ts';
import { uninterruptedRows, walkFixture } from '../helpers/walk.ts';

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

test.run();
