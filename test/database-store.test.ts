// @engine
// The engine state store kept in the database (INGEST_STATE_STORE=database,
// lib/state/database-store.ts): the same rules as the lmdb store behind the same interface, and
// a walk on it whose memo every process on the database shares: a process with a data
// directory of its own walks the same corpus unchanged, with no model call and no row written.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { appendFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { walk } from '../engine/walk/walk.ts';
import { DatabaseStateStore } from '../lib/state/database-store.ts';
import type { RunRecord } from '../lib/runs/record.ts';
import { startMockServer, type MockServer } from '../mock/server.ts';
import { collect } from './helpers/collect.ts';
import { sampleMemo as memo } from './helpers/item-memo.ts';
import { openTestDatabase, targetEngine, type TestDatabase } from './helpers/db.ts';
import { BIN } from './helpers/corpus.ts';
import { markdown, walkFixture } from './helpers/walk.ts';
import { extractionCallsOf } from './helpers/mock-tier.ts';

let t: TestDatabase;
let store: DatabaseStateStore;
test.before.each(async () => {
  t = await openTestDatabase();
  store = new DatabaseStateStore(t.db);
});
test.after.each(async () => {
  await store.close();
  await t.dispose();
});

test('item memos: put, read whole or as a stamp, listed, indexed under their document through a move', async () => {
  await store.putItem('file:a.md', memo);
  await store.putItem('file:b.md', memo);
  assert.equal(await store.getItem('file:a.md'), { memo, healed: false });
  const { rows: _rows, ...stamp } = memo;
  assert.equal(await store.getItemStamp('file:a.md'), { stamp, healed: false });
  assert.equal(await store.itemsOfDocument('d'), ['file:a.md', 'file:b.md']);
  await store.putItems([['file:a.md', { ...memo, sourceDocumentId: 'e', rows: { entity_mentions: ['m1'] } }]]);
  assert.equal([await store.itemsOfDocument('d'), await store.itemsOfDocument('e')], [['file:b.md'], ['file:a.md']]);
  assert.equal((await store.getItem('file:a.md')).memo?.rows, { entity_mentions: ['m1'] });
  await store.removeItem('file:b.md');
  assert.equal(await store.getItem('file:b.md'), { memo: undefined, healed: false });
  assert.equal(await collect(store.itemIdentities()), ['file:a.md']);
  assert.is(await store.itemCount(), 1);
  await store.clearItems();
  assert.is(await store.itemCount(), 0);
});

test('an identity too long to be a key is kept under its digest and given back whole', async () => {
  const long = `file:${'deep/'.repeat(600)}a.md`;
  await store.putItem(long, memo);
  assert.equal(await store.getItem(long), { memo, healed: false });
  assert.equal(await store.itemsOfDocument('d'), [long]);
  assert.equal(await collect(store.itemIdentities()), [long]);
  const { rows } = await t.db.query<{ n: number }>('SELECT max(length(item_key))::int AS n FROM engine_items');
  assert.ok(rows[0]!.n < 100, 'the key is a digest');
});

test('every identity is listed, page after page, and several memos land in one statement', async () => {
  const identities = Array.from({ length: 2_500 }, (_, i) => `file:${i}.md`);
  await store.putItems(identities.map((identity, i) => [identity, { ...memo, sourceDocumentId: `d${i % 100}` }]));
  const listed = await collect(store.itemIdentities());
  assert.equal(listed.sort(), [...identities].sort());
  assert.is((await store.itemsOfDocument('d7')).length, 25);
});

test('an entry that does not read back as a memo is removed and counted as healed once', async () => {
  await t.db.query(
    `INSERT INTO engine_items (item_key, identity, stamp, row_keys, source_document_id)
     VALUES ('file:bad.md', 'file:bad.md', '{"sha256": 1}', '{}', 'd'),
            ('file:torn.md', 'file:torn.md', $1::jsonb, '{"content_chunks": [1]}', 'd')`,
    [JSON.stringify({ ...memo, rows: undefined })],
  );
  assert.equal(await store.getItemStamp('file:bad.md'), { stamp: undefined, healed: true });
  assert.equal(await store.getItemStamp('file:bad.md'), { stamp: undefined, healed: false });
  assert.equal(await store.getItem('file:torn.md'), { memo: undefined, healed: true });
  assert.equal(await store.getItem('file:torn.md'), { memo: undefined, healed: false });
});

