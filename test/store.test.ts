import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { open } from 'lmdb';
import {
  inspectStateStore,
  openStateStore,
  resetStateStore,
  STATE_FORMAT_VERSION,
  StateStoreVersionError,
  type ItemMemo,
} from '../lib/state/store.ts';
import { collect } from './helpers/collect.ts';
import { sampleMemo as memo } from './helpers/item-memo.ts';

let dir: string;
test.before.each(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'ingest-state-'));
});
test.after.each(() => rmSync(dir, { recursive: true, force: true }));

/** Writes raw values behind the facade's back, as an older build or a corruption would. */
async function tamper(write: (meta: ReturnType<typeof rawDb>, items: ReturnType<typeof rawDb>) => Promise<void>) {
  const root = open({ path: path.join(dir, 'state.mdb'), maxDbs: 4, compression: false });
  await write(rawDb(root, 'meta'), rawDb(root, 'items'));
  await root.close();
}
function rawDb(root: ReturnType<typeof open>, name: string) {
  return root.openDB<unknown, string>({ name, encoding: 'msgpack' });
}

test('item memos persist across reopen and are committed when put resolves', async () => {
  const store = await openStateStore(dir);
  await store.putItem('file:a.md', memo);
  await store.close();
  const again = await openStateStore(dir);
  assert.equal(await again.getItem('file:a.md'), { memo, healed: false });
  const { rows: _rows, ...stamp } = memo;
  assert.equal(await again.getItemStamp('file:a.md'), { stamp, healed: false });
  assert.equal(await again.getItemStamps(['file:none.md', 'file:a.md']), [
    { stamp: undefined, healed: false },
    { stamp, healed: false },
  ]);
  assert.equal(await collect(again.itemIdentities()), ['file:a.md']);
  await again.removeItem('file:a.md');
  assert.equal(await again.getItem('file:a.md'), { memo: undefined, healed: false });
  await again.close();
});

test('a format 1 store, row keys inside each memo, is upgraded in place on open', async () => {
  const root = open({ path: path.join(dir, 'state.mdb'), maxDbs: 4, compression: false });
  await rawDb(root, 'meta').put('format_version', 1);
  await rawDb(root, 'items').put('file:a.md', memo);
  await rawDb(root, 'items').put('file:junk.md', { sha256: 42 });
  await rawDb(root, 'memos').put('extract:x', { kept: true });
  await root.close();
  const before = await inspectStateStore(dir);
  assert.equal([before.formatVersion, before.items, before.invalidItems], [1, 2, 1]);

  const store = await openStateStore(dir);
  assert.equal(await store.getItem('file:a.md'), { memo, healed: false });
  assert.equal(await collect(store.itemIdentities()), ['file:a.md']);
  assert.equal(await store.getMemo('extract:x'), { kept: true });
  assert.equal(await store.itemsOfDocument('d'), ['file:a.md'], 'indexed under its document on the way');
  await store.close();
  const after = await inspectStateStore(dir);
  assert.equal([after.formatVersion, after.items, after.invalidItems], [STATE_FORMAT_VERSION, 1, 0]);
});

test('each document knows its items: a move, a removal and a clear keep the index true', async () => {
  const store = await openStateStore(dir);
  await store.putItem('file:a.md', memo);
  await store.putItem('file:b.md', memo);
  await store.putItem('retired:o:file:c.md', { ...memo, sourceDocumentId: 'e' });
  assert.equal((await store.itemsOfDocument('d')).sort(), ['file:a.md', 'file:b.md']);
  await store.putItem('file:a.md', { ...memo, sourceDocumentId: 'e' });
  assert.equal(await store.itemsOfDocument('d'), ['file:b.md']);
  assert.equal((await store.itemsOfDocument('e')).sort(), ['file:a.md', 'retired:o:file:c.md']);
  await store.removeItem('file:b.md');
  assert.equal(await store.itemsOfDocument('d'), []);
  const long = `file:${'deep/'.repeat(600)}a.md`;
  await store.putItem(long, memo);
  assert.equal(await store.itemsOfDocument('d'), [long], 'an identity kept under its digest is given back whole');
  await store.clearItems();
  assert.equal([await store.itemsOfDocument('d'), await store.itemsOfDocument('e')], [[], []]);
  await store.close();
});

