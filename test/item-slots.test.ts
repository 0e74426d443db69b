// The walk's item slots (engine/walk/item-slots.ts): a life that gives its slot up lets the next
// item in, the waiting lives stay bounded, and a life that rejects frees its place and is heard.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ItemSlots } from '../engine/walk/item-slots.ts';

/** A promise and the function that resolves it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

test('a life that gave its slot up lets the next in; no more than twice the slots are unfinished', async () => {
  const slots = new ItemSlots(1);
  const finish = gate();
  let started = 0;
  let admitted = 0;
  const admitting = (async () => {
    for (let i = 0; i < 3; i++) {
      await slots.admit(async (slot) => {
        started += 1;
        slot.release();
        await finish.opened;
      });
      admitted += 1;
    }
  })();
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.is(started, 2, 'two lives run with one slot, each having given it up');
  assert.is(admitted, 2, 'the third waits for a life to end');
  finish.open();
  await admitting;
  await slots.ended();
  assert.is(started, 3);
});

test('a life that rejects frees its place, and ended rejects with its error', async () => {
  const slots = new ItemSlots(1);
  // Two broken lives fill the two places of one slot's walk, had they stayed in them.
  for (const n of [1, 2]) {
    await slots.admit(async () => {
      throw new Error(`broken life ${n}`);
    });
  }
  await slots.admit(async () => {});
  const ended = await slots.ended().then(
    () => null,
    (error: unknown) => error,
  );
  assert.instance(ended, Error);
  assert.is((ended as Error).message, 'broken life 1');
});

test.run();
