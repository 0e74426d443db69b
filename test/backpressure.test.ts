import { getEventListeners } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import PQueue from 'p-queue';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { untilNoneWaiting } from '../engine/walk/backpressure.ts';

// A full garbage collection on demand, without starting the suite with --expose-gc.
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

test('waiting for a free slot leaves no listener behind, with collections during the waits', async () => {
  const queue = new PQueue({ concurrency: 2 });
  let started = 0;
  for (let i = 0; i < 200; i += 1) {
    await untilNoneWaiting(queue);
    assert.is(queue.size, 0);
    void queue.add(async () => {
      started += 1;
      await delay(1);
      // The walk's heap collects while the reader waits (nodejs/node#63954 needs just that).
      collectGarbage();
    });
  }
  await queue.onIdle();
  assert.is(started, 200);
  assert.is(getEventListeners(queue, 'next').length, 0);
  assert.is(getEventListeners(queue, 'active').length, 0);
});

test('the wait ends as soon as the waiting task has started, not when the queue is idle', async () => {
  const queue = new PQueue({ concurrency: 1 });
  const release: (() => void)[] = [];
  const blocked = () => new Promise<void>((resolve) => release.push(resolve));
  void queue.add(blocked);
  void queue.add(blocked);
  assert.is(queue.size, 1);
  let waited = false;
  const waiting = untilNoneWaiting(queue).then(() => (waited = true));
  await delay(5);
  assert.is(waited, false);
  release.shift()!();
  await waiting;
  assert.is(queue.size, 0);
  assert.is(queue.pending, 1);
  release.shift()!();
  await queue.onIdle();
});

test.run();
