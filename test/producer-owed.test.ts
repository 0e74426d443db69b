// @engine
// What the producer owes survives a kill (issue 41 point 16): a walk killed with SIGKILL after
// its items committed, in stage 5, before it could chain a producer run, or killed during the
// chained run itself, is followed by a walk of the unchanged corpus that changes nothing and
// still publishes the bundle an uninterrupted walk would have. Real `ingest walk` processes on
// tier 1 (stage 5 and the producer run take seconds there, so a kill on their first log line
// lands inside them).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { readdir, realpath } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../lib/config.ts';
import { openDatabase } from '../lib/db/open.ts';
import { publishedBundle } from '../stages/producer/bundle-dir.ts';
import { checkBundle } from '../stages/producer/check.ts';
import { killedIngest, runIngest } from './helpers/cli.ts';
import { generateCorpus } from './helpers/corpus.ts';
import { openTestDatabase, type TestDatabase } from './helpers/db.ts';
import { seedDataDir } from './helpers/embedded.ts';

let root: string;
let corpus: string;
const targets: TestDatabase[] = [];

test.before(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'ingest-producer-owed-'));
  corpus = path.join(root, 'corpus');
  generateCorpus(corpus, 40, { mix: 'md:100', seed: 5 });
});
test.after(async () => {
  for (const t of targets) await t.dispose();
  rmSync(root, { recursive: true, force: true });
});

/** A data directory and database of its own; walks chain the producer, as deployed. */
async function deployment(name: string): Promise<Record<string, string>> {
  const env: Record<string, string> = {
    INGEST_DATA_DIR: path.join(root, name),
    INGEST_LOG_LEVEL: 'warn',
    INGEST_PRODUCER_AFTER_WALK: 'true',
  };
  if (process.env.ENGINE_DB_DSN) {
    const target = await openTestDatabase();
    targets.push(target);
    env.ENGINE_DB_DSN = target.dsn!;
  }
  await seedDataDir(env.INGEST_DATA_DIR!);
  return env;
}

/** The published bundle as content: its concepts' rows and its files (paths), and whether it checks clean. */
async function bundleOf(env: Record<string, string>) {
  const config = loadConfig(env, root);
  const db = await openDatabase(config);
  try {
    const { rows } = await db.query<{ concept: string }>(
      `SELECT kind || ' ' || entity_type || ' ' || name || ' ' || path AS concept FROM bundle_concepts
        ORDER BY path COLLATE "C"`,
    );
    const { rows: runs } = await db.query<{ status: string }>(
      "SELECT status FROM pipeline_runs WHERE flow = 'producer' ORDER BY started_at",
    );
    const dir = publishedBundle(config.bundle.dir);
    const published = await realpath(dir).catch(() => null);
    return {
      concepts: rows.map((r) => r.concept),
      files: published === null ? null : (await readdir(published, { recursive: true })).sort(),
      problems: published === null ? null : (await checkBundle(dir, db)).problems,
      producerRuns: runs.map((r) => r.status),
    };
  } finally {
    await db.close();
  }
}

let expected: Awaited<ReturnType<typeof bundleOf>>;

test('an uninterrupted walk publishes the reference bundle', async () => {
  const env = await deployment('reference');
  const walked = await runIngest(['walk', corpus], env);
  assert.is(walked.status, 0, walked.stderr);
  expected = await bundleOf(env);
  assert.ok(expected.concepts.length >= 10, `the corpus yields concepts (${expected.concepts.length})`);
  assert.equal(expected.problems, []);
  assert.equal(expected.producerRuns, ['completed']);
});

test('a walk killed in stage 5, after its items committed: the next, unchanged walk publishes the bundle', async () => {
  const env = await deployment('killed-in-stage-5');
  const { killed } = await killedIngest(
    ['walk', corpus],
    { ...env, INGEST_LOG_LEVEL: 'debug' },
    /"pass":"entity_resolution".*"flow-scope pass started"/,
    0,
  );
  assert.ok(killed, 'the walk was killed before it ended');
  const killedState = await bundleOf(env);
  assert.is(killedState.files, null, 'no bundle was published by the killed walk');
  assert.equal(killedState.producerRuns, []);

  const again = await runIngest(['walk', corpus, '--json'], env);
  assert.is(again.status, 0, again.stderr);
  const items = (JSON.parse(again.stdout) as { items: { changed: number; unchanged: number } }).items;
  assert.equal([items.changed, items.unchanged], [0, 40], 'the walk after the kill changes nothing');
  const got = await bundleOf(env);
  assert.equal(got.producerRuns, ['completed'], 'it chained the run the killed walk owed');
  assert.equal(got.concepts, expected.concepts);
  assert.equal(got.files, expected.files);
  assert.equal(got.problems, []);

  const settled = await runIngest(['walk', corpus], env);
  assert.is(settled.status, 0, settled.stderr);
  assert.equal((await bundleOf(env)).producerRuns, ['completed'], 'once produced, nothing is owed');
});

test('a walk killed during its chained producer run: the next, unchanged walk publishes the bundle', async () => {
  const env = await deployment('killed-in-producer');
  const { killed } = await killedIngest(
    ['walk', corpus],
    { ...env, INGEST_LOG_LEVEL: 'debug' },
    /"producer run started"/,
    100,
  );
  assert.ok(killed, 'the walk was killed before its producer run ended');
  assert.is((await bundleOf(env)).files, null, 'no bundle was published by the killed run');

  const again = await runIngest(['walk', corpus, '--json'], env);
  assert.is(again.status, 0, again.stderr);
  assert.is((JSON.parse(again.stdout) as { items: { changed: number } }).items.changed, 0);
  const got = await bundleOf(env);
  assert.equal(got.producerRuns, ['abandoned', 'completed']);
  assert.equal(got.concepts, expected.concepts);
  assert.equal(got.files, expected.files);
  assert.equal(got.problems, []);
});

test.run();
