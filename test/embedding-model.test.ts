// @engine
// An embedder of the user's choosing (issue 54, point 19; docs/DECISIONS.md "An embedder of the
// user's choosing"): INGEST_EMBEDDING_MODEL and INGEST_EMBEDDING_SEND_DIMENSIONS reach the
// requests, a vector of the wrong length stops the walk before a row is written, the database
// records the model of its vectors, a walk, a search and template_fill with another model stop
// with a named error, and `ingest reembed` (stopped mid-way and run again) re-embeds every owner
// and root once, then records the model. The real mock model server behind a loopback relay
// that sees every embedding request and can refuse them.

import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { pino } from 'pino';
import { reembedUnderFence, type ReembedReport } from '../engine/admin/reembed.ts';
import { walk } from '../engine/walk/walk.ts';
import { searchEvidence } from '../cli/search.ts';
import { loadConfig } from '../lib/config.ts';
import { codeOf } from '../lib/errors.ts';
import { asJobError } from '../worker/errors.ts';
import { jobHandlers } from '../worker/jobs.ts';
import { openWorkerRuntime } from '../worker/runtime.ts';
import { serveHttp, type LoopbackServer } from './helpers/loopback.ts';
import { startMockTier, type MockTier } from './helpers/mock-tier.ts';
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
  inputs: number;
}

/** The embedding requests relayed to the mock; `refuseAfter` more answered, the rest get a 400. */
let seen: EmbeddingRequest[] = [];
let refuseAfter = Infinity;
let tier: MockTier;
let relay: LoopbackServer;
let f: WalkFixture;

test.before.each(async () => {
  tier = await startMockTier();
  const target = tier.mock.url;
  seen = [];
  refuseAfter = Infinity;
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
        seen.push({ model: request.model, dimensions: request.dimensions, inputs: request.input.length });
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
  assert.equal(seen[0], { model: LOCAL, dimensions: undefined, inputs: seen[0]!.inputs });
  assert.is(summary.status, 'failed');
  assert.match(summary.error ?? '', /embedding model mxbai-embed-large answered vectors of 3072 dimensions/);
  assert.is(await count('SELECT count(*) AS n FROM record_embeddings'), 0);
  assert.is(await count('SELECT count(*) AS n FROM content_chunks'), 0, 'no row of an item whose vectors were refused');
  assert.equal(await recorded(), [], 'nothing recorded by a walk that embedded nothing');
});

test('another model: walk, search and template_fill stop; reembed, stopped and run again, redoes nothing', async () => {
  assert.is((await walk(f.lifespan, { sourcePath: f.corpus })).status, 'completed');
  const owners = await count('SELECT count(*) AS n FROM record_embeddings');
  const roots = await count(
    'SELECT count(*) AS n FROM entity_names WHERE name = canonical_name AND embedding IS NOT NULL',
  );
  assert.ok(owners > 4 && roots > 1, `${owners} owners, ${roots} roots`);

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