test('putItems lands several memos in one transaction, moves across documents included', async () => {
  const store = await openStateStore(dir);
  await store.putItem('file:a.md', memo);
  const long = `file:${'deep/'.repeat(600)}b.md`;
  await store.putItems([
    ['file:a.md', { ...memo, sourceDocumentId: 'e', rows: { entity_mentions: ['m1'] } }],
    [long, { ...memo, rows: { entity_mentions: ['m2'] } }],
  ]);
  assert.equal(await store.itemsOfDocument('d'), [long]);
  assert.equal(await store.itemsOfDocument('e'), ['file:a.md']);
  assert.equal((await store.getItem('file:a.md')).memo?.rows, { entity_mentions: ['m1'] });
  assert.equal((await store.getItem(long)).memo?.rows, { entity_mentions: ['m2'] });
  await store.close();
});

test('putItems rewrites 10,000 memos of 200 keys (90 MB): one transaction of that size fails its commit', async () => {
  const store = await openStateStore(dir);
  const many = (version: string) =>
    Array.from({ length: 10_000 }, (_, i): [string, ItemMemo] => [
      `file:${i}.md`,
      {
        ...memo,
        sourceDocumentId: `d${i}`,
        rows: { entity_mentions: Array.from({ length: 200 }, (_, k) => `${version}-${i}-${k}-${'0'.repeat(32)}`) },
      },
    ]);
  await store.putItems(many('a'));
  await store.putItems(many('b'));
  assert.is((await store.getItem('file:9999.md')).memo?.rows.entity_mentions?.[199], `b-9999-199-${'0'.repeat(32)}`);
  assert.equal(await store.itemsOfDocument('d0'), ['file:0.md']);
  await store.close();
});

test('a format 2 store gets its document index built on open', async () => {
  const root = open({ path: path.join(dir, 'state.mdb'), maxDbs: 4, compression: false });
  await rawDb(root, 'meta').put('format_version', 2);
  const { rows, ...stamp } = memo;
  await rawDb(root, 'items').put('file:a.md', stamp);
  await rawDb(root, 'item_rows').put('file:a.md', rows);
  await root.close();
  const store = await openStateStore(dir);
  assert.equal(await store.getItem('file:a.md'), { memo, healed: false });
  assert.equal(await store.itemsOfDocument('d'), ['file:a.md']);
  await store.close();
  assert.is((await inspectStateStore(dir)).formatVersion, STATE_FORMAT_VERSION);
});

test('a stamp whose row keys are missing is healed as a whole', async () => {
  const store = await openStateStore(dir);
  await store.putItem('file:a.md', memo);
  await store.close();
  const root = open({ path: path.join(dir, 'state.mdb'), maxDbs: 4, compression: false });
  await rawDb(root, 'item_rows').remove('file:a.md');
  await root.close();
  const again = await openStateStore(dir);
  assert.equal(await again.getItem('file:a.md'), { memo: undefined, healed: true });
  assert.equal(await again.getItemStamp('file:a.md'), { stamp: undefined, healed: false });
  await again.close();
});

test('a store of another format version is refused, naming verify and reset', async () => {
  await (await openStateStore(dir)).close();
  await tamper(async (meta) => {
    await meta.put('format_version', STATE_FORMAT_VERSION + 1);
  });
  try {
    await openStateStore(dir);
    assert.unreachable('expected StateStoreVersionError');
  } catch (error) {
    assert.instance(error, StateStoreVersionError);
    assert.match((error as Error).message, /ingest state verify/);
    assert.match((error as Error).message, /ingest state reset/);
  }
  const report = await inspectStateStore(dir);
  assert.is(report.formatVersion, STATE_FORMAT_VERSION + 1);
});

test('an unreadable item memo is removed and reported as healed', async () => {
  await (await openStateStore(dir)).close();
  await tamper(async (_meta, items) => {
    await items.put('file:bad.md', { sha256: 42 });
  });
  const store = await openStateStore(dir);
  assert.equal(await store.getItem('file:bad.md'), { memo: undefined, healed: true });
  assert.equal(await store.getItem('file:bad.md'), { memo: undefined, healed: false });
  await store.close();
});

test('an item memo whose bytes no longer decode is removed and reported as healed', async () => {
  await (await openStateStore(dir)).close();
  const root = open({ path: path.join(dir, 'state.mdb'), maxDbs: 4, compression: false });
  // 0xc1 is the one byte msgpack never uses: the decoder refuses it.
  await root
    .openDB<Buffer, string>({ name: 'items', encoding: 'binary' })
    .put('file:torn.md', Buffer.from([0xc1, 0xc1]));
  await root.close();
  const store = await openStateStore(dir);
  assert.equal(await store.getItem('file:torn.md'), { memo: undefined, healed: true });
  assert.equal(await store.getItem('file:torn.md'), { memo: undefined, healed: false });
  await store.close();
});

