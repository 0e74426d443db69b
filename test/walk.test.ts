// @engine
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rm, copyFile, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { FlowPass } from '../engine/walk/passes.ts';
import { walkCounts } from '../engine/walk/tally.ts';
import { walk } from '../engine/walk/walk.ts';
import { createEmbeddingClient } from '../lib/embed/client.ts';
import { FAIL_STAGE5_MODES, FAILURE_SENTINEL } from '../lib/failure-directive.ts';
import { createLlmClient } from '../lib/llm/client.ts';
import { markdown, snapshotRows, walkFixture, type WalkFixture } from './helpers/walk.ts';
import { collect } from './helpers/collect.ts';

let f: WalkFixture;
test.before.each(async () => {
  f = await walkFixture();
  await f.write('handbook.md', markdown('Handbook', 12));
  await f.write('policies/travel.md', markdown('Travel policy', 4));
  await f.write('policies/notes.txt', 'Plain notes.\n\nSecond paragraph.');
  await f.write('policies/deep/faq.markdown', markdown('FAQ', 2));
  await f.write('image.png', new Uint8Array([0x89, 0x50, 0x4e, 0x47]));
});
test.after.each(async () => {
  await f.dispose();
});

const DOCUMENTS = 4;

async function count(sql: string, params: unknown[] = []): Promise<number> {
  const { rows } = await f.target.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, params);
  return rows[0]!.n;
}

test('a first walk lands every recognised document with its chunks, stamped with the walk op_id', async () => {
  const summary = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(summary.status, 'completed');
  assert.equal(summary.items, {
    seen: 5,
    changed: DOCUMENTS,
    unchanged: 0,
    failed: 0,
    dropped: 1,
    skipped: 0,
    removed: 0,
  });
  assert.is(await count('source_documents'), DOCUMENTS);
  const chunks = await count('content_chunks');
  assert.ok(chunks > DOCUMENTS, 'the long handbook spans several chunks');
  assert.is(summary.rows.content_chunks, chunks);
  assert.is(await count('source_documents WHERE op_id <> $1', [summary.opId]), 0);
  assert.is(await count('content_chunks WHERE op_id <> $1', [summary.opId]), 0);
  const { rows } = await f.target.db.query<{ rel_path: string; media_type: string; title: string | null }>(
    'SELECT rel_path, media_type, title FROM source_documents ORDER BY rel_path',
  );
  assert.equal(
    rows.map((r) => r.rel_path),
    ['handbook.md', 'policies/deep/faq.markdown', 'policies/notes.txt', 'policies/travel.md'],
  );
  assert.is(rows[0]!.title, 'Handbook');
  assert.is(rows[0]!.media_type, 'text/markdown');
});

test('a second walk over the unchanged corpus changes no row and stamps no op_id', async () => {
  await walk(f.lifespan, { sourcePath: f.corpus });
  const before = await snapshotRows(f);
  await f.reopen();
  const second = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.equal(second.items, {
    seen: 5,
    changed: 0,
    unchanged: DOCUMENTS,
    failed: 0,
    dropped: 1,
    skipped: 0,
    removed: 0,
  });
  assert.equal(second.rows, {});
  assert.equal(await snapshotRows(f), before);
});

test('a touched file with the same bytes is still unchanged', async () => {
  await walk(f.lifespan, { sourcePath: f.corpus });
  const before = await snapshotRows(f);
  await f.write('handbook.md', markdown('Handbook', 12)); // new mtime, same bytes
  const again = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(again.items.changed, 0);
  assert.equal(await snapshotRows(f), before);
});

test('a file whose path is longer than a state store key may be lands, is unchanged on the next walk, and is removed once gone', async () => {
  const deep = `${'a'.repeat(200)}/${'b'.repeat(200)}/${'c'.repeat(150)}.md`;
  await f.write(deep, markdown('Deep', 2));
  const first = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(first.items.changed, DOCUMENTS + 1);
  assert.is(await count('source_documents WHERE rel_path = $1', [deep]), 1);
  const second = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.equal([second.items.changed, second.items.unchanged, second.items.failed], [0, DOCUMENTS + 1, 0]);
  await rm(path.join(f.corpus, deep));
  const third = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(third.items.removed, 1);
});

