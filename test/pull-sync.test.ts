// Pull-sync against both bucket kinds: a directory (file://) and a real S3-compatible server on
// loopback (s3://). The corpus directory must end up a copy of the bucket, fetching only what
// changed, deleting what the bucket dropped, and refusing keys that would leave the corpus.

import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { mkdir, readFile, rename, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { pino } from 'pino';
import { loadConfig } from '../lib/config.ts';
import { openBucket } from '../lib/bucket/index.ts';
import { DOWNLOADS_AT_ONCE, pullSync, syncCorpus } from '../lib/bucket/pull-sync.ts';
import { BucketError, type CorpusBucket } from '../lib/bucket/bucket.ts';
import { startTestS3 } from './helpers/s3.ts';

const log = pino({ level: 'silent' });

/** One bucket under test: how to write and delete an object, and the service's env for it. */
interface Bucket {
  put(key: string, body: string): Promise<void>;
  remove(key: string): Promise<void>;
  env: Record<string, string>;
  close(): Promise<void>;
}

async function directoryBucket(root: string): Promise<Bucket> {
  const dir = path.join(root, 'bucket');
  await mkdir(dir, { recursive: true });
  let tick = 0;
  return {
    async put(key, body) {
      const file = path.join(dir, ...key.split('/'));
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, body);
      // Distinct mtimes even within one clock tick: a rewrite must read as a new version.
      const when = new Date(Date.now() + ++tick * 1000);
      await utimes(file, when, when);
    },
    remove: (key) => rm(path.join(dir, ...key.split('/'))),
    env: { INGEST_CORPUS_BUCKET: pathToFileURL(dir).href },
    close: async () => {},
  };
}

async function s3Bucket(): Promise<Bucket> {
  const s3 = await startTestS3();
  return {
    put: (k, b) => s3.put(`docs/${k}`, b),
    remove: (k) => s3.remove(`docs/${k}`),
    env: s3.env('docs'),
    close: () => s3.close(),
  };
}

