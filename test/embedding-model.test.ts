// @engine
// An embedder of the user's choosing (issue 54, point 19; docs/DECISIONS.md "An embedder of the
// user's choosing"): INGEST_EMBEDDING_MODEL and INGEST_EMBEDDING_SEND_DIMENSIONS reach the
// requests, a vector of the wrong length stops the walk before a row is written, the database
// records the model of its vectors, a walk, a search, template_fill and an admin merge with
// another model stop with a named error, and `ingest reembed` (stopped mid-way and run again)
// re-embeds every owner and root once, then records the model. The real mock model server
// behind a loopback relay that sees every embedding request and can refuse or hold them.

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { pino } from 'pino';
import { mergeUnderFence } from '../engine/admin/entity-merge.ts';
import { reembedUnderFence, type ReembedReport } from '../engine/admin/reembed.ts';
import { walk } from '../engine/walk/walk.ts';
import { searchEvidence } from '../cli/search.ts';
import { loadConfig } from '../lib/config.ts';
import type { Database } from '../lib/db/database.ts';
import { openDatabase } from '../lib/db/open.ts';
import { codeOf } from '../lib/errors.ts';
import { asJobError } from '../worker/errors.ts';
import { jobHandlers } from '../worker/jobs.ts';
import { openWorkerRuntime } from '../worker/runtime.ts';
import { BIN, runIngest } from './helpers/cli.ts';
import { openTestDatabase } from './helpers/db.ts';
import { seedDataDir } from './helpers/embedded.ts';
import { serveHttp, type LoopbackServer } from './helpers/loopback.ts';
import { mockTierEnv, startMockTier, type MockTier } from './helpers/mock-tier.ts';
import { walkFixture, type WalkFixture } from './helpers/walk.ts';

const LOCAL = 'mxbai-embed-large';
const CORPUS: Record<string, string> = {
  'a.md': '# a\n\nAcme Trading Company signed the lease with Ada Lovelace.\n\nQ: Who signed?\nA: Ada Lovelace.\n',
  'b.md': '# b\n\nWestfield Holdings Group paid the rent to Acme Trading Company.\n',
  'c.md': '# c\n\nWestfield Holdings Group shipped the goods to Ada Lovelace.\n',
};

interface EmbeddingRequest {
  model: string;
  dimensions: number | undefined;
  texts: string[];
}

/**
 * The embedding requests relayed to the mock; `refuseAfter` more answered, the rest get a 400;
 * or, `holdAfter` more answered, the next is held unanswered and `onHold` told.
 */
let seen: EmbeddingRequest[] = [];
let refuseAfter = Infinity;
let holdAfter = Infinity;
let onHold = () => {};
let tier: MockTier;
let relay: LoopbackServer;
let f: WalkFixture;