test('editing one file re-stamps only that document’s rows and drops the chunks it no longer has', async () => {
  const first = await walk(f.lifespan, { sourcePath: f.corpus });
  const {
    rows: [doc],
  } = await f.target.db.query<{ id: string }>("SELECT id FROM source_documents WHERE rel_path = 'handbook.md'");
  await f.write('handbook.md', markdown('Handbook', 1));
  const second = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(second.items.changed, 1);
  const { rows } = await f.target.db.query<{ rel_path: string; op_id: string; id: string }>(
    'SELECT rel_path, op_id, id FROM source_documents',
  );
  for (const row of rows) assert.is(row.op_id, row.rel_path === 'handbook.md' ? second.opId : first.opId, row.rel_path);
  assert.is(rows.find((r) => r.rel_path === 'handbook.md')!.id, doc!.id, 'an edited file keeps its document id');
  assert.is(await count('content_chunks WHERE source_document_id = $1', [doc!.id]), 1);
  assert.is(await count('content_chunks WHERE source_document_id = $1 AND op_id <> $2', [doc!.id, second.opId]), 0);
  assert.is(await count('content_chunks WHERE source_document_id <> $1 AND op_id <> $2', [doc!.id, first.opId]), 0);
});

test('deleting a file removes its derived rows and keeps its source_documents row', async () => {
  await walk(f.lifespan, { sourcePath: f.corpus });
  const {
    rows: [doc],
  } = await f.target.db.query<{ id: string }>("SELECT id FROM source_documents WHERE rel_path = 'policies/travel.md'");
  await rm(path.join(f.corpus, 'policies/travel.md'));
  const second = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(second.items.removed, 1);
  assert.ok(second.rowsDeleted > 0);
  assert.is(await count('content_chunks WHERE source_document_id = $1', [doc!.id]), 0);
  assert.is(await count('source_documents WHERE id = $1', [doc!.id]), 1);
  assert.is((await f.lifespan.store.getItem('file:policies/travel.md')).memo, undefined);
});

test('the same bytes at a new path resolve to the same source_documents id', async () => {
  await walk(f.lifespan, { sourcePath: f.corpus });
  await copyFile(path.join(f.corpus, 'policies/travel.md'), path.join(f.corpus, 'travel-copy.md'));
  const second = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(second.items.changed, 1);
  assert.is(await count('source_documents'), DOCUMENTS);
  const { rows } = await f.target.db.query<{ id: string; rel_path: string }>(
    "SELECT id, rel_path FROM source_documents WHERE content_sha256 = (SELECT content_sha256 FROM source_documents WHERE rel_path = 'travel-copy.md')",
  );
  assert.is(rows.length, 1);
  assert.is((await f.lifespan.store.getItem('file:travel-copy.md')).memo?.sourceDocumentId, rows[0]!.id);
  assert.is((await f.lifespan.store.getItem('file:policies/travel.md')).memo?.sourceDocumentId, rows[0]!.id);
  // Deleting one copy keeps the rows the other copy owns.
  await rm(path.join(f.corpus, 'policies/travel.md'));
  const third = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(third.items.removed, 1);
  assert.ok((await count('content_chunks WHERE source_document_id = $1', [rows[0]!.id])) > 0);
});