test("several items' stamps in one query, in the order asked: absent, under a digest, unreadable (healed once)", async () => {
  const long = `file:${'deep/'.repeat(600)}a.md`;
  await store.putItems([
    ['file:a.md', memo],
    [long, { ...memo, sha256: 'f'.repeat(64) }],
  ]);
  await t.db.query(
    `INSERT INTO engine_items (item_key, identity, stamp, row_keys, source_document_id)
     VALUES ('file:bad.md', 'file:bad.md', '{"sha256": 1}', '{}', 'd')`,
  );
  const { rows: _rows, ...stamp } = memo;
  const asked = [long, 'file:none.md', 'file:bad.md', 'file:a.md'];
  const queries: string[] = [];
  const counted = new DatabaseStateStore(
    new Proxy(t.db, {
      get: (db, name, receiver) =>
        name === 'query'
          ? (text: string, params?: unknown[]) => (queries.push(text), db.query(text, params))
          : Reflect.get(db, name, receiver),
    }),
  );
  assert.equal(await counted.getItemStamps(asked), [
    { stamp: { ...stamp, sha256: 'f'.repeat(64) }, healed: false },
    { stamp: undefined, healed: false },
    { stamp: undefined, healed: true },
    { stamp, healed: false },
  ]);
  assert.is(queries.filter((text) => text.startsWith('SELECT')).length, 1, 'one read for all four');
  assert.equal((await store.getItemStamps(['file:bad.md']))[0], { stamp: undefined, healed: false });
});

test('inner memos, the bindings and the run records not yet landed', async () => {
  await store.putMemo('extract:x', { answer: 42, names: ['a'] });
  assert.equal(await store.getMemo('extract:x'), { answer: 42, names: ['a'] });
  await store.putMemo('extract:x', 'replaced');
  assert.is(await store.getMemo('extract:x'), 'replaced');
  assert.is(await store.memoCount(), 1);
  await store.removeMemo('extract:x');
  assert.is(await store.getMemo('extract:x'), undefined);

  assert.equal([await store.boundDatabaseId(), await store.boundCorpusRoot()], [undefined, undefined]);
  await store.bindDatabase('db-1');
  await store.bindCorpusRoot('/corpus');
  assert.equal([await store.boundDatabaseId(), await store.boundCorpusRoot()], ['db-1', '/corpus']);

  const record = { opId: 'op-1', status: 'in_progress' } as unknown as RunRecord;
  await store.putUnsettledRun(record);
  await store.putUnsettledRun({ ...record, opId: 'op-2' });
  assert.equal(
    (await store.unsettledRuns()).map((r) => r.opId),
    ['op-1', 'op-2'],
  );
  await store.removeUnsettledRun('op-1');
  assert.equal(
    (await store.unsettledRuns()).map((r) => r.opId),
    ['op-2'],
  );
});

if (targetEngine === 'postgres') {
  test('ingest state verify and reset --yes work on the store in the database', async () => {
    await store.putItem('file:a.md', memo);
    await store.putMemo('extract:x', 1);
    const run = (...args: string[]) =>
      spawnSync(process.execPath, [BIN, 'state', ...args], {
        env: { PATH: process.env.PATH, ENGINE_DB_DSN: t.dsn!, INGEST_STATE_STORE: 'database' },
        encoding: 'utf8',
      });
    const verify = run('verify');
    assert.is(verify.status, 0, verify.stderr);
    assert.match(verify.stdout, /\(INGEST_STATE_STORE=database\)\nitem memos: 1\ninner memos: 1\n/, verify.stdout);
    assert.is(run('reset').status, 2, 'reset without --yes refuses');
    assert.is(run('reset', '--yes').status, 0);
    assert.equal([await store.itemCount(), await store.memoCount()], [0, 0]);
    const again = run('reset', '--yes');
    assert.is(again.status, 2);
    assert.match(again.stderr, /is empty: nothing to reset/);
  });
}

const MODEL_VARS = ['ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY', 'OPENAI_BASE_URL', 'OPENAI_API_KEY'];

/** Runs `use` with the model clients pointed at a mock server of its own. */
async function withMock(use: (mock: MockServer) => Promise<void>): Promise<void> {
  const saved = Object.fromEntries(MODEL_VARS.map((v) => [v, process.env[v]]));
  const mock = await startMockServer();
  Object.assign(process.env, {
    ANTHROPIC_BASE_URL: mock.url,
    ANTHROPIC_API_KEY: 'k',
    OPENAI_BASE_URL: `${mock.url}/v1`,
    OPENAI_API_KEY: 'k',
  });
  try {
    await use(mock);
  } finally {
    await mock.close();
    for (const v of MODEL_VARS) {
      if (saved[v] === undefined) delete process.env[v];
      else process.env[v] = saved[v];
    }
  }
}

