// @engine
// `ingest walk` as a user runs it: a real process, its summary, and poisoned documents that
// must fail alone while the walk completes and its process memory stays bounded.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { cp, mkdir, readdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { WalkSummary } from '../engine/walk/walk.ts';
import { openTestDatabase, targetEngine, type TestDatabase } from './helpers/db.ts';
import { holdWriterFence } from './helpers/fence.ts';
import { docxBomb, flateBombPdf, makePdf, xlsxWithCells } from './helpers/documents.ts';

const BIN = path.resolve(import.meta.dirname, '..', 'bin', 'ingest.ts');
const EXAMPLES = path.resolve(import.meta.dirname, '..', 'examples', 'corpus');

let root: string;
let target: TestDatabase;
let env: Record<string, string>;
test.before.each(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'ingest-walk-cli-'));
  target = await openTestDatabase({ migrated: false });
  env = {
    PATH: process.env.PATH ?? '',
    INGEST_DATA_DIR: path.join(root, 'data'),
    ...(target.dsn ? { ENGINE_DB_DSN: target.dsn } : {}),
  };
  if (target.dsn) spawnSync(process.execPath, [BIN, 'db', 'migrate'], { env, encoding: 'utf8' });
});
test.after.each(async () => {
  await target.dispose();
  rmSync(root, { recursive: true, force: true });
});

