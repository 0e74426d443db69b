// @engine
// pipeline_runs is the ledger (docs/behaviour/states.md#pipeline_runs-row): every invocation leaves
// exactly one row with one terminal status, also when it never reached its pass: a busy writer
// fence (fence_busy), a pull-sync that failed (failed, with the reason). The real fenced walk,
// recorder and database.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { writerFence } from '../engine/walk/fence.ts';
import { fencedWalk } from '../engine/trigger/fenced-walk.ts';
import type { WalkSummary } from '../engine/walk/walk.ts';
import { loadConfig } from '../lib/config.ts';
import { databaseRunRecorder } from '../lib/runs/record.ts';
import { openTestDatabase, type TestDatabase } from './helpers/db.ts';
import { startTestS3 } from './helpers/s3.ts';

let root: string;
let target: TestDatabase;
test.before.each(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'ingest-ledger-'));
  target = await openTestDatabase();
});
test.after.each(async () => {
  await target.dispose();
  rmSync(root, { recursive: true, force: true });
});

const log = pino({ level: 'silent' });
const neverWalked = async (): Promise<WalkSummary> => {
  throw new Error('the pass must not run');
};

async function runs(): Promise<{ status: string; result: { error?: string; extractor_version?: string } }[]> {
  const { rows } = await target.db.query<{ status: string; result: { error?: string } }>(
    'SELECT status, result FROM pipeline_runs ORDER BY started_at',
  );
  return rows;
}

test('a walk that finds the writer fence held leaves one fence_busy row', async () => {
  const config = loadConfig({ INGEST_DATA_DIR: root, IMAGE_SHA: 'sha-1' }, root);
  const recorder = databaseRunRecorder(target.db, (_, error) => assert.unreachable(String(error)));
  const other = await writerFence(config, target.db).tryAcquire();
  try {
    const corpus = path.join(root, 'corpus');
    assert.is(await fencedWalk(config, { db: target.db, sourcePath: corpus, log, runs: recorder }, neverWalked), null);
  } finally {
    await other?.release();
  }
  const rows = await runs();
  assert.equal(
    rows.map((r) => [r.status, r.result.extractor_version]),
    [['fence_busy', 'sha-1']],
  );
});

test('a pull-sync that fails leaves one failed row naming it, and no pass runs', async () => {
  const s3 = await startTestS3();
  await s3.close();
  const config = loadConfig({ INGEST_DATA_DIR: root, ...s3.env('docs') }, root);
  const recorder = databaseRunRecorder(target.db, (_, error) => assert.unreachable(String(error)));
  const corpus = path.join(root, 'corpus');
  let thrown: unknown;
  await fencedWalk(config, { db: target.db, sourcePath: corpus, log, runs: recorder }, neverWalked).catch(
    (e: unknown) => (thrown = e),
  );
  assert.ok(thrown instanceof Error);
  const rows = await runs();
  assert.is(rows.length, 1);
  assert.is(rows[0]!.status, 'failed');
  assert.match(rows[0]!.result.error ?? '', /^pull-sync failed: /);
});

test.run();
