import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { equalJitter, fullJitter, parseRetryAfter, retry, RetryGaveUp, type RetryOptions } from '../lib/retry.ts';

const fails = (message: string) => Object.assign(new Error(message), { retryAfterMs: null as number | null });

test('full jitter stays within 0 and the capped exponential ceiling', () => {
  const top = fullJitter(100, 1_000, () => 0.999_999);
  const bottom = fullJitter(100, 1_000, () => 0);
  assert.equal(
    [1, 2, 3, 4, 5, 10].map((n) => Math.round(top(n))),
    [100, 200, 400, 800, 1_000, 1_000],
  );
  assert.equal([1, 2, 5].map(bottom), [0, 0, 0]);
  const random = fullJitter(100, 1_000);
  for (let i = 0; i < 1_000; i++) {
    const wait = random(1 + (i % 8));
    assert.ok(wait >= 0 && wait <= Math.min(1_000, 100 * 2 ** (i % 8)), String(wait));
  }
});

test('equal jitter keeps half of the ceiling fixed', () => {
  assert.equal([1, 2, 3, 9].map(equalJitter(100, 1_000, () => 0)), [50, 100, 200, 500]);
  assert.equal([1, 2, 3, 9].map(equalJitter(100, 1_000, () => 1)), [100, 200, 400, 1_000]);
});

const fast: RetryOptions = { attempts: 5, backoff: () => 1, maxDelayMs: 50 };

test('retries until the attempt succeeds, reporting each retry with its wait', async () => {
  const heard: Array<[number, string, number]> = [];
  const result = await retry(
    async (n) => {
      if (n < 3) throw fails(`failure ${n}`);
      return `ok at ${n}`;
    },
    { ...fast, backoff: (n) => n * 2, onRetry: (n, error, wait) => heard.push([n, (error as Error).message, wait]) },
  );
  assert.is(result, 'ok at 3');
  assert.equal(heard, [
    [1, 'failure 1', 2],
    [2, 'failure 2', 4],
  ]);
});

test('gives up with the last failure as its cause: attempts spent, or not retryable', async () => {
  let calls = 0;
  const spent = await retry(async () => {
    calls += 1;
    throw fails(`failure ${calls}`);
  }, fast).catch((e: unknown) => e);
  assert.instance(spent, RetryGaveUp);
  assert.is((spent as RetryGaveUp).attempts, 5);
  assert.is((spent as RetryGaveUp).reason, 'attempts exhausted');
  assert.is(((spent as RetryGaveUp).cause as Error).message, 'failure 5');
  assert.is(calls, 5);

  const refused = await retry(
    async () => {
      throw fails('bad request');
    },
    { ...fast, retryable: (error) => (error as Error).message !== 'bad request' },
  ).catch((e: unknown) => e);
  assert.is((refused as RetryGaveUp).attempts, 1);
  assert.is((refused as RetryGaveUp).reason, 'not retryable');
  assert.match((refused as Error).message, /gave up after 1 attempt\(s\) \(not retryable\): bad request/);
});

test('a Retry-After replaces the backoff, capped by maxDelayMs', async () => {
  const waits: number[] = [];
  let n = 0;
  await retry(
    async () => {
      n += 1;
      if (n === 1) throw Object.assign(fails('slow down'), { retryAfterMs: 20 });
      if (n === 2) throw Object.assign(fails('slow down a lot'), { retryAfterMs: 60_000 });
      if (n === 3) throw fails('no header');
    },
    {
      ...fast,
      backoff: () => 3,
      retryAfterMs: (error) => (error as ReturnType<typeof fails>).retryAfterMs,
      onRetry: (_, __, wait) => waits.push(wait),
    },
  );
  assert.equal(waits, [20, 50, 3]);
});

test('the deadline cuts a wait short and ends the retries', async () => {
  const started = Date.now();
  let calls = 0;
  const late = await retry(
    async () => {
      calls += 1;
      throw fails('down');
    },
    { attempts: Infinity, backoff: () => 10_000, maxDelayMs: 10_000, deadline: started + 40 },
  ).catch((e: unknown) => e);
  assert.is((late as RetryGaveUp).reason, 'deadline passed');
  assert.is(calls, 2, 'one attempt, a wait cut to the deadline, one more that fails past it');
  assert.ok(Date.now() - started < 1_000);
});

test('an aborted signal ends a wait at once', async () => {
  const controller = new AbortController();
  const started = Date.now();
  setTimeout(() => controller.abort(), 20);
  const stopped = await retry(
    async () => {
      throw fails('down');
    },
    { attempts: 10, backoff: () => 10_000, maxDelayMs: 10_000, signal: controller.signal },
  ).catch((e: unknown) => e);
  assert.is((stopped as RetryGaveUp).reason, 'deadline passed');
  assert.is((stopped as RetryGaveUp).attempts, 1);
  assert.ok(Date.now() - started < 1_000);
});

test('Retry-After: delta-seconds and HTTP-date, capped', () => {
  assert.is(parseRetryAfter('3'), 3000);
  assert.is(parseRetryAfter(' 2 '), 2000);
  assert.is(parseRetryAfter('0'), 0);
  assert.is(parseRetryAfter('1.5'), 1500);
  assert.is(parseRetryAfter('Thu, 01 Jan 1970 00:00:10 GMT', 4000), 6000);
  assert.is(parseRetryAfter('Thursday, 01-Jan-70 00:00:10 GMT', 4000), 6000, 'the obsolete RFC 850 form');
  assert.is(parseRetryAfter('Thu Jan  1 00:00:10 1970', 4000) !== null, true, 'the asctime form');
  assert.is(parseRetryAfter('Thu, 01 Jan 1970 00:00:01 GMT', 4000), 0, 'a date passed is no wait');
  assert.is(parseRetryAfter('120', 0, 30_000), 30_000);
  assert.is(parseRetryAfter('Thu, 01 Jan 1970 01:00:00 GMT', 0, 30_000), 30_000);
});

test('Retry-After: absent or invalid values are null', () => {
  for (const value of [null, undefined, '', '  ', 'soon', '-1', '1e3', '5 apples', '0x10', '2015-10-21', 'Foo, bar'])
    assert.is(parseRetryAfter(value), null, JSON.stringify(value));
});

test.run();