function walk(corpus: string, ...flags: string[]) {
  const result = spawnSync(process.execPath, [BIN, 'walk', corpus, ...flags], {
    env,
    encoding: 'utf8',
    timeout: 300_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

test('the example corpus walks into rows of every type, then a second walk does nothing', async () => {
  const first = walk(EXAMPLES);
  assert.is(first.status, 0, first.stderr);
  assert.not.match(first.stderr, /no model endpoint configured/, 'tier 1 is said at debug, not on every command');
  assert.match(
    first.stdout,
    /items: 8 seen, 8 changed, 0 unchanged, 0 failed/,
    `${first.stdout}\n${first.stderr.slice(-4000)}`,
  );
  assert.match(
    first.stdout,
    /rows written \(upserts, rows already there included\): source_documents 8, content_chunks \d+/,
  );
  const second = walk(EXAMPLES, '--json');
  const summary = JSON.parse(second.stdout) as WalkSummary;
  assert.is(summary.status, 'completed');
  assert.is(summary.items.unchanged, 8);
  assert.equal(summary.rows, {});
});

test('a walk that removes documents says their source_documents rows stay', async () => {
  const corpus = path.join(root, 'corpus');
  await cp(EXAMPLES, corpus, { recursive: true });
  assert.is(walk(corpus).status, 0);
  await rm(path.join(corpus, 'company', 'faq.md'));
  const second = walk(corpus);
  assert.is(second.status, 0, second.stderr);
  assert.match(
    second.stdout,
    /1 removed \(gone from the corpus: the derived rows of documents no other file holds deleted, source_documents rows kept as provenance\)/,
  );
});

test('the summary says what it passed over and what a rename did: links by what they are, no rows deleted', async () => {
  const corpus = path.join(root, 'corpus');
  await cp(EXAMPLES, corpus, { recursive: true });
  assert.is(walk(corpus).status, 0);
  await rename(path.join(corpus, 'company', 'faq.md'), path.join(corpus, 'company', 'questions.md'));
  await symlink(path.join(root, 'nowhere.md'), path.join(corpus, 'dangling.md'));
  await writeFile(path.join(root, 'outside.md'), '# Outside\n\nNot in the corpus.\n');
  await symlink(path.join(root, 'outside.md'), path.join(corpus, 'escape.md'));
  const second = walk(corpus);
  assert.is(second.status, 0, second.stderr.slice(-4000));
  assert.not.match(second.stdout, /unreadable\)/);
  assert.match(
    second.stdout,
    /2 skipped \(not walked: unreadable or special files, links broken or leading out of the corpus\)/,
  );
  assert.match(
    second.stdout,
    /1 removed \(gone from these paths: no rows deleted, their documents are held by other files\)/,
  );
  assert.match(second.stdout, /; rows deleted: 0\n/);
  assert.match(
    second.stdout,
    /^warning broken_links: 1 symbolic link leads to nothing \(broken\) and was not walked: dangling\.md$/m,
  );
  assert.match(
    second.stdout,
    /^warning links_outside_corpus: 1 symbolic link leads outside the corpus .*: escape\.md$/m,
  );
});

test('a walk that refuses a mass removal prints its summary and exits 3, not 0; allowed, it removes and exits 0', async () => {
  const corpus = path.join(root, 'corpus');
  await cp(EXAMPLES, corpus, { recursive: true });
  assert.is(walk(corpus).status, 0);
  // An empty listing always asks for consent (stages/cleanup.ts): a volume that is not there looks so.
  for (const entry of await readdir(corpus)) await rm(path.join(corpus, entry), { recursive: true });
  const refused = walk(corpus);
  assert.is(refused.status, 3, refused.stderr.slice(-4000));
  assert.match(refused.stdout, /^warning mass_removal_refused: /m);
  assert.match(refused.stderr, /^ingest: the walk completed without doing its job: it refused to remove documents/m);
  assert.is(walk(corpus, '--allow-mass-removal').status, 0);
});

test('a chained producer run that fails is said, in words and in the JSON, and fails no walk', async () => {
  const bundle = path.join(root, 'bundle');
  await mkdir(bundle);
  // A file where the bundle's versions go: the run fails writing its bundle, after it began.
  await writeFile(path.join(bundle, 'versions'), 'not a folder');
  env.INGEST_BUNDLE_DIR = bundle;
  const text = walk(EXAMPLES);
  assert.is(text.status, 0, text.stderr);
  assert.match(
    text.stdout,
    /producer run [0-9a-f-]{36} after this walk failed: .*versions.*; the next clean walk runs it again/,
  );
  const json = walk(EXAMPLES, '--json');
  assert.is(json.status, 0, json.stderr);
  const summary = JSON.parse(json.stdout) as WalkSummary & { producerRuns: { status: string; error?: string }[] };
  assert.is(summary.items.unchanged, 8);
  assert.is(summary.producerRuns.length, 1, 'the run the first walk owed is tried again');
  assert.is(summary.producerRuns[0]!.status, 'failed');
  assert.match(summary.producerRuns[0]!.error ?? '', /versions/);

  await rm(path.join(bundle, 'versions'));
  const fixed = JSON.parse(walk(EXAMPLES, '--json').stdout) as typeof summary;
  assert.equal(
    fixed.producerRuns.map((r) => r.status),
    ['completed'],
  );
  const quiet = JSON.parse(walk(EXAMPLES, '--json').stdout) as typeof summary;
  assert.equal(quiet.producerRuns, [], 'nothing owed, no run');
});

test('a walk refuses to start while another writer holds the fence', async () => {
  const other = await holdWriterFence(path.join(root, 'data', 'state'), target.db);
  const result = walk(EXAMPLES);
  await other.release();
  assert.is(result.status, 1);
  assert.match(result.stderr, /another corpus writer holds the writer fence/);
});

test('an unknown flag is a usage error', () => {
  const result = walk(EXAMPLES, '--frobnicate');
  assert.is(result.status, 2);
  assert.match(result.stderr, /usage: ingest walk/);
});

test('a walk loads neither the Office readers, the S3 SDK nor pg-boss: a plain walk needs none of them', async () => {
  const out = path.join(root, 'modules.json');
  const recorder = path.resolve(import.meta.dirname, 'helpers', 'record-modules.ts');
  const result = spawnSync(process.execPath, ['--import', recorder, BIN, 'walk', EXAMPLES], {
    env: { ...env, INGEST_RECORD_MODULES_TO: out },
    encoding: 'utf8',
    timeout: 300_000,
  });
  assert.is(result.status, 0, result.stderr);
  const { modules } = JSON.parse(await readFile(out, 'utf8')) as { modules: string[] };
  assert.ok(
    modules.some((m) => m.endsWith('/engine/walk/walk.ts')),
    'the recorder saw the walk',
  );
  assert.equal(
    modules.filter((m) => /\/node_modules\/(exceljs|jszip|@aws-sdk\/client-s3|pg-boss\/(?!package\.json))/.test(m)),
    [],
  );
});

// The embedded database only: a walk or a search begins opening it before it reads its arguments
// (cli/early-database.ts).
if (targetEngine === 'pglite')
  test('a walk or a search refused for its arguments closes the embedded database it began opening; a search uses it', async () => {
    assert.is(walk(EXAMPLES).status, 0);
    const lock = path.join(root, 'data', 'pglite', 'ingest.lock');
    assert.not.ok(existsSync(lock), 'a walk that ended lets go of its database');
    const refused = walk(EXAMPLES, '--frobnicate');
    assert.is(refused.status, 2);
    assert.not.ok(existsSync(lock), 'the refused walk left its database open to die with it');
    const search = (...args: string[]) =>
      spawnSync(process.execPath, [BIN, 'search', ...args], { env, encoding: 'utf8' });
    assert.is(search('--k', '0', 'warranty').status, 2);
    assert.not.ok(existsSync(lock), 'the refused search left its database open');
    const found = search('travel');
    assert.is(found.status, 0, found.stderr);
    assert.match(found.stdout, /^1\. \[/, found.stdout);
    assert.not.ok(existsSync(lock), 'a search that ended lets go of its database');
  });

test('walk and watch refuse a path that is not a directory, or none at all, with exit 2 and create nothing', async () => {
  const file = path.join(root, 'notes.md');
  await writeFile(file, '# a file, not a folder\n');
  const missing = path.join(root, 'does-not-exist');
  const cases: { args: string[]; env?: Record<string, string>; says: RegExp }[] = [
    { args: [missing], says: new RegExp(`${missing} does not exist`) },
    { args: [file], says: new RegExp(`${file} is not a directory`) },
    { args: [], says: /needs a corpus directory: give a PATH or set ENGINE_SOURCE_PATH/ },
    {
      args: [],
      env: { ENGINE_SOURCE_PATH: missing },
      says: new RegExp(`ENGINE_SOURCE_PATH ${missing} does not exist`),
    },
  ];
  for (const command of ['walk', 'watch']) {
    for (const { args, env: extra, says } of cases) {
      const result = spawnSync(process.execPath, [BIN, command, ...args], {
        env: { ...env, ...extra },
        encoding: 'utf8',
        timeout: 300_000,
      });
      const what = `ingest ${command} ${args.join(' ')} ${JSON.stringify(extra ?? {})}`;
      assert.is(result.status, 2, `${what}: ${result.stdout}${result.stderr}`);
      assert.match(result.stderr, says, what);
      assert.match(result.stderr, new RegExp(`usage: ingest ${command}`), what);
      assert.not.ok(existsSync(path.join(root, 'data')), `${what} created the data directory`);
    }
  }
});

test('poisoned documents fail alone with named errors; the walk completes; memory stays bounded', async () => {
  // The baseline: the same walk without poison, on a fresh deployment of the same engine.
  const baseline = JSON.parse(walk(EXAMPLES, '--json').stdout) as WalkSummary;
  await target.dispose();
  target = await openTestDatabase({ migrated: false });
  env = {
    ...env,
    INGEST_DATA_DIR: path.join(root, 'data-poisoned'),
    ...(target.dsn ? { ENGINE_DB_DSN: target.dsn } : {}),
  };
  if (target.dsn) spawnSync(process.execPath, [BIN, 'db', 'migrate'], { env, encoding: 'utf8' });

  const corpus = path.join(root, 'corpus');
  await cp(EXAMPLES, corpus, { recursive: true });
  await mkdir(path.join(corpus, 'poison'));
  const good = await makePdf([{ heading: 'Fine', paragraphs: ['ok'] }]);
  await writeFile(path.join(corpus, 'poison', 'truncated.pdf'), good.subarray(0, good.length >> 1));
  await writeFile(path.join(corpus, 'poison', 'flate-bomb.pdf'), await flateBombPdf(600 * 1024 * 1024));
  await writeFile(path.join(corpus, 'poison', 'inflating.docx'), await docxBomb(700 * 1024 * 1024));
  await writeFile(path.join(corpus, 'poison', 'huge-dimension.xlsx'), await xlsxWithCells(2, 2, 'A1:XFD1048576'));
  await writeFile(path.join(corpus, 'poison', 'million-cells.xlsx'), await xlsxWithCells(250_000, 10, 'A1:J250000'));
  env.INGEST_CONVERT_MEMORY_MB = '400';
  env.INGEST_CONVERT_TIMEOUT_MS = '30000';
  env.INGEST_CONVERT_MAX_CELLS = '200000';
  const result = walk(corpus, '--json');
  assert.is(result.status, 0, result.stderr.slice(-2000));
  const summary = JSON.parse(result.stdout) as WalkSummary;
  assert.is(summary.status, 'completed');
  const failed = Object.fromEntries(summary.failures.map((f) => [f.path, f.code]));
  assert.is(failed['poison/truncated.pdf'], 'corrupt');
  assert.ok(
    ['memory_limit', 'timeout', 'corrupt'].includes(failed['poison/flate-bomb.pdf']!),
    failed['poison/flate-bomb.pdf'],
  );
  assert.is(failed['poison/inflating.docx'], 'zip_bomb');
  assert.is(failed['poison/million-cells.xlsx'], 'too_many_cells');
  assert.is(failed['poison/huge-dimension.xlsx'], undefined, 'a big declared dimension alone is no reason to fail');
  assert.is(summary.items.failed, 4);
  assert.is(summary.counters.item_failure, 4);
  assert.is(summary.items.changed, 9);
  // The bombs inflate to 600-700 MB; the walk's own process never held those bytes, so its
  // peak stays within a margin of the clean walk's.
  assert.ok(
    summary.peakRssMb < baseline.peakRssMb + 150,
    `peak RSS ${summary.peakRssMb} MB against ${baseline.peakRssMb} MB without poison`,
  );
});

test.run();
