import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { withDeadline } from '../lib/deadline.ts';

const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('work still running at the deadline sees its signal abort with a TimeoutError', async () => {
  const reason = await withDeadline(
    20,
    (signal) => new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason))),
  );
  assert.instance(reason, DOMException);
  assert.is((reason as DOMException).name, 'TimeoutError');
});

test('work that ends first disarms its deadline, whether it resolved or threw', async () => {
  const signals: AbortSignal[] = [];
  assert.is(await withDeadline(20, async (signal) => (signals.push(signal), 'done')), 'done');
  const error = await withDeadline(20, async (signal) => {
    signals.push(signal);
    throw new Error('boom');
  }).catch((e: unknown) => e);
  assert.match((error as Error).message, 'boom');
  await settle(50);
  assert.equal(
    signals.map((s) => s.aborted),
    [false, false],
  );
});

test.run();
