// SingleFlight (lib/single-flight.ts): one run at a time, a second refused at once and never
// queued, the lock held until the run settles however it ends.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SingleFlight } from '../lib/single-flight.ts';

class Busy extends Error {}

test('a second run is refused synchronously while the first runs, and allowed once it settled', async () => {
  const lock = new SingleFlight(() => new Busy('busy'));
  let release!: () => void;
  const first = lock.run(() => new Promise<string>((resolve) => (release = () => resolve('first'))));
  assert.ok(lock.running);
  let ran = false;
  assert.throws(
    () => lock.run(async () => (ran = true)),
    (error: unknown) => error instanceof Busy,
  );
  assert.not.ok(ran, 'the refused work never started');
  release();
  assert.is(await first, 'first');
  assert.not.ok(lock.running);
  assert.is(await lock.run(async () => 'second'), 'second');
});

test('the lock is let go of when the run rejects, and when its function throws before returning a promise', async () => {
  const lock = new SingleFlight(() => new Busy('busy'));
  await lock
    .run(async () => {
      throw new Error('the run failed');
    })
    .catch(() => {});
  assert.not.ok(lock.running);
  assert.throws(() =>
    lock.run(() => {
      throw new Error('thrown before any promise');
    }),
  );
  assert.not.ok(lock.running);
  assert.is(await lock.run(async () => 1), 1);
});

test.run();
