// @engine
// Watch mode: the real watcher on a real folder, the real walk on the target database, and
// random file operations as a developer's tools make them. The database must end equal to a
// fresh walk of the folder, with no document missed and none left behind.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { appendFile, link, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fencedCorpusWalk } from '../engine/trigger/fenced-walk.ts';
import { walk } from '../engine/walk/walk.ts';
import { watchCorpus, type WatchedWalk } from '../engine/trigger/watch.ts';
import { openDatabase } from '../lib/db/open.ts';
import { loadConfig } from '../lib/config.ts';
import { corpusDocuments, runWatchFuzz } from '../bench/watch-fuzz.ts';
import { BIN, runIngest } from './helpers/cli.ts';
import { serveHttp } from './helpers/loopback.ts';
import { walkFixture, type WalkFixture } from './helpers/walk.ts';
import { sha256Hex } from '../lib/hash.ts';

const QUIET_MS = 150;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const LIVE_DOCUMENTS = `SELECT content_sha256 AS sha FROM source_documents d
  WHERE EXISTS (SELECT 1 FROM content_chunks c WHERE c.source_document_id = d.id)`;

/** Every walk-written row by what it holds, not by its id (document ids are minted, so two walks differ in them). */
async function contentOf(fixture: WalkFixture): Promise<string[]> {
  const byDocument = (table: string, columns: string) =>
    `SELECT '${table}:' || d.content_sha256 || ':' || ${columns} AS row FROM ${table} t JOIN source_documents d ON d.id = t.source_document_id`;
  const { rows } = await fixture.target.db.query<{ row: string }>(
    [
      `SELECT 'document:' || sha AS row FROM (${LIVE_DOCUMENTS}) live`,
      byDocument('content_chunks', "t.idx || ':' || md5(t.text)"),
      byDocument('q_a_extractions', "t.idx || ':' || md5(t.question_text || coalesce(t.answer_text, ''))"),
      byDocument('entity_mentions', "t.entity_type || ':' || t.canonical_name || ':' || t.surface_form"),
      byDocument('entity_relationships', "t.source_canonical || ':' || t.predicate || ':' || t.target_canonical"),
      "SELECT 'embeddings:' || owner_kind || ':' || count(*) AS row FROM record_embeddings GROUP BY owner_kind",
    ].join(' UNION ALL '),
  );
  return rows.map((r) => r.row).sort();
}

test('2,000 random file operations end with the database equal to a fresh walk: none missed, none phantom', async () => {
  const watched = await walkFixture();
  let watchedContent: string[];
  const corpus = path.join(mkdtempSync(path.join(tmpdir(), 'ingest-watch-fuzz-')), 'corpus');
  try {
    await mkdir(corpus);
    await writeFile(path.join(corpus, 'first.md'), '# First\n\nthe corpus as the watch starts\n');
    const result = await runWatchFuzz({
      lifespan: watched.lifespan,
      corpus,
      ops: 2_000,
      seed: 7,
      quietMs: QUIET_MS,
      probeEvery: 500,
    });
    assert.equal(result.problems, []);
    assert.ok(result.walks > 1, 'the saves were walked');
    // Far fewer walks than operations; how many fewer depends on how fast the machine writes.
    assert.ok(result.walks * 4 < result.ops, `${result.walks} walks for ${result.ops} operations`);
    for (const [op, n] of Object.entries(result.counts)) assert.ok(n > 0, `no ${op} was made`);

    // Byte-identical copies share one document (engine/item/identity.ts), so documents are compared by
    // content; a document is live while it has derived rows (source_documents rows are kept as
    // provenance when their files go, stages/cleanup.ts).
    const held = new Set(
      await Promise.all(
        (await corpusDocuments(corpus)).map(async (rel) => sha256Hex(await readFile(path.join(corpus, rel)))),
      ),
    );
    const { rows } = await watched.target.db.query<{ sha: string }>(LIVE_DOCUMENTS);
    const stored = new Set(rows.map((r) => r.sha));
    assert.equal(
      [...held].filter((sha) => !stored.has(sha)),
      [],
      'missed',
    );
    assert.equal(
      [...stored].filter((sha) => !held.has(sha)),
      [],
      'phantom',
    );
    watchedContent = await contentOf(watched);
  } finally {
    await watched.dispose();
  }
  // One database at a time: the embedded test databases share one connection.
  const fresh = await walkFixture();
  try {
    const freshWalk = await walk(fresh.lifespan, { sourcePath: corpus });
    assert.is(freshWalk.status, 'completed');
    assert.equal(watchedContent, await contentOf(fresh), 'every table equals a fresh walk of the folder');
  } finally {
    await fresh.dispose();
    rmSync(path.dirname(corpus), { recursive: true, force: true });
  }
});

