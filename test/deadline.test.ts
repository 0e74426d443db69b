// The deadline's timing on fake timers (node:test's mock.timers): the test moves the clock, so it
// checks the exact moment the signal aborts and waits for no real time.

import { mock } from 'node:test';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { withDeadline } from '../lib/deadline.ts';

test.before.each(() => mock.timers.enable({ apis: ['setTimeout'] }));
test.after.each(() => mock.timers.reset());

test('work still running at the deadline sees its signal abort with a TimeoutError, not before', async () => {
  let signal: AbortSignal | undefined;
  const reason = withDeadline(
    20,
    (given) =>
      new Promise((resolve) => ((signal = given), given.addEventListener('abort', () => resolve(given.reason)))),
  );
  mock.timers.tick(19);
  assert.is(signal!.aborted, false, 'still running 1 ms before the deadline');
  mock.timers.tick(1);
  const aborted = await reason;
  assert.instance(aborted, DOMException);
  assert.is((aborted as DOMException).name, 'TimeoutError');
});

test('work that ends first disarms its deadline, whether it resolved or threw', async () => {
  const signals: AbortSignal[] = [];
  assert.is(await withDeadline(20, async (signal) => (signals.push(signal), 'done')), 'done');
  const error = await withDeadline(20, async (signal) => {
    signals.push(signal);
    throw new Error('boom');
  }).catch((e: unknown) => e);
  assert.match((error as Error).message, 'boom');
  mock.timers.tick(50);
  assert.equal(
    signals.map((s) => s.aborted),
    [false, false],
  );
});

test.run();