test('a file edited into a copy of another document retires its old document’s rows', async () => {
  await walk(f.lifespan, { sourcePath: f.corpus });
  const {
    rows: [old],
  } = await f.target.db.query<{ id: string }>("SELECT id FROM source_documents WHERE rel_path = 'handbook.md'");
  await copyFile(path.join(f.corpus, 'policies/travel.md'), path.join(f.corpus, 'handbook.md'));
  const second = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(second.items.changed, 1);
  assert.is(second.items.removed, 0, 'a retired memo is not a removed item');
  assert.is(await count('content_chunks WHERE source_document_id = $1', [old!.id]), 0);
  assert.is(await count('source_documents WHERE id = $1', [old!.id]), 1, 'provenance stays');
  assert.equal(
    (await collect(f.lifespan.store.itemIdentities())).filter((k) => k.startsWith('retired:')),
    [],
    'the retired memo was consumed',
  );
});

test('two copies admitted in the same walk share one document', async () => {
  await f.write('copy-a.md', markdown('Twin', 3));
  await f.write('copy-b.md', markdown('Twin', 3));
  await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(await count("source_documents WHERE title = 'Twin'"), 1);
});

test('full_reprocess re-stamps every row with the current op_id', async () => {
  await walk(f.lifespan, { sourcePath: f.corpus });
  const full = await walk(f.lifespan, { sourcePath: f.corpus, fullReprocess: true });
  assert.is(full.items.changed, DOCUMENTS);
  assert.is(await count('source_documents WHERE op_id <> $1', [full.opId]), 0);
  assert.is(await count('content_chunks WHERE op_id <> $1', [full.opId]), 0);
  assert.is(await count('source_documents'), DOCUMENTS);
});

test('idle mode: no corpus directory walks nothing and writes no derived row', async () => {
  for (const sourcePath of [null, path.join(f.root, 'missing')]) {
    const summary = await walk(f.lifespan, { sourcePath });
    assert.is(summary.status, 'completed');
    assert.ok(summary.idle);
    assert.is(summary.items.seen, 0);
  }
  assert.is(await count('source_documents'), 0);
  assert.is(await count('content_chunks'), 0);
});

test('every walk leaves exactly one pipeline_runs row, updated from in_progress to its terminal status', async () => {
  const summary = await walk(f.lifespan, { sourcePath: f.corpus });
  const { rows } = await f.target.db.query<{ status: string; result: { counts: Record<string, number> } }>(
    'SELECT status, result FROM pipeline_runs WHERE op_id = $1',
    [summary.opId],
  );
  assert.is(rows.length, 1);
  assert.is(rows[0]!.status, 'completed');
  assert.is(rows[0]!.result.counts.changed, DOCUMENTS);
});

test('the run record carries the counts /walk-status shows: rows deleted and what pull-sync did', async () => {
  await walk(f.lifespan, { sourcePath: f.corpus });
  await rm(path.join(f.corpus, 'policies/travel.md'));
  const sync = { downloaded: 0, unchanged: 3, removed: 1, refused: 0 };
  const summary = await walk(f.lifespan, { sourcePath: f.corpus, sync });
  const { rows } = await f.target.db.query<{ result: { counts: Record<string, number> } }>(
    'SELECT result FROM pipeline_runs WHERE op_id = $1',
    [summary.opId],
  );
  const counts = rows[0]!.result.counts;
  assert.equal(counts, walkCounts(summary));
  assert.equal([counts.removed, counts.sync_removed, counts.sync_unchanged], [1, 1, 3]);
  assert.ok(counts.rows_deleted! > 0, "the removed document's rows are counted as deleted");
  assert.is(counts.rows_deleted, summary.rowsDeleted);
});

test('flow-scope passes run after the settle barrier, and a failing pass does not fail the walk', async () => {
  let rowsSeenByPass = -1;
  const passes: FlowPass[] = [
    {
      name: 'counts-rows',
      async run({ db }) {
        const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM content_chunks');
        rowsSeenByPass = rows[0]!.n;
      },
    },
    {
      name: 'explodes',
      async run() {
        throw new Error('pass failure');
      },
    },
  ];
  await f.reopen(passes);
  const summary = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(summary.status, 'completed');
  assert.is(rowsSeenByPass, summary.rows.content_chunks, 'the pass saw every chunk the walk wrote');
  assert.equal(
    summary.passes.map((p) => [p.name, p.ok]),
    [
      ['counts-rows', true],
      ['explodes', false],
      ['url_backlink', true],
      ['cleanup', true],
    ],
  );
});