test('ingest state verify reports, and reset --yes starts over', async () => {
  const store = await openStateStore(dir);
  await store.putItem('file:a.md', memo);
  await store.close();
  const bin = path.resolve(import.meta.dirname, '..', 'bin', 'ingest.ts');
  const run = (...args: string[]) =>
    spawnSync(process.execPath, [bin, 'state', ...args], {
      env: { PATH: process.env.PATH, ENGINE_DB: dir },
      encoding: 'utf8',
    });
  const verify = run('verify');
  assert.is(verify.status, 0, verify.stderr);
  assert.match(verify.stdout, /item memos: 1/);
  assert.match(verify.stdout, /\nok\n/);
  assert.is(run('reset').status, 2, 'reset without --yes refuses');
  assert.is(run('reset', '--yes').status, 0);
  // Nothing there: neither says all is well.
  const again = run('verify');
  assert.is(again.status, 2);
  assert.match(again.stderr, /^ingest: no state store at .*, nothing to verify/);
  const resetAgain = run('reset', '--yes');
  assert.is(resetAgain.status, 2);
  assert.match(resetAgain.stderr, /^ingest: no state store at .*, nothing to reset/);
  assert.not.match(resetAgain.stdout, /reset/);
});

/** A store made by an earlier build, holding format 2: lmdb's default 4 KB pages, or 1 KB. */
async function makeStoreOfPages(pageSize: 4096 | 1024): Promise<void> {
  const root = open({ path: path.join(dir, 'state.mdb'), maxDbs: 4, compression: false, pageSize });
  await rawDb(root, 'meta').put('format_version', 2);
  await root.close();
}

function pageSizeOfStore(): number {
  const root = open({ path: path.join(dir, 'state.mdb'), maxDbs: 4, compression: false, readOnly: true });
  const { pageSize } = root.getStats() as { pageSize: number };
  void root.close();
  return pageSize;
}

test('a new store is made of 1 KB pages', async () => {
  await (await openStateStore(dir)).close();
  assert.is(pageSizeOfStore(), 1024);
});

test('a store of 512-byte pages is rebuilt on 1 KB pages on open, every entry kept', async () => {
  // As the build before wrote it: its databases, on 512-byte pages.
  const root = open({ path: path.join(dir, 'state.mdb'), maxDbs: 8, compression: false, pageSize: 512 });
  const { rows, ...stamp } = memo;
  await rawDb(root, 'meta').put('format_version', STATE_FORMAT_VERSION);
  for (let i = 0; i < 2_500; i++) {
    await rawDb(root, 'items').put(`file:${i}.md`, { ...stamp, sourceDocumentId: `d${i % 100}` });
    await rawDb(root, 'item_rows').put(`file:${i}.md`, rows);
    await root
      .openDB<string, string>({ name: 'doc_items', dupSort: true, encoding: 'string' })
      .put(`d${i % 100}`, `file:${i}.md`);
  }
  await rawDb(root, 'memos').put('extract:x', { answer: 42 });
  await root.close();
  const store = await openStateStore(dir);
  assert.equal(await store.getItem('file:2499.md'), { memo: { ...memo, sourceDocumentId: 'd99' }, healed: false });
  assert.is((await collect(store.itemIdentities())).length, 2_500);
  assert.is((await store.itemsOfDocument('d7')).length, 25);
  assert.equal(await store.getMemo('extract:x'), { answer: 42 });
  await store.close();
  assert.is(pageSizeOfStore(), 1024);
  assert.equal(readdirSync(dir).sort(), ['state.mdb', 'state.mdb-lock']);
});

for (const pageSize of [4096, 1024] as const) {
  test(`a store made before keeps its ${pageSize}-byte pages`, async () => {
    await makeStoreOfPages(pageSize);
    const store = await openStateStore(dir);
    await store.putItem('file:a.md', memo);
    assert.equal(await store.getItem('file:a.md'), { memo, healed: false });
    await store.close();
    assert.is(pageSizeOfStore(), pageSize);
  });
}

for (const [made, make] of [
  ['new', async () => {}],
  ['4 KB', () => makeStoreOfPages(4096)],
] as const) {
  test(`an identity longer than a key may be is kept under its digest (${made} store)`, async () => {
    await make();
    const long = `file:${'deep/'.repeat(600)}a.md`;
    const store = await openStateStore(dir);
    await store.putItem(long, memo);
    await store.putItem('file:a.md', memo);
    assert.equal(await store.getItem(long), { memo, healed: false });
    assert.equal((await store.getItemStamp(long)).stamp?.sha256, memo.sha256);
    assert.equal(await collect(store.itemIdentities()), ['file:a.md', long]);
    await store.removeItem(long);
    assert.equal(await store.getItem(long), { memo: undefined, healed: false });
    await store.close();
  });
}

test('reset of a store that does not exist is harmless', async () => {
  await resetStateStore(path.join(dir, 'never-created'));
});

test.run();
