// @engine
// Reliability (i): faults from the model side. A 1,000-document walk against a mock model
// server that answers a fifth of its requests with 429 or 529 or drops the connection ends with
// no failed item, its retries counted, and exactly the rows of a walk that met no fault. The
// real SDK clients over loopback HTTP, the real walk and database.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { walk, type WalkSummary } from '../../engine/walk/walk.ts';
import { startMockServer, type MockOptions, type MockServer } from '../../mock/server.ts';
import { rowsInContentTerms, WALKED_TABLES } from '../helpers/content.ts';
import { generateCorpus } from '../helpers/corpus.ts';
import { walkFixture } from '../helpers/walk.ts';

const DOCS = 1000;
const VARS = ['ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY', 'OPENAI_BASE_URL', 'OPENAI_API_KEY'] as const;

let corpus: string;
test.before(() => {
  corpus = path.join(mkdtempSync(path.join(tmpdir(), 'ingest-reliability-')), 'corpus');
  generateCorpus(corpus, DOCS, { mix: 'md:100', seed: 21 });
});
test.after(() => rmSync(path.dirname(corpus), { recursive: true, force: true }));

interface Deployment {
  summary: WalkSummary;
  rows: Record<string, string[]>;
  mock: MockServer['stats'];
}

/** A fresh deployment (database, state store) walking the corpus against a mock of these options. */
async function deploy(options: MockOptions): Promise<Deployment> {
  const saved = VARS.map((name) => [name, process.env[name]] as const);
  const mock = await startMockServer(options);
  Object.assign(process.env, {
    ANTHROPIC_BASE_URL: mock.url,
    ANTHROPIC_API_KEY: 'k',
    OPENAI_BASE_URL: `${mock.url}/v1`,
    OPENAI_API_KEY: 'k',
  });
  const f = await walkFixture();
  try {
    const summary = await walk(f.lifespan, { sourcePath: corpus });
    return { summary, rows: await rowsInContentTerms(f.target.db), mock: { ...mock.stats } };
  } finally {
    await f.dispose();
    await mock.close();
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}

test('20 % of model requests answered 429 / 529 or dropped: no failed item, retries counted, the same rows', async () => {
  const clean = await deploy({});
  const faulty = await deploy({ faultRate: 0.2, faults: ['429', '529', 'drop'], seed: 5 });
  assert.is(clean.summary.items.failed, 0, JSON.stringify(clean.summary.failures));
  assert.is(clean.summary.items.changed, DOCS);
  assert.is(faulty.summary.status, 'completed');
  assert.is(faulty.summary.items.failed, 0, JSON.stringify(faulty.summary.failures.slice(0, 3)));
  assert.ok(faulty.mock.faultsInjected > 0.15 * (faulty.mock.messages + faulty.mock.embeddings));
  assert.is(faulty.summary.counters.model_retry, faulty.mock.faultsInjected, 'every fault was retried, and counted');
  for (const table of WALKED_TABLES) {
    assert.ok(clean.rows[table]!.length > 0, `${table} has rows`);
    assert.equal(faulty.rows[table], clean.rows[table], `${table}: the same rows as the walk without faults`);
  }
  console.log(
    `reliability: ${DOCS} documents, ${faulty.mock.faultsInjected} faults injected in ` +
      `${faulty.mock.messages + faulty.mock.embeddings + faulty.mock.faultsInjected} model requests, model_retry ${faulty.summary.counters.model_retry}, ` +
      `walk ${(clean.summary.durationMs / 1000).toFixed(1)} s clean, ${(faulty.summary.durationMs / 1000).toFixed(1)} s with faults`,
  );
});

test.run();
