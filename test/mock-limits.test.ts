// The mock's provider rate limits (mock/limits.ts): the window arithmetic, fixed against sliding,
// on a clock the test sets; then over real HTTP the 429, its Retry-After and the vendor's headers
// on both routes, per model, and the window's reset.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { RateLimits, type Cost } from '../mock/limits.ts';
import type { MessagesRequest } from '../mock/messages.ts';
import { startMockServer, type MockServer } from '../mock/server.ts';
import { BIN, listeningUrl } from './helpers/cli.ts';

const tokens = (n: number): Cost => ({ requests: 1, tokens: n, 'input-tokens': n, 'output-tokens': 0 });

test('a fixed window resets at each multiple of its length; a refusal says when the request fits', () => {
  const limits = new RateLimits({ windowMs: 1000, window: 'fixed', per: { tokens: 100 } });
  assert.ok(limits.admit('m', tokens(60), 1000).admitted);
  const refused = limits.admit('m', tokens(50), 1500);
  assert.equal(refused.admitted ? null : refused.retryAfterMs, 500, 'fits when the window ends at 2000');
  assert.ok(limits.admit('m', tokens(40), 1999).admitted, 'the window holds its whole limit');
  assert.ok(limits.admit('m', tokens(100), 2000).admitted, 'a new window: the whole limit again');
  assert.ok(limits.admit('other', tokens(100), 2000).admitted, 'each model has its own limit');
});

test('a sliding window counts the last windowMs: what the end of one fixed window took still counts', () => {
  const limits = new RateLimits({ windowMs: 1000, window: 'sliding', per: { tokens: 100 } });
  assert.ok(limits.admit('m', tokens(60), 1000).admitted);
  assert.ok(limits.admit('m', tokens(40), 1999).admitted);
  const refused = limits.admit('m', tokens(100), 2000);
  assert.equal(refused.admitted ? null : refused.retryAfterMs, 999, 'the 40 of 1999 leave at 2999');
  assert.ok(limits.admit('m', tokens(60), 2000).admitted, 'the 60 of 1000 left at 2000');
  assert.not.ok(limits.admit('m', tokens(1), 2998).admitted);
  assert.ok(limits.admit('m', tokens(40), 2999).admitted);
});

test('a request is admitted in every dimension or in none', () => {
  const limits = new RateLimits({ windowMs: 1000, per: { requests: 2, tokens: 100 } });
  assert.ok(limits.admit('m', tokens(90), 0).admitted);
  assert.not.ok(limits.admit('m', tokens(20), 1).admitted, 'past the tokens');
  const third = limits.admit('m', tokens(10), 2);
  assert.ok(third.admitted, 'the refused request took no request slot');
  assert.equal(
    third.readings.map((r) => [r.dimension, r.remaining, r.resetAt]),
    [
      ['requests', 0, 1000],
      ['tokens', 0, 1000],
    ],
  );
});

const PROMPT = 'You answer briefly.';
const prompts = new Map([[PROMPT, (_request: MessagesRequest) => 'ok']]);
const WINDOW_MS = 1000;

/** Waits for the start of the next fixed window, so a test's requests all fall in one. */
async function windowStart(): Promise<void> {
  await sleep(WINDOW_MS - (Date.now() % WINDOW_MS) + 20);
}

let mock: MockServer;
test.before.each(async () => {
  mock = await startMockServer({ prompts, limits: { windowMs: WINDOW_MS, per: { requests: 2, tokens: 10_000 } } });
});
test.after.each(() => mock.close());

