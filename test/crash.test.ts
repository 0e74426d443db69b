// @engine
// Crash safety: a walk killed with SIGKILL at any point, then run again, ends with exactly the
// rows of an uninterrupted walk in every table: none missing, none twice, no embedding without
// its owner, and every killed walk's ledger row closed as abandoned. Real `ingest walk`
// processes over the benchmark generator's corpus, whose documents share entity names and
// sentences (so vectors are copied between owners, where orphans were once made).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../lib/config.ts';
import { openDatabase } from '../lib/db/open.ts';
import type { Database } from '../lib/db/database.ts';
import { WALKED_TABLES, rowsInContentTerms } from './helpers/content.ts';
import { BIN, generateCorpus } from './helpers/corpus.ts';
import { openTestDatabase, type TestDatabase } from './helpers/db.ts';
import { seedDataDir } from './helpers/embedded.ts';

const FILES = 120;
// Delays after the walk announced itself; seeded, not random, so a failure can be replayed.
const KILL_AFTER_MS = [40, 250, 700];

let root: string;
let corpus: string;
const targets: TestDatabase[] = [];

test.before(() => {
  root = mkdtempSync(path.join(tmpdir(), 'ingest-crash-'));
  corpus = path.join(root, 'corpus');
  generateCorpus(corpus, FILES, { mix: 'md:90,html:10', seed: 3 });
});
test.after(async () => {
  for (const t of targets) await t.dispose();
  rmSync(root, { recursive: true, force: true });
});

/** A separate database and state store, as a fresh deployment would have. */
async function deployment(name: string): Promise<Record<string, string>> {
  const dataDir = path.join(root, name);
  const env: Record<string, string> = {
    INGEST_DATA_DIR: dataDir,
    INGEST_WALK_IN_FLIGHT: '4',
    INGEST_LOG_LEVEL: 'info',
  };
  if (process.env.ENGINE_DB_DSN) {
    const target = await openTestDatabase();
    targets.push(target);
    env.ENGINE_DB_DSN = target.dsn!;
  }
  await seedDataDir(dataDir);
  return env;
}

/** Runs `ingest walk`; with killAfterMs, SIGKILLs it that long after the walk started. */
function runWalk(env: Record<string, string>, killAfterMs?: number): Promise<{ code: number | null; killed: boolean }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'walk', corpus, '--json'], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let killed = false;
    let buffered = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      buffered += chunk;
      if (killAfterMs !== undefined && !killed && buffered.includes('"walk started"')) {
        killed = true;
        setTimeout(() => child.kill('SIGKILL'), killAfterMs);
      }
    });
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, killed: killed && code === null }));
  });
}

async function withDatabase<T>(env: Record<string, string>, fn: (db: Database) => Promise<T>): Promise<T> {
  const db = await openDatabase(loadConfig(env, root));
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

async function landed(env: Record<string, string>): Promise<Record<string, string[]>> {
  return withDatabase(env, rowsInContentTerms);
}

async function runStatuses(env: Record<string, string>): Promise<Record<string, number>> {
  return withDatabase(env, async (db) => {
    const { rows } = await db.query<{ status: string; n: number }>(
      "SELECT status, count(*)::int AS n FROM pipeline_runs WHERE flow = 'walk' GROUP BY status",
    );
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  });
}

test('a walk killed at several points and run again lands exactly the rows of an uninterrupted walk', async () => {
  const reference = await deployment('reference');
  assert.is((await runWalk(reference)).code, 0);
  const expected = await landed(reference);
  assert.is(expected.source_documents!.length, FILES);
  for (const [table, rows] of Object.entries(expected)) assert.ok(rows.length > 0, `${table} has rows`);
  assert.not.ok(expected.record_embeddings!.some((r) => r.includes('ORPHAN')));

  let interrupted = 0;
  for (const [i, delay] of KILL_AFTER_MS.entries()) {
    const env = await deployment(`killed-${i}`);
    const first = await runWalk(env, delay);
    // A second kill on the recovering walk, then a run to completion.
    const second = await runWalk(env, delay);
    const killed = [first, second].filter((w) => w.killed).length;
    interrupted += killed;
    assert.is((await runWalk(env)).code, 0, `the walk after kill point ${delay} ms completes`);
    const got = await landed(env);
    for (const table of WALKED_TABLES) {
      assert.equal(got[table], expected[table], `${table} after kill point ${delay} ms`);
    }
    // Every killed walk's row is closed as abandoned; only finished walks completed.
    const completed = 1 + [first, second].filter((w) => w.code === 0).length;
    assert.equal(await runStatuses(env), { completed, ...(killed > 0 ? { abandoned: killed } : {}) });
  }
  assert.ok(interrupted >= 2, `at least two walks were really killed mid-way (${interrupted})`);
});

test.run();
