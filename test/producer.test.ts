// @engine
// The producer (issue 24) over real walks on tier 1 (the mock model server over HTTP): a clean
// walk chains a run whose bundle is conformant with every citation resolving; an unchanged walk
// runs none and touches no file; an edit redrafts only the concepts it feeds; a concept whose
// documents are all gone leaves the bundle and the log says so; the pages are the rows' alone.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFile, readdir, realpath, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { pino } from 'pino';
import { walk } from '../engine/walk/walk.ts';
import { syncCorpus } from '../lib/bucket/pull-sync.ts';
import { publishedBundle } from '../stages/producer/bundle-dir.ts';
import { checkBundle } from '../stages/producer/check.ts';
import { startMockTier, type MockTier } from './helpers/mock-tier.ts';
import { startTestS3 } from './helpers/s3.ts';
import { walkFixture, type WalkFixture } from './helpers/walk.ts';

let tier: MockTier;
let f: WalkFixture;

// The mock names capitalised multi-word phrases: each of these is an entity in two or more
// documents, so a concept, and (lower-cased) a classifier topic, so a second one.
const DOCUMENTS: Record<string, string> = {
  'a.md':
    '# Launch\n\nNorthwind Traders opened a shop in Lyon. Ada Lovelace runs Northwind Traders.\n\nQ: Who runs Northwind Traders?\nA: Ada Lovelace runs it.\n',
  'b.md': '# Founders\n\nAda Lovelace founded Northwind Traders with Grace Hopper.\n',
  'c.md': '# People\n\nGrace Hopper met Ada Lovelace in Lyon.\n',
  'd.md': '# Shipping\n\nBlue Harbor Logistics ships goods. Carl Jung advises Blue Harbor Logistics.\n',
  'e.md': '# Hiring\n\nBlue Harbor Logistics hired Carl Jung last spring.\n',
};
const CONCEPTS = 10;

test.before.each(async () => {
  tier = await startMockTier();
  f = await walkFixture({ env: { INGEST_PRODUCER_AFTER_WALK: 'true' } });
  for (const [name, text] of Object.entries(DOCUMENTS)) await f.write(name, text);
});
test.after.each(async () => {
  await f.dispose();
  await tier.stop();
});

const bundle = () => publishedBundle(f.lifespan.config.bundle.dir);

/** A walk, then the producer run it chained (if any) to its end; the model calls of each. */
async function walkAndProduce(options: Parameters<typeof walk>[1] = {}) {
  const before = tier.mock.stats.messages;
  const summary = await walk(f.lifespan, { sourcePath: f.corpus, ...options });
  // Read before the chained run makes its first call: it starts after walk() has returned.
  const walkCalls = tier.mock.stats.messages - before;
  await f.lifespan.producer.idle();
  return { summary, walkCalls, producerCalls: tier.mock.stats.messages - before - walkCalls };
}

async function producerRuns(): Promise<{ status: string; counts: Record<string, number> }[]> {
  const { rows } = await f.target.db.query<{ status: string; result: { counts: Record<string, number> } }>(
    "SELECT status, result FROM pipeline_runs WHERE flow = 'producer' ORDER BY started_at",
  );
  return rows.map((r) => ({ status: r.status, counts: r.result.counts }));
}

/** Every file of the published bundle: its bytes, inode and mtime. */
async function files(): Promise<Map<string, { text: string; ino: number; mtimeMs: number }>> {
  const root = await realpath(bundle());
  const out = new Map<string, { text: string; ino: number; mtimeMs: number }>();
  for (const rel of (await readdir(root, { recursive: true })).sort()) {
    const s = await stat(path.join(root, rel));
    if (s.isFile())
      out.set(rel, { text: await readFile(path.join(root, rel), 'utf8'), ino: s.ino, mtimeMs: s.mtimeMs });
  }
  return out;
}