test.before.each(async () => {
  tier = await startMockTier();
  const target = tier.mock.url;
  seen = [];
  refuseAfter = Infinity;
  holdAfter = Infinity;
  relay = await serveHttp((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (req.url?.endsWith('/embeddings')) {
        const request = JSON.parse(body.toString()) as { model: string; dimensions?: number; input: string[] };
        if (refuseAfter-- <= 0) {
          res.writeHead(400, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: 'refused by the test', type: 'invalid_request_error' } }));
          return;
        }
        if (holdAfter-- <= 0) return onHold();
        seen.push({ model: request.model, dimensions: request.dimensions, texts: request.input });
      }
      const forward = http.request(`${target}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      forward.end(body);
    });
  });
  process.env.OPENAI_BASE_URL = `${relay.origin}/v1`;
  f = await walkFixture();
  for (const [name, content] of Object.entries(CORPUS)) await f.write(name, content);
});

test.after.each(async () => {
  await f.dispose();
  await relay.close();
  await tier.stop();
});

const rows = async <R>(sql: string): Promise<R[]> => (await f.target.db.query<R & object>(sql)).rows as R[];
const count = async (sql: string): Promise<number> => Number((await rows<{ n: string }>(sql))[0]!.n);
const recorded = () =>
  rows<{ model: string; reembed_to: string | null }>('SELECT model, reembed_to FROM embedding_model');
const embeddingModels = async () =>
  (await rows<{ model: string }>('SELECT DISTINCT model FROM record_embeddings ORDER BY model')).map((r) => r.model);

test('unset: the specified model at 1024 dimensions is asked, and recorded once the first walk embedded', async () => {
  assert.equal(await recorded(), [], 'a fresh database has no model recorded');
  assert.is((await walk(f.lifespan, { sourcePath: f.corpus })).status, 'completed');
  assert.ok(seen.length > 0);
  assert.equal(new Set(seen.map((r) => `${r.model}/${r.dimensions}`)), new Set(['text-embedding-3-large/1024']));
  assert.equal(await recorded(), [{ model: 'text-embedding-3-large', reembed_to: null }]);
});

test('without dimensions, the mock answers 3072: the walk stops, naming the error, and writes no vector', async () => {
  await f.reopen(undefined, { INGEST_EMBEDDING_MODEL: LOCAL, INGEST_EMBEDDING_SEND_DIMENSIONS: 'false' });
  const summary = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.equal(seen[0], { model: LOCAL, dimensions: undefined, texts: seen[0]!.texts });
  assert.is(summary.status, 'failed');
  assert.match(summary.error ?? '', /embedding model mxbai-embed-large answered vectors of 3072 dimensions/);
  assert.is(await count('SELECT count(*) AS n FROM record_embeddings'), 0);
  assert.is(await count('SELECT count(*) AS n FROM content_chunks'), 0, 'no row of an item whose vectors were refused');
  assert.equal(await recorded(), [], 'nothing recorded by a walk that embedded nothing');

  // A job (template_fill, analyse_form) searching with it ends at once: no retry can change the length.
  const env = { INGEST_DATA_DIR: f.root, INGEST_EMBEDDING_MODEL: LOCAL, INGEST_EMBEDDING_SEND_DIMENSIONS: 'false' };
  const runtime = await openWorkerRuntime(loadConfig(env, f.root), pino({ level: 'silent' }));
  try {
    const search = await searchEvidence(f.target.db, runtime.deps, 'who signed the lease?', 5).catch((e: unknown) => e);
    const failed = asJobError(search);
    assert.is(failed.code, 'embedding_dimensions');
    assert.ok(failed.final);
  } finally {
    await runtime.close();
  }
});

test('another model: walk, search and template_fill stop; reembed, stopped and run again, redoes nothing', async () => {
  assert.is((await walk(f.lifespan, { sourcePath: f.corpus })).status, 'completed');
  const owners = await count('SELECT count(*) AS n FROM record_embeddings');
  const roots = await count(
    'SELECT count(*) AS n FROM entity_names WHERE name = canonical_name AND embedding IS NOT NULL',
  );
  assert.ok(owners > 4 && roots > 1, `${owners} owners, ${roots} roots`);
  // The mock's vector of a text is the same under any model name: a root's vector must come back as it was.
  const rootVectors = () =>
    rows<{ entity_type: string; name: string; v: string }>(
      `SELECT entity_type, name, embedding::text AS v FROM entity_names
        WHERE name = canonical_name AND embedding IS NOT NULL ORDER BY entity_type, name`,
    );
  const rootsBefore = await rootVectors();

  await f.reopen(undefined, { INGEST_EMBEDDING_MODEL: LOCAL });
  await f.write('d.md', '# d\n\nA new document for the new model.\n');
  seen = [];
  const refused = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(refused.status, 'failed');
  assert.match(refused.error ?? '', /made by the embedding model text-embedding-3-large.*Run `ingest reembed`/s);
  assert.equal(seen, [], 'no model call');
  assert.equal(await embeddingModels(), ['text-embedding-3-large']);

  const env = { INGEST_DATA_DIR: f.root, INGEST_EMBEDDING_MODEL: LOCAL };
  const runtime = await openWorkerRuntime(loadConfig(env, f.root), pino({ level: 'silent' }));
  try {
    const search = await searchEvidence(f.target.db, runtime.deps, 'who signed the lease?', 5).catch((e: unknown) => e);
    assert.is(codeOf(search), 'embedding_model_changed');
    const fill = await jobHandlers(runtime.deps).template_fill!({ analysis_job: randomUUID() }, {
      job: { id: randomUUID() },
      db: f.target.db,
      signal: new AbortController().signal,
    } as never).catch((e: unknown) => asJobError(e));
    assert.is(codeOf(fill), 'embedding_model_changed');
    assert.ok((fill as { final: boolean }).final);
  } finally {
    await runtime.close();
  }
  const mentions = (await rows<{ id: string }>('SELECT id::text AS id FROM entity_mentions ORDER BY id LIMIT 2')).map(
    (r) => r.id,
  );
  const merged = await mergeUnderFence(f.lifespan, { into: mentions[0]!, mentions: [mentions[1]!] }).catch(
    (e: unknown) => e,
  );
  assert.is(codeOf(merged), 'embedding_model_changed', 'an admin merge embeds a root name: refused too');

  // Stopped mid-way: the third request is refused (the model gone, the process killed: the same).
  refuseAfter = 2;
  const stopped = await reembedUnderFence(f.lifespan, 2).catch((e: unknown) => e);
  assert.instance(stopped, Error);
  const done = await count(`SELECT count(*) AS n FROM record_embeddings WHERE model = '${LOCAL}'`);
  assert.ok(done > 0 && done < owners, `${done} of ${owners} re-embedded before the stop`);
  assert.equal(await recorded(), [{ model: 'text-embedding-3-large', reembed_to: LOCAL }]);
  assert.match(
    (await walk(f.lifespan, { sourcePath: f.corpus })).error ?? '',
    /did not finish: the database holds vectors of both/,
  );

  refuseAfter = Infinity;
  seen = [];
  const report: ReembedReport = await reembedUnderFence(f.lifespan, 2);
  assert.is(report.ownersAlreadyDone, done, 'the owners done before the stop are not embedded again');
  assert.is(report.owners + done, owners);
  assert.is(report.roots, roots);
  assert.is(report.ownersDeleted, 0);
  assert.ok(seen.every((r) => r.model === LOCAL && r.dimensions === 1024));
  const sent = seen.flatMap((r) => r.texts);
  assert.is(new Set(sent).size, sent.length, 'each text is sent to the model once in the run, whatever its batch');
  assert.is(report.textsEmbedded, sent.length);
  assert.equal(await rootVectors(), rootsBefore, "the roots' vectors, copied from their names' re-embedded mentions");
  assert.equal(await embeddingModels(), [LOCAL]);
  assert.equal(await recorded(), [{ model: LOCAL, reembed_to: null }]);

  const after = await walk(f.lifespan, { sourcePath: f.corpus });
  assert.is(after.status, 'completed');
  assert.is(after.items.changed, 1, 'the new document alone');
  assert.equal(await embeddingModels(), [LOCAL]);
  const runtime2 = await openWorkerRuntime(loadConfig(env, f.root), pino({ level: 'silent' }));
  try {
    assert.ok((await searchEvidence(f.target.db, runtime2.deps, 'who signed the lease?', 5)).length > 0);
  } finally {
    await runtime2.close();
  }
});

test('ingest reembed SIGKILLed mid-way and run again re-embeds no owner twice, then does nothing', async () => {
  const dataDir = path.join(f.root, 'cli');
  const env: Record<string, string> = {
    INGEST_DATA_DIR: dataDir,
    INGEST_PRODUCER_AFTER_WALK: 'false',
    ...mockTierEnv(tier.mock.url),
    OPENAI_BASE_URL: `${relay.origin}/v1`,
  };
  const pg = process.env.ENGINE_DB_DSN ? await openTestDatabase() : null;
  if (pg !== null) env.ENGINE_DB_DSN = pg.dsn!;
  await seedDataDir(dataDir);
  try {
    assert.is((await runIngest(['walk', f.corpus], env)).status, 0);
    const local = { ...env, INGEST_EMBEDDING_MODEL: LOCAL };
    // Two batches of two owners committed, the third batch's request held: the kill lands there.
    seen = [];
    holdAfter = 2;
    const held = new Promise<void>((resolve) => (onHold = resolve));
    const child = spawn(process.execPath, [BIN, 'reembed', '--batch', '2'], {
      env: { PATH: process.env.PATH ?? '', ...local },
      stdio: 'ignore',
    });
    const exited = new Promise((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    await held;
    child.kill('SIGKILL');
    assert.is(await exited, 'SIGKILL');
    holdAfter = Infinity;

    const again = await runIngest(['reembed', '--batch', '2', '--json'], local);
    assert.is(again.status, 0, again.stderr);
    const report = JSON.parse(again.stdout) as ReembedReport;
    assert.is(report.ownersAlreadyDone, 4, 'the two batches committed before the kill');
    const owners = await withEmbedded(env, (db) => countIn(db, 'SELECT count(*) AS n FROM record_embeddings'));
    assert.is(report.owners, owners - 4);
    assert.ok(report.roots > 0);
    assert.equal(
      await withEmbedded(env, async (db) => (await db.query('SELECT model, reembed_to FROM embedding_model')).rows),
      [{ model: LOCAL, reembed_to: null }],
    );

    seen = [];
    const third = await runIngest(['reembed'], local);
    assert.is(third.stdout, `the vectors are of ${LOCAL} already: nothing to re-embed\n`);
    assert.equal(seen, []);
    const walked = await runIngest(['walk', f.corpus], local);
    assert.is(walked.status, 0, walked.stderr);
    const refused = await runIngest(['search', 'who signed'], env);
    assert.is(refused.status, 1);
    assert.match(refused.stderr, /^ingest: the database's vectors were made by the embedding model mxbai-embed-large/);
  } finally {
    await pg?.dispose();
  }
});

async function withEmbedded<T>(env: Record<string, string>, fn: (db: Database) => Promise<T>): Promise<T> {
  const db = await openDatabase(loadConfig(env, f.root));
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

const countIn = async (db: Database, sql: string): Promise<number> =>
  Number((await db.query<{ n: string }>(sql)).rows[0]!.n);

test('INGEST_EMBEDDING_MODEL and INGEST_EMBEDDING_SEND_DIMENSIONS: defaults, and a malformed flag refused', () => {
  assert.equal(loadConfig({}, '/tmp').models.embedding, { name: 'text-embedding-3-large', sendDimensions: true });
  assert.equal(
    loadConfig({ INGEST_EMBEDDING_MODEL: 'nomic', INGEST_EMBEDDING_SEND_DIMENSIONS: 'no' }, '/tmp').models.embedding,
    { name: 'nomic', sendDimensions: false },
  );
  assert.throws(
    () => loadConfig({ INGEST_EMBEDDING_SEND_DIMENSIONS: 'maybe' }, '/tmp'),
    /INGEST_EMBEDDING_SEND_DIMENSIONS/,
  );
});

test.run();
