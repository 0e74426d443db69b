// @engine
// The model clients' shared budget (lib/llm/budget.ts) against the mock's provider limits
// (mock/limits.ts), on one mock at a fixed loopback URL: one process on the engine under test (on
// PGlite the budget lives in the process), three processes debiting one budget in PostgreSQL
// (under a role that may not create anything), a 429's pause shared by all three, and no budget
// configured (today's behaviour: the 429s reach the retry).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadText, runLoad, type LoadResult } from '../bench/model-budget-load.ts';
import { createEmbeddingClient, EMBEDDING_MODEL } from '../lib/embed/client.ts';
import { withRetry } from '../lib/llm/retry.ts';
import { loadConfig } from '../lib/config.ts';
import { openModelBudgets } from '../lib/llm/budget.ts';
import { startMockServer, type AdmissionRecord, type MockServer } from '../mock/server.ts';
import { openTestDatabase, targetEngine, type TestDatabase } from './helpers/db.ts';
import { createNoCreateRole } from './helpers/no-create-role.ts';

// One port per engine: CI runs the PGlite and the PostgreSQL suites side by side.
const MOCK_PORT = targetEngine === 'postgres' ? 18_794 : 18_793;
const WINDOW_MS = 1000;
/** The mock's limit: tokens per window and per model. */
const LIMIT = 8000;
/**
 * The budget's share of the limit in these tests: below the benchmark's 0.95, since a debit made
 * just before a window ends may reach the mock just after, and a loaded test machine stretches
 * that gap (bench/README.md "Model budget" measures the throughput).
 */
const SHARE = 0.85;
const LOAD = path.resolve(import.meta.dirname, '../bench/model-budget-load.ts');

/** The budget's environment: `share` of the mock's limit, per minute, over the mock's window. */
const budgetEnv = (share: number, provider: 'ANTHROPIC' | 'OPENAI' = 'ANTHROPIC') => ({
  [`INGEST_${provider}_TOKENS_PER_MINUTE`]: String(Math.floor((LIMIT * share * 60_000) / WINDOW_MS)),
  INGEST_MODEL_BUDGET_WINDOW_MS: String(WINDOW_MS),
});

let t: TestDatabase;
let mock: MockServer;
let saved: NodeJS.ProcessEnv;
test.before.each(async () => {
  // Taken here, not at import: other files' helpers set variables when they are imported.
  saved = { ...process.env };
  t = await openTestDatabase();
  mock = await startMockServer(
    { limits: { windowMs: WINDOW_MS, window: 'fixed', per: { tokens: LIMIT } } },
    { port: MOCK_PORT },
  );
  process.env.ANTHROPIC_BASE_URL = mock.url;
});
test.after.each(async () => {
  // Restored in place: a process.env replaced by a plain object no longer reaches the real
  // environment, which worker threads (the sidecar's engine thread) copy in later test files.
  for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
  Object.assign(process.env, saved);
  await mock.close();
  await t.dispose();
});

const inProcess = (env: Record<string, string>) =>
  loadConfig({ ...(t.dsn === null ? {} : { ENGINE_DB_DSN: t.dsn }), ...env }, '/tmp');

/** The share of the mock's answers that were 429s. */
const limitedShare = () => mock.stats.limited / mock.admissions.length;

const assertAllOk = (results: readonly LoadResult[], calls: number) => {
  for (const result of results) assert.equal(result.errors, [], 'no call failed');
  assert.is(
    results.reduce((n, r) => n + r.ok, 0),
    calls,
  );
};

test(`one process on ${targetEngine}: the budget keeps every call under the limit, none fails`, async () => {
  const result = await runLoad(inProcess(budgetEnv(SHARE)), { calls: 100, concurrency: 8 });
  assertAllOk([result], 100);
  assert.ok(limitedShare() <= 0.01, `429s: ${mock.stats.limited} of ${mock.admissions.length}`);
});