test('a git checkout that rewrites hundreds of files ends with the database matching the new branch', async () => {
  const f = await walkFixture();
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.email=t@example.invalid', '-c', 'user.name=t', ...args], { cwd: f.corpus });
  try {
    for (let i = 0; i < 300; i++)
      await f.write(`docs/d${i % 10}/n${i}.md`, `# Note ${i}\n\nthe first branch, note ${i}\n`);
    git('init', '-q', '-b', 'first');
    git('add', '-A');
    git('commit', '-qm', 'first');
    git('checkout', '-q', '-b', 'second');
    // The second branch: every third note rewritten, every fifth gone, a new folder of 100.
    for (let i = 0; i < 300; i++) {
      const file = path.join(f.corpus, `docs/d${i % 10}/n${i}.md`);
      if (i % 5 === 0) await rm(file);
      else if (i % 3 === 0) await writeFile(file, `# Note ${i}\n\nthe second branch rewrote note ${i}\n`);
    }
    for (let i = 0; i < 100; i++) await f.write(`added/a${i}.md`, `# Added ${i}\n\nonly on the second branch\n`);
    git('add', '-A');
    git('commit', '-qm', 'second');
    git('checkout', '-q', 'first');

    const watch = await watchCorpus(
      { sourcePath: f.corpus, quietMs: QUIET_MS, maxDelayMs: 10 * QUIET_MS, reconcileMs: 3_600_000 },
      ({ deletionsSeen }) => fencedCorpusWalk(f.lifespan, f.corpus, { allowMassRemoval: deletionsSeen }),
      () => {},
      f.lifespan.log,
    );
    await watch.settled();
    git('checkout', '-q', 'second');
    await sleep(3 * QUIET_MS);
    await watch.settled();
    await watch.stop();
    const held = new Set(
      await Promise.all(
        (await corpusDocuments(f.corpus)).map(async (rel) => sha256Hex(await readFile(path.join(f.corpus, rel)))),
      ),
    );
    assert.is(held.size, 340, 'the second branch: 240 notes and 100 added');
    const { rows } = await f.target.db.query<{ sha: string }>(LIVE_DOCUMENTS);
    assert.equal(new Set(rows.map((r) => r.sha)), held);
  } finally {
    await f.dispose();
  }
});

test('saves during a walk make exactly one follow-up walk', async () => {
  const f = await walkFixture();
  try {
    await f.write('a.md', '# A\n\nfirst\n');
    let hold: Promise<void> | null = null;
    let release = () => {};
    const ended: WatchedWalk[] = [];
    const watch = await watchCorpus(
      { sourcePath: f.corpus, quietMs: QUIET_MS, maxDelayMs: 10 * QUIET_MS, reconcileMs: 3_600_000 },
      async () => {
        // The real walk, held at its start while the test saves more files.
        if (hold !== null) await hold;
        return fencedCorpusWalk(f.lifespan, f.corpus);
      },
      (walked) => ended.push(walked),
      f.lifespan.log,
    );
    await watch.settled();
    hold = new Promise<void>((resolve) => (release = resolve));
    await f.write('b.md', '# B\n\nsecond\n');
    await sleep(3 * QUIET_MS);
    for (let i = 0; i < 20; i++) {
      await f.write(`c${i}.md`, `# C${i}\n\nsaved while a walk ran\n`);
      await sleep(10);
    }
    await sleep(3 * QUIET_MS);
    assert.is(ended.length, 1, 'the second walk is still held');
    hold = null;
    release();
    await watch.settled();
    await watch.stop();
    assert.equal(
      ended.map((w) => w.reason),
      ['initial', 'changes', 'changes'],
      'twenty saves during a walk made one follow-up walk',
    );
    const { rows } = await f.target.db.query<{ n: number }>('SELECT count(*)::int AS n FROM source_documents');
    assert.is(rows[0]!.n, 22);
  } finally {
    await f.dispose();
  }
});