const message = (model: string) =>
  fetch(`${mock.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': 'k' },
    body: JSON.stringify({ model, max_tokens: 16, system: PROMPT, messages: [{ role: 'user', content: 'hi' }] }),
  });

test('/v1/messages: past the requests of a window, 429 rate_limit_error with Retry-After and the anthropic-ratelimit headers', async () => {
  await windowStart();
  const first = await message('claude-a');
  assert.is(first.status, 200);
  assert.is(first.headers.get('anthropic-ratelimit-requests-limit'), '2');
  assert.is(first.headers.get('anthropic-ratelimit-requests-remaining'), '1');
  assert.is(first.headers.get('anthropic-ratelimit-tokens-limit'), '10000');
  const used = ((await first.json()) as { usage: { input_tokens: number; output_tokens: number } }).usage;
  assert.is(
    first.headers.get('anthropic-ratelimit-tokens-remaining'),
    String(10_000 - used.input_tokens - used.output_tokens),
    'tokens counted as the answer reports them',
  );
  assert.is((await message('claude-a')).status, 200);
  const refused = await message('claude-a');
  assert.is(refused.status, 429);
  assert.is(((await refused.json()) as { error: { type: string } }).error.type, 'rate_limit_error');
  assert.is(refused.headers.get('retry-after'), '1');
  assert.is(refused.headers.get('anthropic-ratelimit-requests-remaining'), '0');
  const reset = Date.parse(refused.headers.get('anthropic-ratelimit-requests-reset')!);
  assert.ok(reset > Date.now() && reset <= Date.now() + WINDOW_MS, 'reset is the end of this window');
  assert.is((await message('claude-b')).status, 200, 'another model has its own limit');
  assert.is(mock.stats.limited, 1);
  assert.equal(
    mock.admissions.map((a) => [a.model, a.retryAfterMs === undefined]),
    [
      ['claude-a', true],
      ['claude-a', true],
      ['claude-a', false],
      ['claude-b', true],
    ],
  );
  await sleep(reset - Date.now() + 5);
  assert.is((await message('claude-a')).status, 200, 'the window reset');
});

test('/v1/embeddings: the x-ratelimit headers, and 429 rate_limit_exceeded past the limit', async () => {
  await windowStart();
  const embed = () =>
    fetch(`${mock.url}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer k' },
      body: JSON.stringify({ model: 'e', input: ['some text'], dimensions: 8 }),
    });
  const first = await embed();
  assert.is(first.status, 200);
  assert.is(first.headers.get('x-ratelimit-limit-requests'), '2');
  assert.is(first.headers.get('x-ratelimit-remaining-requests'), '1');
  assert.is(first.headers.get('x-ratelimit-remaining-tokens'), String(10_000 - 3));
  assert.match(first.headers.get('x-ratelimit-reset-tokens')!, /^\d+(\.\d+)?s$/);
  assert.is((await embed()).status, 200);
  const refused = await embed();
  assert.is(refused.status, 429);
  assert.is(((await refused.json()) as { error: { type: string } }).error.type, 'rate_limit_exceeded');
  assert.is(refused.headers.get('retry-after'), '1');
  assert.is(mock.stats.embeddings, 2);
});

test('ingest mock --limit-*: the limits from its flags; a malformed one is a usage error', async () => {
  const child = spawn(
    process.execPath,
    [BIN, 'mock', '--port', '0', '--limit-requests', '1', '--limit-window-ms', '60000'],
    {
      env: { PATH: process.env.PATH ?? '', INGEST_LOG_LEVEL: 'silent' },
    },
  );
  try {
    const url = await listeningUrl(child);
    const embed = () =>
      fetch(`${url}/v1/embeddings`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer k' },
        body: JSON.stringify({ model: 'e', input: ['text'], dimensions: 8 }),
      });
    assert.is((await embed()).status, 200);
    const refused = await embed();
    assert.is(refused.status, 429);
    assert.is(refused.headers.get('x-ratelimit-limit-requests'), '1');
  } finally {
    child.kill('SIGTERM');
  }
  for (const bad of [
    ['--limit-window', 'rolling', '--limit-tokens', '5'],
    ['--limit-tokens', '0'],
  ])
    assert.is(
      spawnSync(process.execPath, [BIN, 'mock', '--port', '0', ...bad], { env: { PATH: process.env.PATH } }).status,
      2,
    );
});

test.run();