test('a walk on the database store: another process with a data directory of its own finds every memo', () =>
  withMock(async (mock) => {
    const f = await walkFixture({ env: { INGEST_STATE_STORE: 'database' } });
    const elsewhere = mkdtempSync(path.join(tmpdir(), 'ingest-elsewhere-'));
    try {
      // Long enough for several extraction windows, so that an edit at its end leaves most unchanged.
      await f.write('handbook.md', markdown('Handbook', 200));
      await f.write('policies/travel.md', markdown('Travel policy', 4));
      const cold = await walk(f.lifespan, { sourcePath: f.corpus });
      assert.equal([cold.status, cold.items.changed], ['completed', 2]);
      const calls = { ...mock.stats };
      assert.ok(calls.messages > 0, 'the cold walk asked the model');
      assert.ok(!existsSync(path.join(f.root, 'state', 'state.mdb')), 'no lmdb store was made');

      // Another process: the same database and corpus, a data directory of its own.
      await f.reopen(undefined, { INGEST_DATA_DIR: elsewhere });
      const again = await walk(f.lifespan, { sourcePath: f.corpus });
      assert.equal([again.status, again.items.unchanged, again.items.changed], ['completed', 2, 0]);
      assert.equal(again.rows, {}, 'no row written');
      assert.equal([mock.stats.messages, mock.stats.embeddings], [calls.messages, calls.embeddings]);

      // An edit: the file's unchanged windows are memo hits wherever they were first asked.
      await appendFile(path.join(f.corpus, 'handbook.md'), '\n\nOne more paragraph about the handbook.\n');
      const edited = await walk(f.lifespan, { sourcePath: f.corpus });
      assert.equal([edited.items.changed, edited.items.unchanged], [1, 1]);
      const asked = mock.stats.messages - calls.messages;
      assert.ok(asked > 0 && asked < calls.messages / 2, `the edit asked ${asked} of ${calls.messages} again`);
    } finally {
      await f.dispose();
      rmSync(elsewhere, { recursive: true, force: true });
    }
  }));

/** The inner memo entries (the producer's debt apart). */
const innerMemos = async (f: { target: TestDatabase }) =>
  (await f.target.db.query<{ n: number }>("SELECT count(*)::int AS n FROM engine_memos WHERE key LIKE 'extract:%'"))
    .rows[0]!.n;

test("an item's rows, its item memo and its inner memo entries commit together or not at all", () =>
  withMock(async (mock) => {
    // Small batches: the handbook is written in several, each with the entries answered for it.
    const f = await walkFixture({ env: { INGEST_STATE_STORE: 'database', INGEST_ITEM_BATCH_CHUNKS: '4' } });
    try {
      await f.write('handbook.md', markdown('Handbook', 60));
      const first = await walk(f.lifespan, { sourcePath: f.corpus });
      assert.equal([first.status, first.items.changed], ['completed', 1]);
      const memosOfOne = await innerMemos(f);
      assert.ok(memosOfOne > 0, 'the handbook left its inner memo entries');

      // The item memo of one file is refused: its whole last transaction goes back.
      await f.target.db.exec(`
        CREATE FUNCTION refuse_memo() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.identity = 'file:refused.md' THEN RAISE EXCEPTION 'memo refused for the test'; END IF;
          RETURN NEW;
        END $$;
        CREATE TRIGGER refuse_memo BEFORE INSERT OR UPDATE ON engine_items
          FOR EACH ROW EXECUTE FUNCTION refuse_memo();`);
      await f.write('refused.md', markdown('Refused', 3));
      await f.write('travel.md', markdown('Travel policy', 3));
      const calls = extractionCallsOf(mock.stats);
      const refused = await walk(f.lifespan, { sourcePath: f.corpus });
      assert.equal([refused.items.changed, refused.items.failed, refused.items.unchanged], [1, 1, 1]);
      assert.ok(extractionCallsOf(mock.stats) > calls, 'both new files were asked');
      const rowsOf = async (relPath: string) =>
        (
          await f.target.db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM content_chunks c JOIN source_documents d ON d.id = c.source_document_id
             WHERE d.rel_path = $1`,
            [relPath],
          )
        ).rows[0]!.n;
      assert.is(await rowsOf('refused.md'), 0, 'no chunk of the refused item');
      const documents = await f.target.db.query('SELECT 1 FROM source_documents WHERE rel_path = $1', ['refused.md']);
      assert.is(documents.rows.length, 0, 'no document row of the refused item');
      assert.ok((await rowsOf('travel.md')) > 0, 'the other new file landed');
      assert.equal((await f.lifespan.store.getItem('file:refused.md')).memo, undefined, 'no item memo');

      // Allowed again: the refused file lands, without asking again: the answers a failed item
      // paid for are kept once it failed (engine/item/item-memos.ts keepAnswered).
      await f.target.db.exec('DROP TRIGGER refuse_memo ON engine_items');
      const before = extractionCallsOf(mock.stats);
      const redo = await walk(f.lifespan, { sourcePath: f.corpus });
      assert.equal([redo.items.changed, redo.items.unchanged], [1, 2]);
      assert.is(extractionCallsOf(mock.stats), before, "the failed item's answers were kept");
      assert.ok((await rowsOf('refused.md')) > 0);
      const still = mock.stats.messages;
      const quiet = await walk(f.lifespan, { sourcePath: f.corpus });
      assert.equal([quiet.items.unchanged, mock.stats.messages], [3, still]);
    } finally {
      await f.dispose();
    }
  }));

test.run();