test("a failStage5 directive breaks stage 5's own clients only: a client built elsewhere meanwhile keeps its credentials", async () => {
  const seen: (string | null | undefined)[][] = [];
  const passes: FlowPass[] = [
    {
      name: 'builds-clients',
      async run({ failStage5 }) {
        seen.push([
          failStage5,
          createLlmClient().apiKey,
          createEmbeddingClient().apiKey,
          process.env.ANTHROPIC_API_KEY,
        ]);
      },
    },
  ];
  await f.reopen(passes);
  for (const mode of FAIL_STAGE5_MODES) await walk(f.lifespan, { sourcePath: f.corpus, failStage5: mode });
  assert.equal(
    seen.map(([mode]) => mode),
    [...FAIL_STAGE5_MODES],
  );
  assert.ok(
    seen.every((keys) => !keys.includes(FAILURE_SENTINEL)),
    `no sentinel outside stage 5: ${JSON.stringify(seen)}`,
  );
});

test('a database wiped under a surviving state store makes the next walk redo every item', async () => {
  await walk(f.lifespan, { sourcePath: f.corpus });
  for (const table of ['content_chunks', 'source_documents', 'engine_instance'])
    await f.target.db.query(`DELETE FROM ${table}`);
  const again = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(again.items.changed, DOCUMENTS);
  assert.is(await count('source_documents'), DOCUMENTS);
});

test('a corrupt document fails alone; the walk completes and tallies it', async () => {
  await f.write('locked.md', 'secret');
  await writeFile(path.join(f.corpus, 'broken.pdf'), 'this is not a pdf');
  const summary = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(summary.status, 'completed');
  assert.is(summary.items.failed, 1);
  assert.is(summary.counters.item_failure, 1);
  assert.equal(
    summary.failures.map((x) => [x.path, x.stage]),
    [['broken.pdf', 'convert']],
  );
  assert.is(await count('source_documents'), DOCUMENTS + 1);
});

test('a file over the size limit fails as too_large without being read', async () => {
  const small = await walkFixture({ env: { INGEST_MAX_DOCUMENT_BYTES: '100' } });
  try {
    await small.write('tiny.md', '# Tiny');
    await small.write('big.md', markdown('Big', 3));
    const summary = await walk(small.lifespan, { sourcePath: small.corpus });
    assert.equal(
      summary.failures.map((x) => [x.path, x.stage, x.code]),
      [['big.md', 'admit', 'too_large']],
    );
    assert.is(summary.items.changed, 1);
  } finally {
    await small.dispose();
  }
});

test('an edit within the timestamp tick of the walk that read the file, keeping its size, is still walked', async () => {
  const racy = await walkFixture();
  try {
    // A coarse clock: both versions carry the very same mtime, size and inode.
    const tick = Math.floor(Date.now() / 1000);
    const file = path.join(racy.corpus, 'notes.md');
    await racy.write('notes.md', '# Notes\n\nversion A of the text\n');
    await utimes(file, tick, tick);
    assert.is((await walk(racy.lifespan, { sourcePath: racy.corpus })).items.changed, 1);
    await writeFile(file, '# Notes\n\nversion B of the text\n');
    await utimes(file, tick, tick);
    const second = await walk(racy.lifespan, { sourcePath: racy.corpus });
    assert.is(second.items.changed, 1, 'the stat check must not vouch for bytes read within the tick');
    const { rows } = await racy.target.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM content_chunks WHERE text LIKE '%version B%'",
    );
    assert.is(rows[0]!.n, 1);
  } finally {
    await racy.dispose();
  }
});

test.run();
