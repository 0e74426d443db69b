// @engine
// A byte-identical copy is not read twice, across processes (docs/DECISIONS.md "Scanned documents
// read", "A copy is not read twice"), on the engine the run targets and on both kinds of state
// store (an lmdb directory, the database): a lifespan opened anew, as another process would,
// walks a copy of a scan at another path and reads no page; --full-reprocess reads it again, once.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { walk } from '../engine/walk/walk.ts';
import { formatSummary } from '../cli/walk.ts';
import { makeImagePdf } from '../bench/corpus/scans.ts';
import { Readings, slotKey } from '../stages/ocr/readings.ts';
import { walkFixture } from './helpers/walk.ts';

for (const store of ['directory', 'database'] as const) {
  test(`a copy met by another process costs no OCR (state store: ${store}); --full-reprocess reads it again`, async () => {
    const f = await walkFixture({ env: { INGEST_OCR_WORKERS: '1', INGEST_STATE_STORE: store } });
    try {
      const scan = await makeImagePdf([{ lines: ['Osprey Marine renews the berth lease in May.'] }]);
      await f.write('scans/lease.pdf', scan);
      const first = await walk(f.lifespan, { sourcePath: f.corpus });
      assert.equal([first.items.changed, first.ocr.pages], [1, 1]);
      assert.is(await f.lifespan.store.memoCount().then((n) => n > 0), true);

      // Another process: nothing of the first one's memory is left but the state store.
      await f.reopen();
      await f.write('elsewhere/lease-copy.pdf', scan);
      const copy = await walk(f.lifespan, { sourcePath: f.corpus });
      assert.equal([copy.items.changed, copy.items.unchanged, copy.items.failed], [1, 1, 0]);
      assert.is(copy.ocr.pages, 0);
      assert.not.match(formatSummary(copy, 'test'), /^ocr:/m);
      // The copy still says its page was read by OCR.
      assert.match(
        copy.warnings.find((w) => w.path === 'elsewhere/lease-copy.pdf')?.message ?? '',
        /^1 page read by OCR/,
      );
      const { rows } = await f.target.db.query<{ text: string }>(
        `SELECT c.text FROM content_chunks c JOIN source_documents d ON d.id = c.source_document_id
          WHERE c.text LIKE '%Osprey Marine%'`,
      );
      assert.ok(rows.length > 0);

      await f.reopen();
      const again = await walk(f.lifespan, { sourcePath: f.corpus, fullReprocess: true });
      assert.equal([again.items.changed, again.ocr.pages], [2, 1]);
    } finally {
      await f.dispose();
    }
  });
}

test('the store holds a reading in its key’s slot: a later reading in that slot takes it, and no other key gets it', async () => {
  const memos = new Map<string, unknown>();
  const store = {
    getMemo: async (key: string) => memos.get(key),
    putMemo: async (key: string, value: unknown) => void memos.set(key, value),
  };
  const page = (text: string) => [{ page: 1, text, confidence: 90, rotated: 0, ms: 5 }];
  const older = `0000a000${'1'.repeat(56)}`;
  const newer = `0000a000${'2'.repeat(56)}`;
  assert.is(slotKey(older), slotKey(newer));
  const readings = new Readings(store);
  await readings.read(older, { opId: 'walk-1' }, async () => page('older'));
  // Another process: only the store.
  const later = new Readings(store);
  assert.equal(await later.kept(older, { opId: 'walk-2' }), page('older'));
  assert.is(await later.kept(newer, { opId: 'walk-2' }), undefined);
  // A walk reading every scan again takes only its own readings.
  assert.is(await later.kept(older, { opId: 'walk-2', readAgain: true }), undefined);
  assert.equal(await later.kept(older, { opId: 'walk-1', readAgain: true }), page('older'));
  await later.read(newer, { opId: 'walk-2' }, async () => page('newer'));
  assert.is(await new Readings(store).kept(older, {}), undefined);
  assert.equal(await new Readings(store).kept(newer, {}), page('newer'));
  assert.equal([...memos.keys()], [slotKey(older)]);
});

test.run();
