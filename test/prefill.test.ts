// @engine
// `ingest prefill` (engine/prefill/): the extraction answers a walk would ask for, bought ahead
// through the Message Batches API of the real mock server (mock/batches.ts) with the real SDK,
// into the memo the walk reads. A walk after it asks no extractor and ends with the rows of a
// plain walk; what errored or expired is left to the walk; a prefill killed at any instant buys
// nothing twice; one model's answers never serve another's walk.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import Anthropic from '@anthropic-ai/sdk';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { walk } from '../engine/walk/walk.ts';
import { prefill, type PrefillDeps, type PrefillSummary } from '../engine/prefill/prefill.ts';
import { SubmissionLedger } from '../engine/prefill/ledger.ts';
import { PrefillPlan, type PrefillRequest } from '../engine/prefill/plan.ts';
import { llmIdentity } from '../lib/llm/client.ts';
import { startMockServer, type MockOptions, type MockServer } from '../mock/server.ts';
import { extractionCallsOf, mockTierEnv } from './helpers/mock-tier.ts';
import { BIN, generateCorpus } from './helpers/corpus.ts';
import { rowsInContentTerms } from './helpers/content.ts';
import { serveGateway, serveHttp } from './helpers/loopback.ts';
import { walkFixture, type WalkFixture } from './helpers/walk.ts';
import { targetEngine } from './helpers/db.ts';
import { runIngest } from './helpers/cli.ts';
import { collect } from './helpers/collect.ts';

const log = pino({ level: 'silent' });
const VARS = ['ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY', 'OPENAI_BASE_URL', 'OPENAI_API_KEY'] as const;

/** The corpus every test starts from: generated documents whose names and Q&A blocks recur. */
const source = mkdtempSync(path.join(tmpdir(), 'ingest-prefill-corpus-'));
generateCorpus(source, 12, { mix: 'md:80,html:20', seed: 11 });

/** Calls made to the four extractors so far (stage 5's resolver and the producer not counted). */
const extractionCalls = (mock: MockServer): number => extractionCallsOf(mock.stats);