test('a clean walk with new documents chains a producer run; its bundle is conformant and every citation resolves', async () => {
  const { summary, producerCalls } = await walkAndProduce();
  assert.is(summary.status, 'completed');
  const runs = await producerRuns();
  assert.is(runs.length, 1);
  assert.is(runs[0]!.status, 'completed');
  assert.equal([runs[0]!.counts.concepts, runs[0]!.counts.drafted, runs[0]!.counts.failed], [CONCEPTS, CONCEPTS, 0]);
  assert.is(producerCalls, CONCEPTS, 'one model call per concept drafted');
  const check = await checkBundle(bundle(), f.target.db);
  assert.equal(check.problems, []);
  assert.is(check.concepts, CONCEPTS);
  const page = await readFile(path.join(bundle(), 'entities/person/ada-lovelace.md'), 'utf8');
  const { rows } = await f.target.db.query<{ id: string }>(`SELECT id::text FROM source_documents`);
  const cited = [...page.matchAll(/record:\/\/source_document\/([0-9a-f-]{36})/g)].map((m) => m[1]);
  assert.is(new Set(cited).size, 3, 'Ada Lovelace is named in a, b and c, each cited once');
  for (const id of cited) assert.ok(rows.some((r) => r.id === id));
  assert.match(page, /^type: Person$/m);
  assert.match(page, /^# Citations$/m);
  assert.match(page, /\[Grace Hopper\]\(\/entities\/person\/grace-hopper\.md\)/, 'a related concept is linked');
  const index = await readFile(path.join(bundle(), 'index.md'), 'utf8');
  assert.match(index, /^---\nokf_version: "0\.1"\n---\n/);
});

test('an unchanged walk runs no producer and leaves every file of the bundle as it was, bytes and mtime', async () => {
  await walkAndProduce();
  const before = await files();
  const published = await realpath(bundle());
  const again = await walkAndProduce();
  assert.is(again.summary.items.unchanged, Object.keys(DOCUMENTS).length);
  assert.is(again.producerCalls, 0);
  assert.is((await producerRuns()).length, 1, 'no second run');
  assert.is(await realpath(bundle()), published);
  assert.equal(await files(), before);
});

test('a run that finds nothing to draft keeps the published version, delta-gated or over every concept', async () => {
  await walkAndProduce();
  const before = await files();
  const published = await realpath(bundle());
  const versions = await readdir(path.dirname(published));
  for (const all of [false, true]) {
    const outcome = await f.lifespan.producer.start({ all, redraft: false }).done;
    assert.is(outcome.status, 'completed', outcome.error);
    assert.equal([outcome.report!.drafted, outcome.report!.files_written, outcome.report!.files_removed], [0, 0, 0]);
    assert.is(outcome.report!.concepts, CONCEPTS);
    assert.is(await realpath(bundle()), published, `all: ${all}: the same version is published`);
    assert.equal(await readdir(path.dirname(published)), versions, `all: ${all}: no version made`);
  }
  assert.equal(await files(), before);
});

test('a record an earlier version left in progress under its old memo is closed as abandoned by the next run', async () => {
  const startedAt = new Date().toISOString();
  const opId = '6f1c2a4e-0000-4000-8000-000000000001';
  const legacy = {
    opId,
    flow: 'producer',
    status: 'in_progress',
    startedAt,
    finishedAt: null,
    result: { counts: {}, counters: {} },
  };
  await f.target.db.query(
    `INSERT INTO pipeline_runs (id, op_id, flow, status, started_at, result) VALUES ($1, $1, 'producer', 'in_progress', $2, '{}')`,
    [opId, startedAt],
  );
  await f.lifespan.store.putMemo('producer:running', legacy);
  const outcome = await f.lifespan.producer.start({ all: false, redraft: false }).done;
  assert.is(outcome.status, 'completed', outcome.error);
  assert.equal(
    (await producerRuns()).map((r) => r.status),
    ['abandoned', 'completed'],
  );
  assert.is(await f.lifespan.store.getMemo('producer:running'), undefined);
});

test('editing one document redrafts only the concepts it feeds; every other page keeps its bytes and mtime', async () => {
  await walkAndProduce();
  const before = await files();
  await f.write(
    'd.md',
    '# Shipping\n\nBlue Harbor Logistics ships goods to Oslo. Carl Jung advises Blue Harbor Logistics.\n',
  );
  const { producerCalls } = await walkAndProduce();
  const last = (await producerRuns()).at(-1)!;
  assert.is(last.status, 'completed');
  // d.md feeds two entities and, through its classification, their two topics.
  assert.is(last.counts.drafted, 4);
  assert.is(producerCalls, 4, 'one model call per redrafted concept, none for the rest');
  const after = await files();
  const changed = [...after.keys()].filter((rel) => after.get(rel)!.text !== before.get(rel)?.text).sort();
  assert.equal(changed, [
    'entities/organization/blue-harbor-logistics.md',
    'entities/person/carl-jung.md',
    'log.md',
    'topics/blue-harbor-logistics.md',
    'topics/carl-jung.md',
  ]);
  for (const [rel, file] of after)
    if (!changed.includes(rel))
      assert.equal([file.ino, file.mtimeMs], [before.get(rel)!.ino, before.get(rel)!.mtimeMs], rel);
  assert.match(
    after.get('log.md')!.text,
    /\*\*Update\*\*: \[Carl Jung\]\(\/entities\/person\/carl-jung\.md\) redrafted/,
  );
  assert.equal((await checkBundle(bundle(), f.target.db)).problems, []);
});

test('deleting every document of a concept removes its page and logs the removal; links to it go too', async () => {
  await walkAndProduce();
  await rm(path.join(f.corpus, 'd.md'));
  await rm(path.join(f.corpus, 'e.md'));
  const { summary } = await walkAndProduce({ allowMassRemoval: true });
  assert.is(summary.items.removed, 2);
  const after = await files();
  assert.not.ok(after.has('entities/person/carl-jung.md'));
  assert.not.ok(after.has('entities/organization/blue-harbor-logistics.md'));
  assert.not.ok(
    [...after.values()].some(
      (file) => file.text.includes('](/entities/person/carl-jung.md)') && !file.text.startsWith('# Bundle log'),
    ),
  );
  assert.match(after.get('log.md')!.text, /\*\*Removal\*\*: Carl Jung \(entities\/person\/carl-jung\.md\) removed/);
  assert.is((await producerRuns()).at(-1)!.counts.removed, 4);
  const { rows } = await f.target.db.query(`SELECT 1 FROM bundle_concepts WHERE name IN ('Carl Jung', 'carl jung')`);
  assert.is(rows.length, 0);
  const check = await checkBundle(bundle(), f.target.db);
  assert.equal(check.problems, []);
  assert.is(check.concepts, CONCEPTS - 4);
});

test('with a corpus bucket, each bundle is written through to its .bundle/ prefix, removals too; pull-sync passes it over', async () => {
  const s3 = await startTestS3();
  try {
    await f.reopen(undefined, s3.env('docs'));
    await walkAndProduce();
    const page = 'entities/person/carl-jung.md';
    assert.is(await s3.get(`docs/.bundle/${page}`), await readFile(path.join(bundle(), page), 'utf8'));
    assert.is(await s3.get('docs/.bundle/index.md'), await readFile(path.join(bundle(), 'index.md'), 'utf8'));
    await rm(path.join(f.corpus, 'd.md'));
    await rm(path.join(f.corpus, 'e.md'));
    await walkAndProduce({ allowMassRemoval: true });
    assert.is(await s3.get(`docs/.bundle/${page}`), null, 'a removed page is removed from the bucket');
    assert.is(await s3.get('docs/.bundle/log.md'), await readFile(path.join(bundle(), 'log.md'), 'utf8'));
    await s3.put('docs/only.md', '# Only\n\nThe one document of the bucket.\n');
    const copy = path.join(f.root, 'synced');
    const report = await syncCorpus(f.lifespan.config, copy, pino({ level: 'silent' }));
    assert.equal([report?.downloaded, report?.refused], [1, 0], 'the bundle is neither corpus nor refused');
    assert.equal(await readdir(copy), ['only.md']);
  } finally {
    await s3.close();
  }
});

test.run();