test('walks after a save neither fetch the feed URLs nor retract their rows; the initial and reconcile walks do', async () => {
  let gets = 0;
  const server = await serveHttp((_req, res) => {
    gets += 1;
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end(
        `<html><head><title>Feed</title></head><body><article><p>${'Ada Lovelace wrote of the engine. '.repeat(40)}</p></article></body></html>`,
      );
  });
  const f = await walkFixture({ env: { INGEST_FETCH_ALLOW_CIDRS: '127.0.0.1/32' } });
  const urlChunks = async () =>
    (
      await f.target.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM content_chunks WHERE reference_item_id IS NOT NULL',
      )
    ).rows[0]!.n;
  try {
    await f.write('a.md', '# A\n\nfirst\n');
    await f.target.db.query(`INSERT INTO feed_articles (id, url, title, passed) VALUES ($1::uuid, $2, 'Feed', true)`, [
      randomUUID(),
      `${server.origin}/feed/1`,
    ]);
    const ended: (WatchedWalk & { feedUrls: boolean })[] = [];
    let feedUrls = false;
    // Reconcile only once the saves are walked: each save comes well within it of the last walk.
    const watch = await watchCorpus(
      { sourcePath: f.corpus, quietMs: QUIET_MS, maxDelayMs: 10 * QUIET_MS, reconcileMs: 4_000 },
      (burst) => {
        feedUrls = burst.feedUrls;
        return fencedCorpusWalk(f.lifespan, f.corpus, { allowMassRemoval: burst.deletionsSeen, feedUrls });
      },
      (walked) => ended.push({ ...walked, feedUrls }),
      f.lifespan.log,
    );
    await watch.settled();
    assert.is(gets, 1, 'the initial walk fetches the passed URL');
    const landed = await urlChunks();
    assert.ok(landed > 0);
    // Unpassed: a walk after a save must neither fetch it nor take it for gone.
    await f.target.db.query('UPDATE feed_articles SET passed = false');
    for (const name of ['b', 'c', 'd']) {
      const walks = ended.length;
      await f.write(`${name}.md`, `# ${name}\n\nsaved\n`);
      while (ended.length === walks) await sleep(20);
    }
    assert.is(gets, 1, 'no walk after a save fetched the feed URL');
    assert.is(await urlChunks(), landed, 'no walk after a save retracted its rows');
    // The reconcile walk enumerates the ledger again, as the initial walk did: the unpassed URL goes.
    while (!ended.some((w) => w.reason === 'reconcile')) await sleep(50);
    await watch.stop();
    assert.equal(
      ended.map((w) => [w.reason, w.feedUrls, w.summary?.items.changed]),
      [
        ['initial', true, 2],
        ['changes', false, 1],
        ['changes', false, 1],
        ['changes', false, 1],
        ['reconcile', true, 0],
      ],
    );
    assert.is(await urlChunks(), 0, 'the reconcile walk retracted the unpassed URL');
    assert.is(gets, 1);
  } finally {
    await f.dispose();
    await server.close();
  }
});

test('a change the watcher cannot see is found by the reconcile walk, which says so', async () => {
  const f = await walkFixture();
  try {
    // A hard link outside the corpus: an edit through it raises no event in the corpus folder.
    const outside = path.join(f.root, 'outside.md');
    await writeFile(outside, '# Linked\n\nthe first text\n');
    await link(outside, path.join(f.corpus, 'linked.md'));
    const ended: WatchedWalk[] = [];
    const watch = await watchCorpus(
      { sourcePath: f.corpus, quietMs: QUIET_MS, maxDelayMs: 10 * QUIET_MS, reconcileMs: 1_500 },
      () => fencedCorpusWalk(f.lifespan, f.corpus),
      (walked) => ended.push(walked),
      f.lifespan.log,
    );
    await watch.settled();
    await appendFile(outside, 'and a second paragraph, added through the outside name\n');
    while (!ended.some((w) => w.reason === 'reconcile' && (w.summary?.items.changed ?? 0) > 0)) await sleep(50);
    await watch.stop();
    const reconciled = ended.find((w) => w.reason === 'reconcile' && (w.summary?.items.changed ?? 0) > 0)!;
    assert.is(reconciled.summary!.items.changed, 1);
    assert.is(
      ended.filter((w) => w.reason === 'changes').length,
      0,
      'no event came: only the reconcile walk saw the change',
    );
  } finally {
    await f.dispose();
  }
});

