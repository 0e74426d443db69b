// @engine
// A large file is written in batches (engine/file.ts): its rows land in several transactions
// and end exactly as one batch would have written them; a walk killed with SIGKILL half-way
// through it, then run again, ends with exactly the rows of an unbroken walk, whether the file
// was new or an edit of one walked before. Real `ingest walk` processes on the mock tier, the
// batch made small (INGEST_ITEM_BATCH_CHUNKS) so that a few hundred KB make many batches.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../lib/config.ts';
import { openDatabase } from '../lib/db/open.ts';
import type { Database } from '../lib/db/database.ts';
import { largeText } from '../bench/corpus/large-text.ts';
import { WALKED_TABLES, rowsInContentTerms } from './helpers/content.ts';
import { BIN } from './helpers/corpus.ts';
import { openTestDatabase, type TestDatabase } from './helpers/db.ts';
import { seedDataDir } from './helpers/embedded.ts';
import { walkFixture } from './helpers/walk.ts';
import { walk, type WalkProgress } from '../engine/walk.ts';

const BATCH_CHUNKS = '2';
// One batch, whatever the default.
const ONE_BATCH = '100000';
// ~120 chunks: some 60 batches of two.
const FIRST_VERSION = largeText(1, 140_000);
// An edit: a new opening, a third shorter, so that some old chunks are stale and others move.
const SECOND_VERSION = `A new opening paragraph written by Ada Lovelace.\n\n${largeText(2, 90_000)}`;
const SMALL = 'Q: Who runs the warehouse?\nA: Grace Hopper runs the warehouse for Northwind Traders.\n';

let root: string;
const targets: TestDatabase[] = [];

test.before(() => {
  root = mkdtempSync(path.join(tmpdir(), 'ingest-large-item-'));
});
test.after(async () => {
  for (const t of targets) await t.dispose();
  rmSync(root, { recursive: true, force: true });
});

interface Deployment {
  env: Record<string, string>;
  corpus: string;
  write(large: string): void;
}

/** A database, state store and corpus of its own, as a fresh deployment would have. */
async function deployment(name: string, batchChunks: string): Promise<Deployment> {
  const dataDir = path.join(root, name);
  const corpus = path.join(root, `${name}-corpus`);
  mkdirSync(corpus);
  const env: Record<string, string> = {
    INGEST_DATA_DIR: dataDir,
    INGEST_LOG_LEVEL: 'debug',
    INGEST_PRODUCER_AFTER_WALK: 'false',
    INGEST_ITEM_BATCH_CHUNKS: batchChunks,
  };
  if (process.env.ENGINE_DB_DSN) {
    const target = await openTestDatabase();
    targets.push(target);
    env.ENGINE_DB_DSN = target.dsn!;
  }
  await seedDataDir(dataDir);
  return {
    env,
    corpus,
    write(large) {
      writeFileSync(path.join(corpus, 'large.txt'), large);
      writeFileSync(path.join(corpus, 'small.md'), SMALL);
    },
  };
}

/** Runs `ingest walk`; with killAtBatch, SIGKILLs it as soon as a batch of the large file is durable. */
function runWalk(d: Deployment, killAtBatch = false): Promise<{ code: number | null; killed: boolean }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'walk', d.corpus, '--json'], {
      env: { PATH: process.env.PATH ?? '', ...d.env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let killed = false;
    let buffered = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      buffered += chunk;
      if (killAtBatch && !killed && buffered.includes('"item batch durable"')) {
        killed = true;
        child.kill('SIGKILL');
      }
    });
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, killed: killed && code === null }));
  });
}