for (const [kind, open] of [
  ['file://', directoryBucket],
  ['s3://', s3Bucket],
] as const) {
  const it = suite(`pull-sync from a ${kind} bucket`);
  let root: string;
  let bucket: Bucket;
  let corpus: string;
  const sync = () => syncCorpus(loadConfig({ ...bucket.env, ENGINE_DB: path.join(root, 'state') }, root), corpus, log);
  const files = () =>
    readdirSync(corpus, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.md'))
      .sort();

  it.before.each(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'ingest-sync-'));
    corpus = path.join(root, 'corpus');
    await mkdir(path.join(root, 'state'));
    bucket = await open(root);
  });
  it.after.each(async () => {
    await bucket.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('materialises the bucket, then fetches only what changed and deletes what it dropped', async () => {
    await bucket.put('a.md', '# A\n');
    await bucket.put('nested/deeper/b.md', '# B\n');
    await bucket.put('c #1 (draft).md', '# C\n');
    assert.equal(await sync(), { downloaded: 3, unchanged: 0, removed: 0, refused: 0 });
    assert.equal(files(), ['a.md', 'c #1 (draft).md', 'nested/deeper/b.md']);
    assert.is(await readFile(path.join(corpus, 'nested', 'deeper', 'b.md'), 'utf8'), '# B\n');

    assert.equal(await sync(), { downloaded: 0, unchanged: 3, removed: 0, refused: 0 }, 'nothing fetched twice');

    await bucket.put('a.md', '# A, edited\n');
    await bucket.remove('nested/deeper/b.md');
    assert.equal(await sync(), { downloaded: 1, unchanged: 1, removed: 1, refused: 0 });
    assert.equal(files(), ['a.md', 'c #1 (draft).md']);
    assert.is(await readFile(path.join(corpus, 'a.md'), 'utf8'), '# A, edited\n');
    assert.not.ok(
      readdirSync(corpus, { recursive: true, encoding: 'utf8' }).some((f) => f.includes('.sync-')),
      'no temp file left',
    );
  });

  it('the bucket is authoritative: a local edit or a local-only file is replaced or removed', async () => {
    await bucket.put('a.md', '# A\n');
    await sync();
    await writeFile(path.join(corpus, 'a.md'), '# edited in the working copy\n');
    await writeFile(path.join(corpus, 'stray.md'), '# not in the bucket\n');
    assert.equal(await sync(), { downloaded: 1, unchanged: 0, removed: 1, refused: 0 });
    assert.equal(files(), ['a.md']);
    assert.is(await readFile(path.join(corpus, 'a.md'), 'utf8'), '# A\n');
  });

  it('an empty listing never empties a corpus that has files', async () => {
    await mkdir(corpus, { recursive: true });
    await writeFile(path.join(corpus, 'kept.md'), '# kept\n');
    try {
      await sync();
      assert.unreachable('an empty bucket must not wipe the corpus');
    } catch (error) {
      assert.is((error as Error).name, 'BucketError');
      assert.match((error as Error).message, /refusing to empty the corpus/);
    }
    assert.equal(files(), ['kept.md']);
  });

  it('a state directory nothing has made (the state store in the database) is made for the manifest', async () => {
    await bucket.put('a.md', '# a\n');
    const config = loadConfig({ ...bucket.env, ENGINE_DB: path.join(root, 'not-made') }, root);
    assert.not.ok(existsSync(config.stateStorePath), 'no state directory yet');
    assert.equal(await syncCorpus(config, corpus, log), { downloaded: 1, unchanged: 0, removed: 0, refused: 0 });
    assert.equal(await syncCorpus(config, corpus, log), { downloaded: 0, unchanged: 1, removed: 0, refused: 0 });
  });

  it('the service data directory inside the corpus is never deleted in', async () => {
    await bucket.put('a.md', '# a\n');
    await mkdir(path.join(corpus, 'ingest-data', 'state'), { recursive: true });
    await writeFile(path.join(corpus, 'ingest-data', 'state', 'data.md'), 'the state store');
    const config = loadConfig({ ...bucket.env, INGEST_DATA_DIR: 'corpus/ingest-data' }, root);
    assert.equal(await syncCorpus(config, corpus, log), { downloaded: 1, unchanged: 0, removed: 0, refused: 0 });
    assert.equal(files(), ['a.md', 'ingest-data/state/data.md']);
  });

  it.run();
}

const partial = suite('a file:// bucket that cannot be listed whole');
partial('a folder gone while the bucket is listed fails the listing, so pull-sync deletes nothing', async () => {
  const root = mkdtempSync(path.join(tmpdir(), 'ingest-sync-'));
  try {
    const bucket = await directoryBucket(root);
    await bucket.put('top.md', '# top\n');
    await bucket.put('folder/inner.md', '# inner\n');
    const listing = openBucket(loadConfig(bucket.env, root), log)!.list();
    const keys: string[] = [];
    try {
      // The folder goes once its parent is listed and before it is opened: a real ENOENT.
      for await (const object of listing) {
        if (keys.length === 0) await rename(path.join(root, 'bucket', 'folder'), path.join(root, 'away'));
        keys.push(object.key);
      }
      assert.unreachable('a listing with a hole must fail');
    } catch (error) {
      assert.is((error as Error).name, 'BucketError');
      assert.match(
        (error as Error).message,
        /cannot list folder of file:.* \(cannot read directory: ENOENT\); nothing is synced/,
      );
    }
    assert.equal(keys, ['top.md']);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
partial.run();

const hostile = suite('pull-sync refuses keys that would leave the corpus');
hostile('an S3 key with .. or a hidden segment is skipped by name, the rest synced', async () => {
  const root = mkdtempSync(path.join(tmpdir(), 'ingest-sync-'));
  const s3 = await startTestS3();
  try {
    await s3.put('docs/ok.md', '# ok\n');
    await s3.put('docs/.git/config.md', '# hidden\n');
    await s3.put('docs/a/%2e%2e/escape.md', '# encoded\n');
    await s3.put('docs/win\\dows.md', '# backslash\n');
    const corpus = path.join(root, 'corpus');
    const report = await syncCorpus(loadConfig({ ...s3.env('docs'), ENGINE_DB: root }, root), corpus, log);
    assert.equal(report, { downloaded: 1, unchanged: 0, removed: 0, refused: 3 });
    assert.equal(
      readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.md')),
      ['corpus/ok.md'],
    );
  } finally {
    await s3.close();
    rmSync(root, { recursive: true, force: true });
  }
});
hostile.run();

const parallel = suite('pull-sync downloads several objects at once');
parallel(
  'a first pull keeps DOWNLOADS_AT_ONCE downloads in flight, never more, and a failed one fails the sync',
  async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'ingest-sync-'));
    try {
      const source = await directoryBucket(root);
      for (let i = 0; i < 30; i++) await source.put(`doc-${i}.md`, `# ${i}\n`);
      const real = openBucket(loadConfig(source.env, root), log)!;
      let inFlight = 0;
      let most = 0;
      let failing: string | null = null;
      // The real bucket, each download held 20 ms so that downloads overlap as they would on a network.
      const observed: CorpusBucket = {
        location: real.location,
        list: () => real.list(),
        upload: (key, from) => real.upload(key, from),
        remove: (key) => real.remove(key),
        close: () => real.close(),
        async download(key, to) {
          most = Math.max(most, ++inFlight);
          try {
            await new Promise((resolve) => setTimeout(resolve, 20));
            if (key === failing) throw new BucketError(`${key} is gone`);
            await real.download(key, to);
          } finally {
            inFlight--;
          }
        },
      };
      const corpus = path.join(root, 'corpus');
      const notCorpus = { prefixes: [], directories: [] };
      const report = await pullSync(observed, corpus, root, log, notCorpus);
      assert.equal(report, { downloaded: 30, unchanged: 0, removed: 0, refused: 0 });
      assert.is(most, DOWNLOADS_AT_ONCE);
      assert.is(readdirSync(corpus).length, 30);

      for (let i = 0; i < 30; i++) await source.put(`doc-${i}.md`, `# ${i}, edited\n`);
      failing = 'doc-3.md';
      try {
        await pullSync(observed, corpus, root, log, notCorpus);
        assert.unreachable('a failed download fails the sync');
      } catch (error) {
        assert.match((error as Error).message, /doc-3.md is gone/);
      }
      assert.is(inFlight, 0, 'no download outlives the failed sync');
      assert.is(await readFile(path.join(corpus, 'doc-3.md'), 'utf8'), '# 3\n', 'the failed object keeps its old copy');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  },
);
parallel.run();
