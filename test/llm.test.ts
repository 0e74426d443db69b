// The model-client factories and the service's retry wrapper, against the mock's fault knobs.

import { mock } from 'node:test';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { createEmbeddingClient } from '../lib/embed/client.ts';
import { createLlmClient, llmIdentity, llmTier } from '../lib/llm/client.ts';
import { isRetryable, ModelCallError, retryAfterMs, withRetry } from '../lib/llm/retry.ts';
import type { MessagesRequest } from '../mock/messages.ts';
import { startMockServer } from '../mock/server.ts';

const VARS = ['ANTHROPIC_BASE_URL', 'ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'OPENAI_BASE_URL', 'OPENAI_API_KEY'];
let saved: Record<string, string | undefined>;
test.before.each(() => {
  saved = Object.fromEntries(VARS.map((v) => [v, process.env[v]]));
  for (const v of VARS) delete process.env[v];
});
test.after.each(() => {
  for (const v of VARS) {
    if (saved[v] === undefined) delete process.env[v];
    else process.env[v] = saved[v];
  }
});

test('blank variables are scrubbed before the client is built (compose ${VAR:-} passthrough)', () => {
  Object.assign(process.env, { ANTHROPIC_BASE_URL: '', ANTHROPIC_API_KEY: 'sk-real', ANTHROPIC_AUTH_TOKEN: '  ' });
  const client = createLlmClient();
  assert.is(process.env.ANTHROPIC_BASE_URL, undefined);
  assert.is(process.env.ANTHROPIC_AUTH_TOKEN, undefined);
  assert.is(client.apiKey, 'sk-real');
  assert.is(client.maxRetries, 0);
  assert.is(llmTier(), 'vendor');
});

test('tiers: mock, gateway (API key forced empty), vendor', () => {
  Object.assign(process.env, { ANTHROPIC_BASE_URL: 'http://127.0.0.1:9/', ANTHROPIC_API_KEY: 'anything' });
  assert.is(llmTier(), 'mock');
  process.env.ANTHROPIC_AUTH_TOKEN = 'gateway-token';
  process.env.ANTHROPIC_API_KEY = 'sk-vendor-key';
  assert.is(llmTier(), 'gateway');
  const gateway = createLlmClient();
  assert.is(gateway.apiKey, null, 'the vendor key never reaches the gateway');
  assert.is(gateway.authToken, 'gateway-token');
});

test('tier 1 needs only the base URLs: with no key set, both clients reach the mock', async () => {
  const mock = await startMockServer();
  try {
    Object.assign(process.env, { ANTHROPIC_BASE_URL: mock.url, OPENAI_BASE_URL: `${mock.url}/v1` });
    const message = await createLlmClient().messages.create({
      model: 'm',
      max_tokens: 8,
      messages: [{ role: 'user', content: 'ping' }],
    });
    assert.equal(message.content, [{ type: 'text', text: 'pong' }]);
    const embedded = await createEmbeddingClient().embeddings.create({
      model: 'text-embedding-3-large',
      dimensions: 1024,
      input: ['a'],
    });
    assert.is(embedded.data[0]!.embedding.length, 1024);
  } finally {
    await mock.close();
  }
});

test('the LLM identity is {base_url}:{model}, with the SDK default on tier 3', () => {
  process.env.ANTHROPIC_BASE_URL = 'http://127.0.0.1:8791/';
  process.env.ANTHROPIC_API_KEY = 'k';
  assert.is(llmIdentity(createLlmClient(), 'claude-x'), 'http://127.0.0.1:8791:claude-x');
  delete process.env.ANTHROPIC_BASE_URL;
  const vendor = createLlmClient();
  assert.is(llmIdentity(vendor, 'claude-x'), `${new Anthropic({ apiKey: 'k' }).baseURL}:claude-x`);
});

test('the embedding client takes its settings from the environment, retries off', () => {
  Object.assign(process.env, { OPENAI_BASE_URL: ' ', OPENAI_API_KEY: 'sk-emb' });
  const client = createEmbeddingClient();
  assert.is(process.env.OPENAI_BASE_URL, undefined);
  assert.is(client.apiKey, 'sk-emb');
  assert.is(client.maxRetries, 0);
});

test('no base URL is hard-coded in the service', async () => {
  const root = path.resolve(import.meta.dirname, '..');
  const offenders: string[] = [];
  const scan = async (dir: string): Promise<void> => {
    for (const entry of await readdir(path.join(root, dir), { withFileTypes: true }).catch(() => [])) {
      const rel = path.join(dir, entry.name);
      if (entry.isDirectory()) await scan(rel);
      else if (
        entry.name.endsWith('.ts') &&
        /api\.(anthropic|openai)\.com|openrouter\.ai/.test(await readFile(path.join(root, rel), 'utf8'))
      )
        offenders.push(rel);
    }
  };
  for (const dir of ['bin', 'cli', 'http', 'engine', 'stages', 'lib', 'mock', 'worker']) await scan(dir);
  assert.equal(offenders, []);
});

const PROMPT = 'Retry test prompt';
const prompts = new Map([[PROMPT, (_: MessagesRequest) => 'ok']]);
const fast = { attempts: 8, baseDelayMs: 1, maxDelayMs: 5, deadlineMs: 30_000 };

test('429 and 529 from the mock are retried until the call succeeds; each retry is reported', async () => {
  const mock = await startMockServer({ prompts, faultRate: 0.6, faults: ['429', '529'], seed: 7 });
  try {
    const client = new Anthropic({ baseURL: mock.url, apiKey: 'k', maxRetries: 0 });
    let retries = 0;
    for (let i = 0; i < 10; i++) {
      const message = await withRetry(
        (signal) =>
          client.messages.create(
            { model: 'm', max_tokens: 8, system: PROMPT, messages: [{ role: 'user', content: 'x' }] },
            { signal },
          ),
        fast,
        () => (retries += 1),
      );
      assert.is((message.content[0] as Anthropic.TextBlock).text, 'ok');
    }
    assert.ok(mock.stats.faultsInjected > 0);
    assert.is(retries, mock.stats.faultsInjected, 'one retry per injected fault');
  } finally {
    await mock.close();
  }
});

test('dropped connections are retried too', async () => {
  const mock = await startMockServer({ prompts, faultRate: 0.5, faults: ['drop'], seed: 3 });
  try {
    const client = new Anthropic({ baseURL: mock.url, apiKey: 'k', maxRetries: 0 });
    let retries = 0;
    for (let i = 0; i < 5; i++) {
      await withRetry(
        (signal) =>
          client.messages.create(
            { model: 'm', max_tokens: 8, system: PROMPT, messages: [{ role: 'user', content: 'x' }] },
            { signal },
          ),
        fast,
        () => (retries += 1),
      );
    }
    assert.ok(retries > 0);
  } finally {
    await mock.close();
  }
});

test('400 and 401 are never retried', async () => {
  const mock = await startMockServer({ prompts });
  try {
    for (const apiKey of ['k', 'ingest-failure-injection-sentinel']) {
      let calls = 0;
      const client = new Anthropic({ baseURL: mock.url, apiKey, maxRetries: 0 });
      const system = apiKey === 'k' ? 'an unregistered prompt' : PROMPT;
      try {
        await withRetry((signal) => {
          calls += 1;
          return client.messages.create(
            { model: 'm', max_tokens: 8, system, messages: [{ role: 'user', content: 'x' }] },
            { signal },
          );
        }, fast);
        assert.unreachable('expected a failure');
      } catch (error) {
        assert.instance(error, ModelCallError);
        assert.is(calls, 1);
        assert.match((error as Error).message, /not retryable/);
      }
    }
  } finally {
    await mock.close();
  }
});

test('attempts are bounded', async () => {
  const mock = await startMockServer({ prompts, faultRate: 1, faults: ['529'] });
  try {
    const client = new Anthropic({ baseURL: mock.url, apiKey: 'k', maxRetries: 0 });
    const error = await withRetry(
      (signal) =>
        client.messages.create(
          { model: 'm', max_tokens: 8, system: PROMPT, messages: [{ role: 'user', content: 'x' }] },
          { signal },
        ),
      { ...fast, attempts: 3 },
    ).catch((e: unknown) => e);
    assert.instance(error, ModelCallError);
    assert.is((error as ModelCallError).attempts, 3);
    assert.is((error as ModelCallError).status, 529);
    assert.is(mock.stats.faultsInjected, 3);
  } finally {
    await mock.close();
  }
});

test('the deadline aborts a call that hangs, and ends with the call that finishes', async () => {
  // Fake timers and clock (node:test's mock.timers): the test moves time, and waits for none.
  mock.timers.enable({ apis: ['setTimeout', 'Date'] });
  try {
    let aborted = false;
    const hung = withRetry(
      (signal) =>
        new Promise((_, reject) => signal.addEventListener('abort', () => ((aborted = true), reject(signal.reason)))),
      { ...fast, deadlineMs: 30 },
    ).catch((e: unknown) => e);
    mock.timers.tick(29);
    assert.is(aborted, false, 'still waiting 1 ms before the deadline');
    mock.timers.tick(1);
    assert.instance(await hung, ModelCallError);
    assert.match(((await hung) as Error).message, /deadline passed/);
    // A finished call's signal must not stay armed (and referenced) until the deadline.
    let given: AbortSignal | undefined;
    assert.is(await withRetry(async (signal) => ((given = signal), 'ok'), { ...fast, deadlineMs: 30 }), 'ok');
    mock.timers.tick(60);
    assert.is(given!.aborted, false);
  } finally {
    mock.timers.reset();
  }
});

test('retryable statuses and Retry-After parsing', () => {
  for (const status of [408, 429, 500, 502, 503, 529]) assert.ok(isRetryable({ status }), String(status));
  for (const status of [400, 401, 403, 404, 422]) assert.not.ok(isRetryable({ status }), String(status));
  assert.ok(isRetryable(Object.assign(new Error('socket hang up'), { name: 'APIConnectionError' })));
  assert.is(retryAfterMs({ headers: new Headers({ 'retry-after': '2' }) }), 2000);
  assert.is(retryAfterMs({ headers: { 'retry-after': 'Thu, 01 Jan 1970 00:00:05 GMT' } }, 1000), 4000);
  assert.is(retryAfterMs({}), null);
});

test.run();
