// Crash safety: a walk killed with SIGKILL at any point, then run again, ends with exactly the
// rows of an uninterrupted walk: none missing, none twice. Real `ingest walk` processes.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../lib/config.ts';
import { openDatabase } from '../lib/db/open.ts';
import type { Database } from '../lib/db/database.ts';
import { openTestDatabase, type TestDatabase } from './helpers/db.ts';
import { markdown } from './helpers/walk.ts';

const BIN = path.resolve(import.meta.dirname, '..', 'bin', 'ingest.ts');
const FILES = 240;
// Delays after the walk announced itself; seeded, not random, so a failure can be replayed.
const KILL_AFTER_MS = [40, 250, 700];

let root: string;
let corpus: string;
const targets: TestDatabase[] = [];

test.before(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'ingest-crash-'));
  corpus = path.join(root, 'corpus');
  for (let i = 0; i < FILES; i++) {
    const dir = path.join(corpus, `part-${i % 7}`);
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, `doc-${i}.md`), markdown(`Document ${i}`, 2 + (i % 5)));
  }
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

interface Landed {
  documents: string[];
  chunks: string[];
}

/** The rows in content terms: document ids are minted per deployment, so compare by path and hash. */
async function landed(env: Record<string, string>): Promise<Landed> {
  return withDatabase(env, async (db) => {
    const docs = await db.query<{ d: string }>(
      "SELECT rel_path || ' ' || content_sha256 AS d FROM source_documents ORDER BY 1",
    );
    const chunks = await db.query<{ c: string }>(
      `SELECT d.rel_path || '#' || c.idx || ' ' || md5(c.text) AS c
         FROM content_chunks c JOIN source_documents d ON d.id = c.source_document_id ORDER BY 1`,
    );
    return { documents: docs.rows.map((r) => r.d), chunks: chunks.rows.map((r) => r.c) };
  });
}

test('a walk killed at several points and run again lands exactly the rows of an uninterrupted walk', async () => {
  const reference = await deployment('reference');
  assert.is((await runWalk(reference)).code, 0);
  const expected = await landed(reference);
  assert.is(expected.documents.length, FILES);
  assert.ok(expected.chunks.length > FILES);

  let interrupted = 0;
  for (const [i, delay] of KILL_AFTER_MS.entries()) {
    const env = await deployment(`killed-${i}`);
    const first = await runWalk(env, delay);
    if (first.killed) interrupted += 1;
    // A second kill on the recovering walk, then a run to completion.
    const second = await runWalk(env, delay);
    if (second.killed) interrupted += 1;
    assert.is((await runWalk(env)).code, 0, `the walk after kill point ${delay} ms completes`);
    const got = await landed(env);
    assert.equal(got.documents, expected.documents, `documents after kill point ${delay} ms`);
    assert.equal(got.chunks, expected.chunks, `chunks after kill point ${delay} ms`);
  }
  assert.ok(interrupted >= 2, `at least two walks were really killed mid-way (${interrupted})`);
});

test.run();
