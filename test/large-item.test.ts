// @engine
// A large file is written in batches (engine/item/file.ts): its rows land in several transactions
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
import { walk } from '../engine/walk/walk.ts';
import type { WalkProgress } from '../engine/walk/walk-options.ts';
import { statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { admitFile, FileChangedError } from '../engine/item/admit.ts';
import { textBatches, type TextBatch } from '../engine/item/item-rows.ts';
import { sha256Hex } from '../lib/hash.ts';
import type { FileItem } from '../lib/corpus/files.ts';
import { openStateStore, type ItemMemo } from '../lib/state/store.ts';
import { fileIdentity } from '../lib/state/keys.ts';
import { chunkKey } from '../lib/ids.ts';
import { chunkEmbeddingKey } from '../stages/upsert.ts';
import { chunkText } from '../stages/chunk.ts';
import { convertMarkdown, TextStream } from '../stages/convert/text.ts';
import { decodeText, EncodingProbe } from '../stages/convert/text-decode.ts';
import { extractionWindows, windowsOf } from '../stages/extract/index.ts';

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

/** The large file's memo, read (or rewritten, by `edit`) in its deployment's state store while no walk runs. */
async function largeMemo(d: Deployment, edit?: (memo: ItemMemo) => ItemMemo): Promise<ItemMemo> {
  const store = await openStateStore(loadConfig(d.env, root).stateStorePath);
  try {
    const { memo } = await store.getItem(fileIdentity('large.txt'));
    if (memo === undefined) throw new Error('the large file has no memo');
    if (edit !== undefined) await store.putItem(fileIdentity('large.txt'), edit(memo));
    return memo;
  } finally {
    await store.close();
  }
}

test('a large file’s memo counts its chunks instead of listing them and their embeddings', async () => {
  const counted = await deployment('counted', BATCH_CHUNKS);
  counted.write(FIRST_VERSION);
  assert.is((await runWalk(counted)).code, 0);
  const memo = await largeMemo(counted);
  assert.is(memo.chunks, (await firstVersion).chunks);
  assert.equal(memo.rows.content_chunks, []);
  const embeddings = memo.rows.record_embeddings ?? [];
  assert.ok(embeddings.length > 0, 'the mentions’ and pairs’ embeddings are listed');
  assert.not.ok(
    embeddings.some((key) => key.startsWith('content_chunk:')),
    'no chunk’s embedding is listed',
  );
});

test('an edit of a file whose memo lists its chunks (written before they were counted) ends as an unbroken walk', async () => {
  const expected = await unbroken('whole-listed', FIRST_VERSION, SECOND_VERSION);
  const listed = await deployment('listed', BATCH_CHUNKS);
  listed.write(FIRST_VERSION);
  assert.is((await runWalk(listed)).code, 0);
  await largeMemo(listed, ({ chunks, ...memo }) => {
    const keys = Array.from({ length: chunks ?? 0 }, (_, i) => chunkKey(memo.sourceDocumentId, i));
    return {
      ...memo,
      rows: {
        ...memo.rows,
        content_chunks: keys,
        record_embeddings: [...keys.map(chunkEmbeddingKey), ...(memo.rows.record_embeddings ?? [])],
      },
    };
  });
  listed.write(SECOND_VERSION);
  assert.is((await runWalk(listed)).code, 0);
  assertSameRows(await landed(listed), expected.rows, 'after the edit');
  assert.is((await largeMemo(listed)).chunks, (await largeChunks(listed)).chunks, 'the new memo counts them');
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

/** A text file's bytes converted as a stream, in pieces of `size` bytes. */
async function convertedInPieces(bytes: Buffer, size: number, mediaType: 'text/markdown' | 'text/plain') {
  const pieces: Buffer[] = [];
  for (let start = 0; start < bytes.length; start += size) pieces.push(bytes.subarray(start, start + size));
  const probe = new EncodingProbe();
  for (const piece of pieces) probe.push(piece);
  const stream = new TextStream(probe.finish(), mediaType);
  let text = '';
  for await (const piece of stream.decode(fromArray(pieces))) text += piece;
  return { text, title: stream.title, warnings: stream.warnings };
}

async function* fromArray<T>(list: readonly T[]): AsyncGenerator<T, void, undefined> {
  yield* list;
}

test('a text file decoded a piece at a time reads exactly as decoded whole, whatever splits its sequences', async () => {
  const written = '# Grüße 😀 中文\n\nÜnïcödé text, 😀 and 漢字 for 5 €. '.repeat(40);
  const latin = 'Le café ouvre à sept heures; la crème brûlée est préparée chaque matin.\n'.repeat(30);
  const cases: [string, Buffer, string | null][] = [
    ['UTF-8', Buffer.from(written), written],
    ['UTF-8 with a mark', Buffer.from(`\ufeff${written}`), written],
    ['UTF-16LE with a mark', Buffer.from(`\ufeff${written}`, 'utf16le'), written],
    ['UTF-16BE with a mark', Buffer.from(`\ufeff${written}`, 'utf16le').swap16(), written],
    ['UTF-16LE without one', Buffer.from(latin, 'utf16le'), latin],
    ['windows-1252, guessed', Buffer.from(latin, 'latin1'), latin],
    // Valid UTF-8 past the detection sample, then one byte that is not: the whole file is not UTF-8.
    ['not UTF-8 at its end', Buffer.concat([Buffer.from('Plain words. '.repeat(6_000)), Buffer.from([0xe9])]), null],
    ['a mark that lies', Buffer.concat([Buffer.from(`\ufeff${written}`), Buffer.from([0xe9, 0x20, 0xf0, 0x9f])]), null],
    ['cut off mid-sequence', Buffer.from(written).subarray(0, Buffer.byteLength(written) - 1), null],
  ];
  for (const [name, bytes, expected] of cases) {
    const whole = decodeText(bytes);
    if (expected !== null) assert.is(whole.text, expected, name);
    const title = convertMarkdown(bytes).title;
    for (const size of [1, 2, 3, 5, 7, 4_097, 65_537]) {
      const streamed = await convertedInPieces(bytes, size, 'text/markdown');
      assert.is(streamed.text, whole.text, `${name} in pieces of ${size}`);
      assert.equal(streamed.warnings, whole.warnings, `${name} in pieces of ${size}`);
      assert.is(streamed.title, title, `${name} in pieces of ${size}`);
    }
  }
  assert.equal(decodeText(cases[7]![1]).warnings.at(-1)!.name, 'replacement_characters');
  assert.equal(decodeText(cases[6]![1]).warnings[0]!.name, 'encoding_fallback');
});

/** The batches of the original whole-text cut: `size` chunks each, with the windows that start before the next. */
function wholeTextBatches(text: string, size: number): TextBatch[] {
  const chunks = chunkText(text);
  const windows = Array.from(windowsOf(text));
  const batches: TextBatch[] = [];
  for (let i = 0; i === 0 || i < chunks.length; i += size) {
    const end = chunks[i + size]?.charStart ?? text.length;
    const texts = windows.filter((w) => w.charStart < end && w.charStart >= (batches.at(-1)?.end ?? 0));
    const last = i + size >= chunks.length;
    batches.push({ chunks: chunks.slice(i, i + size), windows: texts.map((w) => w.text), first: i === 0, last, end });
  }
  return batches;
}

test('a text read in pieces is cut in exactly the batches of its whole text', async () => {
  const text = `${largeText(4, 90_000)}\n\n${'😀'.repeat(9_000)}\n${largeText(5, 30_000)}`;
  assert.equal(
    wholeTextBatches(text, 7).flatMap((b) => b.windows),
    extractionWindows(text),
  );
  for (const size of [7, 40]) {
    const expected = wholeTextBatches(text, size);
    assert.ok(expected.length > 1);
    for (const pieceChars of [1_000, 4_099, text.length]) {
      const pieces: string[] = [];
      for (let start = 0; start < text.length; start += pieceChars) pieces.push(text.slice(start, start + pieceChars));
      const batches: TextBatch[] = [];
      for await (const batch of textBatches(pieces, size)) batches.push(batch);
      assert.equal(batches, expected, `batches of ${size}, pieces of ${pieceChars}`);
    }
  }
  const empty: TextBatch[] = [];
  for await (const batch of textBatches([], 7)) empty.push(batch);
  assert.equal(empty, [{ chunks: [], windows: [], first: true, last: true, end: 0 }]);
});

test('a large text file is hashed as admission reads it, read again as it converts, and fails if it changed between', async () => {
  const dir = path.join(root, 'admission');
  mkdirSync(dir);
  const store = await openStateStore(path.join(dir, 'state'));
  try {
    const file = path.join(dir, 'large.txt');
    // Over the size whose pieces admission keeps.
    writeFileSync(file, largeText(6, 5 * 2 ** 20));
    const itemOf = (): FileItem => {
      const st = statSync(file, { bigint: true });
      return {
        relPath: 'large.txt',
        absPath: Buffer.from(file),
        size: Number(st.size),
        mtimeNs: st.mtimeNs,
        ino: st.ino,
      };
    };
    const bytes = await readFile(file);
    const admitted = await admitFile(itemOf(), store, { fullReprocess: false, textual: true });
    assert.is(admitted.kind, 'changed');
    if (admitted.kind !== 'changed') return;
    assert.is(admitted.sha256, sha256Hex(bytes));
    assert.is(admitted.content.length, bytes.length);
    const pieces: Buffer[] = [];
    for await (const piece of admitted.content.pieces()) pieces.push(piece);
    assert.ok(pieces.length > 1, 'read in pieces');
    assert.ok(Buffer.concat(pieces).equals(bytes), 'the same bytes');

    const again = await admitFile(itemOf(), store, { fullReprocess: false, textual: true });
    if (again.kind !== 'changed') return assert.unreachable('no memo was written');
    // Rewritten after admission, the same size: caught when the second read ends.
    writeFileSync(file, largeText(7, bytes.length).padEnd(bytes.length, ' ').slice(0, bytes.length));
    let failure: unknown = null;
    try {
      for await (const piece of again.content.pieces()) assert.ok(piece.length > 0);
    } catch (error) {
      failure = error;
    }
    assert.instance(failure, FileChangedError);
    assert.is((failure as FileChangedError).code, 'changed_while_read');
  } finally {
    await store.close();
  }
});

test('a text file decoded in pieces lands exactly the chunks of its whole text, its late title with them', async () => {
  // A sequence split by the first piece boundary (256 KB), and the first heading well past the first batch.
  const opening = largeText(8, 270_000).slice(0, 2 ** 18 - 1);
  assert.is(Buffer.byteLength(opening), 2 ** 18 - 1);
  const text = `${opening}😀 ${largeText(9, 200_000).replace(/e/g, 'é')}\n\n# A title met late 😀\n\n${largeText(10, 150_000)}`;
  assert.is(convertMarkdown(Buffer.from(text)).title, 'A title met late 😀');
  const f = await walkFixture({ env: { INGEST_ITEM_BATCH_CHUNKS: '64' } });
  try {
    await f.write('late.md', text);
    const summary = await walk(f.lifespan, { sourcePath: f.corpus });
    assert.is(summary.items.changed, 1);
    const { rows: documents } = await f.target.db.query<{ title: string }>('SELECT title FROM source_documents');
    assert.equal(documents, [{ title: 'A title met late 😀' }]);
    const { rows } = await f.target.db.query<{ idx: number; text: string; char_start: number; char_end: number }>(
      'SELECT idx, text, char_start, char_end FROM content_chunks ORDER BY idx',
    );
    const expected = chunkText(text);
    assert.ok(expected.length > 300, `many batches (${expected.length} chunks)`);
    assert.equal(
      rows.map((r) => ({ idx: r.idx, text: r.text, charStart: r.char_start, charEnd: r.char_end })),
      expected,
    );
  } finally {
    await f.dispose();
  }
});

test.run();