test('embeddings: the OpenAI client debits its own budget, corrected from usage.prompt_tokens', async () => {
  process.env.OPENAI_BASE_URL = `${mock.url}/v1`;
  const budgets = openModelBudgets(inProcess(budgetEnv(SHARE, 'OPENAI')));
  try {
    assert.is(budgets.anthropic, null, 'each provider has its own budget');
    const client = createEmbeddingClient(budgets.openai);
    const texts = Array.from({ length: 30 }, (_, i) => loadText(i).repeat(8));
    await Promise.all(
      texts.map((text) =>
        withRetry((signal) =>
          client.embeddings.create({ model: EMBEDDING_MODEL, dimensions: 8, input: [text] }, { signal }),
        ),
      ),
    );
    assert.is(mock.stats.embeddings, 30);
    // Unbudgeted, these 30 requests at once draw a 429 for most of them; budgeted, at most the
    // one whose debit fell at a window's end and reached the mock in the next on a loaded machine.
    assert.ok(mock.stats.limited <= 1, `every request waited for its share (429s: ${mock.stats.limited})`);
    const tokens = mock.admissions.reduce((n, a) => n + a.tokens, 0);
    assert.ok(tokens > LIMIT, 'more than one window of tokens, spread by the budget');
  } finally {
    await budgets.close();
  }
});

test('a call larger than a whole window of the budget still goes: it overdraws the next slices, it never waits forever', async () => {
  // 300 tokens per 200 ms window, calls of about 360: each takes its window and owes the next.
  const env = { INGEST_ANTHROPIC_TOKENS_PER_MINUTE: String(300 * 5 * 60), INGEST_MODEL_BUDGET_WINDOW_MS: '200' };
  const result = await runLoad(inProcess(env), { calls: 8, concurrency: 8 });
  assertAllOk([result], 8);
  assert.is(mock.stats.limited, 0);
});

test('no budget configured: nothing is opened, and past the limit the 429s reach the retry as before', async () => {
  const budgets = openModelBudgets(inProcess({}));
  assert.is(budgets.anthropic, null);
  assert.is(budgets.openai, null);
  const result = await runLoad(inProcess({}), { calls: 60, concurrency: 8 });
  assertAllOk([result], 60);
  assert.ok(mock.stats.limited > 0, 'unbudgeted calls run into the limit');
  assert.is(result.retries, mock.stats.limited, 'each 429 retried once');
});

if (targetEngine === 'postgres') {
  /** Three processes of `calls` each, debiting one budget in PostgreSQL under a role that may create nothing. */
  async function threeProcesses(env: Record<string, string>, calls: number): Promise<LoadResult[]> {
    const restricted = await createNoCreateRole(t.dsn!);
    try {
      return await Promise.all(
        [0, 1, 2].map(async (n) => {
          const { stdout } = await promisify(execFile)(
            process.execPath,
            [LOAD, '--calls', String(calls), '--concurrency', '6', '--offset', String(n * calls)],
            {
              env: {
                ...saved,
                ...env,
                ENGINE_DB_DSN: restricted.dsn,
                ANTHROPIC_BASE_URL: mock.url,
                INGEST_LOG_LEVEL: 'silent',
              },
            },
          );
          return JSON.parse(stdout) as LoadResult;
        }),
      );
    } finally {
      await restricted.dispose();
    }
  }

  test('three processes on one budget in PostgreSQL (a role without CREATE): no call fails, at most 1 % 429s', async () => {
    const results = await threeProcesses(budgetEnv(SHARE), 40);
    assertAllOk(results, 120);
    assert.ok(limitedShare() <= 0.01, `429s: ${mock.stats.limited} of ${mock.admissions.length}`);
    const { rows } = await t.db.query<{ key: string }>('SELECT key FROM model_budget ORDER BY key');
    assert.ok(
      rows.some((r) => r.key.startsWith('anthropic-tokens:')),
      'the debits went through the table',
    );
  });

  test("a 429's Retry-After pauses all three: after it reached them, none sends until it ends", async () => {
    // A budget twice the limit: the mock refuses, and only the shared pause holds them back.
    const results = await threeProcesses(budgetEnv(2), 30);
    assertAllOk(results, 90);
    const admissions = mock.admissions;
    const firsts: AdmissionRecord[] = [];
    for (const a of admissions)
      if (a.retryAfterMs !== undefined && !firsts.some((f) => a.at < f.at + pauseMs(f))) firsts.push(a);
    assert.ok(firsts.length > 0, 'the limit was met');
    // Requests already past the budget when the first 429 was answered may still arrive; the
    // grace is their time to arrive, far shorter than the second the pause lasts.
    const GRACE_MS = 250;
    for (const first of firsts) {
      const during = admissions.filter((a) => a.at > first.at + GRACE_MS && a.at < first.at + pauseMs(first) - 20);
      assert.equal(during, [], `a request arrived during the pause of the 429 at ${first.at}`);
    }
  });
}

/** The pause a 429 asks for: its Retry-After as sent, in whole seconds. */
const pauseMs = (a: AdmissionRecord) => Math.max(1, Math.ceil(a.retryAfterMs! / 1000)) * 1000;

test.run();
