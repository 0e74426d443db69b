// The walk's backpressure: it reads the corpus no further while every in-flight slot is taken
// and an item already waits for one.
//
// Not PQueue's onSizeLessThan(): it listens for two events under one AbortSignal, and after a
// garbage collection Node removes only one of them on abort (nodejs/node#63954), so a listener
// and the walked item it held stayed behind about every hundred documents (docs/DECISIONS.md).
// events.once removes its listener when it fires.

import { once } from 'node:events';
import type PQueue from 'p-queue';

/** Resolves once no task waits in the queue (every waiting task has started). */
export async function untilNoneWaiting(queue: PQueue): Promise<void> {
  // A task waits only while every slot runs one, so a completion ('next') always follows.
  while (queue.size > 0) await once(queue, 'next');
}
