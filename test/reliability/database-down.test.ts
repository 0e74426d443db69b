// @engine
// Reliability (iii): the database stops in the middle of a walk. The walk fails with a named
// error, no item failures and no cleanup; no memo is committed for an item whose rows did not
// land; and the next walk, with the database back, ends with exactly the rows of a walk that
// was never interrupted. PostgreSQL is stopped by cutting a loopback proxy in front of it (to
// the walk, a server gone: connections reset, then refused); the embedded database by killing
// its process.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { openLifespan, type Lifespan } from '../../engine/lifespan.ts';
import { walk } from '../../engine/walk/walk.ts';
import { publishedBundle } from '../../stages/producer/bundle-dir.ts';
import { loadConfig } from '../../lib/config.ts';
import { WALK_TABLES } from '../../lib/db/tables.ts';
import { rowsInContentTerms, WALKED_TABLES } from '../helpers/content.ts';
import { generateCorpus } from '../helpers/corpus.ts';
import { stoppableDatabase } from '../helpers/stoppable-database.ts';
import { uninterruptedRows } from '../helpers/walk.ts';
import { startMockTier, type MockTier } from '../helpers/mock-tier.ts';

const DOCS = 300;
const log = pino({ level: 'silent' });

let root: string;
let corpus: string;
test.before(() => {
  root = mkdtempSync(path.join(tmpdir(), 'ingest-database-down-'));
  corpus = path.join(root, 'corpus');
  generateCorpus(corpus, DOCS, { mix: 'md:100', seed: 8 });
});
test.after(() => rmSync(root, { recursive: true, force: true }));

// Tier 1 as `ingest walk` starts it, before the lifespan.
let tier: MockTier;
test.before(async () => {
  tier = await startMockTier();
});
test.after(async () => {
  await tier.stop();
});

test('a walk whose database stops mid-way fails cleanly, and the next walk lands exactly the rows', async () => {
  const expected = await uninterruptedRows(corpus);

  const dataDir = path.join(root, 'interrupted');
  const database = await stoppableDatabase(dataDir, root);
  const config = loadConfig({ INGEST_DATA_DIR: dataDir, INGEST_SINK_FLUSH_MS: '5', ...database.env }, root);
  let lifespan: Lifespan = await openLifespan(config, log);
  try {
    // Set inside the callback: typed by the initializer, so that the await below is not narrowed to null.
    let stopped = null as Promise<void> | null;
    const interrupted = await walk(lifespan, {
      sourcePath: corpus,
      onProgress: ({ done }) => {
        if (done === DOCS / 3) stopped = database.stop();
      },
    });
    await stopped;
    assert.is(interrupted.status, 'failed');
    assert.match(interrupted.error ?? '', /the database could not be reached during the walk/);
    assert.is(interrupted.items.failed, 0, 'no item is blamed for the database');
    assert.ok(interrupted.items.changed >= DOCS / 3 && interrupted.items.changed < DOCS);
    assert.equal(interrupted.passes, [], 'no flow-scope pass ran, cleanup least of all');
    await lifespan.producer.idle();
    assert.not.ok(existsSync(publishedBundle(config.bundle.dir)), 'a failed walk chains no producer run');
    await lifespan.close();

    await database.restart();
    lifespan = await openLifespan(config, log);
    // Every memo the interrupted walk committed names rows that landed.
    for await (const identity of lifespan.store.itemIdentities()) {
      const { memo } = await lifespan.store.getItem(identity);
      for (const spec of WALK_TABLES) {
        const keys = memo!.rows[spec.name] ?? [];
        if (keys.length === 0) continue;
        const key = spec.key.length === 1 ? `${spec.key[0]}::text` : `owner_kind || ':' || owner_id`;
        const { rows } = await lifespan.db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM ${spec.name} WHERE ${key} = ANY($1::text[])`,
          [keys],
        );
        assert.is(rows[0]!.n, keys.length, `${identity}: its ${spec.name} rows landed`);
      }
    }
    const resumed = await walk(lifespan, { sourcePath: corpus });
    assert.is(resumed.status, 'completed', resumed.error);
    assert.is(resumed.items.changed + resumed.items.unchanged, DOCS);
    const got = await rowsInContentTerms(lifespan.db);
    for (const table of WALKED_TABLES) assert.equal(got[table], expected[table], table);
    await lifespan.producer.idle();
    const { rows } = await lifespan.db.query<{ flow: string; status: string }>(
      'SELECT flow, status FROM pipeline_runs ORDER BY started_at',
    );
    assert.equal(
      rows.map((r) => [r.flow, r.status]),
      [
        ['walk', 'failed'],
        ['walk', 'completed'],
        ['producer', 'completed'],
      ],
      'the interrupted walk is in the ledger, failed (delivered by the next walk); the clean walk chained a producer run',
    );
  } finally {
    await lifespan.close();
    await database.dispose();
  }
});

test('a producer run whose database stops ends failed once it can write again, and the next run produces', async () => {
  const dataDir = path.join(root, 'producer-interrupted');
  const database = await stoppableDatabase(dataDir, root);
  const config = loadConfig({ INGEST_DATA_DIR: dataDir, ...database.env }, root);
  let stopped = null as Promise<void> | null;
  // The database stops as the chained run has recorded itself in progress and begun its work.
  const watching = pino(
    { level: 'info' },
    {
      write(line: string) {
        if (stopped === null && line.includes('"msg":"producer run started"')) stopped = database.stop();
      },
    },
  );
  let lifespan: Lifespan = await openLifespan(config, watching);
  try {
    const first = await walk(lifespan, { sourcePath: corpus });
    assert.is(first.status, 'completed', first.error);
    await lifespan.producer.idle();
    assert.ok(stopped !== null, 'the chained run started');
    await stopped;
    assert.not.ok(existsSync(publishedBundle(config.bundle.dir)), 'the run failed before publishing');
    await lifespan.close();

    await database.restart();
    lifespan = await openLifespan(config, log);
    const next = await walk(lifespan, { sourcePath: corpus });
    assert.is(next.items.unchanged, DOCS);
    await lifespan.producer.idle();
    const { rows } = await lifespan.db.query<{ flow: string; status: string; error: string | null }>(
      `SELECT flow, status, result->>'error' AS error FROM pipeline_runs ORDER BY started_at`,
    );
    assert.equal(
      rows.map((r) => [r.flow, r.status]),
      [
        ['walk', 'completed'],
        ['producer', 'failed'],
        ['walk', 'completed'],
        ['producer', 'completed'],
      ],
      'the run that lost its database ended failed, delivered by the next walk; no row stays in progress',
    );
    assert.ok(existsSync(publishedBundle(config.bundle.dir)), 'the next run produced the bundle');
  } finally {
    await lifespan.close();
    await database.dispose();
  }
});

test.run();