/** Runs `use` with the model environment pointed at a mock of its own (`options` for its batches). */
async function withMock(options: MockOptions, use: (mock: MockServer) => Promise<void>): Promise<void> {
  const saved = VARS.map((name) => [name, process.env[name]] as const);
  const mock = await startMockServer(options);
  Object.assign(process.env, mockTierEnv(mock.url));
  try {
    await use(mock);
  } finally {
    await mock.close();
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}

/** On PostgreSQL the memo lives in the database too (the distributed deployment's); on PGlite, in lmdb. */
const STORE_ENV: Record<string, string> = targetEngine === 'postgres' ? { INGEST_STATE_STORE: 'database' } : {};

/** A walk fixture holding a copy of the generated corpus. */
async function corpusFixture(): Promise<WalkFixture> {
  const f = await walkFixture({ env: STORE_ENV });
  cpSync(source, f.corpus, { recursive: true });
  return f;
}

/** What the prefill needs, from the fixture's own engine (`model`: the extraction model to buy for). */
function depsOf(f: WalkFixture, model = f.lifespan.models.model, client = f.lifespan.models.llm): PrefillDeps {
  return {
    config: f.lifespan.config,
    store: f.lifespan.store,
    converter: f.lifespan.converter,
    client,
    model,
    identity: llmIdentity(client, model),
    log,
    batchRequests: 100_000,
    pollMs: 20,
  };
}

/** A batch of `requests` as the prefill sends it, or as another client would with ids of its own (`other`). */
const batchOf = (requests: readonly PrefillRequest[], other = false) => ({
  requests: requests.map((r, i) => ({ custom_id: other ? `other-${i}` : r.customId, params: r.params })),
});

/**
 * What a prefill killed between recording a submission and creating its batch leaves: the
 * submission of everything the corpus needs, recorded without a batch.
 */
async function recordedWithoutBatch(f: WalkFixture) {
  const requests = await collect(new PrefillPlan(depsOf(f)).requests(f.corpus));
  const ledger = new SubmissionLedger(f.lifespan.store);
  const submission = await ledger.record(requests.map((r) => [r.customId, r.extractor]));
  return { requests, ledger, submission };
}

/** `ingest` run as a child process on the fixture's data directory and database; resolves once spawned. */
function ingestChild(f: WalkFixture, mock: MockServer, args: string[]) {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: {
      PATH: process.env.PATH ?? '',
      INGEST_DATA_DIR: f.root,
      INGEST_LOG_LEVEL: 'error',
      INGEST_PREFILL_POLL_MS: '50',
      ...STORE_ENV,
      ...(f.target.dsn ? { ENGINE_DB_DSN: f.target.dsn } : {}),
      ...mockTierEnv(mock.url),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exited = once(child, 'exit').then(([code]) => ({ code: code as number | null, out, err }));
  return { child, exited };
}

async function until(condition: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

test.after(() => rmSync(source, { recursive: true, force: true }));

test("prefill, then walk: no extractor is asked, and every table equals a plain walk's", () =>
  withMock({}, async (mock) => {
    const plain = await corpusFixture();
    const prefilled = await corpusFixture();
    try {
      await walk(plain.lifespan, { sourcePath: plain.corpus });
      const asked = extractionCalls(mock);
      assert.ok(asked > 0, 'a plain walk asks the extractors');

      const summary = await prefill(depsOf(prefilled), prefilled.corpus);
      assert.ok(summary.requests.submitted > 0);
      assert.is(summary.answers.stored, summary.requests.submitted, 'every answer stored');
      assert.is(summary.batches.submitted, 1);
      assert.is(mock.stats.batchRequests, summary.requests.submitted);
      // Repeated Q&A blocks are asked once per distinct window, so fewer than the plain walk's calls.
      assert.ok(summary.requests.submitted <= asked, `${summary.requests.submitted} bought, ${asked} asked`);
      assert.ok(summary.price !== null && summary.price.batch === summary.price.standard / 2);

      const before = extractionCalls(mock);
      const walked = await walk(prefilled.lifespan, { sourcePath: prefilled.corpus });
      assert.is(walked.status, 'completed');
      assert.is(extractionCalls(mock) - before, 0, 'the walk found every answer in the memo');
      assert.equal(await rowsInContentTerms(prefilled.target.db), await rowsInContentTerms(plain.target.db));

      const again = await prefill(depsOf(prefilled), prefilled.corpus);
      assert.equal([again.requests.submitted, again.batches.submitted, again.files.changed], [0, 0, 0]);
      assert.is(mock.stats.batchRequests, summary.requests.submitted, 'nothing bought twice');
    } finally {
      await plain.dispose();
      await prefilled.dispose();
    }
  }));

test('answers that errored or expired are not stored: the walk asks exactly those', () =>
  withMock({ batches: { errorRate: 0.2, expireRate: 0.2 } }, async (mock) => {
    const f = await corpusFixture();
    try {
      const summary = await prefill(depsOf(f), f.corpus);
      const left = summary.answers.errored + summary.answers.expired;
      assert.ok(summary.answers.errored > 0 && summary.answers.expired > 0, JSON.stringify(summary.answers));
      assert.is(summary.answers.stored + left, summary.requests.submitted);
      const before = extractionCalls(mock);
      await walk(f.lifespan, { sourcePath: f.corpus });
      assert.is(extractionCalls(mock) - before, left);
    } finally {
      await f.dispose();
    }
  }));

test('answers bought under one model never serve a walk under another', () =>
  withMock({}, async (mock) => {
    const f = await corpusFixture();
    try {
      const other = await prefill(depsOf(f, 'claude-haiku-4-5'), f.corpus);
      assert.ok(other.answers.stored > 0);
      // The walk's own model: the other model's answers are not in its memo.
      const mine = await prefill(depsOf(f), f.corpus, { dryRun: true });
      assert.is(mine.requests.memoised, 0);
      assert.is(mine.requests.toSubmit, other.requests.submitted);
      const before = extractionCalls(mock);
      await walk(f.lifespan, { sourcePath: f.corpus });
      assert.ok(extractionCalls(mock) - before >= other.requests.submitted, 'every window asked again');
    } finally {
      await f.dispose();
    }
  }));

test('kill -9 after the vendor made the batch and before its id was recorded: the next prefill finds it and buys nothing twice', () =>
  // The mock holds its answer to the create: the batch exists at the vendor, the prefill does not know its id.
  withMock({ batches: { createAnswerMs: 30_000 } }, async (mock) => {
    const f = await corpusFixture();
    try {
      const first = ingestChild(f, mock, ['prefill', f.corpus, '--json']);
      await until(() => mock.stats.batches === 1, 'the batch at the vendor');
      first.child.kill('SIGKILL');
      await first.exited;
      const bought = mock.stats.batchRequests;
      const pending = await new SubmissionLedger(f.lifespan.store).pending();
      assert.equal(
        pending.map((s) => [s.batchId, s.entries.length]),
        [[null, bought]],
        'recorded without its batch',
      );

      const second = await ingestChild(f, mock, ['prefill', f.corpus, '--json']).exited;
      assert.is(second.code, 0, second.err);
      const summary = JSON.parse(second.out) as PrefillSummary;
      assert.equal([summary.batches.resumed, summary.batches.submitted, summary.requests.inFlight], [1, 0, bought]);
      assert.equal([mock.stats.batches, mock.stats.batchRequests], [1, bought], 'nothing submitted twice');
      assert.is(summary.answers.stored, bought);
      assert.equal(await new SubmissionLedger(f.lifespan.store).pending(), []);
    } finally {
      await f.dispose();
    }
  }));

test('a submission recorded whose batch the vendor never made is bought once, by the next prefill', () =>
  withMock({}, async (mock) => {
    const f = await corpusFixture();
    try {
      const { requests, ledger } = await recordedWithoutBatch(f);
      const summary = await prefill(depsOf(f), f.corpus);
      assert.equal([summary.batches.resumed, summary.batches.submitted], [0, 1]);
      assert.is(mock.stats.batchRequests, requests.length);
      assert.is(summary.answers.stored, requests.length);
      assert.equal(await ledger.pending(), []);
    } finally {
      await f.dispose();
    }
  }));

test('of two batches of the right size, the one created just after the record is taken', () =>
  withMock({}, async (mock) => {
    const f = await corpusFixture();
    try {
      const requests = await collect(new PrefillPlan(depsOf(f)).requests(f.corpus));
      const batches = f.lifespan.models.llm.messages.batches;
      // Another client's batch of the same size, made just before the record.
      await batches.create(batchOf(requests, true));
      await sleep(20);
      const ledger = new SubmissionLedger(f.lifespan.store);
      await ledger.record(requests.map((r) => [r.customId, r.extractor]));
      await batches.create(batchOf(requests));
      const summary = await prefill(depsOf(f), f.corpus);
      assert.equal([summary.batches.resumed, summary.batches.submitted], [1, 0]);
      assert.is(summary.answers.stored, requests.length, 'its own batch was read');
      assert.is(mock.stats.batchRequests, 2 * requests.length, 'nothing bought again');
    } finally {
      await f.dispose();
    }
  }));

test('a batch holding other requests, taken for a submission, is found not to be its own and never taken again', () =>
  withMock({}, async (mock) => {
    const f = await corpusFixture();
    try {
      const { requests, ledger } = await recordedWithoutBatch(f);
      // Another client's batch of the same size, made after the record; the submission's own never was.
      await f.lifespan.models.llm.messages.batches.create(batchOf(requests, true));
      const first = await prefill(depsOf(f), f.corpus);
      assert.equal([first.batches.resumed, first.answers.stored], [1, 0]);
      assert.equal(
        (await ledger.pending()).map((p) => [p.batchId, p.notIts?.length]),
        [[null, 1]],
        'still looked for, without that batch',
      );
      const second = await prefill(depsOf(f), f.corpus);
      assert.equal([second.batches.resumed, second.batches.submitted], [0, 1]);
      assert.is(second.answers.stored, requests.length);
      assert.is(mock.stats.batchRequests, 2 * requests.length);
      assert.equal(await ledger.pending(), []);
    } finally {
      await f.dispose();
    }
  }));

test('a batch the endpoint no longer knows is forgotten, and its answers are bought again', () =>
  withMock({}, async (mock) => {
    const f = await corpusFixture();
    try {
      const { requests, ledger, submission } = await recordedWithoutBatch(f);
      await ledger.setBatch(submission, 'msgbatch_from_another_endpoint');
      const summary = await prefill(depsOf(f), f.corpus);
      assert.equal([summary.batches.lost, summary.batches.resumed, summary.batches.submitted], [1, 0, 1]);
      assert.is(summary.answers.stored, requests.length);
      assert.is(mock.stats.batchRequests, requests.length);
      assert.equal(await ledger.pending(), []);
    } finally {
      await f.dispose();
    }
  }));

test("the vendor's batch queue full (429 on a create): what was submitted is collected, the rest bought by the next run", () =>
  withMock({}, async (mock) => {
    // A gateway that relays to the mock but answers its second batch create 429, as a full queue does.
    let creates = 0;
    const gateway = await serveGateway(mock.url, (req) =>
      req.method === 'POST' && req.url === '/v1/messages/batches' && ++creates === 2
        ? { status: 429, type: 'rate_limit_error', message: 'queue full', headers: { 'retry-after': '60' } }
        : null,
    );
    const f = await corpusFixture();
    try {
      const client = new Anthropic({ baseURL: gateway.origin, apiKey: 'k', maxRetries: 0 });
      const deps = { ...depsOf(f), client, batchRequests: 10 };
      const first = await prefill(deps, f.corpus);
      assert.match(first.stopped ?? '', /HTTP 429/);
      assert.equal([first.batches.submitted, first.requests.submitted, first.answers.stored], [1, 10, 10]);
      assert.equal(await new SubmissionLedger(f.lifespan.store).pending(), []);
      const second = await prefill(deps, f.corpus);
      assert.is(second.stopped, null);
      assert.is(second.requests.memoised, 10, "the first run's answers are in the memo");
      assert.is(mock.stats.batchRequests, first.requests.submitted + second.requests.submitted, 'nothing bought twice');
      const before = extractionCalls(mock);
      await walk(f.lifespan, { sourcePath: f.corpus });
      assert.is(extractionCalls(mock) - before, 0);
    } finally {
      await f.dispose();
      await gateway.close();
    }
  }));

test('kill -9 while the prefill waits for its batch: the next prefill takes it up, buys nothing twice, and the walk asks nothing', () =>
  withMock({ batches: { delayMs: 1_500 } }, async (mock) => {
    const f = await corpusFixture();
    try {
      const first = ingestChild(f, mock, ['prefill', f.corpus, '--json']);
      await until(() => mock.stats.batches === 1, 'the first batch');
      await sleep(100);
      first.child.kill('SIGKILL');
      await first.exited;
      const bought = mock.stats.batchRequests;
      const second = await ingestChild(f, mock, ['prefill', f.corpus, '--json']).exited;
      assert.is(second.code, 0, second.err);
      const summary = JSON.parse(second.out) as PrefillSummary;
      assert.equal([summary.batches.resumed, summary.batches.submitted, mock.stats.batchRequests], [1, 0, bought]);
      assert.is(summary.answers.stored, bought);
      const before = extractionCalls(mock);
      await f.reopen();
      await walk(f.lifespan, { sourcePath: f.corpus });
      assert.is(extractionCalls(mock) - before, 0);
    } finally {
      await f.dispose();
    }
  }));

test('a second prefill on the same state store while one runs is refused with prefill_busy; a dry run is not', () =>
  // The first holds its lease while its batch is out: long enough for two more processes to
  // start on a loaded machine (at 2 s the batch could end before the second asked).
  withMock({ batches: { delayMs: 8_000 } }, async (mock) => {
    const f = await corpusFixture();
    try {
      const first = ingestChild(f, mock, ['prefill', f.corpus, '--json']);
      await until(() => mock.stats.batches === 1, 'the first batch');
      const second = await ingestChild(f, mock, ['prefill', f.corpus]).exited;
      assert.is(second.code, 1);
      assert.match(second.err, /another ingest prefill is running on this state store/);
      const dry = await ingestChild(f, mock, ['prefill', f.corpus, '--dry-run', '--json']).exited;
      assert.is(dry.code, 0, dry.err);
      assert.is((JSON.parse(dry.out) as PrefillSummary).requests.submitted, 0, 'all in flight');
      const done = await first.exited;
      assert.is(done.code, 0, done.err);
      assert.is(mock.stats.batches, 1, 'bought once');
      const after = await ingestChild(f, mock, ['prefill', f.corpus, '--json']).exited;
      assert.is(after.code, 0, 'the lease went with the first');
    } finally {
      await f.dispose();
    }
  }));

test('--dry-run: the requests, their input tokens and the price at both rates; nothing submitted', () =>
  withMock({}, async (mock) => {
    const f = await corpusFixture();
    try {
      const run = await ingestChild(f, mock, ['prefill', f.corpus, '--dry-run', '--json']).exited;
      assert.is(run.code, 0, run.err);
      const summary = JSON.parse(run.out) as PrefillSummary;
      assert.ok(summary.dryRun && summary.requests.toSubmit > 0 && summary.tokens.estimatedInput > 0);
      assert.is(summary.requests.submitted, 0);
      assert.ok(summary.price !== null && summary.price.standard > 0);
      assert.is(summary.price.batch, summary.price.standard / 2);
      assert.equal([mock.stats.batches, mock.stats.messages], [0, 0]);
      const text = await ingestChild(f, mock, ['prefill', f.corpus, '--dry-run']).exited;
      assert.match(text.out, /dry run: nothing submitted/);
      assert.match(text.out, new RegExp(`, ${summary.requests.toSubmit} to submit\n`));
      assert.match(text.out, /through batches/);
      if (targetEngine === 'pglite') {
        // No data directory yet: the dry run prices every request and creates nothing.
        const fresh = path.join(f.root, 'fresh');
        const first = await runIngest(['prefill', f.corpus, '--dry-run', '--json'], {
          INGEST_DATA_DIR: fresh,
          INGEST_LOG_LEVEL: 'error',
          ...mockTierEnv(mock.url),
        });
        assert.is(first.status, 0, first.stderr);
        assert.is((JSON.parse(first.stdout) as PrefillSummary).requests.toSubmit, summary.requests.toSubmit);
        assert.not.ok(existsSync(fresh), 'a dry run created a data directory');
      }
    } finally {
      await f.dispose();
    }
  }));

test('an endpoint that does not serve the batch API: a named error before anything is submitted', async () => {
  const gateway = await serveHttp((_req, res) => {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: 'no such route' } }));
  });
  const f = await corpusFixture();
  try {
    const client = new Anthropic({ baseURL: gateway.origin, apiKey: 'k', maxRetries: 0 });
    const refused = await prefill(depsOf(f, undefined, client), f.corpus).then(
      () => null,
      (error: unknown) => error,
    );
    assert.is((refused as { code?: string } | null)?.code, 'batch_api_unavailable');
    assert.equal(await new SubmissionLedger(f.lifespan.store).pending(), []);
  } finally {
    await f.dispose();
    await gateway.close();
  }
});

test.run();
