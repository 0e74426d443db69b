// Crash safety: a walk killed with SIGKILL at any point, then run again, ends with exactly the
// rows of an uninterrupted walk in every table: none missing, none twice, no embedding without
// its owner, and every killed walk's ledger row closed as abandoned. Real `ingest walk`
// processes over the benchmark generator's corpus, whose documents share entity names and
// sentences (so vectors are copied between owners, where orphans were once made).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../lib/config.ts';
import { openDatabase } from '../lib/db/open.ts';
import type { Database } from '../lib/db/database.ts';
import { openTestDatabase, type TestDatabase } from './helpers/db.ts';

const BIN = path.resolve(import.meta.dirname, '..', 'bin', 'ingest.ts');
const FILES = 240;
// Delays after the walk announced itself; seeded, not random, so a failure can be replayed.
const KILL_AFTER_MS = [40, 250, 700];

let root: string;
let corpus: string;
const targets: TestDatabase[] = [];

test.before(() => {
  root = mkdtempSync(path.join(tmpdir(), 'ingest-crash-'));
  corpus = path.join(root, 'corpus');
  const made = spawnSync(
    process.execPath,
    [BIN, 'bench', 'corpus', '--docs', String(FILES), '--mix', 'md:90,html:10', '--seed', '3', corpus],
    { encoding: 'utf8' },
  );
  assert.is(made.status, 0, made.stderr);
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

/** Each table's rows in content terms: ids are minted per deployment, so rows are named by path. */
const CONTENT: Record<string, string> = {
  source_documents: `SELECT rel_path || ' ' || content_sha256 || ' ' || md5(classification::text) FROM source_documents`,
  content_chunks: `SELECT d.rel_path || '#' || c.idx || ' ' || md5(c.text)
                     FROM content_chunks c JOIN source_documents d ON d.id = c.source_document_id`,
  q_a_extractions: `SELECT d.rel_path || '#' || q.idx || ' ' || md5(q.question_text || coalesce(q.answer_text, ''))
                      FROM q_a_extractions q JOIN source_documents d ON d.id = q.source_document_id`,
  entity_mentions: `SELECT d.rel_path || ' ' || m.entity_type || ' ' || m.canonical_name || ' ' || m.surface_form
                      FROM entity_mentions m JOIN source_documents d ON d.id = m.source_document_id`,
  entity_relationships: `SELECT d.rel_path || ' ' || r.source_canonical || ' ' || r.predicate || ' ' || r.target_canonical
                           FROM entity_relationships r JOIN source_documents d ON d.id = r.source_document_id`,
  // An embedding named by its owner's row; one whose owner does not exist is named an orphan.
  record_embeddings: `SELECT e.owner_kind || ' ' || coalesce(d.rel_path || '#' || coalesce(c.idx::text, q.idx::text, m.canonical_name), 'ORPHAN')
                              || ' ' || e.content_sha256
                        FROM record_embeddings e
                        LEFT JOIN content_chunks c ON e.owner_kind = 'content_chunk' AND c.id = e.owner_id
                        LEFT JOIN q_a_extractions q ON e.owner_kind = 'q_a_extraction' AND q.id = e.owner_id
                        LEFT JOIN entity_mentions m ON e.owner_kind = 'entity_mention' AND m.id = e.owner_id
                        LEFT JOIN source_documents d ON d.id = coalesce(c.source_document_id, q.source_document_id, m.source_document_id)`,
};

async function landed(env: Record<string, string>): Promise<Record<string, string[]>> {
  return withDatabase(env, async (db) => {
    const out: Record<string, string[]> = {};
    for (const [table, sql] of Object.entries(CONTENT)) {
      const { rows } = await db.query<{ row: string }>(`SELECT row FROM (${sql}) AS t(row) ORDER BY 1`);
      out[table] = rows.map((r) => r.row);
    }
    return out;
  });
}

async function runStatuses(env: Record<string, string>): Promise<Record<string, number>> {
  return withDatabase(env, async (db) => {
    const { rows } = await db.query<{ status: string; n: number }>(
      'SELECT status, count(*)::int AS n FROM pipeline_runs GROUP BY status',
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
    for (const table of Object.keys(CONTENT)) {
      assert.equal(got[table], expected[table], `${table} after kill point ${delay} ms`);
    }
    // Every killed walk's row is closed as abandoned; only finished walks completed.
    const completed = 1 + [first, second].filter((w) => w.code === 0).length;
    assert.equal(await runStatuses(env), { completed, ...(killed > 0 ? { abandoned: killed } : {}) });
  }
  assert.ok(interrupted >= 2, `at least two walks were really killed mid-way (${interrupted})`);
});

test.run();