test('ingest watch: one line per walk that changed something, nothing for a save that changed nothing, Ctrl-C after the commit', async () => {
  const f = await walkFixture();
  await f.lifespan.close();
  try {
    await f.write('notes/a.md', '# A\n\nthe first note\n');
    const env = {
      PATH: process.env.PATH ?? '',
      INGEST_DATA_DIR: path.join(f.root, 'cli-data'),
      INGEST_LOG_LEVEL: 'error',
      INGEST_PRODUCER_AFTER_WALK: 'false',
    };
    const child = spawn(process.execPath, [BIN, 'watch', f.corpus, '--quiet-ms', String(QUIET_MS)], { env });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (err += c));
    const until = async (pattern: RegExp) => {
      for (const end = Date.now() + 120_000; !pattern.test(out); await sleep(50))
        assert.ok(Date.now() < end, `never printed ${pattern}: ${out}${err}`);
    };
    await until(/initial walk: 1 changed, 0 unchanged/);
    await f.write('notes/b.md', '# B\n\nthe second note\n');
    await until(/\d\d:\d\d:\d\d walk: 1 changed \(notes\/b\.md\); rows \d+ written, 0 deleted/);
    const lines = out.split('\n').length;
    // The same bytes again: a walk runs (the file was written) and says nothing.
    await f.write('notes/b.md', '# B\n\nthe second note\n');
    await sleep(6 * QUIET_MS);
    assert.is(out.split('\n').length, lines, `a save that changed nothing printed: ${out}`);
    await mkdir(path.join(f.corpus, 'bad'), { recursive: true });
    await writeFile(path.join(f.corpus, 'bad', 'broken.pdf'), 'not a pdf at all');
    await until(/walk: 0 changed, 1 failed \(bad[^)]*\).*\n {2}failed bad\/broken\.pdf \[convert: \w+\]/);
    child.kill('SIGINT');
    const code = await new Promise((resolve) => child.once('exit', resolve));
    assert.is(code, 0, err);
    assert.match(err, /stopping after the walk in progress commits/);
  } finally {
    await f.target.dispose();
  }
});

test('ingest watch on a folder bound to another corpus stops as ingest walk does; --rebind-corpus rebinds it', async () => {
  const f = await walkFixture();
  await f.lifespan.close();
  try {
    const env = {
      INGEST_DATA_DIR: path.join(f.root, 'cli-data'),
      INGEST_LOG_LEVEL: 'error',
      INGEST_PRODUCER_AFTER_WALK: 'false',
    };
    const first = path.join(f.root, 'first');
    await mkdir(first);
    await writeFile(path.join(first, 'a.md'), '# A\n\nthe first corpus\n');
    await f.write('b.md', '# B\n\nthe second corpus\n');
    assert.is((await runIngest(['walk', first], env)).status, 0);
    const walked = await runIngest(['walk', f.corpus], env);
    const watched = await runIngest(['watch', f.corpus, '--quiet-ms', String(QUIET_MS)], env);
    assert.is(watched.status, walked.status);
    assert.is(watched.status, 1);
    const error = /^error: .*--rebind-corpus.*$/m;
    assert.match(walked.stdout, error);
    assert.is(watched.stdout.match(error)?.[0], walked.stdout.match(error)?.[0], watched.stdout);

    const child = spawn(process.execPath, [BIN, 'watch', f.corpus, '--rebind-corpus', '--quiet-ms', String(QUIET_MS)], {
      env: { PATH: process.env.PATH ?? '', ...env },
    });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    for (const end = Date.now() + 120_000; !/initial walk: 1 changed/.test(out); await sleep(50))
      assert.ok(Date.now() < end, `never printed the initial walk: ${out}`);
    child.kill('SIGINT');
    assert.is(await new Promise((resolve) => child.once('exit', resolve)), 0);
  } finally {
    await f.target.dispose();
  }
});

test('ingest watch refuses, by name, an embedded database another process holds', async () => {
  const f = await walkFixture();
  await f.lifespan.close();
  const dataDir = path.join(f.root, 'held');
  const config = loadConfig({ INGEST_DATA_DIR: dataDir }, f.root);
  const holder = await openDatabase(config);
  try {
    const child = spawn(process.execPath, [BIN, 'watch', f.corpus], {
      env: { PATH: process.env.PATH ?? '', INGEST_DATA_DIR: dataDir, INGEST_LOG_LEVEL: 'silent' },
    });
    let err = '';
    child.stderr.on('data', (c) => (err += c));
    const code = await new Promise((resolve) => child.once('exit', resolve));
    assert.is(code, 1);
    assert.match(err, /the embedded database at .* is open in another process/);
  } finally {
    await holder.close();
    await f.target.dispose();
  }
});

test.run();