async function withDatabase<T>(d: Deployment, fn: (db: Database) => Promise<T>): Promise<T> {
  const db = await openDatabase(loadConfig(d.env, root));
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

const landed = (d: Deployment) => withDatabase(d, rowsInContentTerms);

/** The large file's chunks, and the transactions that wrote them (PostgreSQL's xmin, on both engines). */
async function largeChunks(d: Deployment): Promise<{ chunks: number; transactions: number }> {
  return withDatabase(d, async (db) => {
    const { rows } = await db.query<{ chunks: number; transactions: number }>(
      `SELECT count(*)::int AS chunks, count(DISTINCT c.xmin::text)::int AS transactions
         FROM content_chunks c JOIN source_documents d ON d.id = c.source_document_id
        WHERE d.rel_path = 'large.txt'`,
    );
    return rows[0]!;
  });
}

function assertSameRows(got: Record<string, string[]>, expected: Record<string, string[]>, when: string): void {
  for (const table of WALKED_TABLES) assert.equal(got[table], expected[table], `${table} ${when}`);
}

/** The rows of unbroken one-batch walks of each version in turn, and the large file's chunks in the end. */
async function unbroken(
  name: string,
  ...versions: string[]
): Promise<{ rows: Record<string, string[]>; chunks: number }> {
  const whole = await deployment(name, ONE_BATCH);
  for (const large of versions) {
    whole.write(large);
    assert.is((await runWalk(whole)).code, 0);
  }
  const { chunks, transactions } = await largeChunks(whole);
  assert.is(transactions, 1);
  return { rows: await landed(whole), chunks };
}

let firstVersion: Promise<{ rows: Record<string, string[]>; chunks: number }>;
test.before(() => {
  firstVersion = unbroken('whole', FIRST_VERSION);
});

test('a large file lands in several transactions, with exactly the rows of one batch', async () => {
  const expected = await firstVersion;
  for (const table of WALKED_TABLES) assert.ok(expected.rows[table]!.length > 0, `${table} has rows`);
  assert.ok(expected.chunks > 100, `the file makes many chunks (${expected.chunks})`);

  const batched = await deployment('batched', BATCH_CHUNKS);
  batched.write(FIRST_VERSION);
  assert.is((await runWalk(batched)).code, 0);
  assertSameRows(await landed(batched), expected.rows, 'written in batches');
  const { transactions } = await largeChunks(batched);
  assert.ok(transactions >= expected.chunks / 2, `one transaction per batch (${transactions})`);
});

test('a walk killed half-way through a large new file, run again, ends with the rows of an unbroken walk', async () => {
  const expected = await firstVersion;
  const killed = await deployment('killed-new', BATCH_CHUNKS);
  killed.write(FIRST_VERSION);
  assert.ok((await runWalk(killed, true)).killed, 'the walk was killed half-way');
  const partial = (await largeChunks(killed)).chunks;
  assert.ok(
    partial > 0 && partial < expected.chunks,
    `some of the file's chunks landed (${partial} of ${expected.chunks})`,
  );
  assert.is((await runWalk(killed)).code, 0);
  assertSameRows(await landed(killed), expected.rows, 'after the kill');
});

test('a walk killed half-way through an edited large file, run again, ends with the rows of an unbroken walk', async () => {
  // The same history: what the first walk's entity resolution learned names the second's mentions.
  const expected = await unbroken('whole-edit', FIRST_VERSION, SECOND_VERSION);
  const killed = await deployment('killed-edit', BATCH_CHUNKS);
  killed.write(FIRST_VERSION);
  assert.is((await runWalk(killed)).code, 0);
  killed.write(SECOND_VERSION);
  assert.ok((await runWalk(killed, true)).killed, 'the walk was killed half-way');
  // The old version's rows are all still there (the stale ones go after the last batch).
  const { chunks } = await largeChunks(killed);
  assert.ok(chunks >= (await firstVersion).chunks, `the old chunks are kept until the end (${chunks})`);
  assert.is((await runWalk(killed)).code, 0);
  assertSameRows(await landed(killed), expected.rows, 'after the kill');
});

test('a large file tells its own progress after each durable batch, a small one none', async () => {
  const f = await walkFixture({ env: { INGEST_ITEM_BATCH_CHUNKS: BATCH_CHUNKS } });
  try {
    await f.write('large.txt', largeText(3, 20_000));
    await f.write('small.md', SMALL);
    const told: WalkProgress[] = [];
    const summary = await walk(f.lifespan, { sourcePath: f.corpus, onProgress: (p) => told.push(p) });
    assert.is(summary.items.changed, 2);
    // Other items finishing repeat the last report.
    const items = [...new Set(told.flatMap((p) => (p.item === undefined ? [] : [p.item])))];
    assert.ok(items.length >= 5, `one report per batch (${items.length})`);
    assert.ok(
      items.every((i) => i.path === 'large.txt'),
      'only the large file reports',
    );
    for (const [i, item] of items.entries()) {
      if (i > 0) assert.ok(item.chunks > items[i - 1]!.chunks && item.percent >= items[i - 1]!.percent, 'it moves on');
    }
    assert.is(told.at(-1)!.item, undefined, 'gone once the file is done');
  } finally {
    await f.dispose();
  }
});

test.run();
