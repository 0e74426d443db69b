// @engine
// A producer killed with SIGKILL in the middle of a run (real `ingest` processes, the model slow
// enough to be caught drafting): the published bundle stays the one before it, readable and
// conformant with every citation resolving; the next run finishes, closes the killed run's
// record as abandoned and removes what the killed run (or one killed while writing its
// version) left in the versions folder.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, readdir, readFile, realpath, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../lib/config.ts';
import { openDatabase } from '../lib/db/open.ts';
import { startMockServer } from '../mock/server.ts';
import { mockTierEnv } from './helpers/mock-tier.ts';
import { publishedBundle } from '../stages/producer/bundle-dir.ts';
import { checkBundle } from '../stages/producer/check.ts';
import { killedIngest, runIngest } from './helpers/cli.ts';
import { generateCorpus } from './helpers/corpus.ts';
import { openTestDatabase, type TestDatabase } from './helpers/db.ts';

let root: string;
let target: TestDatabase | null = null;
test.before(() => {
  root = mkdtempSync(path.join(tmpdir(), 'ingest-producer-crash-'));
});
test.after(async () => {
  await target?.dispose();
  rmSync(root, { recursive: true, force: true });
});

test('a producer killed mid-run leaves the previous bundle published and conformant; the next run cleans up', async () => {
  const corpus = path.join(root, 'corpus');
  generateCorpus(corpus, 40, { mix: 'md:100', seed: 5 });
  const env: Record<string, string> = { INGEST_DATA_DIR: path.join(root, 'data'), INGEST_LOG_LEVEL: 'warn' };
  if (process.env.ENGINE_DB_DSN) {
    target = await openTestDatabase();
    env.ENGINE_DB_DSN = target.dsn!;
  }
  const config = loadConfig(env, root);
  const check = async () => {
    const db = await openDatabase(config);
    try {
      return await checkBundle(publishedBundle(config.bundle.dir), db);
    } finally {
      await db.close();
    }
  };
  const walked = await runIngest(['walk', corpus], env);
  assert.is(walked.status, 0, walked.stderr);
  const first = await check();
  assert.equal(first.problems, []);
  assert.ok(first.concepts >= 10, `the corpus yields concepts enough to be caught drafting (${first.concepts})`);
  const published = await realpath(publishedBundle(config.bundle.dir));
  const pages = await readFile(path.join(published, 'log.md'), 'utf8');

  // Slow drafts, two at a time: the run is still drafting when it is killed.
  const slow = await startMockServer({ latencyMs: 300 });
  try {
    const { killed } = await killedIngest(
      ['produce', '--all', '--redraft'],
      { ...env, ...mockTierEnv(slow.url), INGEST_MODEL_CONCURRENCY: '2', INGEST_LOG_LEVEL: 'info' },
      /"producer run started"/,
      1_000,
    );
    assert.ok(killed, 'the run was killed before it ended');
  } finally {
    await slow.close();
  }
  assert.is(
    await realpath(publishedBundle(config.bundle.dir)),
    published,
    'the previous bundle is still the published one',
  );
  assert.is(await readFile(path.join(published, 'log.md'), 'utf8'), pages);
  assert.equal((await check()).problems, []);

  // What a run killed while writing its version would leave: half a bundle, never published.
  const versions = path.join(config.bundle.dir, 'versions');
  await mkdir(path.join(versions, 'half-written', 'entities'), { recursive: true });
  await writeFile(path.join(versions, 'half-written', 'entities', 'partial.md'), '---\ntype: Pers');
  const next = await runIngest(['produce', '--json'], env);
  assert.is(next.status, 0, next.stderr);
  assert.is((JSON.parse(next.stdout) as { status: string }).status, 'completed');
  assert.equal((await check()).problems, []);
  const kept = await readdir(versions);
  assert.not.ok(kept.includes('half-written'), 'the stray version is removed');
  assert.ok(kept.length <= 2, `the published version and the one before it at most (${kept.join(', ')})`);
  const db = await openDatabase(config);
  try {
    const { rows } = await db.query<{ status: string }>(
      "SELECT status FROM pipeline_runs WHERE flow = 'producer' ORDER BY started_at",
    );
    assert.equal(
      rows.map((r) => r.status),
      ['completed', 'abandoned', 'completed'],
      'the killed run is closed as abandoned by the next',
    );
  } finally {
    await db.close();
  }
});

test.run();
